//! The steps of a trace and the GPU ops of each: those its CPU span launched, and the device
//! events without a launch call that ran inside its GPU window.

use std::collections::BTreeMap;

use super::super::events::{Call, GpuOp, Span, Trace};
use super::super::{StepSummary, TraceError, TraceOptions};

/// The steps of a trace: each with its GPU ops.
pub(super) struct Steps<'t> {
    pub(super) names: Vec<String>,
    pub(super) ops: Vec<Vec<&'t GpuOp>>,
    /// Device events without a launch call that ran outside every step (left out).
    pub(super) outside: usize,
    /// Device events without a launch call in the whole trace.
    pub(super) unlaunched: usize,
}

/// Each step's GPU ops. A launched op belongs to the step whose CPU span contains its launch
/// call. A device event without a launch call (launched on a thread the trace did not record,
/// say) belongs to the step whose GPU window contains its start: a step's window runs from its
/// first launched op's start (its CPU start when it launched none) to the next step's window,
/// and the last step's to the later of its last op's end and its CPU end. Without step
/// annotations, every GPU op is in the one step. Cost: O(ops * steps).
pub(super) fn steps<'t>(trace: &'t Trace, launch: &BTreeMap<i64, &Call>) -> Steps<'t> {
    let (launched, unlaunched): (Vec<&GpuOp>, Vec<&GpuOp>) = trace
        .gpu
        .iter()
        .partition(|g| launch.contains_key(&g.correlation));
    let count = unlaunched.len();
    if trace.steps.is_empty() {
        return Steps {
            names: vec!["whole trace".into()],
            ops: vec![trace.gpu.iter().collect()],
            outside: 0,
            unlaunched: count,
        };
    }
    let mut spans: Vec<&Span> = trace.steps.iter().collect();
    spans.sort_by_key(|s| (s.ts, s.name.clone()));
    let mut ops = vec![Vec::new(); spans.len()];
    for g in launched {
        let t = launch[&g.correlation].ts;
        if let Some(k) = spans.iter().position(|s| s.ts <= t && t < s.ts + s.dur) {
            ops[k].push(g);
        }
    }
    let from: Vec<i64> = spans
        .iter()
        .zip(&ops)
        .map(|(s, v)| v.iter().map(|g| g.start).min().unwrap_or(s.ts))
        .collect();
    let last = spans.len() - 1;
    let last_end = ops[last]
        .iter()
        .map(|g| g.start + g.dur)
        .max()
        .unwrap_or(i64::MIN)
        .max(spans[last].ts.saturating_add(spans[last].dur));
    let mut outside = 0;
    for g in unlaunched {
        let k = (0..spans.len()).rev().find(|&k| from[k] <= g.start);
        let inside = k.filter(|&k| match from.get(k + 1) {
            Some(&next) => g.start < next,
            None => g.start < last_end,
        });
        match inside {
            Some(k) => ops[k].push(g),
            None => outside += 1,
        }
    }
    Steps {
        names: spans.iter().map(|s| s.name.to_string()).collect(),
        ops,
        outside,
        unlaunched: count,
    }
}

/// The measured GPU span of `ops`: first start to last end (ns).
pub(super) fn span_of(ops: &[&GpuOp]) -> u64 {
    let lo = ops.iter().map(|g| g.start).min().unwrap_or(0);
    let hi = ops.iter().map(|g| g.start + g.dur).max().unwrap_or(0);
    (hi - lo).max(0) as u64
}

/// Each step's name, op count and measured span.
pub(super) fn summarise(steps: &Steps<'_>) -> Vec<StepSummary> {
    steps
        .names
        .iter()
        .zip(&steps.ops)
        .map(|(name, ops)| StepSummary {
            name: name.clone(),
            ops: ops.len(),
            measured_ns: span_of(ops),
        })
        .collect()
}

/// The step asked for, else the median step (by measured span) among those that launched GPU ops.
pub(super) fn choose_step(
    options: &TraceOptions,
    steps: &Steps<'_>,
    summaries: &[StepSummary],
    unlaunched: usize,
) -> Result<usize, TraceError> {
    Ok(match options.step {
        Some(n) => {
            let want = format!("ProfilerStep#{n}");
            steps
                .names
                .iter()
                .position(|s| *s == want)
                .ok_or_else(|| TraceError::NoStep {
                    asked: want,
                    available: steps.names.join(", "),
                })?
        }
        None => {
            let mut with_ops: Vec<usize> = (0..steps.names.len())
                .filter(|&k| !steps.ops[k].is_empty())
                .collect();
            with_ops.sort_by_key(|&k| (summaries[k].measured_ns, k));
            *with_ops
                .get((with_ops.len().saturating_sub(1)) / 2)
                .ok_or_else(|| TraceError::NoGpuEvents {
                    reason: format!(
                        "no GPU op was launched inside a step ({}); {} GPU ops have no launch \
                         call in the trace",
                        steps.names.join(", "),
                        unlaunched
                    ),
                })?
        }
    })
}
