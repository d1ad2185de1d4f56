//! The small evaluator of the trip-count analysis: integer and `pred` scalars, as XLA's
//! `HloEvaluator` computes them (two's complement wrap-around, XLA's results for a division
//! by zero and for shifts past the width). Cost: O(instructions) per evaluated computation.

use std::collections::BTreeMap;

use super::{callee, tuple_index, Comp, Sunk, MAX_DEPTH};
use crate::hlo::ast::{Computation, Instruction, Module, Shape};

/// The element type of an evaluated scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ty {
    Pred,
    Int { bits: u32, signed: bool },
}

/// An evaluated value: an integer or `pred` scalar (kept in range for its type), or a tuple.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Val {
    Scalar(Ty, i128),
    Tuple(Vec<Val>),
}

impl Val {
    /// The value of an integer scalar.
    pub(super) fn int(&self) -> Option<i128> {
        match self {
            Val::Scalar(Ty::Int { .. }, v) => Some(*v),
            _ => None,
        }
    }
}

/// `v` in the range of `ty` (two's complement wrap-around; `pred`: zero or one).
fn wrap(ty: Ty, v: i128) -> i128 {
    match ty {
        Ty::Pred => i128::from(v != 0),
        Ty::Int { bits, signed } => {
            let m = 1i128 << bits;
            let r = v.rem_euclid(m);
            if signed && r >= m / 2 {
                r - m
            } else {
                r
            }
        }
    }
}

/// The scalar type of `i`'s result; an error naming `i` for anything else.
fn scalar_ty(i: &Instruction) -> Result<Ty, String> {
    let dtype = match &i.shape {
        Shape::Array { dtype, dims, .. } if dims.is_empty() => dtype.as_str(),
        _ => return Err(format!("`%{}` is not a scalar", i.name)),
    };
    if dtype == "pred" {
        return Ok(Ty::Pred);
    }
    let (signed, bits) = match dtype.split_at(1) {
        ("s", b) => (true, b),
        ("u", b) => (false, b),
        _ => return Err(format!("`%{}` is `{dtype}`, not an integer", i.name)),
    };
    match bits.parse::<u32>() {
        Ok(bits @ 1..=64) => Ok(Ty::Int { bits, signed }),
        _ => Err(format!("`%{}` is `{dtype}`, not an integer", i.name)),
    }
}

/// The value of a scalar `constant`.
pub(super) fn constant(i: &Instruction) -> Result<Val, String> {
    let ty = scalar_ty(i)?;
    let text = i.literal.as_deref().unwrap_or("").trim();
    let v = match (ty, text) {
        (Ty::Pred, "true") => 1,
        (Ty::Pred, "false") => 0,
        _ => text
            .parse::<i128>()
            .map_err(|_| format!("`%{}` holds `{text}`, not an integer", i.name))?,
    };
    Ok(Val::Scalar(ty, wrap(ty, v)))
}

/// Evaluates `i` of `c` as XLA's evaluator does without recursion: each operand must be a
/// `constant`, a sunk element (in `sunk`) or the substituted `(name, value)`; `i` itself may
/// call computations, which are evaluated whole.
pub(super) fn evaluate(
    module: &Module,
    c: &Comp<'_>,
    i: &Instruction,
    subst: Option<(&str, &Val)>,
    sunk: &Sunk<'_>,
) -> Result<Val, String> {
    match i.opcode.as_str() {
        "constant" => return constant(i),
        "parameter" => return Err(format!("`%{}` is a parameter of `%{}`", i.name, c.c.name)),
        _ => {}
    }
    let mut args = Vec::with_capacity(i.operands.len());
    for o in &i.operands {
        match (subst, c.get(o)) {
            (Some((name, v)), _) if name == o => args.push(v.clone()),
            _ if sunk.contains_key(o.as_str()) => {
                args.extend(sunk.get(o.as_str()).cloned());
            }
            (_, Some(x)) if x.opcode == "constant" => args.push(constant(x)?),
            (_, Some(x)) if x.opcode == "parameter" => {
                return Err(format!("`%{}` reads parameter `%{o}`", i.name))
            }
            _ => {
                return Err(format!(
                    "`%{}` reads `%{o}`, which is not a constant",
                    i.name
                ))
            }
        }
    }
    apply(module, i, args, 0)
}

/// Evaluates computation `comp` with parameter `k` holding `params[k]`.
fn evaluate_computation(
    module: &Module,
    comp: &Computation,
    params: &[Val],
    depth: usize,
) -> Result<Val, String> {
    if depth > MAX_DEPTH {
        return Err(format!("calls nest more than {MAX_DEPTH} deep"));
    }
    let mut values: BTreeMap<&str, Result<Val, String>> = BTreeMap::new();
    for i in comp.instructions.iter().take(comp.root + 1) {
        let value = if i.opcode == "parameter" {
            i.literal
                .as_deref()
                .and_then(|l| l.trim().parse::<usize>().ok())
                .and_then(|k| params.get(k).cloned())
                .ok_or_else(|| format!("parameter `%{}` has no argument", i.name))
        } else {
            i.operands
                .iter()
                .map(|o| match values.get(o.as_str()) {
                    Some(v) => v.clone(),
                    None => Err(format!("`%{o}` is not defined before `%{}`", i.name)),
                })
                .collect::<Result<Vec<Val>, String>>()
                .and_then(|args| apply(module, i, args, depth))
        };
        values.insert(&i.name, value);
    }
    let root = comp
        .instructions
        .get(comp.root)
        .ok_or_else(|| format!("`%{}` has no root", comp.name))?;
    values
        .remove(root.name.as_str())
        .unwrap_or_else(|| Err(format!("`%{}` has no root", comp.name)))
}

