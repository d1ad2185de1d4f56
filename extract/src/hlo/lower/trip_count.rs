//! Trip counts of `while` loops read from the loop itself, as XLA reads them: its
//! `ComputeWhileLoopTripCount` (`xla/hlo/analysis/while_loop_analysis.cc`).
//!
//! 1. **The induction variable**: the one element of the loop state (a `tuple`) that the
//!    condition's root reads, through scalar ops, copies, fusions and calls only
//!    (`GetLoopInductionVarTupleIdx`); the body's new value of that element must read that
//!    element alone, through the same kind of ops.
//! 2. **Its initial value**: the state tuple's element (through copies and
//!    `get-tuple-element`s of `tuple`s), evaluated as XLA's evaluator does it without recursion:
//!    a constant, or one op whose operands are constants (`add(constant, constant)`,
//!    `convert(constant)`, a fusion of constants).
//! 3. **The closed form** (`MatchTrivialLoopTripCount`): the body adds a positive constant to
//!    the element and the condition is `compare(i, N), direction=LT` or `LE` with a constant
//!    `N`: `ceil((N - init) / step)`, or `floor((N - init) / step) + 1` for `LE`, 0 when the
//!    bound is already passed. (XLA's own arithmetic returns one fewer in a corner: `LT`,
//!    step above 1, a count not below the bound; here it is what the loop runs.)
//! 4. **Else a bounded evaluation**: when the condition's root and the body's update are each
//!    one op of the element and constants (any comparison direction, the constant on either
//!    side, a negative step, a `subtract`, a fusion), both are evaluated from the initial value
//!    up to 128 iterations (XLA's `max_brute_force_iters`), integer and `pred` scalars only.
//!
//! Before step 1, XLA's `WhileLoopConstantSinking` (`xla/service/while_loop_constant_sinking.cc`),
//! which XLA's pipelines run before the passes that read trip counts: an element of the state
//! that the body passes on unchanged (its root's operand is `get-tuple-element(param)` of that
//! element) and whose initial value is a scalar `constant` operand of the state `tuple` is that
//! constant wherever the condition and the body read it. XLA's GPU pipeline runs that pass in
//! one fixed-point pipeline with constant folding and the algebraic simplifier
//! (`xla/service/gpu/gpu_compiler.cc`, "simplification"), so a copy of a constant or one op of
//! constants (what step 2 evaluates) is sunk too; a longer chain is not folded here. A bound
//! or a step carried in the loop is then a constant to steps 1 to 4, as it is to XLA after
//! that pass.
//!
//! Beyond XLA's function: a condition whose root is `constant(false)` runs zero times, and a
//! `constant(true)` one never ends; a body that sets the induction variable to a constant
//! runs 0 times, once, or for ever, by the condition on the initial value and on that
//! constant (XLA bounds such a loop by 1 iteration). What fails is an [`Unknown`] that says why.
//!
//! Cost: O(instructions of the condition and the body) per loop, plus at most 129
//! evaluations of the condition and the update.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::hlo::ast::{Computation, Instruction, Module, Shape};

mod dependence;
mod evaluate;

use dependence::{callee, element_dependence};
use evaluate::{constant, evaluate, Ty, Val};

/// Iterations the bounded evaluation runs at most (XLA's `max_brute_force_iters`).
pub(crate) const MAX_EVALUATED: u64 = 128;

/// Calls nested deeper than this in an evaluated or traced computation end the analysis (a
/// computation calling itself).
const MAX_DEPTH: usize = 32;

