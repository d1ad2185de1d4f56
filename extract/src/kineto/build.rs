//! From a trace's events to one step's graph: the step, its streams, its dependencies and its
//! release times (the rules are in the module docs of [`super`]).

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{Graph, GraphBuilder, LinkClass, Op, OpId};

use super::classify::{collective_of, short_name};
use super::events::{Call, GpuCategory, GpuOp, Ns, Trace};
use super::{StreamMap, TraceError, TraceOptions, TraceReport};
use ops::{compute_op, group_of, signature_of, ShapeIndex};
use steps::{choose_step, span_of, steps, summarise};
use waits::dependencies;

mod ops;
mod steps;
mod waits;

/// Launch-bound ops (started this long after they were ready) measure the launch latency.
const LAUNCH_BOUND_NS: Ns = 1_000;

/// The quantile of launch-bound ops' latencies taken as the launch latency.
const LATENCY_QUANTILE: f64 = 0.10;

/// A step's ops may run for at most this long in all, plus their latest release (ns): 2^53 ns,
/// about 104 days, far beyond any profiled step. Below it the replay's clock (ns, in thousandths
/// while an op runs) cannot overflow `u64`, and times stay exact in `f64`.
const MAX_STEP_NS: u64 = 1 << 53;

/// Whether a GPU op is an NCCL kernel.
fn is_nccl(g: &GpuOp) -> bool {
    g.category == GpuCategory::Kernel && g.name.to_ascii_lowercase().contains("nccl")
}

pub(super) fn build(
    trace: &Trace,
    options: &TraceOptions,
) -> Result<(Graph, TraceReport), TraceError> {
    if trace.gpu.is_empty() {
        return Err(TraceError::NoGpuEvents {
            reason: "no kernel, memcpy or memset events (a CPU-only profile, or a trace \
                     recorded without ProfilerActivity.CUDA)"
                .into(),
        });
    }
    let launch: BTreeMap<i64, &Call> = trace.calls.iter().map(|c| (c.correlation, c)).collect();
    let steps = steps(trace, &launch);
    let summaries = summarise(&steps);
    let chosen = choose_step(options, &steps, &summaries, steps.unlaunched)?;
    let mut ops: Vec<&GpuOp> = steps.ops[chosen].clone();
    if ops.is_empty() {
        return Err(TraceError::NoGpuEvents {
            reason: format!("{} launched no GPU op", steps.names[chosen]),
        });
    }
    ops.sort_by_key(|g| (g.start, g.start + g.dur, g.correlation));
    let calls: Vec<Option<&Call>> = ops
        .iter()
        .map(|g| launch.get(&g.correlation).copied())
        .collect();
    let launches = Launches::of(&ops, &calls);
    let mut warnings = launches.warnings(steps.outside);
    let origin = ops[0].start;
    let lts = submit_times(&ops, &calls, &trace.calls);
    let lanes = lanes(&ops, &mut warnings);
    let world = trace.world_size.unwrap_or(0);
    let link = if world > i64::from(options.gpus_per_node) {
        LinkClass::InterNode
    } else {
        LinkClass::IntraNode
    };
    let (preds, counts) = dependencies(trace, &ops, &lts, &calls, &lanes, &mut warnings);
    let latency = launch_latency(&ops, &lts, &launches.sampled, &preds, &lanes.by_stream);
    let release = release_times(options, &ops, &lts, &calls, latency, origin);
    check_total(&ops, &release, &steps.names[chosen])?;
    let step = StepOps {
        ops,
        calls,
        names: launches.names,
        lts,
        origin,
        lanes,
        preds,
        release,
        link,
    };
    let StepGraph {
        graph,
        measured,
        signature,
    } = graph_of(&step, trace, &steps.names[chosen], &mut warnings)?;
    let report = TraceReport {
        step: steps.names[chosen].clone(),
        steps: summaries,
        measured_step_ns: span_of(&step.ops),
        launch_latency_ns: latency.max(0) as u64,
        waits: counts,
        unlaunched_ops: launches.unlaunched,
        multi_op_launches: launches.multi,
        streams: stream_maps(&step),
        device: trace.device.clone(),
        rank: trace.rank,
        world_size: trace.world_size,
        measured,
        signature,
        warnings,
    };
    Ok((graph, report))
}

