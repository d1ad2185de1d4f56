//! PyTorch profiler (Kineto) traces in: one measured training step becomes a graph with the
//! measured durations, the recorded streams, the dependencies the trace shows, and release
//! times (a kernel starts no earlier than the CPU launched it).
//!
//! A trace is the Chrome-trace JSON that `torch.profiler.profile(...).export_chrome_trace` or
//! `tensorboard_trace_handler` writes (`.json`, or gzipped `.json.gz`). The importer reads:
//!
//! - **GPU ops**: `kernel`, `gpu_memcpy` and `gpu_memset` events, with their measured start,
//!   duration, CUDA stream and correlation id. Each becomes one op whose `duration_ns` is the
//!   measured one, named `<kernel's short name>#<correlation>`; when several ops share a
//!   correlation (one launch ran them: a CUDA graph replay, `cudaGraphLaunch`, or a HIP one,
//!   `hipGraphLaunch`, up to hundreds of kernels and memsets; a library call that runs several
//!   kernels), `<kernel's short name>#<correlation>.<k>`, the `k`-th of them in start order.
//! - **Launches**: `cuda_runtime` / `cuda_driver` calls (HIP's too), matched to GPU ops by
//!   correlation id. A GPU op without a launch call (launched from a thread whose runtime events
//!   the trace lacks) is kept, on its stream, released at its measured start
//!   ([`TraceReport::unlaunched_ops`] counts them).
//! - **The step**: `ProfilerStep#N` CPU annotations. A step's ops are those it launched (the
//!   launch call falls in its span), and the GPU ops without a launch call that started in its
//!   GPU window (from its first launched op's start to the next step's; the last step's ends at
//!   the later of its last op's end and its CPU end). By default the median step by measured GPU span (the lower
//!   median for an even count; `TraceOptions::step` picks one); a trace without annotations is
//!   one step. The step's **measured time** is its ops' GPU span, first start to last end.
//! - **Streams**: a CUDA stream that runs only NCCL kernels is a communication channel (its
//!   kernels collectives, their kind from the kernel name or the process group's
//!   `Collective name`, their bytes from `In/Out msg nelems` and `dtype` or from the recorded
//!   input shape of the `nccl:*` op that launched them, their group from `Group size` or
//!   `distributedInfo.world_size`); every other stream is a compute stream. Lane 0 of each kind
//!   is its busiest stream, further ones are lanes 1, 2, ... ([`concerto_graph::Op::lane`]).
//!   Channels are intra-node unless the world size exceeds the GPUs per node.
//! - **Dependencies**: FIFO order on every compute stream (the trace records no tensors, so the
//!   recorded order of a compute stream is kept); none among the collectives of a channel
//!   (they are independent; a plan still runs them in one order on every rank). Cross-stream
//!   waits come from `cuda_sync` events of kind `Stream Wait Event` where the trace has them
//!   (exact: the waiting stream, the recording stream and the `cudaEventRecord` call), and are
//!   otherwise inferred from `cudaStreamWaitEvent` in each CPU thread's launch order (see
//!   `infer_waits`): the next op the thread launches waits for the op launched last on another
//!   stream before the thread's latest `cudaEventRecord`. A wait the measured step contradicts
//!   (the producer ended after the consumer started) is moved to the latest earlier op of the
//!   producer's stream that ended in time, or dropped; [`WaitCounts`] says how many of each. A
//!   wait on a channel covers every collective of the channel up to the producer.
//! - **Release times**: `submit time + launch latency - step start`; every op of a launch that
//!   ran several gets the launch's, and follows its stream's order (FIFO on a compute stream,
//!   program order on a channel); an op without a launch call gets its measured start. The submit time is the
//!   launch call's start, except for a call that ran far longer than its kind usually does
//!   (lazy module loading inside a `cudaLaunchKernel`, a `cudaMemcpyAsync` to pageable memory
//!   that waits for the device): such a call submits near its end, `end - median duration of
//!   its kind`. The launch latency is the 10th percentile of `start - submit` over
//!   launch-bound ops (started more than 1 µs after they were ready; the first op of each
//!   launch only). Host-side waits
//!   (`cudaStreamSynchronize`, a blocking copy) are in the launch times, so a replay keeps the
//!   CPU's pace.
//!
//! The graph's program order is the measured start order, so the program-order plan *is* the
//! recorded schedule, and simulating it without contention (the measured durations already
//! contain it) replays the step ([`replay`]). Cost: O(events log events) for reading and
//! O(ops log ops + waits * log ops) for building.
//!
//! The trace is read as a stream ([`Trace::read`], gzip decoded on the way): one event at a
//! time, keeping only the fields above, so memory grows with the GPU ops, launch calls and
//! shaped CPU ops, not with the file (a 1 GB trace of a V100 job imports in about 140 MB).
//!
//! Sources: the trace format of Kineto (`libkineto/src/output_json.cpp`) and PyTorch's
//! profiler; the critical-path rules of HolisticTraceAnalysis
//! (`hta/analyzers/critical_path_analysis.py`: kernel launch edges, same-stream FIFO edges,
//! `cudaStreamWaitEvent` and `cuda_sync` synchronisation edges), which this follows for the
//! dependencies; and Lumos (Liang et al., MLSys 2025), which replays such traces.

