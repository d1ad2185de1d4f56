//! Which elements of a loop's state an output reads, through scalar ops, copies, fusions and
//! calls only: XLA's `GetGTEDependenceIndices`, `GetReachingParameters`,
//! `ProcessCalledComputation` and `IsScalarOp` (`xla/hlo/analysis/while_loop_analysis.cc`),
//! which find a loop's induction variable. Cost: O(instructions reached), calls included.

use std::collections::BTreeSet;

use super::{tuple_index, Comp, MAX_DEPTH};
use crate::hlo::ast::{Computation, Instruction, Module, Shape};

/// Whether `shape` is a scalar array.
pub(super) fn is_scalar(shape: &Shape) -> bool {
    matches!(shape, Shape::Array { dims, .. } if dims.is_empty())
}

/// Opcodes XLA's analysis never evaluates (`IsCollective`, send/recv, custom calls).
fn is_opaque(opcode: &str) -> bool {
    opcode == "custom-call"
        || ["send", "recv"]
            .iter()
            .chain(crate::hlo::COLLECTIVE_OPCODES)
            .any(|c| opcode.starts_with(c))
}

/// The computations `i` calls (`calls=`, `to_apply=`, a loop's, a conditional's branches).
fn called<'m>(module: &'m Module, i: &Instruction) -> Vec<&'m Computation> {
    const ATTRS: &[&str] = &[
        "calls",
        "to_apply",
        "body",
        "condition",
        "branch_computations",
        "true_computation",
        "false_computation",
    ];
    let mut names = Vec::new();
    for a in ATTRS.iter().filter_map(|a| i.attribute(a)) {
        match a.computation() {
            Ok(name) => names.push(name),
            Err(_) => names.extend(a.computations().unwrap_or_default()),
        }
    }
    names
        .into_iter()
        .filter_map(|n| module.computation(n))
        .collect()
}

/// Whether `i` is a scalar op whose called computations hold only such ops (XLA's
/// `IsScalarOp`): what the analysis may evaluate.
fn is_scalar_op(module: &Module, i: &Instruction, depth: usize) -> bool {
    if is_opaque(&i.opcode) || depth > MAX_DEPTH {
        return false;
    }
    called(module, i).iter().all(|c| {
        c.instructions
            .iter()
            .all(|x| is_scalar_op(module, x, depth + 1))
    }) && is_scalar(&i.shape)
}

/// The callee of a `fusion` or a `call`.
pub(super) fn callee<'m>(module: &'m Module, i: &Instruction) -> Option<&'m Computation> {
    let attr = if i.opcode == "fusion" {
        "calls"
    } else {
        "to_apply"
    };
    module.computation(i.attribute(attr)?.computation().ok()?)
}

/// A parameter of a called computation that an output reaches: its number and the tuple
/// element read, if it is read through a `get-tuple-element`.
type Reaching = (usize, Option<usize>);

/// The parameters of `comp` that its root (element `output` of it, if given) reads (XLA's
/// `GetReachingParameters`); `None` when the way there is not scalar.
fn reaching_parameters(
    module: &Module,
    comp: &Computation,
    output: Option<usize>,
    verified: bool,
    depth: usize,
) -> Option<Vec<Reaching>> {
    let c = Comp::new(comp);
    let mut found: BTreeSet<Reaching> = BTreeSet::new();
    let mut seen: BTreeSet<(&str, Option<usize>)> = BTreeSet::new();
    let mut work = vec![(c.root()?, output)];
    while let Some((i, index)) = work.pop() {
        if !seen.insert((&i.name, index)) {
            continue;
        }
        let tuple = matches!(i.shape, Shape::Tuple(_));
        if (index.is_some() && !tuple) || (index.is_none() && !is_scalar(&i.shape)) {
            return None;
        }
        match i.opcode.as_str() {
            "parameter" => {
                found.insert((i.literal.as_deref()?.trim().parse().ok()?, index));
            }
            "tuple" => work.push((c.operand(i, index?)?, None)),
            "get-tuple-element" => work.push((c.operand(i, 0)?, Some(tuple_index(i)?))),
            "copy" => work.push((c.operand(i, 0)?, index)),
            "fusion" | "call" => {
                if depth > MAX_DEPTH {
                    return None;
                }
                let inner = callee(module, i)?;
                for (p, k) in reaching_parameters(module, inner, index, verified, depth + 1)? {
                    work.push((c.operand(i, p)?, k));
                }
            }
            _ => {
                if index.is_some() || (!verified && !is_scalar_op(module, i, depth)) {
                    return None;
                }
                for k in 0..i.operands.len() {
                    work.push((c.operand(i, k)?, None));
                }
            }
        }
    }
    Some(found.into_iter().collect())
}