/// When the CPU submitted each op; an op without a launch call, when it started.
///
/// A call that ran far longer than its kind usually does (lazy module loading inside a launch,
/// a copy to pageable memory that waits for the device) submits near its end, as long before
/// its end as such a call usually lasts.
fn submit_times(ops: &[&GpuOp], calls: &[Option<&Call>], all: &[Call]) -> Vec<Ns> {
    let typical = typical_durations(all);
    ops.iter()
        .zip(calls)
        .map(|(g, c)| match c {
            Some(c) => {
                c.ts.max(c.ts + c.dur - typical.get(&*c.name).copied().unwrap_or(c.dur))
            }
            None => g.start,
        })
        .collect()
}

/// The launches of a step: each op's unique name, which ops measure the launch latency, and
/// the counts the report gives.
struct Launches {
    /// Each op's name: `<kernel>#<correlation>`, or `<kernel>#<correlation>.<k>` for the `k`-th
    /// (0-based, in start order) of several ops that share a correlation (a CUDA or HIP graph
    /// replay, a library call that runs several kernels).
    names: Vec<String>,
    /// Whether the op measures the launch latency: the first op of a launch call.
    sampled: Vec<bool>,
    /// Ops without a launch call.
    unlaunched: usize,
    /// Launch calls that ran more than one op.
    multi: usize,
}

impl Launches {
    /// The launches of `ops` (in start order), `calls` their launch calls. O(ops log ops).
    fn of(ops: &[&GpuOp], calls: &[Option<&Call>]) -> Launches {
        let mut by_corr: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        for (i, g) in ops.iter().enumerate() {
            by_corr.entry(g.correlation).or_default().push(i);
        }
        let mut names: Vec<String> = ops
            .iter()
            .map(|g| format!("{}#{}", short_name(&g.name), g.correlation))
            .collect();
        let mut sampled = vec![false; ops.len()];
        let mut multi = 0;
        for v in by_corr.values() {
            sampled[v[0]] = calls[v[0]].is_some();
            if v.len() > 1 {
                multi += usize::from(calls[v[0]].is_some());
                for (k, &i) in v.iter().enumerate() {
                    names[i] = format!("{}.{k}", names[i]);
                }
            }
        }
        Launches {
            names,
            sampled,
            unlaunched: calls.iter().filter(|c| c.is_none()).count(),
            multi,
        }
    }

    /// The warnings about ops without a launch call: those kept in the step, and those that
    /// ran outside every step (`outside`).
    fn warnings(&self, outside: usize) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.unlaunched > 0 {
            warnings.push(format!(
                "{} GPU ops of the step have no launch call (no matching correlation: launched \
                 from a thread the trace did not record): each is released at its measured start",
                self.unlaunched
            ));
        }
        if outside > 0 {
            warnings.push(format!(
                "{outside} GPU ops without a launch call ran outside every step and are left out"
            ));
        }
        warnings
    }
}

/// The CUDA streams of a step: NCCL-only streams are channels, the others compute lanes.
struct Lanes {
    /// Each CUDA stream's ops (indices into the step's ops), in start order.
    by_stream: BTreeMap<i64, Vec<usize>>,
    /// The compute streams as (busy ns, CUDA stream), busiest first.
    compute: Vec<(u64, i64)>,
    /// The channels as (busy ns, CUDA stream), busiest first.
    comm: Vec<(u64, i64)>,
    /// Each CUDA stream's (is a channel, lane).
    lane_of: BTreeMap<i64, (bool, u16)>,
}

/// Sorts the step's streams into compute lanes and channels, lane 0 the busiest of each.
fn lanes(ops: &[&GpuOp], warnings: &mut Vec<String>) -> Lanes {
    let mut by_stream: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, g) in ops.iter().enumerate() {
        by_stream.entry(g.stream).or_default().push(i);
    }
    let busy = |v: &[usize]| {
        v.iter()
            .fold(0u64, |a, &i| a.saturating_add(ops[i].dur.max(0) as u64))
    };
    let mut compute_streams: Vec<(u64, i64)> = Vec::new();
    let mut comm_streams: Vec<(u64, i64)> = Vec::new();
    for (&s, v) in &by_stream {
        let all_nccl = v.iter().all(|&i| is_nccl(ops[i]));
        let any_nccl = v.iter().any(|&i| is_nccl(ops[i]));
        if all_nccl {
            comm_streams.push((busy(v), s));
        } else {
            if any_nccl {
                warnings.push(format!(
                    "CUDA stream {s} runs NCCL kernels and other work: it is a compute stream, \
                     and its NCCL kernels are costed as compute"
                ));
            }
            compute_streams.push((busy(v), s));
        }
    }
    compute_streams.sort_by_key(|&(b, s)| (std::cmp::Reverse(b), s));
    comm_streams.sort_by_key(|&(b, s)| (std::cmp::Reverse(b), s));
    let lane_of: BTreeMap<i64, (bool, u16)> = compute_streams
        .iter()
        .enumerate()
        .map(|(k, &(_, s))| (s, (false, k as u16)))
        .chain(
            comm_streams
                .iter()
                .enumerate()
                .map(|(k, &(_, s))| (s, (true, k as u16))),
        )
        .collect();
    Lanes {
        by_stream,
        compute: compute_streams,
        comm: comm_streams,
        lane_of,
    }
}

