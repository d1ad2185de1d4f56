//! Shape inference for the ops that rearrange or resize an array: `transpose`, `broadcast`,
//! `concatenate` and `pad`.

use super::{arr, array, attr, count, dims_attr, split_pair, IResult};
use crate::hlo::ast::{Instruction, Shape};

/// The shape of `transpose`: the operand's dimensions permuted by `dimensions`.
pub(super) fn transpose(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    count(ops, 1)?;
    let (t, dims) = arr(ops[0], "the operand")?;
    let perm = dims_attr(i, "dimensions")?;
    if perm.len() != dims.len() {
        return Err("`dimensions` is not a permutation of the operand's".into());
    }
    let out = perm
        .iter()
        .map(|&p| dims.get(p).copied())
        .collect::<Option<Vec<u64>>>()
        .ok_or("`dimensions` names a dimension the operand lacks")?;
    Ok(array(t, out))
}

/// The shape of `broadcast`: XLA's `InferBroadcastShape(operand, sizes)`, the sizes, then the
/// operand's.
pub(super) fn broadcast(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    count(ops, 1)?;
    let (t, dims) = arr(ops[0], "the operand")?;
    let mut out: Vec<u64> = dims_attr(i, "dimensions")?
        .into_iter()
        .map(|d| d as u64)
        .collect();
    out.extend_from_slice(dims);
    Ok(array(t, out))
}

/// The shape of `concatenate`: the first operand's, with the operands' sizes along
/// `dimensions` added up.
pub(super) fn concatenate(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    let d = *dims_attr(i, "dimensions")?
        .first()
        .ok_or("`dimensions` is missing")?;
    let first = ops.first().ok_or("no operand")?;
    let (t, dims) = arr(first, "the first operand")?;
    let mut out = dims.to_vec();
    let mut total: u64 = 0;
    for s in ops {
        let (_, od) = arr(s, "an operand")?;
        let n = od
            .get(d)
            .ok_or("`dimensions` is out of an operand's rank")?;
        total = total.checked_add(*n).ok_or("the size overflows")?;
    }
    *out.get_mut(d).ok_or("`dimensions` is out of range")? = total;
    Ok(array(t, out))
}

/// The shape of `pad`: each dimension grown by its `lo_hi[_interior]` padding.
pub(super) fn pad(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    count(ops, 2)?;
    let (t, dims) = arr(ops[0], "the operand")?;
    let padding = attr(i, "padding")?.value.trim().to_string();
    let parts: Vec<&str> = padding.split('x').collect();
    if parts.len() != dims.len() {
        return Err(format!(
            "`padding` has {} dimensions, expected {}",
            parts.len(),
            dims.len()
        ));
    }
    let mut out = Vec::with_capacity(dims.len());
    for (&n, p) in dims.iter().zip(&parts) {
        let (lo, rest) = split_pair(p).ok_or_else(|| format!("bad padding `{p}`"))?;
        let (hi, interior) = match split_pair(rest) {
            Some((hi, interior)) => (hi, interior),
            None => (rest, "0"),
        };
        let int = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| format!("`{s}` in `padding` is not an integer"))
        };
        let interior = u64::try_from(int(interior)?).map_err(|_| "negative interior padding")?;
        let size = i128::from(n)
            + i128::from(n.saturating_sub(1)) * i128::from(interior)
            + i128::from(int(lo)?)
            + i128::from(int(hi)?);
        out.push(u64::try_from(size).map_err(|_| "the padded size is negative")?);
    }
    Ok(array(t, out))
}
