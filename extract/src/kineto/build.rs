//! From a trace's events to one step's graph: the step, its streams, its dependencies and its
//! release times (the rules are in the module docs of [`super`]).

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{ComputeClass, DType, GemmShape, Graph, GraphBuilder, LinkClass, Op, OpId};

use super::classify::{collective_of, compute_class, dtype_of, short_name};
use super::events::{Call, GpuCategory, GpuOp, Ns, Span, Trace};
use super::{StepSummary, StreamMap, TraceError, TraceOptions, TraceReport, WaitCounts};

/// Launch-bound ops (started this long after they were ready) measure the launch latency.
const LAUNCH_BOUND_NS: Ns = 1_000;

/// A consumer that starts this long after everything its inferred producer, its stream and its
/// launch explain is taken to wait for another stream (see `infer_waits`).
const UNEXPLAINED_NS: Ns = 50_000;

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
    let summaries: Vec<StepSummary> = steps
        .names
        .iter()
        .zip(&steps.ops)
        .map(|(name, ops)| StepSummary {
            name: name.clone(),
            ops: ops.len(),
            measured_ns: span_of(ops),
        })
        .collect();
    let chosen = match options.step {
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
    };
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
    let n = ops.len();
    // When the CPU submitted each op: a call that ran far longer than its kind usually does
    // (lazy module loading inside a launch, a copy to pageable memory that waits for the
    // device) submits near its end, as long before its end as such a call usually lasts.
    let typical = typical_durations(&trace.calls);
    let lts: Vec<Ns> = ops
        .iter()
        .map(|g| {
            let c = launch[&g.correlation];
            c.ts.max(c.ts + c.dur - typical.get(c.name.as_str()).copied().unwrap_or(c.dur))
        })
        .collect();

    // Streams: NCCL-only streams are channels, the others compute lanes; lane 0 the busiest.
    let mut by_stream: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, g) in ops.iter().enumerate() {
        by_stream.entry(g.stream).or_default().push(i);
    }
    let busy = |v: &[usize]| {
        v.iter()
            .fold(0u64, |a, &i| a.saturating_add(ops[i].dur.max(0) as u64))
    };
    let world = trace.world_size.unwrap_or(0);
    let link = if world > i64::from(options.gpus_per_node) {
        LinkClass::InterNode
    } else {
        LinkClass::IntraNode
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

    // Dependencies: FIFO on compute streams, then the cross-stream waits.
    let mut preds: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for v in by_stream.values() {
        if lane_of[&ops[v[0]].stream].0 {
            continue;
        }
        for w in v.windows(2) {
            preds[w[1]].insert(w[0]);
        }
    }
    let mut counts = WaitCounts::default();
    let end = |i: usize| ops[i].start + ops[i].dur;
    // Position in its CUDA stream, and the stream's ops in launch (= start) order.
    let mut at = vec![0usize; n];
    for v in by_stream.values() {
        for (k, &i) in v.iter().enumerate() {
            at[i] = k;
        }
    }
    // A wait of consumer `c` on producer `p`: on a channel (no FIFO dependencies), every op of
    // the producer's stream up to `p` not yet covered by an earlier wait of `c`'s stream.
    let mut covered: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    let mut add_wait = |preds: &mut Vec<BTreeSet<usize>>, p: usize, c: usize| {
        let (ps, cs) = (ops[p].stream, ops[c].stream);
        if lane_of[&ps].0 {
            let v = &by_stream[&ps];
            let from = covered.get(&(cs, ps)).map_or(0, |&k| k + 1);
            for &q in v.iter().take(at[p] + 1).skip(from) {
                if end(q) <= ops[c].start {
                    preds[c].insert(q);
                }
            }
            let k = covered.entry((cs, ps)).or_insert(0);
            *k = (*k).max(at[p]);
        } else {
            preds[c].insert(p);
        }
    };
    let index_of: BTreeMap<i64, usize> = ops
        .iter()
        .enumerate()
        .map(|(i, g)| (g.correlation, i))
        .collect();
    if !trace.waits.is_empty() {
        // Exact: the trace says which stream waited for which stream's event.
        let call_ts: BTreeMap<i64, Ns> =
            trace.calls.iter().map(|c| (c.correlation, c.ts)).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| (lts[i], ops[i].correlation));
        for w in &trace.waits {
            let (Some(&rec), Some(&wts)) = (call_ts.get(&w.record), call_ts.get(&w.correlation))
            else {
                counts.outside += 1;
                continue;
            };
            let producer = order
                .iter()
                .rev()
                .find(|&&i| ops[i].stream == w.wait_on_stream && lts[i] <= rec)
                .copied();
            let consumer = order
                .iter()
                .find(|&&i| ops[i].stream == w.stream && lts[i] >= wts)
                .copied();
            match (producer, consumer) {
                (Some(p), Some(c)) if end(p) <= ops[c].start => {
                    add_wait(&mut preds, p, c);
                    counts.exact += 1;
                }
                (Some(p), Some(c)) => {
                    counts.dropped += 1;
                    warnings.push(format!(
                        "event {}: `{}` waits for `{}`, which ended {} ns after it started; \
                         the wait is left out",
                        w.index,
                        short_name(&ops[c].name),
                        short_name(&ops[p].name),
                        end(p) - ops[c].start
                    ));
                }
                _ => counts.outside += 1,
            }
        }
    } else {
        infer_waits(trace, &ops, &lts, &index_of, &mut counts, &mut |p, c| {
            add_wait(&mut preds, p, c)
        });
    }

    // Launch latency: a low quantile over launch-bound ops.
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
    let latency = if latencies.is_empty() {
        0
    } else {
        latencies[((latencies.len() - 1) as f64 * LATENCY_QUANTILE) as usize]
    };

    // Release times, and the bound that keeps the replay's clock inside u64.
    let release: Vec<u64> = (0..n)
        .map(|i| {
            if options.launch_times {
                (lts[i] + latency - origin).max(0) as u64
            } else {
                0
            }
        })
        .collect();
    let total = ops
        .iter()
        .fold(0u64, |a, g| a.saturating_add(g.dur.max(0) as u64))
        .saturating_add(release.iter().copied().max().unwrap_or(0));
    if total > MAX_STEP_NS {
        return Err(TraceError::NotATrace {
            reason: format!(
                "step `{}` adds up to {total} ns (its GPU ops' durations and its latest \
                 launch), beyond 2^53 ns (104 days): no profiled step lasts that long",
                steps.names[chosen]
            ),
        });
    }

    // The graph, in measured start order (every dependency points forward in it).
    let shapes = ShapeIndex::new(&trace.shaped);
    let base = if trace.steps.is_empty() {
        "trace".to_string()
    } else {
        steps.names[chosen].replace('#', "")
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
    if trace.world_size.is_none() && !comm_streams.is_empty() {
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
        let (channel, lane) = lane_of[&g.stream];
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
            compute_op(name, g, &shapes, &launch)
        };
        op.duration_ns = Some(g.dur.max(0) as u64);
        op.release_ns = release[i];
        op.lane = lane;
        let inputs: Vec<(OpId, usize)> = preds[i].iter().map(|&p| (ids[p], 0)).collect();
        ids.push(b.try_add(op, &inputs)?);
        measured.push(((g.start - origin) as u64, (end(i) - origin) as u64));
        signature.push(format!(
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
        ));
    }
    if missing_bytes > 0 {
        warnings.push(format!(
            "{missing_bytes} collectives have no byte count in the trace (neither the NCCL \
             kernel's `In msg nelems` nor a recorded input shape): 0 bytes, and the calibration \
             leaves them out"
        ));
    }
    let streams = compute_streams
        .iter()
        .chain(&comm_streams)
        .map(|&(busy_ns, s)| {
            let (channel, lane) = lane_of[&s];
            let stream = match (channel, lane) {
                (false, 0) => concerto_graph::Stream::Compute,
                (false, l) => concerto_graph::Stream::ComputeLane(l),
                (true, 0) => concerto_graph::Stream::Comm(link),
                (true, l) => concerto_graph::Stream::CommLane(link, l),
            };
            StreamMap {
                cuda_stream: s,
                stream: stream.name(),
                ops: by_stream[&s].len(),
                busy_ns,
            }
        })
        .collect();
    let graph = b.finish();
    let report = TraceReport {
        step: steps.names[chosen].clone(),
        steps: summaries,
        measured_step_ns: span_of(&ops),
        launch_latency_ns: latency.max(0) as u64,
        waits: counts,
        streams,
        device: trace.device.clone(),
        rank: trace.rank,
        world_size: trace.world_size,
        measured,
        signature,
        warnings,
    };
    Ok((graph, report))
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