/// The launch latency: a low quantile over launch-bound ops.
fn launch_latency(
    ops: &[&GpuOp],
    lts: &[Ns],
    sampled: &[bool],
    preds: &[BTreeSet<usize>],
    by_stream: &BTreeMap<i64, Vec<usize>>,
) -> Ns {
    let end = |i: usize| ops[i].start + ops[i].dur;
    let mut latencies: Vec<Ns> = Vec::new();
    for v in by_stream.values() {
        for (k, &i) in v.iter().enumerate() {
            let ready = preds[i]
                .iter()
                .map(|&p| end(p))
                .chain(k.checked_sub(1).map(|j| end(v[j])))
                .max()
                .unwrap_or(Ns::MIN);
            if sampled[i]
                && ops[i].start > ready.saturating_add(LAUNCH_BOUND_NS)
                && ops[i].start >= lts[i]
            {
                latencies.push(ops[i].start - lts[i]);
            }
        }
    }
    latencies.sort_unstable();
    if latencies.is_empty() {
        0
    } else {
        latencies[((latencies.len() - 1) as f64 * LATENCY_QUANTILE) as usize]
    }
}

/// Each op's release time from the step's start (0 when launch times are off): its submission
/// plus the launch latency; for an op without a launch call, its measured start (it ran no
/// earlier, and its stream's FIFO order keeps it behind its predecessors).
fn release_times(
    options: &TraceOptions,
    ops: &[&GpuOp],
    lts: &[Ns],
    calls: &[Option<&Call>],
    latency: Ns,
    origin: Ns,
) -> Vec<u64> {
    (0..lts.len())
        .map(|i| match (options.launch_times, calls[i]) {
            (false, _) => 0,
            (true, Some(_)) => (lts[i] + latency - origin).max(0) as u64,
            (true, None) => (ops[i].start - origin).max(0) as u64,
        })
        .collect()
}

/// Refuses a step whose durations and latest release exceed [`MAX_STEP_NS`], the bound that
/// keeps the replay's clock inside `u64`.
fn check_total(ops: &[&GpuOp], release: &[u64], step: &str) -> Result<(), TraceError> {
    let total = ops
        .iter()
        .fold(0u64, |a, g| a.saturating_add(g.dur.max(0) as u64))
        .saturating_add(release.iter().copied().max().unwrap_or(0));
    if total > MAX_STEP_NS {
        return Err(TraceError::NotATrace {
            reason: format!(
                "step `{}` adds up to {total} ns (its GPU ops' durations and its latest \
                 launch), beyond 2^53 ns (104 days): no profiled step lasts that long",
                step
            ),
        });
    }
    Ok(())
}

/// The chosen step's ops in measured start order, with what its graph is built from.
struct StepOps<'t> {
    /// The ops, in measured start order.
    ops: Vec<&'t GpuOp>,
    /// Each op's launch call (`None`: the trace has none).
    calls: Vec<Option<&'t Call>>,
    /// Each op's unique name.
    names: Vec<String>,
    /// When the CPU submitted each op.
    lts: Vec<Ns>,
    /// The first op's start: time 0 of the step.
    origin: Ns,
    /// The step's streams.
    lanes: Lanes,
    /// Each op's predecessors.
    preds: Vec<BTreeSet<usize>>,
    /// Each op's release time.
    release: Vec<u64>,
    /// The link class of the step's collectives.
    link: LinkClass,
}

