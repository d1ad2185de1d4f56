//! From a trace's events to one step's graph: the step, its streams, its dependencies and its
//! release times (the rules are in the module docs of [`super`]).

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{ComputeClass, DType, GemmShape, Graph, GraphBuilder, LinkClass, Op, OpId};

use super::classify::{collective_of, compute_class, dtype_of, short_name};
use super::events::{Call, GpuCategory, GpuOp, Ns, Span, Trace};
use super::{StepSummary, StreamMap, TraceError, TraceOptions, TraceReport};
use waits::dependencies;

mod waits;

/// Launch-bound ops (started this long after they were ready) measure the launch latency.
const LAUNCH_BOUND_NS: Ns = 1_000;

/// The quantile of launch-bound ops' latencies taken as the launch latency.
const LATENCY_QUANTILE: f64 = 0.10;

/// A step's ops may run for at most this long in all, plus their latest release (ns): 2^53 ns,
/// about 104 days, far beyond any profiled step. Below it the replay's clock (ns, in thousandths
/// while an op runs) cannot overflow `u64`, and times stay exact in `f64`.
const MAX_STEP_NS: u64 = 1 << 53;

/// The steps of a trace: each with the GPU ops its CPU span launched.
struct Steps<'t> {
    names: Vec<String>,
    ops: Vec<Vec<&'t GpuOp>>,
}