/// Why a `while` loop's trip count could not be read from the loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// The condition's root is `constant(true)`.
    AlwaysTrue,
    /// The evaluated induction variable comes back to a value while the condition holds.
    NeverEnds { index: usize, value: i128 },
    /// The condition still holds after [`MAX_EVALUATED`] evaluated iterations.
    BeyondEvaluation {
        index: usize,
        init: i128,
        last: i128,
    },
    /// The condition is an element of the state the body computes (a flag), or the state
    /// itself; `why` says what else failed.
    DataDependent { index: Option<usize>, why: String },
    /// The condition reads several elements of the state (a bound carried in the loop).
    SeveralElements(Vec<usize>),
    /// The condition holds and reads only elements the body passes on unchanged from
    /// constants: the loop never ends.
    Invariant(Vec<usize>),
    /// The condition does not read one scalar element of the state through scalar ops.
    NoInductionVariable(String),
    /// The state is not built by a `tuple` instruction.
    StateNotTuple(String),
    /// The body's root is not a `tuple` instruction.
    BodyNotTuple(String),
    /// The body's new value of the element reads something other than that element.
    UpdateNotInduction {
        index: usize,
        at: String,
        why: String,
    },
    /// The initial value of the element is not a constant.
    InitNotConstant {
        index: usize,
        at: String,
        why: String,
    },
    /// The body's update is not one op of the element and constants.
    UpdateNotSimple { index: usize, at: String },
    /// The condition's root is not one op of the element and constants.
    BoundNotConstant { index: usize, at: String },
    /// Evaluating the condition or the update failed.
    NotEvaluable(String),
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unknown::AlwaysTrue => write!(f, "its condition is `constant(true)`: it never ends"),
            Unknown::NeverEnds { index, value } => write!(
                f,
                "it never ends: its induction variable (state element {index}) comes back \
                 to {value} while the condition holds"
            ),
            Unknown::BeyondEvaluation { index, init, last } => write!(
                f,
                "its condition still holds after {MAX_EVALUATED} evaluated iterations \
                 (XLA's limit; state element {index} went from {init} to {last}): it runs \
                 longer, or never ends"
            ),
            Unknown::DataDependent {
                index: Some(k),
                why,
            } => write!(
                f,
                "its condition is data-dependent: state element {k}, a value the body \
                 computes, not a counter against a bound ({why})"
            ),
            Unknown::DataDependent { index: None, why } => write!(
                f,
                "its condition is data-dependent: the loop state itself ({why})"
            ),
            Unknown::SeveralElements(v) => {
                let list: Vec<String> = v.iter().map(usize::to_string).collect();
                write!(
                    f,
                    "its condition reads state elements {}: no single counter against a \
                     constant bound (a bound carried in the loop is not a constant)",
                    list.join(", ")
                )
            }
            Unknown::Invariant(v) => {
                let list: Vec<String> = v.iter().map(usize::to_string).collect();
                write!(
                    f,
                    "it never ends: its condition holds and reads only state elements {}, \
                     which start from constants and the body passes on unchanged",
                    list.join(", ")
                )
            }
            Unknown::NoInductionVariable(why) => write!(
                f,
                "its condition does not read one scalar element of the loop state through \
                 scalar ops: {why}"
            ),
            Unknown::StateNotTuple(at) => write!(
                f,
                "its initial state `%{at}` is not a `tuple` instruction, where the \
                 induction variable would be"
            ),
            Unknown::BodyNotTuple(at) => {
                write!(f, "its body's root `%{at}` is not a `tuple` instruction")
            }
            Unknown::UpdateNotInduction { index, at, why } => write!(
                f,
                "the body's new value of state element {index}, `%{at}`, is not computed \
                 from that element alone through scalar ops: {why}"
            ),
            Unknown::InitNotConstant { index, at, why } => write!(
                f,
                "the initial value of its induction variable (state element {index}), \
                 `%{at}`, is not a constant: {why}"
            ),
            Unknown::UpdateNotSimple { index, at } => write!(
                f,
                "the body's update of state element {index}, `%{at}`, is not one op of \
                 that element and constants"
            ),
            Unknown::BoundNotConstant { index, at } => write!(
                f,
                "its condition `%{at}` does not compare state element {index} with \
                 constants only (the bound is not a constant)"
            ),
            Unknown::NotEvaluable(why) => write!(f, "evaluating it failed: {why}"),
        }
    }
}

/// A computation's instructions by name.
struct Comp<'m> {
    c: &'m Computation,
    by_name: BTreeMap<&'m str, &'m Instruction>,
}

impl<'m> Comp<'m> {
    fn new(c: &'m Computation) -> Self {
        let by_name = c
            .instructions
            .iter()
            .map(|i| (i.name.as_str(), i))
            .collect();
        Comp { c, by_name }
    }

