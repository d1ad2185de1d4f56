//! Shape inference for the ops that contract or reduce dimensions: `dot`, `reduce` and
//! `reduce-window`.

use super::{arr, array, count, dims_attr, window, window_dim, IResult};
use crate::hlo::ast::{Instruction, Shape};

/// The shape of `dot`: the batch dimensions, then the lhs's and the rhs's free ones.
pub(super) fn dot(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    count(ops, 2)?;
    let (t, lhs) = arr(ops[0], "the lhs")?;
    let (_, rhs) = arr(ops[1], "the rhs")?;
    let lb = dims_attr(i, "lhs_batch_dims")?;
    let lc = dims_attr(i, "lhs_contracting_dims")?;
    let rb = dims_attr(i, "rhs_batch_dims")?;
    let rc = dims_attr(i, "rhs_contracting_dims")?;
    let mut out = Vec::new();
    for &d in &lb {
        out.push(*lhs.get(d).ok_or("`lhs_batch_dims` is out of range")?);
    }
    out.extend(
        (0..lhs.len())
            .filter(|d| !lb.contains(d) && !lc.contains(d))
            .map(|d| lhs[d]),
    );
    out.extend(
        (0..rhs.len())
            .filter(|d| !rb.contains(d) && !rc.contains(d))
            .map(|d| rhs[d]),
    );
    Ok(array(t, out))
}

/// The shape of `reduce`: each input without the reduced `dimensions`, in its init value's
/// type; a tuple when there are several inputs.
pub(super) fn reduce(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    if ops.is_empty() || ops.len() % 2 != 0 {
        return Err("expected inputs and as many init values".into());
    }
    let n = ops.len() / 2;
    let gone = dims_attr(i, "dimensions")?;
    let mut outs = Vec::with_capacity(n);
    for k in 0..n {
        let (_, dims) = arr(ops[k], "an input")?;
        let (t, _) = arr(ops[n + k], "an init value")?;
        let kept = (0..dims.len())
            .filter(|d| !gone.contains(d))
            .map(|d| dims[d]);
        outs.push(array(t, kept.collect()));
    }
    Ok(if n == 1 {
        outs.remove(0)
    } else {
        Shape::Tuple(outs)
    })
}

/// The shape of `reduce-window`: each input's dimensions through the `window`, in its init
/// value's type; a tuple when there are several inputs.
pub(super) fn reduce_window(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    if ops.is_empty() || ops.len() % 2 != 0 {
        return Err("expected inputs and as many init values".into());
    }
    let n = ops.len() / 2;
    let mut outs = Vec::with_capacity(n);
    for k in 0..n {
        let (_, dims) = arr(ops[k], "an input")?;
        let (t, _) = arr(ops[n + k], "an init value")?;
        let w = window(i, dims.len(), &[])?;
        let out = dims
            .iter()
            .zip(&w)
            .map(|(&d, w)| window_dim(d, w))
            .collect::<IResult<Vec<u64>>>()?;
        outs.push(array(t, out));
    }
    Ok(if n == 1 {
        outs.remove(0)
    } else {
        Shape::Tuple(outs)
    })
}
