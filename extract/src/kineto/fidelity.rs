//! How faithfully the simulator replays a trace: every step imported and replayed, the
//! replay's error against the measured step, the largest shift of one op, and what the step
//! would take without its CPU launch times (the GPU alone).

use serde::Serialize;

use super::{error_pct, replay_timeline, Trace, TraceError, TraceOptions};

/// One step replayed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepFidelity {
    /// `ProfilerStep#N`, or `whole trace`.
    pub step: String,
    /// GPU ops of the step.
    pub ops: usize,
    /// Measured GPU span (ns).
    pub measured_ns: u64,
    /// The recorded order simulated with the measured durations and launch times (ns).
    pub replay_ns: u64,
    /// `100 (replay - measured) / measured`.
    pub error_pct: f64,
    /// The largest difference between an op's replayed and measured start (ns).
    pub max_shift_ns: u64,
    /// The op with that shift.
    pub max_shift_op: String,
    /// The recorded order simulated without launch times: the GPU alone (ns).
    pub gpu_only_ns: u64,
}

/// Every step of a trace replayed (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fidelity {
    /// The steps, in trace order.
    pub steps: Vec<StepFidelity>,
    /// Index of the step the importer takes by default (the median).
    pub median: usize,
}

fn replay_of(
    step: Option<u64>,
    trace: &Trace,
    options: &TraceOptions,
) -> Result<StepFidelity, TraceError> {
    let mut o = options.clone();
    o.step = step;
    let (graph, report) = trace.import(&o)?;
    let t = replay_timeline(&graph)?;
    let (max_shift_ns, max_shift_op) = graph
        .ids()
        .map(|v| {
            (
                t.start[v.0].abs_diff(report.measured[v.0].0),
                graph.op(v).name.clone(),
            )
        })
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
        .unwrap_or((0, String::new()));
    o.launch_times = false;
    let (bare, _) = trace.import(&o)?;
    let gpu_only = replay_timeline(&bare)?.makespan;
    Ok(StepFidelity {
        step: report.step,
        ops: graph.len(),
        measured_ns: report.measured_step_ns,
        replay_ns: t.makespan,
        error_pct: error_pct(t.makespan, report.measured_step_ns),
        max_shift_ns,
        max_shift_op,
        gpu_only_ns: gpu_only,
    })
}

/// Imports and replays every step of the trace `text` (steps without GPU ops are skipped):
/// [`Trace::from_text`] then [`fidelity_of`].
pub fn fidelity(text: &str, options: &TraceOptions) -> Result<Fidelity, TraceError> {
    fidelity_of(&Trace::from_text(text)?, options)
}

/// Imports and replays every step of a trace already read (steps without GPU ops are
/// skipped). Cost: three imports and two simulations per step; the trace is read once.
pub fn fidelity_of(trace: &Trace, options: &TraceOptions) -> Result<Fidelity, TraceError> {
    let (_, report) = trace.import(options)?;
    let numbers: Vec<Option<u64>> = report
        .steps
        .iter()
        .filter(|s| s.ops > 0)
        .map(|s| {
            s.name
                .strip_prefix("ProfilerStep#")
                .and_then(|n| n.parse().ok())
        })
        .collect();
    let mut steps = Vec::with_capacity(numbers.len());
    for n in numbers {
        steps.push(replay_of(n, trace, options)?);
    }
    let median = steps
        .iter()
        .position(|s| s.step == report.step)
        .unwrap_or(0);
    Ok(Fidelity { steps, median })
}