    fn get(&self, name: &str) -> Option<&'m Instruction> {
        self.by_name.get(name).copied()
    }

    fn operand(&self, i: &Instruction, k: usize) -> Option<&'m Instruction> {
        self.get(i.operands.get(k)?)
    }

    fn root(&self) -> Option<&'m Instruction> {
        self.c.instructions.get(self.c.root)
    }

    /// Parameter 0 (a loop's condition and body have only that one).
    fn param0(&self) -> Option<&'m Instruction> {
        self.c
            .instructions
            .iter()
            .find(|i| i.opcode == "parameter" && i.literal.as_deref().map(str::trim) == Some("0"))
    }

    /// The only `get-tuple-element` of `param` at `index` (XLA's
    /// `hlo_query::GetUniqueGteInstruction`); `None` if there are none or several.
    fn unique_gte(&self, param: &Instruction, index: usize) -> Option<&'m Instruction> {
        let mut found = self.c.instructions.iter().filter(|i| {
            i.opcode == "get-tuple-element"
                && i.operands.first() == Some(&param.name)
                && tuple_index(i) == Some(index)
        });
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }

    /// The value of operand `name` if it is a scalar `constant` or a sunk element.
    fn constant_value(&self, name: &str, sunk: &Sunk<'_>) -> Option<Val> {
        match sunk.get(name) {
            Some(v) => Some(v.clone()),
            None => constant(self.get(name)?).ok(),
        }
    }

    /// The `get-tuple-element`s of `param` that read the elements in `values`, by name, each
    /// with its element's value.
    fn sunk(&self, param: &Instruction, values: &BTreeMap<usize, Val>) -> Sunk<'m> {
        self.c
            .instructions
            .iter()
            .filter(|i| i.opcode == "get-tuple-element" && i.operands.first() == Some(&param.name))
            .filter_map(|i| Some((i.name.as_str(), values.get(&tuple_index(i)?)?.clone())))
            .collect()
    }

    /// Follows copies and `get-tuple-element`s of `tuple`s back to where the value is made
    /// (XLA's `TraceThroughCopyAndGteTupleChain`).
    fn trace(&self, mut i: &'m Instruction) -> &'m Instruction {
        for _ in 0..self.c.instructions.len() {
            let next = match i.opcode.as_str() {
                "copy" | "copy-start" | "copy-done" => self.operand(i, 0),
                "get-tuple-element" => self
                    .operand(i, 0)
                    .filter(|t| t.opcode == "tuple")
                    .and_then(|t| self.operand(t, tuple_index(i)?)),
                _ => None,
            };
            match next {
                Some(n) => i = n,
                None => break,
            }
        }
        i
    }

    /// The one operand of `i` that is no `constant` (XLA's `NonConstantOperand`); a sunk
    /// element (in `sunk`) counts as a constant.
    fn non_constant_operand(&self, i: &Instruction, sunk: &Sunk<'_>) -> Option<&'m Instruction> {
        let mut result: Option<&'m Instruction> = None;
        for o in &i.operands {
            let x = self.get(o)?;
            if x.opcode != "constant" && !sunk.contains_key(x.name.as_str()) {
                if result.is_some_and(|r| r.name != x.name) {
                    return None;
                }
                result = Some(x);
            }
        }
        result
    }
}

/// Instructions of a loop's condition or body that read a sunk element of the state (see
/// the module docs), by name, with the element's value.
type Sunk<'m> = BTreeMap<&'m str, Val>;

/// The elements of loop `w`'s state that XLA's `WhileLoopConstantSinking` sinks, with their
/// values: the body (`bc`) passes them on unchanged, and the state `tuple` `init` of `kc`
/// starts them from a scalar `constant`, or from one op of constants that XLA's constant
/// folding (run before the sinking) makes a constant.
fn sinkable(
    module: &Module,
    kc: &Comp<'_>,
    init: &Instruction,
    bc: &Comp<'_>,
) -> BTreeMap<usize, Val> {
    let (Some(root), Some(param)) = (bc.root(), bc.param0()) else {
        return BTreeMap::new();
    };
    if root.opcode != "tuple" {
        return BTreeMap::new();
    }
    let mut out = BTreeMap::new();
    for (k, o) in root.operands.iter().enumerate() {
        let passed_on = bc.get(o).is_some_and(|g| {
            g.opcode == "get-tuple-element"
                && g.operands.first() == Some(&param.name)
                && tuple_index(g) == Some(k)
        });
        if !passed_on {
            continue;
        }
        // XLA's GPU pipeline runs constant sinking in one fixed-point "simplification"
        // pipeline with constant folding and the algebraic simplifier (`gpu_compiler.cc`),
        // which fold ops of constants and remove copies: a copy of a constant, or one op of
        // constants (what step 2 evaluates), is sunk as that constant.
        let start = kc.operand(init, k).map(|i| kc.trace(i));
        if let Some(Ok(v @ Val::Scalar(..))) =
            start.map(|i| evaluate(module, kc, i, None, &Sunk::new()))
        {
            out.insert(k, v);
        }
    }
    out
}

/// The `index=` of a `get-tuple-element`.
fn tuple_index(i: &Instruction) -> Option<usize> {
    i.attribute("index")?.integer().ok()?.try_into().ok()
}

/// The trip count of `while` loop `w` of computation `caller` (see the module docs).
pub(crate) fn analyse(
    module: &Module,
    caller: &Computation,
    w: &Instruction,
    cond: &Computation,
    body: &Computation,
) -> Result<u64, Unknown> {
    let cc = Comp::new(cond);
    let root = cc
        .root()
        .ok_or_else(|| Unknown::NoInductionVariable("the condition has no root".into()))?;
    if root.opcode == "constant" {
        // `pred[] constant(1)` is `true` to XLA's literal parser.
        return match constant(root) {
            Ok(Val::Scalar(Ty::Pred, 0)) => Ok(0),
            Ok(Val::Scalar(Ty::Pred, _)) => Err(Unknown::AlwaysTrue),
            _ => Err(Unknown::NoInductionVariable(format!(
                "its root `%{}` is a constant, not `true` or `false`",
                root.name
            ))),
        };
    }
    // A condition that is the state's flag, or the state itself: data-dependent.
    let traced = cc.trace(root);
    let param = cc.param0();
    let flag = match param {
        Some(p) if traced.name == p.name => Some(None),
        Some(p)
            if traced.opcode == "get-tuple-element" && traced.operands.first() == Some(&p.name) =>
        {
            Some(tuple_index(traced))
        }
        _ => None,
    };
    let counted = count(module, caller, w, &cc, &Comp::new(body));
    match (counted, flag) {
        (Err(e @ (Unknown::NeverEnds { .. } | Unknown::BeyondEvaluation { .. })), _) => Err(e),
        (Err(e), Some(index)) => Err(Unknown::DataDependent {
            index,
            why: e.to_string(),
        }),
        (r, _) => r,
    }
}

/// Steps 1 to 4 of the module docs, from the induction variable on.
fn count(
    module: &Module,
    caller: &Computation,
    w: &Instruction,
    cc: &Comp<'_>,
    bc: &Comp<'_>,
) -> Result<u64, Unknown> {
    let no_param = || Unknown::NoInductionVariable("the condition has no parameter".into());
    let root = cc.root().ok_or_else(no_param)?;
    let cparam = cc.param0().ok_or_else(no_param)?;
    if !matches!(cparam.shape, Shape::Tuple(_)) {
        // XLA's analysis reads an induction variable from a tuple only.
        return Err(Unknown::StateNotTuple(
            w.operands.first().cloned().unwrap_or_default(),
        ));
    }
    let indices =
        element_dependence(module, cc, root, cparam).map_err(Unknown::NoInductionVariable)?;
    let kc = Comp::new(caller);
    let init = kc
        .operand(w, 0)
        .ok_or_else(|| Unknown::StateNotTuple(w.operands.first().cloned().unwrap_or_default()))?;
    if init.opcode != "tuple" {
        return Err(Unknown::StateNotTuple(init.name.clone()));
    }
    let sinkable = sinkable(module, &kc, init, bc);
    if indices.iter().all(|k| sinkable.contains_key(k)) {
        return invariant_condition(module, cc, root, cparam, &sinkable, indices);
    }
    let index = match indices
        .iter()
        .filter(|k| !sinkable.contains_key(k))
        .collect::<Vec<_>>()[..]
    {
        [&k] => k,
        _ => return Err(Unknown::SeveralElements(indices.into_iter().collect())),
    };
    let parts = Parts {
        kc: &kc,
        cc,
        bc,
        init,
        cparam,
        sinkable: &sinkable,
    };
    if let Err(done) = induction_update(module, &parts, index) {
        return done;
    }
    let start = kc
        .operand(init, index)
        .map(|i| kc.trace(i))
        .ok_or_else(|| Unknown::StateNotTuple(init.name.clone()))?;
    let value = evaluate(module, &kc, start, None, &Sunk::new()).map_err(|why| {
        Unknown::InitNotConstant {
            index,
            at: start.name.clone(),
            why,
        }
    })?;
    let bparam = bc.param0().ok_or_else(no_param)?;
    let sunk = Sunks {
        cond: cc.sunk(cparam, &sinkable),
        body: bc.sunk(bparam, &sinkable),
    };
    if let Some(n) = closed_form(cc, bc, index, &value, &sunk) {
        return Ok(n);
    }
    brute_force(module, cc, bc, index, value, &sunk)
}

/// A loop's caller (`kc`), condition and body, initial state `tuple`, the condition's
/// parameter and the elements XLA would sink.
struct Parts<'a, 'm> {
    kc: &'a Comp<'m>,
    cc: &'a Comp<'m>,
    bc: &'a Comp<'m>,
    init: &'m Instruction,
    cparam: &'m Instruction,
    sinkable: &'a BTreeMap<usize, Val>,
}

/// Checks that the body's new value of element `index` reads that element alone (and sunk
/// elements); else `Err` with what [`count`] returns: a body that sets it to a constant is
/// counted by [`constant_update`], anything else is [`Unknown::UpdateNotInduction`].
fn induction_update(
    module: &Module,
    p: &Parts<'_, '_>,
    index: usize,
) -> Result<(), Result<u64, Unknown>> {
    let bc = p.bc;
    let broot = bc
        .root()
        .ok_or_else(|| Err(Unknown::BodyNotTuple(String::new())))?;
    if broot.opcode != "tuple" {
        return Err(Err(Unknown::BodyNotTuple(broot.name.clone())));
    }
    let update = bc
        .operand(broot, index)
        .ok_or_else(|| Err(Unknown::BodyNotTuple(broot.name.clone())))?;
    let inc = bc.trace(update);
    let no_param = || {
        Err(Unknown::NoInductionVariable(
            "the body has no parameter".into(),
        ))
    };
    let bparam = bc.param0().ok_or_else(no_param)?;
    let not_induction = |why: String| Unknown::UpdateNotInduction {
        index,
        at: inc.name.clone(),
        why,
    };
    match element_dependence(module, bc, inc, bparam) {
        Ok(s)
            if s.contains(&index)
                && s.iter().all(|k| *k == index || p.sinkable.contains_key(k)) =>
        {
            Ok(())
        }
        Ok(s) => {
            let list: Vec<String> = s.iter().map(usize::to_string).collect();
            Err(Err(not_induction(format!(
                "it reads state elements {}",
                list.join(", ")
            ))))
        }
        Err(why) => {
            let csunk = p.cc.sunk(p.cparam, p.sinkable);
            Err(
                constant_update(module, p.kc, p.cc, p.init, index, inc, &csunk)
                    .unwrap_or(Err(not_induction(why))),
            )
        }
    }
}

/// The trip count of a loop whose condition reads only sunk elements (`indices`, all in
/// `sinkable`): it holds for ever or not at all, so 0 or a loop that never ends.
fn invariant_condition(
    module: &Module,
    cc: &Comp<'_>,
    root: &Instruction,
    cparam: &Instruction,
    sinkable: &BTreeMap<usize, Val>,
    indices: BTreeSet<usize>,
) -> Result<u64, Unknown> {
    let indices: Vec<usize> = indices.into_iter().collect();
    match evaluate(module, cc, root, None, &cc.sunk(cparam, sinkable)) {
        Ok(Val::Scalar(Ty::Pred, 0)) => Ok(0),
        Ok(Val::Scalar(Ty::Pred, _)) => Err(Unknown::Invariant(indices)),
        _ => Err(Unknown::SeveralElements(indices)),
    }
}

/// A body that sets the induction variable (element `index`) to a `constant` `inc`: the loop
/// runs 0 times if the condition fails on the initial value, once if it fails on that
/// constant, and never ends otherwise (`csunk`: the condition's sunk elements). XLA's
/// `ComputeWhileLoopTripCount` reads no count here
/// (its `ComputeWhileLoopTripCountUpperBound` gives 1, and `WhileLoopSimplifier` then turns
/// the loop into a conditional); with a constant initial value the count is exact. `None`
/// when the initial value or the condition cannot be evaluated.
fn constant_update(
    module: &Module,
    kc: &Comp<'_>,
    cc: &Comp<'_>,
    init: &Instruction,
    index: usize,
    inc: &Instruction,
    csunk: &Sunk<'_>,
) -> Option<Result<u64, Unknown>> {
    if inc.opcode != "constant" {
        return None;
    }
    let start = kc.trace(kc.operand(init, index)?);
    let first = evaluate(module, kc, start, None, &Sunk::new()).ok()?;
    let then = constant(inc).ok()?;
    let root = cc.root()?;
    let cvar = cc.non_constant_operand(root, csunk)?;
    if cvar.name != cc.unique_gte(cc.param0()?, index)?.name {
        return None;
    }
    let holds = |v: &Val| match evaluate(module, cc, root, Some((&cvar.name, v)), csunk) {
        Ok(Val::Scalar(Ty::Pred, x)) => Some(x != 0),
        _ => None,
    };
    Some(match (holds(&first)?, holds(&then)?) {
        (false, _) => Ok(0),
        (true, false) => Ok(1),
        (true, true) => Err(Unknown::NeverEnds {
            index,
            value: then.int().unwrap_or_default(),
        }),
    })
}

/// The sunk elements of a loop's condition and body.
struct Sunks<'m> {
    cond: Sunk<'m>,
    body: Sunk<'m>,
}