mod build;
pub mod calibrate;
mod classify;
mod events;
pub mod fidelity;

use std::io::Read;

pub use events::Trace;

use concerto_graph::{simulate, Graph, GraphError, StreamPlan};
use serde::Serialize;

/// Why a trace could not be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file is not valid JSON (or its gzip stream is broken).
    #[error("not valid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's message (it says when the input ends early: a truncated trace).
        message: String,
    },
    /// The gzip stream could not be decompressed.
    #[error("not a readable gzip stream: {0}")]
    Gzip(String),
    /// Valid JSON, but not a profiler trace.
    #[error("not a PyTorch profiler trace: {reason}")]
    NotATrace {
        /// What is missing or of the wrong kind.
        reason: String,
    },
    /// An event lacks a field the importer needs, or has a wrong one.
    #[error("trace event {index} (`{name}`): {reason}")]
    Event {
        /// Index in `traceEvents`.
        index: usize,
        /// The event's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// No GPU activity to build a step from.
    #[error("no GPU events to import: {reason}")]
    NoGpuEvents {
        /// Why (a CPU-only trace, or no op inside the chosen step).
        reason: String,
    },
    /// The step asked for is not in the trace.
    #[error("the trace has no step `{asked}`; its steps: {available}")]
    NoStep {
        /// The step asked for.
        asked: String,
        /// The steps the trace has.
        available: String,
    },
    /// The graph could not be built (a duplicate name, say).
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// Options of [`import`].
#[derive(Clone, Debug)]
pub struct TraceOptions {
    /// Which `ProfilerStep#N` to import; `None` (default): the median step.
    pub step: Option<u64>,
    /// GPUs per node: a world larger than this makes the channels inter-node. Default 8.
    pub gpus_per_node: u32,
    /// Whether ops get release times from their CPU launches (default). Without them the graph
    /// is what the GPU alone would run: the step as if its launches cost nothing (captured in a
    /// CUDA graph, say), a what-if for launch-bound steps.
    pub launch_times: bool,
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self {
            step: None,
            gpus_per_node: 8,
            launch_times: true,
        }
    }
}

/// One step of the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepSummary {
    /// `ProfilerStep#N`, or `whole trace` for a trace without step annotations.
    pub name: String,
    /// GPU ops it launched.
    pub ops: usize,
    /// Their measured GPU span (ns).
    pub measured_ns: u64,
}

/// How the cross-stream waits were found (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WaitCounts {
    /// From `cuda_sync` events: exact.
    pub exact: usize,
    /// Inferred from `cudaStreamWaitEvent` in launch order, consistent with the measured times.
    pub inferred: usize,
    /// Inferred, then moved to an earlier op of the producer's stream that ended in time.
    pub moved: usize,
    /// Contradicted by the measured times and left out.
    pub dropped: usize,
    /// Waits whose producer or consumer is not in the step (they sync with other steps).
    pub outside: usize,
}

/// A CUDA stream of the trace and the stream of the graph it became.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StreamMap {
    /// The CUDA stream id in the trace.
    pub cuda_stream: i64,
    /// The graph's stream ([`concerto_graph::Stream::name`]: `compute`, `compute.1`,
    /// `comm.intra-node`).
    pub stream: String,
    /// Ops of the step on it.
    pub ops: usize,
    /// Their total measured time (ns).
    pub busy_ns: u64,
}