/// The elements of the tuple parameter `param` of `c` that `out` reads, through scalar ops,
/// copies, fusions and calls only (XLA's `GetGTEDependenceIndices`); else why not.
pub(super) fn element_dependence(
    module: &Module,
    c: &Comp<'_>,
    out: &Instruction,
    param: &Instruction,
) -> Result<BTreeSet<usize>, String> {
    let mut found = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut work = vec![out];
    let undefined = |o: &str| format!("`%{o}` is not defined");
    while let Some(i) = work.pop() {
        if !seen.insert(i.name.as_str()) {
            continue;
        }
        let operand = |k: usize| {
            let o = i.operands.get(k).map_or("", String::as_str);
            c.get(o).ok_or_else(|| undefined(o))
        };
        match i.opcode.as_str() {
            _ if i.name == param.name => {
                return Err(format!("it reads the whole state `%{}`", i.name))
            }
            "parameter" => return Err(format!("it reads parameter `%{}`", i.name)),
            "get-tuple-element" => {
                if !is_scalar(&i.shape) {
                    return Err(format!("it reads `%{}`, which is not a scalar", i.name));
                }
                let mut t = operand(0)?;
                while t.opcode == "copy" {
                    t = c.operand(t, 0).ok_or_else(|| undefined(&t.name))?;
                }
                let index = tuple_index(i).ok_or_else(|| format!("`%{}` has no index", i.name))?;
                if t.name == param.name {
                    found.insert(index);
                } else if t.opcode == "tuple" {
                    for k in 0..t.operands.len() {
                        work.push(c.operand(t, k).ok_or_else(|| undefined(&t.name))?);
                    }
                } else if matches!(t.opcode.as_str(), "fusion" | "call") {
                    called_elements(
                        module,
                        c,
                        t,
                        param,
                        Some(index),
                        false,
                        &mut work,
                        &mut found,
                    )?;
                } else {
                    return Err(format!("it reads `%{}` of `%{}`", i.name, t.name));
                }
            }
            "copy" => work.push(operand(0)?),
            "fusion" | "call" if is_scalar_op(module, i, 0) => {
                called_elements(module, c, i, param, None, true, &mut work, &mut found)?;
            }
            _ if !is_scalar_op(module, i, 0) => {
                return Err(format!(
                    "it reads `%{}` (`{}`), which is not a scalar op",
                    i.name, i.opcode
                ))
            }
            _ => {
                for k in 0..i.operands.len() {
                    work.push(operand(k)?);
                }
            }
        }
    }
    if found.is_empty() {
        return Err("it reads no element of the loop state".to_string());
    }
    Ok(found)
}

/// For a `fusion` or `call` `caller` in `c`: the elements of `param` its output (element
/// `output`) reads, into `found`, and its scalar operands into `work` (XLA's
/// `ProcessCalledComputation`).
#[allow(clippy::too_many_arguments)] // XLA's helper's own arguments, kept for the comparison.
fn called_elements<'m>(
    module: &Module,
    c: &Comp<'m>,
    caller: &Instruction,
    param: &Instruction,
    output: Option<usize>,
    verified: bool,
    work: &mut Vec<&'m Instruction>,
    found: &mut BTreeSet<usize>,
) -> Result<(), String> {
    let not_scalar = || {
        format!(
            "it reads `%{}`, which does not compute scalars",
            caller.name
        )
    };
    let inner = callee(module, caller).ok_or_else(not_scalar)?;
    for (p, k) in reaching_parameters(module, inner, output, verified, 0).ok_or_else(not_scalar)? {
        let mut arg = c.operand(caller, p).ok_or_else(not_scalar)?;
        match k {
            Some(k) => {
                while arg.opcode == "copy" {
                    arg = c.operand(arg, 0).ok_or_else(not_scalar)?;
                }
                if arg.name != param.name {
                    return Err(not_scalar());
                }
                found.insert(k);
            }
            None => work.push(arg),
        }
    }
    Ok(())
}
