//! `while` loops: unrolled when the trip count is known, from the options
//! ([`ImportOptions::trip_counts`]), from `backend_config` or from the loop pattern.

use std::collections::BTreeSet;

use super::{ImportOptions, Lowerer, Value};
use crate::hlo::ast::{Computation, Instruction, Module};
use crate::hlo::HloError;

impl<'m> Lowerer<'m> {
    /// Unrolls `while` loop `i` from its initial state `init`; returns the final state (the
    /// value of the last iteration's root, or `init` after zero iterations).
    pub(super) fn while_loop(
        &mut self,
        i: &Instruction,
        init: Value,
        prefix: &str,
    ) -> Result<Value, HloError> {
        let body = self.called(i, "body")?;
        let cond = self.called(i, "condition")?;
        let n = trip_count(self.module, self.options, i, cond, body).ok_or_else(|| {
            self.error(
                i,
                format!(
                    "while loop `%{0}` has no known trip count (no backend_config \
                     known_trip_count and no `i < N` counter pattern): give it with \
                     `--trip-count {0}=N` (ImportOptions::trip_counts)",
                    i.name
                ),
            )
        })?;
        let per_iter = body.instructions.len().max(1);
        if (n as usize)
            .saturating_mul(per_iter)
            .saturating_add(self.added)
            > self.options.max_unrolled
        {
            return Err(self.error(
                i,
                format!("unrolling {n} iterations of {per_iter} instructions is too large"),
            ));
        }
        if self.depth >= 64 {
            return Err(self.error(
                i,
                "while loops nest more than 64 deep (or a body calls itself)",
            ));
        }
        self.depth += 1;
        let mut state = init;
        for it in 0..n {
            let p = format!("{prefix}{}.it{it}.", i.name);
            match self.computation(body, std::slice::from_ref(&state), &p) {
                Ok(s) => state = s,
                Err(e) => {
                    self.depth -= 1;
                    return Err(e);
                }
            }
        }
        self.depth -= 1;
        Ok(state)
    }
}

/// The trip count of `while` loop `i` (condition `cond`, body `body`): from
/// [`ImportOptions::trip_counts`] by the loop's name, else from `backend_config`'s
/// `known_trip_count`, else from the `i < N` counter pattern; `None` when none gives one.
/// The exporter ([`crate::hlo::export`]) unrolls with the same count as the import.
pub(crate) fn trip_count(
    module: &Module,
    options: &ImportOptions,
    i: &Instruction,
    cond: &Computation,
    body: &Computation,
) -> Option<u64> {
    options
        .trip_counts
        .get(&i.name)
        .copied()
        .or_else(|| known_trip_count(i))
        .or_else(|| loop_pattern_trip_count(module, i, cond, body))
}

/// Checks that every name of [`ImportOptions::trip_counts`] is a `while` instruction of
/// `module` (in any computation); the error names the first that is not, and lists the
/// module's loops. O(instructions).
pub(crate) fn check_trip_counts(module: &Module, options: &ImportOptions) -> Result<(), HloError> {
    if options.trip_counts.is_empty() {
        return Ok(());
    }
    let all = || module.computations.iter().flat_map(|c| &c.instructions);
    let loops: BTreeSet<&str> = all()
        .filter(|i| i.opcode == "while")
        .map(|i| i.name.as_str())
        .collect();
    let Some(name) = options
        .trip_counts
        .keys()
        .find(|n| !loops.contains(n.as_str()))
    else {
        return Ok(());
    };
    let listed: Vec<String> = loops.iter().take(10).map(|l| format!("`%{l}`")).collect();
    let known = match loops.len() {
        0 => "it has no while loop".to_string(),
        n if n > listed.len() => format!("its while loops: {}, ...", listed.join(", ")),
        _ => format!("its while loops: {}", listed.join(", ")),
    };
    let (line, what) = match all().find(|i| i.name == *name) {
        Some(i) => (i.pos.line, format!("`{}`, not `while`", i.opcode)),
        None => (
            module.entry().pos.line,
            "no instruction of the module".to_string(),
        ),
    };
    Err(HloError::Lowering {
        line,
        instruction: name.clone(),
        message: format!("a trip count is given for `%{name}`, which is {what} ({known})"),
    })
}

/// The trip count `backend_config` states (`known_trip_count`), if any.
fn known_trip_count(i: &Instruction) -> Option<u64> {
    let cfg = i.attribute("backend_config")?;
    let text = cfg.string().ok()?;
    let at = text.find("known_trip_count")?;
    let rest = &text[at..];
    let n_at = rest.find("\"n\"")?;
    let digits: String = rest[n_at + 3..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `i < N` with `i` a tuple element that starts at constant 0 and grows by 1 per iteration.
fn loop_pattern_trip_count(
    module: &Module,
    w: &Instruction,
    cond: &Computation,
    body: &Computation,
) -> Option<u64> {
    let find = |c: &'_ Computation, name: &str| -> Option<usize> {
        c.instructions.iter().position(|x| x.name == name)
    };
    let root = cond.instructions.get(cond.root)?;
    if root.opcode != "compare" || root.attribute("direction")?.value.trim() != "LT" {
        return None;
    }
    let lhs = &cond.instructions[find(cond, root.operands.first()?)?];
    let rhs = &cond.instructions[find(cond, root.operands.get(1)?)?];
    if lhs.opcode != "get-tuple-element" || rhs.opcode != "constant" {
        return None;
    }
    let index = lhs.attribute("index")?.integer().ok()? as usize;
    let limit: u64 = rhs.literal.as_deref()?.trim().parse().ok()?;
    // The initial tuple in the caller: element `index` must be constant 0.
    let caller = module
        .computations
        .iter()
        .find(|c| c.instructions.iter().any(|x| std::ptr::eq(x, w)))?;
    let init = &caller.instructions[find(caller, w.operands.first()?)?];
    if init.opcode != "tuple" {
        return None;
    }
    let start = &caller.instructions[find(caller, init.operands.get(index)?)?];
    if start.opcode != "constant" || start.literal.as_deref()?.trim() != "0" {
        return None;
    }
    // The body's root tuple element `index` must be `gte(param, index) + constant 1`.
    let broot = body.instructions.get(body.root)?;
    let next = &body.instructions[find(body, broot.operands.get(index)?)?];
    if next.opcode != "add" {
        return None;
    }
    let is_one = |name: &str| {
        find(body, name).is_some_and(|k| {
            let x = &body.instructions[k];
            x.opcode == "constant" && x.literal.as_deref().map(str::trim) == Some("1")
        })
    };
    let is_counter = |name: &str| {
        find(body, name).is_some_and(|k| {
            let x = &body.instructions[k];
            x.opcode == "get-tuple-element"
                && x.attribute("index").and_then(|a| a.integer().ok()) == Some(index as i64)
        })
    };
    let (a, b) = (next.operands.first()?, next.operands.get(1)?);
    if (is_counter(a) && is_one(b)) || (is_counter(b) && is_one(a)) {
        Some(limit)
    } else {
        None
    }
}