/// Cross-stream waits from `cudaStreamWaitEvent` calls, for traces without `cuda_sync` events:
/// on each CPU thread, a wait applies to the next op that thread launches (the consumer); the
/// producer is the op launched last on another stream before the thread's latest
/// `cudaEventRecord` (before the wait itself when records are not traced). A producer that
/// ended after the consumer started cannot be the one (the measured step says so): the latest
/// earlier op of the same stream that ended in time is taken instead (`moved`), or the wait is
/// left out (`dropped`). A consumer that started more than [`UNEXPLAINED_NS`] after its
/// producer, its stream predecessor and its launch (+ the same margin) all allow waited for
/// something else: the op of another stream that ended last before it started is taken
/// (`moved`).
fn infer_waits(
    trace: &Trace,
    ops: &[&GpuOp],
    lts: &[Ns],
    index_of: &BTreeMap<i64, usize>,
    counts: &mut WaitCounts,
    add: &mut dyn FnMut(usize, usize),
) {
    let n = ops.len();
    let end = |i: usize| ops[i].start + ops[i].dur;
    // Every op of the step by launch time, to find "the last launch on another stream".
    let mut by_launch: Vec<usize> = (0..n).collect();
    by_launch.sort_by_key(|&i| (lts[i], ops[i].correlation));
    let launch_ts: Vec<Ns> = by_launch.iter().map(|&i| lts[i]).collect();
    // The end of each op's predecessor on its stream (ops are in start order).
    let mut prev_end = vec![Ns::MIN; n];
    let mut last_on: BTreeMap<i64, usize> = BTreeMap::new();
    for i in 0..n {
        if let Some(&p) = last_on.get(&ops[i].stream) {
            prev_end[i] = end(p);
        }
        last_on.insert(ops[i].stream, i);
    }
    let lo = lts.iter().copied().min().unwrap_or(0);
    let hi = lts.iter().copied().max().unwrap_or(0);
    let mut threads: BTreeMap<&(String, String), Vec<&Call>> = BTreeMap::new();
    for c in &trace.calls {
        if c.ts >= lo && c.ts <= hi {
            threads.entry(&c.thread).or_default().push(c);
        }
    }
    for calls in threads.values_mut() {
        calls.sort_by_key(|c| (c.ts, c.correlation));
        let mut record: Option<Ns> = None;
        let mut pending: Vec<Ns> = Vec::new();
        for c in calls.iter() {
            if c.name == "cudaEventRecord" {
                record = Some(c.ts);
            } else if c.name == "cudaStreamWaitEvent" {
                pending.push(record.unwrap_or(c.ts).min(c.ts));
            } else if let Some(&i) = index_of.get(&c.correlation) {
                for cut in pending.drain(..) {
                    let upto = launch_ts.partition_point(|&t| t <= cut);
                    let before = &by_launch[..upto];
                    // The latest op of `stream` launched before the cut that ended in time.
                    let in_time = |stream: i64| {
                        before
                            .iter()
                            .rev()
                            .find(|&&j| ops[j].stream == stream && end(j) <= ops[i].start)
                            .copied()
                    };
                    let Some(last) = before
                        .iter()
                        .rev()
                        .find(|&&j| ops[j].stream != ops[i].stream)
                        .copied()
                    else {
                        counts.outside += 1;
                        continue;
                    };
                    let chosen = in_time(ops[last].stream);
                    // A consumer that started long after everything the chosen producer, its
                    // stream and its launch explain waited for another stream's op: the one
                    // of another stream that ended last before it started.
                    let explained = chosen
                        .map_or(Ns::MIN, end)
                        .max(prev_end[i])
                        .max(lts[i].saturating_add(UNEXPLAINED_NS));
                    let better = if ops[i].start > explained.saturating_add(UNEXPLAINED_NS) {
                        let mut streams: Vec<i64> = before
                            .iter()
                            .map(|&j| ops[j].stream)
                            .filter(|&s| s != ops[i].stream)
                            .collect();
                        streams.sort_unstable();
                        streams.dedup();
                        streams
                            .into_iter()
                            .filter_map(in_time)
                            .max_by_key(|&j| (end(j), std::cmp::Reverse(j)))
                            .filter(|&j| chosen.is_none_or(|c| end(j) > end(c)))
                    } else {
                        None
                    };
                    match (chosen, better) {
                        (_, Some(q)) => {
                            add(q, i);
                            counts.moved += 1;
                        }
                        (Some(p), None) if p == last => {
                            add(p, i);
                            counts.inferred += 1;
                        }
                        (Some(p), None) => {
                            add(p, i);
                            counts.moved += 1;
                        }
                        (None, None) => counts.dropped += 1,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;