/// XLA's `MatchTrivialLoopTripCount` (step 3 of the module docs), `None` when the loop is
/// not of that form.
fn closed_form(
    cc: &Comp<'_>,
    bc: &Comp<'_>,
    index: usize,
    init: &Val,
    sunk: &Sunks<'_>,
) -> Option<u64> {
    let init = init.int()?;
    let update = bc.trace(bc.operand(bc.root()?, index)?);
    let var = bc.non_constant_operand(update, &sunk.body)?;
    if bc.trace(var).name != bc.unique_gte(bc.param0()?, index)?.name || update.opcode != "add" {
        return None;
    }
    let step_at = update.operands.iter().find(|o| **o != var.name)?;
    let step = bc.constant_value(step_at, &sunk.body)?.int()?;
    if step <= 0 {
        return None;
    }
    let root = cc.root()?;
    let cvar = cc.non_constant_operand(root, &sunk.cond)?;
    if cvar.name != cc.unique_gte(cc.param0()?, index)?.name
        || root.opcode != "compare"
        || root.operands.len() != 2
        || root.operands[0] != cvar.name
    {
        return None;
    }
    let bound = cc.constant_value(&root.operands[1], &sunk.cond)?.int()?;
    let n = match root.attribute("direction")?.value.trim() {
        "LT" if bound <= init => 0,
        "LT" => (bound - init + step - 1) / step,
        "LE" if bound < init => 0,
        "LE" => (bound - init) / step + 1,
        _ => return None,
    };
    u64::try_from(n).ok()
}

