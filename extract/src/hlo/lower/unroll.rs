//! `while` loops: unrolled when the trip count is known (from the options
//! ([`ImportOptions::trip_counts`]), from `backend_config` or read from the loop as XLA reads
//! it ([`super::trip_count`])); a loop too long to unroll is kept as one iteration costed
//! `n` times.

use std::collections::BTreeSet;

use concerto_graph::OpKind;

use super::trip_count::{analyse, Unknown};
use super::{ImportOptions, Lowerer, Value};
use crate::hlo::ast::{Computation, Instruction, Module};
use crate::hlo::HloError;

impl<'m> Lowerer<'m> {
    /// Lowers `while` loop `i` from its initial state `init`: unrolled (iteration `k`'s ops
    /// named `<loop>.it<k>.<name>`), or kept (see [`Lowerer::kept_loop`]) when unrolling
    /// would pass [`ImportOptions::max_unrolled`]; returns the final state (the value of the
    /// last iteration's root, or `init` after zero iterations).
    pub(super) fn while_loop(
        &mut self,
        i: &Instruction,
        init: Value,
        prefix: &str,
    ) -> Result<Value, HloError> {
        let body = self.called(i, "body")?;
        let cond = self.called(i, "condition")?;
        let count = trip_count(self.module, self.options, i, cond, body).map_err(|why| {
            self.error(
                i,
                format!(
                    "while loop `%{0}` has no known trip count: {why}; give it with \
                     `--trip-count {0}=N` (ImportOptions::trip_counts), or the count of \
                     every such loop with `--unknown-trip-count N`",
                    i.name
                ),
            )
        })?;
        let n = count.n;
        if let Some(why) = &count.unread {
            self.warn(
                &format!("unknown-trip-count {}", i.name),
                format!(
                    "while loop `%{}` has no known trip count ({why}): counted as {n} \
                     iteration(s), the --unknown-trip-count given",
                    i.name
                ),
            );
        }
        if self.depth >= 64 {
            return Err(self.error(
                i,
                "while loops nest more than 64 deep (or a body calls itself)",
            ));
        }
        let per_iter = body.instructions.len().max(1);
        if keeps_loop(n, per_iter, self.added, self.options) {
            return self.kept_loop(i, body, init, prefix, n);
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

    /// A loop of `n` iterations too long to unroll, kept: its body lowered once (ops named
    /// `<loop>.body.<name>`), each op costing `n` times its own: a compute op `n` times its
    /// flops and bytes, a collective `n` times its bytes. The total work is the loop's; what
    /// is lost is that the per-kernel floor and a collective's latency count once, not `n`
    /// times (an under-estimate for loops of small kernels), and that the scheduler sees one
    /// long op where the loop interleaves `n` short ones. A warning names the loop.
    fn kept_loop(
        &mut self,
        i: &Instruction,
        body: &'m Computation,
        init: Value,
        prefix: &str,
        n: u64,
    ) -> Result<Value, HloError> {
        let first = self.ops.len();
        self.depth += 1;
        let p = format!("{prefix}{}.body.", i.name);
        let state = self.computation(body, std::slice::from_ref(&init), &p);
        self.depth -= 1;
        let state = state?;
        let mut collectives = 0;
        for (op, _) in &mut self.ops[first..] {
            match &mut op.kind {
                OpKind::Compute { flops, bytes, .. } => {
                    *flops = flops.saturating_mul(n);
                    *bytes = bytes.saturating_mul(n);
                }
                OpKind::Collective { bytes, .. } => {
                    *bytes = bytes.saturating_mul(n);
                    collectives += 1;
                }
            }
        }
        self.warn(
            &format!("kept loop {prefix}{}", i.name),
            format!(
                "while loop `%{}` runs {n} iterations, more than ImportOptions::max_unrolled \
                 ({}) allows to unroll: kept as one iteration (`{p}*`, {} ops, {collectives} \
                 of them collectives) whose ops cost {n} times theirs; launch and collective \
                 latencies count once, and the exporter cannot write it",
                i.name,
                self.options.max_unrolled,
                self.ops.len() - first,
            ),
        );
        Ok(state)
    }
}

/// Whether a loop of `n` iterations of `per_iter` instructions, after `added` ops, is kept
/// rather than unrolled: when unrolling would add more than [`ImportOptions::max_unrolled`]
/// instructions. O(1).
pub(crate) fn keeps_loop(n: u64, per_iter: usize, added: usize, options: &ImportOptions) -> bool {
    usize::try_from(n)
        .unwrap_or(usize::MAX)
        .saturating_mul(per_iter)
        .saturating_add(added)
        > options.max_unrolled
}

/// A loop's trip count, and why it could not be read when it is
/// [`ImportOptions::unknown_trip_count`]'s.
#[derive(Clone, Debug)]
pub(crate) struct TripCount {
    /// Iterations.
    pub(crate) n: u64,
    /// Why the loop's count could not be read, when `n` is the option's.
    pub(crate) unread: Option<Unknown>,
}

/// The trip count of `while` loop `i` (condition `cond`, body `body`): from
/// [`ImportOptions::trip_counts`] by the loop's name, else from `backend_config`'s
/// `known_trip_count`, else read from the loop as XLA reads it ([`analyse`]), else
/// [`ImportOptions::unknown_trip_count`]; otherwise why it could not be read. The exporter
/// ([`crate::hlo::export`]) unrolls with the same count as the import. Cost: O(instructions
/// of the module) to find the loop's computation, plus [`analyse`]'s.
pub(crate) fn trip_count(
    module: &Module,
    options: &ImportOptions,
    i: &Instruction,
    cond: &Computation,
    body: &Computation,
) -> Result<TripCount, Unknown> {
    let read = |n| TripCount { n, unread: None };
    if let Some(&n) = options.trip_counts.get(&i.name) {
        return Ok(read(n));
    }
    if let Some(n) = known_trip_count(i) {
        return Ok(read(n));
    }
    let caller = module
        .computations
        .iter()
        .find(|c| c.instructions.iter().any(|x| std::ptr::eq(x, i)))
        .ok_or_else(|| Unknown::StateNotTuple(i.operands.first().cloned().unwrap_or_default()))?;
    match (
        analyse(module, caller, i, cond, body),
        options.unknown_trip_count,
    ) {
        (Ok(n), _) => Ok(read(n)),
        (Err(why), Some(n)) => Ok(TripCount {
            n,
            unread: Some(why),
        }),
        (Err(why), None) => Err(why),
    }
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