/// A step's graph, with each op's measured (start, end) and kernel signature.
struct StepGraph {
    /// The graph, in measured start order.
    graph: Graph,
    /// Each op's measured (start, end) from the step's start.
    measured: Vec<(u64, u64)>,
    /// Each op's kernel signature.
    signature: Vec<String>,
}

/// The step's graph in measured start order (every dependency points forward in it), with each
/// op's measured (start, end) and kernel signature.
fn graph_of(
    step: &StepOps<'_>,
    trace: &Trace,
    step_name: &str,
    warnings: &mut Vec<String>,
) -> Result<StepGraph, TraceError> {
    let StepOps {
        ops,
        calls,
        names,
        lts,
        origin,
        lanes,
        preds,
        release,
        link,
    } = step;
    let (origin, link) = (*origin, *link);
    let n = ops.len();
    let end = |i: usize| ops[i].start + ops[i].dur;
    let shapes = ShapeIndex::new(&trace.shaped);
    let base = if trace.steps.is_empty() {
        "trace".to_string()
    } else {
        step_name.replace('#', "")
    };
    let mut b = GraphBuilder::new(match trace.rank {
        Some(r) => format!("{base}.rank{r}"),
        None => base,
    });
    let group = trace
        .world_size
        .filter(|&w| w >= 2)
        .and_then(|w| u32::try_from(w).ok())
        .unwrap_or(2);
    if trace.world_size.is_none() && !lanes.comm.is_empty() {
        warnings.push(
            "the trace has no `distributedInfo.world_size`: collectives are taken as 2-rank".into(),
        );
    }
    let mut missing_bytes = 0usize;
    let mut ids: Vec<OpId> = Vec::with_capacity(n);
    let mut measured = Vec::with_capacity(n);
    let mut signature = Vec::with_capacity(n);
    for (i, g) in ops.iter().enumerate() {
        let name = names[i].clone();
        let (channel, lane) = lanes.lane_of[&g.stream];
        let mut op = if channel {
            let (kind, bytes) = collective_of(
                g,
                group,
                calls[i].and_then(|c| shapes.around(c.thread, lts[i])),
            );
            if bytes.is_none() {
                missing_bytes += 1;
            }
            Op::collective(name, kind, bytes.unwrap_or(0), group_of(g, group), link)
        } else {
            compute_op(name, g, &shapes, calls[i])
        };
        op.duration_ns = Some(g.dur.max(0) as u64);
        op.release_ns = release[i];
        op.lane = lane;
        let inputs: Vec<(OpId, usize)> = preds[i].iter().map(|&p| (ids[p], 0)).collect();
        ids.push(b.try_add(op, &inputs)?);
        measured.push(((g.start - origin) as u64, (end(i) - origin) as u64));
        signature.push(signature_of(g));
    }
    if missing_bytes > 0 {
        warnings.push(format!(
            "{missing_bytes} collectives have no byte count in the trace (neither the NCCL \
             kernel's `In msg nelems` nor a recorded input shape): 0 bytes, and the calibration \
             leaves them out"
        ));
    }
    Ok(StepGraph {
        graph: b.finish(),
        measured,
        signature,
    })
}

/// How each CUDA stream maps onto the graph's streams, compute lanes first.
fn stream_maps(step: &StepOps<'_>) -> Vec<StreamMap> {
    let (lanes, link) = (&step.lanes, step.link);
    lanes
        .compute
        .iter()
        .chain(&lanes.comm)
        .map(|&(busy_ns, s)| {
            let (channel, lane) = lanes.lane_of[&s];
            let stream = match (channel, lane) {
                (false, 0) => concerto_graph::Stream::Compute,
                (false, l) => concerto_graph::Stream::ComputeLane(l),
                (true, 0) => concerto_graph::Stream::Comm(link),
                (true, l) => concerto_graph::Stream::CommLane(link, l),
            };
            StreamMap {
                cuda_stream: s,
                stream: stream.name(),
                ops: lanes.by_stream[&s].len(),
                busy_ns,
            }
        })
        .collect()
}

/// The median duration of each kind of CPU call.
fn typical_durations(calls: &[Call]) -> BTreeMap<&str, Ns> {
    let mut by: BTreeMap<&str, Vec<Ns>> = BTreeMap::new();
    for c in calls {
        by.entry(&*c.name).or_default().push(c.dur);
    }
    by.into_iter()
        .map(|(k, mut v)| {
            v.sort_unstable();
            (k, v[v.len() / 2])
        })
        .collect()
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;