/// Step 4 of the module docs: the condition and the update evaluated from `value` up to
/// [`MAX_EVALUATED`] iterations.
fn brute_force(
    module: &Module,
    cc: &Comp<'_>,
    bc: &Comp<'_>,
    index: usize,
    mut value: Val,
    sunk: &Sunks<'_>,
) -> Result<u64, Unknown> {
    let update = bc
        .root()
        .and_then(|r| bc.operand(r, index))
        .ok_or_else(|| Unknown::BodyNotTuple(String::new()))?;
    let var = bc
        .non_constant_operand(update, &sunk.body)
        .zip(bc.param0().and_then(|p| bc.unique_gte(p, index)))
        .filter(|(v, g)| v.name == g.name)
        .map(|(v, _)| v)
        .ok_or_else(|| Unknown::UpdateNotSimple {
            index,
            at: update.name.clone(),
        })?;
    let root = cc
        .root()
        .ok_or_else(|| Unknown::NotEvaluable("no root".into()))?;
    let cvar = cc
        .non_constant_operand(root, &sunk.cond)
        .zip(cc.param0().and_then(|p| cc.unique_gte(p, index)))
        .filter(|(v, g)| v.name == g.name)
        .map(|(v, _)| v)
        .ok_or_else(|| Unknown::BoundNotConstant {
            index,
            at: root.name.clone(),
        })?;
    let init = value.int().unwrap_or_default();
    let mut seen = BTreeSet::new();
    for trips in 0..=MAX_EVALUATED {
        let v = value.int().unwrap_or_default();
        if !seen.insert(v) {
            return Err(Unknown::NeverEnds { index, value: v });
        }
        let go = evaluate(module, cc, root, Some((&cvar.name, &value)), &sunk.cond)
            .map_err(Unknown::NotEvaluable)?;
        match go {
            Val::Scalar(Ty::Pred, 0) => return Ok(trips),
            Val::Scalar(Ty::Pred, _) => {}
            _ => {
                return Err(Unknown::NotEvaluable(format!(
                    "`%{}` is not a `pred`",
                    root.name
                )))
            }
        }
        value = evaluate(module, bc, update, Some((&var.name, &value)), &sunk.body)
            .map_err(Unknown::NotEvaluable)?;
    }
    Err(Unknown::BeyondEvaluation {
        index,
        init,
        last: value.int().unwrap_or_default(),
    })
}