/// The result of instruction `i` on operand values `args`.
fn apply(module: &Module, i: &Instruction, args: Vec<Val>, depth: usize) -> Result<Val, String> {
    let op = i.opcode.as_str();
    match op {
        "constant" => return constant(i),
        "tuple" => return Ok(Val::Tuple(args)),
        "get-tuple-element" => {
            return match (args.into_iter().next(), tuple_index(i)) {
                (Some(Val::Tuple(v)), Some(k)) => v
                    .into_iter()
                    .nth(k)
                    .ok_or_else(|| format!("`%{}`: no element {k}", i.name)),
                _ => Err(format!("`%{}` does not read a tuple", i.name)),
            }
        }
        "fusion" | "call" => {
            let inner = callee(module, i)
                .ok_or_else(|| format!("`%{}` calls no computation of the module", i.name))?;
            return evaluate_computation(module, inner, &args, depth + 1);
        }
        _ => {}
    }
    let ty = scalar_ty(i)?;
    let mut xs = Vec::with_capacity(args.len());
    for a in &args {
        match a {
            Val::Scalar(t, v) => xs.push((*t, *v)),
            Val::Tuple(_) => return Err(format!("`%{}` reads a tuple", i.name)),
        }
    }
    let v = scalar_op(i, ty, &xs)?;
    Ok(Val::Scalar(ty, wrap(ty, v)))
}

/// Integer and `pred` scalar ops with XLA's semantics (division by zero gives -1, a remainder
/// by zero the dividend, shifts past the width 0 or the sign).
fn scalar_op(i: &Instruction, ty: Ty, xs: &[(Ty, i128)]) -> Result<i128, String> {
    let unsupported = || {
        format!(
            "`%{}` is `{}`, which the trip-count evaluator does not compute",
            i.name, i.opcode
        )
    };
    let bits = match ty {
        Ty::Int { bits, .. } => i128::from(bits),
        Ty::Pred => 1,
    };
    let x = |k: usize| xs.get(k).map(|p| p.1).ok_or_else(unsupported);
    Ok(match i.opcode.as_str() {
        "copy" | "convert" | "reshape" | "bitcast" | "opt-barrier" => x(0)?,
        "add" => x(0)? + x(1)?,
        "subtract" => x(0)? - x(1)?,
        "multiply" => x(0)?.wrapping_mul(x(1)?),
        "divide" if x(1)? == 0 => -1,
        "divide" => x(0)? / x(1)?,
        "remainder" if x(1)? == 0 => x(0)?,
        "remainder" => x(0)? % x(1)?,
        "maximum" => x(0)?.max(x(1)?),
        "minimum" => x(0)?.min(x(1)?),
        "negate" => -x(0)?,
        "abs" => x(0)?.abs(),
        "sign" => x(0)?.signum(),
        "and" => x(0)? & x(1)?,
        "or" => x(0)? | x(1)?,
        "xor" => x(0)? ^ x(1)?,
        "not" if ty == Ty::Pred => i128::from(x(0)? == 0),
        "not" => !x(0)?,
        "select" => {
            if x(0)? != 0 {
                x(1)?
            } else {
                x(2)?
            }
        }
        "clamp" => x(1)?.min(x(2)?).max(x(0)?),
        "shift-left" if !(0..bits).contains(&x(1)?) => 0,
        "shift-left" => x(0)? << x(1)?,
        "shift-right-logical" if !(0..bits).contains(&x(1)?) => 0,
        "shift-right-logical" => x(0)?.rem_euclid(1i128 << bits) >> x(1)?,
        "shift-right-arithmetic" => {
            let signed = wrap(
                Ty::Int {
                    bits: bits as u32,
                    signed: true,
                },
                x(0)?,
            );
            signed >> x(1)?.clamp(0, bits - 1)
        }
        "compare" => {
            let (a, b) = (x(0)?, x(1)?);
            let holds = match i.attribute("direction").map(|d| d.value.trim()) {
                Some("EQ") => a == b,
                Some("NE") => a != b,
                Some("LT") => a < b,
                Some("LE") => a <= b,
                Some("GT") => a > b,
                Some("GE") => a >= b,
                _ => return Err(format!("`%{}` has no comparison direction", i.name)),
            };
            i128::from(holds)
        }
        _ => return Err(unsupported()),
    })
}
