//! What a graph leaves exposed, and which decompositions could hide it: the diagnostics behind
//! `concerto decompose`.

use concerto_decomp::critical::critical;
use concerto_decomp::select::{evaluate, tried, Scored, SelectConfig};
use std::time::Instant;

use concerto_graph::{Graph, Hardware, OpKind};
use serde::Serialize;

use crate::error::PipelineError;
use crate::pipeline::Pipeline;
use crate::schedule::Optimized;
use crate::summary::{gain_pct, DecompositionSummary};
use concerto_decomp::select::Selected;

/// A collective that the best baseline schedule leaves exposed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CriticalCollective {
    /// Its name in the graph.
    pub name: String,
    /// `all-reduce`, `all-gather`, ... (`compute` never: only collectives are critical).
    pub kind: String,
    /// Bytes it moves.
    pub bytes: u64,
    /// Its simulated duration (ns).
    pub duration_ns: u64,
    /// Nanoseconds of its run with no compute beside it.
    pub exposed_ns: u64,
}

/// The best baseline's simulated makespan on `graph` and the collectives exposed for at least
/// `threshold` (a fraction) of it, most exposed first ([`concerto_decomp::critical`]). Cost:
/// three baselines and their simulations, then O(ops log ops).
pub fn critical_collectives(
    graph: &Graph,
    hardware: &Hardware,
    threshold: f64,
) -> Result<(u64, Vec<CriticalCollective>), PipelineError> {
    let (baseline_ns, timeline) = evaluate(graph, hardware)?;
    let list = critical(graph, &timeline, threshold)
        .into_iter()
        .map(|c| {
            let op = graph.op(c.op);
            let (kind, bytes) = match &op.kind {
                OpKind::Collective { kind, bytes, .. } => (kind.as_str(), *bytes),
                OpKind::Compute { .. } => ("compute", op.output_bytes()),
            };
            CriticalCollective {
                name: op.name.clone(),
                kind: kind.to_string(),
                bytes,
                duration_ns: timeline.end[c.op.0] - timeline.start[c.op.0],
                exposed_ns: c.exposed_ns,
            }
        })
        .collect();
    Ok((baseline_ns, list))
}

/// Every decomposition candidate the selection tries around the critical collectives, each
/// evaluated alone (gaining or not), with the input's evaluated makespan
/// ([`concerto_decomp::select::tried`]).
pub fn candidates_tried(
    graph: &Graph,
    hardware: &Hardware,
    config: &SelectConfig,
) -> Result<(u64, Vec<Scored>), PipelineError> {
    Ok(tried(graph, hardware, config)?)
}

/// A decomposition chosen, with its evaluated effect.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChosenSummary {
    /// What it is.
    #[serde(flatten)]
    pub decomposition: DecompositionSummary,
    /// Evaluated makespan before it (ns).
    pub before_ns: u64,
    /// Evaluated makespan after it (ns).
    pub after_ns: u64,
}

/// A candidate tried, evaluated alone.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CandidateSummary {
    /// The collective.
    pub collective: String,
    /// `split` or `collective-matmul`.
    pub family: &'static str,
    /// `rows/4`, `ring/8`.
    pub label: String,
    /// Ops in its context.
    pub context_ops: usize,
    /// Its evaluated makespan (ns).
    pub evaluated_ns: u64,
    /// Evaluated gain over the best baseline, percent (negative: longer).
    pub gain_pct: f64,
}

/// One S+AD run of [`sweep_row`]: the selection under one split slowdown and its schedule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepRow {
    /// `measured` or the factor as written.
    pub label: String,
    /// `None` for the measured tables.
    pub slowdown: Option<f64>,
    /// The decompositions chosen.
    pub decompositions: Vec<ChosenSummary>,
    /// `2x3, 4x1`: each chunk count and how many decompositions use it.
    pub n_values: String,
    /// Evaluated makespan before the selection (ns).
    pub evaluated_before_ns: u64,
    /// Evaluated makespan after it (ns).
    pub evaluated_after_ns: u64,
    /// S (ns).
    pub optimized_ns: u64,
    /// S+AD as the pipeline reports it: the rewritten graph's makespan when not longer than
    /// S, else S.
    pub decomposed_ns: u64,
    /// The rewritten graph's makespan, kept or not (`None` when nothing was chosen).
    pub rewritten_ns: Option<u64>,
    /// Ops of the graph S+AD reports.
    pub decomposed_ops: usize,
    /// S+AD vs S, positive when shorter (percent).
    pub ad_gain_pct: f64,
    /// Selection plus scheduling (s).
    pub time_s: f64,
}