/// What the importer measured and decided besides the graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TraceReport {
    /// The imported step.
    pub step: String,
    /// Every step of the trace.
    pub steps: Vec<StepSummary>,
    /// The imported step's measured GPU span (ns): first start to last end of its ops.
    pub measured_step_ns: u64,
    /// The launch latency added to every launch time (ns).
    pub launch_latency_ns: u64,
    /// How the cross-stream waits were found.
    pub waits: WaitCounts,
    /// GPU ops of the step without a launch call in the trace (launched from a thread the
    /// trace did not record): kept, each released at its measured start.
    pub unlaunched_ops: usize,
    /// Launch calls of the step that ran more than one GPU op (a CUDA or HIP graph replay,
    /// a library call that runs several kernels): each op is named `<kernel>#<correlation>.<k>`.
    pub multi_op_launches: usize,
    /// The streams, compute first.
    pub streams: Vec<StreamMap>,
    /// The GPU (`deviceProperties[0].name`), when recorded.
    pub device: Option<String>,
    /// `distributedInfo.rank`.
    pub rank: Option<i64>,
    /// `distributedInfo.world_size`.
    pub world_size: Option<i64>,
    /// Each op's measured `(start, end)` in ns from the step's first start, by op id.
    #[serde(skip)]
    pub measured: Vec<(u64, u64)>,
    /// Each op's kernel identity, by op id: its full name, grid and block (runs of one kernel
    /// on the same launch shape, which the contention estimate compares).
    #[serde(skip)]
    pub signature: Vec<String>,
    /// What the importer guessed or left out.
    pub warnings: Vec<String>,
}

impl TraceReport {
    /// The step a fit on the imported step is checked on: the next one of the trace, else
    /// the one before (by its `ProfilerStep#N` number); `None` for a trace of one step.
    pub fn held_out_step(&self) -> Option<u64> {
        let k = self.steps.iter().position(|s| s.name == self.step)?;
        self.steps
            .get(k + 1)
            .or(k.checked_sub(1).and_then(|j| self.steps.get(j)))
            .and_then(|s| s.name.strip_prefix("ProfilerStep#"))
            .and_then(|n| n.parse::<u64>().ok())
    }
}

/// Parses a trace (JSON text) and imports one step (see the module docs):
/// [`Trace::from_text`] then [`Trace::import`].
pub fn import(text: &str, options: &TraceOptions) -> Result<(Graph, TraceReport), TraceError> {
    Trace::from_text(text)?.import(options)
}

impl Trace {
    /// Imports one step of the trace (see the module docs). Cost: O(ops log ops + waits *
    /// log ops) over the trace's GPU ops and launch calls; the trace is not read again, so
    /// several steps or options can be imported from one reading.
    pub fn import(&self, options: &TraceOptions) -> Result<(Graph, TraceReport), TraceError> {
        build::build(self, options)
    }
}

/// Reads trace bytes: gzip (by its magic number) is decompressed; the text must be UTF-8.
pub fn decode(bytes: &[u8]) -> Result<String, TraceError> {
    let raw = if is_gzip(bytes) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .read_to_end(&mut out)
            .map_err(|e| TraceError::Gzip(e.to_string()))?;
        out
    } else {
        bytes.to_vec()
    };
    String::from_utf8(raw).map_err(|e| TraceError::Json {
        line: 0,
        column: 0,
        message: format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
    })
}

/// Whether `bytes` start with gzip's magic number.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Whether JSON text looks like a profiler trace (it has a `traceEvents` key) rather than a
/// native graph. O(length).
pub fn looks_like_trace(text: &str) -> bool {
    text.contains("\"traceEvents\"")
}

/// The recorded schedule replayed: the program-order plan (the measured order) simulated with
/// the measured durations and release times, without contention (the measured durations
/// already contain it). Its makespan, against [`TraceReport::measured_step_ns`], is the
/// replay error. O(ops * streams).
pub fn replay(graph: &Graph) -> Result<u64, GraphError> {
    Ok(replay_timeline(graph)?.makespan)
}

/// The timeline of [`replay`]: every op's replayed start and end.
pub fn replay_timeline(graph: &Graph) -> Result<concerto_graph::Timeline, GraphError> {
    let plan = StreamPlan::program_order(graph)?;
    let durations: Vec<u64> = graph
        .ops()
        .map(|op| op.duration_ns.unwrap_or(0).max(1))
        .collect();
    simulate(graph, &plan, &durations, 1.0)
}

/// `100 (x - reference) / reference`, rounded to 0.01 (0 for a zero reference): the error
/// of a replay or a model against a measurement, as every trace report prints it.
pub fn error_pct(x: u64, reference: u64) -> f64 {
    if reference == 0 {
        return 0.0;
    }
    ((x as f64 - reference as f64) / reference as f64 * 1e4).round() / 100.0
}