fn steps<'t>(trace: &'t Trace, launch: &BTreeMap<i64, &Call>) -> Steps<'t> {
    let launched: Vec<&GpuOp> = trace
        .gpu
        .iter()
        .filter(|g| launch.contains_key(&g.correlation))
        .collect();
    if trace.steps.is_empty() {
        return Steps {
            names: vec!["whole trace".into()],
            ops: vec![launched],
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
    Steps {
        names: spans.iter().map(|s| s.name.clone()).collect(),
        ops,
    }
}

fn span_of(ops: &[&GpuOp]) -> u64 {
    let lo = ops.iter().map(|g| g.start).min().unwrap_or(0);
    let hi = ops.iter().map(|g| g.start + g.dur).max().unwrap_or(0);
    (hi - lo).max(0) as u64
}

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
    let unlaunched = trace
        .gpu
        .iter()
        .filter(|g| !launch.contains_key(&g.correlation))
        .count();
    let steps = steps(trace, &launch);
    let summaries = summarise(&steps);
    let chosen = choose_step(options, &steps, &summaries, unlaunched)?;
    let mut ops: Vec<&GpuOp> = steps.ops[chosen].clone();
    if ops.is_empty() {
        return Err(TraceError::NoGpuEvents {
            reason: format!("{} launched no GPU op", steps.names[chosen]),
        });
    }
    ops.sort_by_key(|g| (g.start, g.start + g.dur, g.correlation));
    let mut warnings = Vec::new();
    if unlaunched > 0 {
        warnings.push(format!(
            "{unlaunched} GPU ops of the trace have no launch call (no matching correlation) and \
             are left out"
        ));
    }
    let origin = ops[0].start;
    let lts = submit_times(&ops, &launch, &trace.calls);
    let lanes = lanes(&ops, &mut warnings);
    let world = trace.world_size.unwrap_or(0);
    let link = if world > i64::from(options.gpus_per_node) {
        LinkClass::InterNode
    } else {
        LinkClass::IntraNode
    };
    let (preds, counts) = dependencies(trace, &ops, &lts, &lanes, &mut warnings);
    let latency = launch_latency(&ops, &lts, &preds, &lanes.by_stream);
    let release = release_times(options, &lts, latency, origin);
    check_total(&ops, &release, &steps.names[chosen])?;
    let step = StepOps {
        ops,
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
    } = graph_of(&step, trace, &launch, &steps.names[chosen], &mut warnings)?;
    let report = TraceReport {
        step: steps.names[chosen].clone(),
        steps: summaries,
        measured_step_ns: span_of(&step.ops),
        launch_latency_ns: latency.max(0) as u64,
        waits: counts,
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

/// Each step's name, op count and measured span.
fn summarise(steps: &Steps<'_>) -> Vec<StepSummary> {
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
fn choose_step(
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

/// When the CPU submitted each op.
///
/// A call that ran far longer than its kind usually does (lazy module loading inside a launch,
/// a copy to pageable memory that waits for the device) submits near its end, as long before
/// its end as such a call usually lasts.
fn submit_times(ops: &[&GpuOp], launch: &BTreeMap<i64, &Call>, calls: &[Call]) -> Vec<Ns> {
    let typical = typical_durations(calls);
    ops.iter()
        .map(|g| {
            let c = launch[&g.correlation];
            c.ts.max(c.ts + c.dur - typical.get(c.name.as_str()).copied().unwrap_or(c.dur))
        })
        .collect()
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
            if ops[i].start > ready.saturating_add(LAUNCH_BOUND_NS) && ops[i].start >= lts[i] {
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

/// Each op's release time: its submission plus the launch latency, from the step's start (0
/// when launch times are off).
fn release_times(options: &TraceOptions, lts: &[Ns], latency: Ns, origin: Ns) -> Vec<u64> {
    (0..lts.len())
        .map(|i| {
            if options.launch_times {
                (lts[i] + latency - origin).max(0) as u64
            } else {
                0
            }
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
    launch: &BTreeMap<i64, &Call>,
    step_name: &str,
    warnings: &mut Vec<String>,
) -> Result<StepGraph, TraceError> {
    let StepOps {
        ops,
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
        let name = format!("{}#{}", short_name(&g.name), g.correlation);
        let (channel, lane) = lanes.lane_of[&g.stream];
        let mut op = if channel {
            let (kind, bytes) = collective_of(
                g,
                group,
                shapes.around(&launch[&g.correlation].thread, lts[i]),
            );
            if bytes.is_none() {
                missing_bytes += 1;
            }
            Op::collective(name, kind, bytes.unwrap_or(0), group_of(g, group), link)
        } else {
            compute_op(name, g, &shapes, launch)
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

/// A kernel's signature: its name, grid and block.
fn signature_of(g: &GpuOp) -> String {
    format!(
        "{}|{}|{}",
        g.name,
        g.args
            .get("grid")
            .map(|v| v.to_string())
            .unwrap_or_default(),
        g.args
            .get("block")
            .map(|v| v.to_string())
            .unwrap_or_default()
    )
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
        by.entry(c.name.as_str()).or_default().push(c.dur);
    }
    by.into_iter()
        .map(|(k, mut v)| {
            v.sort_unstable();
            (k, v[v.len() / 2])
        })
        .collect()
}

/// Ranks of a collective: the kernel's `Group size` when recorded, else the world size.
fn group_of(g: &GpuOp, world: u32) -> u32 {
    g.args
        .get("Group size")
        .and_then(serde_json::Value::as_u64)
        .and_then(|x| u32::try_from(x).ok())
        .filter(|&x| x >= 2)
        .unwrap_or(world)
}

/// A compute op for a kernel, memcpy or memset; a GEMM kernel under one recorded matrix
/// multiply gets its shape.
fn compute_op(
    name: String,
    g: &GpuOp,
    shapes: &ShapeIndex<'_>,
    launch: &BTreeMap<i64, &Call>,
) -> Op {
    let bytes = g
        .args
        .get("bytes")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    let class = match g.category {
        GpuCategory::Kernel => compute_class(&g.name),
        GpuCategory::Memcpy | GpuCategory::Memset => ComputeClass::Other,
    };
    // A device-to-device copy reads and writes its bytes in device memory.
    let bytes = if g.category == GpuCategory::Memcpy && g.name.contains("DtoD") {
        bytes.saturating_mul(2)
    } else {
        bytes
    };
    if class == ComputeClass::Gemm {
        let call = launch[&g.correlation];
        if let Some(span) = shapes.around(&call.thread, call.ts) {
            if let Some((shape, dtype)) = gemm_shape(span) {
                let mut op = Op::gemm(name, shape, dtype);
                // The kernel's result is no tensor of the graph, but its element type still
                // picks the tensor-core rate.
                op.outputs.clear();
                op.operand_dtype = Some(dtype);
                return op;
            }
        }
    }
    Op::compute(name, class, 0, bytes)
}

/// The GEMM of a recorded `aten::mm`, `addmm`, `bmm`, `baddbmm` or `linear`.
fn gemm_shape(span: &Span) -> Option<(GemmShape, DType)> {
    let d = span.dims.as_ref()?;
    let dtype = span.types.first().map_or(DType::F32, |t| dtype_of(t));
    let op = span.name.as_str();
    let (b, m, k, n) = match op {
        "aten::mm" => (
            1,
            *d.first()?.first()?,
            *d.first()?.get(1)?,
            *d.get(1)?.get(1)?,
        ),
        "aten::addmm" => (
            1,
            *d.get(1)?.first()?,
            *d.get(1)?.get(1)?,
            *d.get(2)?.get(1)?,
        ),
        "aten::bmm" => {
            let (x, y) = (d.first()?, d.get(1)?);
            (*x.first()?, *x.get(1)?, *x.get(2)?, *y.get(2)?)
        }
        "aten::baddbmm" => {
            let (x, y) = (d.get(1)?, d.get(2)?);
            (*x.first()?, *x.get(1)?, *x.get(2)?, *y.get(2)?)
        }
        "aten::linear" => {
            let x = d.first()?;
            let w = d.get(1)?;
            let (&k, lead) = x.split_last()?;
            let m = lead.iter().try_fold(1u64, |a, &x| a.checked_mul(x))?;
            (1, m, k, *w.first()?)
        }
        _ => return None,
    };
    // `Op::gemm` counts the operands' bytes, `b * (m*k + k*n + m*n) * size`, in u64: a
    // recorded shape whose count overflows is no shape.
    let elements = [m.checked_mul(k)?, k.checked_mul(n)?, m.checked_mul(n)?]
        .into_iter()
        .try_fold(0u64, u64::checked_add)?;
    b.checked_mul(elements)?.checked_mul(dtype.size())?;
    let shape = GemmShape { b, m, n, k };
    (shape.flops() > 0).then_some((shape, dtype))
}

/// Recorded CPU spans by thread, for "which recorded op launched this".
struct ShapeIndex<'t> {
    by_thread: BTreeMap<(String, String), Vec<&'t Span>>,
}

impl<'t> ShapeIndex<'t> {
    fn new(spans: &'t [Span]) -> Self {
        let mut by_thread: BTreeMap<(String, String), Vec<&Span>> = BTreeMap::new();
        for s in spans {
            by_thread.entry(s.thread.clone()).or_default().push(s);
        }
        for v in by_thread.values_mut() {
            v.sort_by_key(|s| (s.ts, std::cmp::Reverse(s.dur)));
        }
        ShapeIndex { by_thread }
    }

    /// The innermost recorded span of `thread` around time `t`.
    fn around(&self, thread: &(String, String), t: Ns) -> Option<&'t Span> {
        let v = self.by_thread.get(thread)?;
        let upto = v.partition_point(|s| s.ts <= t);
        // Spans nest: the latest-starting span that still contains `t` is the innermost.
        v[..upto]
            .iter()
            .rev()
            .take(64)
            .find(|s| t < s.ts + s.dur)
            .copied()
    }
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;
