//! JSON shapes shared by `optimize`, `decompose` and `bench graphs|ablation`: the rendering of
//! the pipeline's typed reports. Every key here is part of the command line's interface.

use concerto_pipeline::{Optimized, Scheduler};
use serde::Serialize;

/// One decomposition in JSON reports (the pipeline's summary, serialised as it is).
pub(crate) type DecompositionJson = concerto_pipeline::DecompositionSummary;

/// The keys every optimisation report shares (`concerto optimize --json`, the rows of
/// `concerto bench graphs --json`): concerto's plan against the baselines and the bound.
#[derive(Serialize)]
pub(crate) struct ComparisonJson {
    pub(crate) ops: usize,
    pub(crate) collectives: usize,
    pub(crate) lower_bound_ns: u64,
    pub(crate) program_order_ns: u64,
    pub(crate) lhs_ns: u64,
    pub(crate) inductor_ns: u64,
    pub(crate) optimized_ns: u64,
    pub(crate) exposed_comm_ns: u64,
    pub(crate) peak_memory_bytes: u64,
}

impl ComparisonJson {
    pub(crate) fn of(r: &Optimized) -> Self {
        let get = |s: Scheduler| r.get(s).map_or(0, |s| s.makespan_ns());
        let c = r.concerto();
        Self {
            ops: r.ops,
            collectives: r.collectives,
            lower_bound_ns: r.lower_bound_ns,
            program_order_ns: get(Scheduler::ProgramOrder),
            lhs_ns: get(Scheduler::Lhs),
            inductor_ns: get(Scheduler::Inductor),
            optimized_ns: c.makespan_ns(),
            exposed_comm_ns: c.exposed_comm_ns,
            peak_memory_bytes: c.peak_memory_bytes,
        }
    }
}

/// Milliseconds with three decimals.
pub(crate) fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// `a` relative to `b`, signed percent (`-` when `b` is 0).
pub(crate) fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:+.1}%", (a as f64 / b as f64 - 1.0) * 100.0)
    }
}

/// `candidate` vs `reference`, positive when shorter (percent).
pub(crate) fn gain_pct(reference: u64, candidate: u64) -> f64 {
    if reference == 0 {
        0.0
    } else {
        (1.0 - candidate as f64 / reference as f64) * 100.0
    }
}