/// `2x3, 4x1`: each chunk count of `s` and how many decompositions use it, or `-`.
pub fn n_values(s: &Selected) -> String {
    let mut counts = std::collections::BTreeMap::<u32, usize>::new();
    for d in &s.decompositions {
        *counts.entry(d.n).or_default() += 1;
    }
    if counts.is_empty() {
        return "-".into();
    }
    counts
        .iter()
        .map(|(n, k)| format!("{n}x{k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The S+AD step of `pipeline` on `graph` with the split slowdown `slowdown` (`None`: the
/// measured tables), against `s` (the S step of the same graph).
pub fn sweep_row(
    pipeline: &Pipeline,
    graph: &Graph,
    s: &Optimized,
    label: String,
    slowdown: Option<f64>,
) -> Result<SweepRow, PipelineError> {
    let began = Instant::now();
    let mut p = pipeline.clone();
    p.config.select.slowdown = slowdown;
    let s_ns = s.concerto().makespan_ns();
    let d = p.decompose(graph, s_ns)?;
    let ops = match &d.schedule {
        Some(o) if d.kept => o.ops,
        _ => s.ops,
    };
    Ok(SweepRow {
        label,
        slowdown,
        decompositions: d
            .selected
            .decompositions
            .iter()
            .map(|x| ChosenSummary {
                decomposition: DecompositionSummary::of(x),
                before_ns: x.before_ns,
                after_ns: x.after_ns,
            })
            .collect(),
        n_values: n_values(&d.selected),
        evaluated_before_ns: d.selected.before_ns,
        evaluated_after_ns: d.selected.after_ns,
        optimized_ns: s_ns,
        decomposed_ns: d.makespan_ns,
        rewritten_ns: d.schedule.as_ref().map(|o| o.concerto().makespan_ns()),
        decomposed_ops: ops,
        ad_gain_pct: gain_pct(s_ns, d.makespan_ns),
        time_s: began.elapsed().as_secs_f64(),
    })
}

/// What `concerto decompose` reports on one graph: the critical collectives, optionally every
/// candidate tried, the decompositions chosen and S vs S+AD.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DecomposeReport {
    /// The graph's name.
    pub graph: String,
    /// The hardware profile.
    pub hardware: String,
    /// Compute slowdown while a collective runs.
    pub contention: f64,
    /// Ops in the graph.
    pub ops: usize,
    /// Collectives in the graph.
    pub collectives: usize,
    /// The split slowdown (`None`: measured tables).
    pub slowdown: Option<f64>,
    /// The best baseline's makespan (ns).
    pub baseline_ns: u64,
    /// Exposed fraction from which a collective is critical.
    pub threshold: f64,
    /// The critical collectives, most exposed first.
    pub critical: Vec<CriticalCollective>,
    /// Every candidate tried, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<CandidateSummary>>,
    /// The decompositions chosen.
    pub decompositions: Vec<ChosenSummary>,
    /// `2x3, 4x1`.
    pub n_values: String,
    /// Evaluated makespan before the selection (ns).
    pub evaluated_before_ns: u64,
    /// Evaluated makespan after it (ns).
    pub evaluated_after_ns: u64,
    /// S (ns).
    pub optimized_ns: u64,
    /// S+AD as reported (never above S).
    pub decomposed_ns: u64,
    /// The rewritten graph's makespan, kept or not.
    pub rewritten_ns: Option<u64>,
    /// Ops of the graph S+AD reports.
    pub decomposed_ops: usize,
    /// S+AD vs S, positive when shorter (percent).
    pub ad_gain_pct: f64,
    /// Wall time (s).
    pub time_s: f64,
}

/// The [`DecomposeReport`] of `graph` from its S step `s` and its S+AD `row`, with every
/// candidate tried when `with_candidates`.
pub fn decompose_report(
    pipeline: &Pipeline,
    graph: &Graph,
    s: &Optimized,
    row: SweepRow,
    with_candidates: bool,
) -> Result<DecomposeReport, PipelineError> {
    let began = Instant::now();
    let c = &pipeline.config;
    let (baseline_ns, critical) = critical_collectives(graph, &c.hardware, c.select.threshold)?;
    let candidates = if with_candidates {
        let (before, tried) = candidates_tried(graph, &c.hardware, &c.select)?;
        Some(
            tried
                .iter()
                .map(|x| {
                    let d = &x.decomposition;
                    CandidateSummary {
                        collective: d.collective.clone(),
                        family: d.family.as_str(),
                        label: d.label(),
                        context_ops: d.context_ops,
                        evaluated_ns: d.after_ns,
                        gain_pct: gain_pct(before, d.after_ns),
                    }
                })
                .collect(),
        )
    } else {
        None
    };
    Ok(DecomposeReport {
        graph: graph.name().to_string(),
        hardware: c.hardware.name.clone(),
        contention: s.contention,
        ops: s.ops,
        collectives: s.collectives,
        slowdown: row.slowdown,
        baseline_ns,
        threshold: c.select.threshold,
        critical,
        candidates,
        decompositions: row.decompositions,
        n_values: row.n_values,
        evaluated_before_ns: row.evaluated_before_ns,
        evaluated_after_ns: row.evaluated_after_ns,
        optimized_ns: row.optimized_ns,
        decomposed_ns: row.decomposed_ns,
        rewritten_ns: row.rewritten_ns,
        decomposed_ops: row.decomposed_ops,
        ad_gain_pct: row.ad_gain_pct,
        time_s: s.time.as_secs_f64() + row.time_s + began.elapsed().as_secs_f64(),
    })
}
