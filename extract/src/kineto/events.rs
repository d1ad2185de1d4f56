//! The events of a Kineto trace that the importer reads, typed, with errors that name the
//! event (its index in `traceEvents`) and the field.
//!
//! The trace is read as a stream ([`Trace::read`]): one event at a time is parsed into the few
//! fields the importer uses ([`raw::RawEvent`]) and kept in compact form (names shared between
//! events, CPU threads as numbers, only the `args` the graph needs); every other event is
//! dropped as soon as it is parsed. Memory grows with the GPU ops, launch calls and shaped CPU
//! ops the trace holds, not with its size.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::sync::Arc;

use serde::de::Deserializer as _;
use serde_json::Value;

use super::classify::keeps_shapes;
use super::TraceError;
use raw::{Element, FileSeed, RawArgs, RawEvent, Scalar, Sink};

mod raw;

/// Nanoseconds since the trace's clock origin (Kineto writes microseconds, sometimes with a
/// fractional part).
pub(super) type Ns = i64;

/// A CPU thread of the trace: its `(pid, tid)` numbered in order of first appearance.
pub(super) type Thread = u32;

/// A GPU activity: a kernel, a memcpy or a memset.
#[derive(Clone, Debug)]
pub(super) struct GpuOp {
    pub(super) name: Arc<str>,
    pub(super) category: GpuCategory,
    pub(super) start: Ns,
    pub(super) dur: Ns,
    pub(super) stream: i64,
    pub(super) correlation: i64,
    /// The `args` the importer reads.
    pub(super) args: GpuArgs,
}

/// The `args` of a GPU op that the importer reads.
#[derive(Clone, Debug, Default)]
pub(super) struct GpuArgs {
    /// `bytes` (a copy's or a memset's).
    pub(super) bytes: Option<u64>,
    /// `grid` and `block` as JSON text, the kernel's launch shape.
    pub(super) grid: Option<Arc<str>>,
    pub(super) block: Option<Arc<str>>,
    /// What an NCCL kernel records about its collective (absent on other kernels).
    pub(super) nccl: Option<Box<NcclArgs>>,
}

/// What newer traces record on an NCCL kernel.
#[derive(Clone, Debug, Default)]
pub(super) struct NcclArgs {
    /// `Collective name`.
    pub(super) collective: Option<String>,
    /// `dtype`.
    pub(super) dtype: Option<String>,
    /// `In msg nelems` and `Out msg nelems`.
    pub(super) in_nelems: Option<u64>,
    pub(super) out_nelems: Option<u64>,
    /// `Group size`.
    pub(super) group_size: Option<u64>,
}

/// What a GPU activity is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GpuCategory {
    Kernel,
    Memcpy,
    Memset,
}

/// A CUDA runtime or driver call on a CPU thread.
#[derive(Clone, Debug)]
pub(super) struct Call {
    pub(super) name: Arc<str>,
    pub(super) ts: Ns,
    /// How long the call ran on the CPU (0 when not recorded).
    pub(super) dur: Ns,
    pub(super) thread: Thread,
    pub(super) correlation: i64,
}

/// A `cuda_sync` event of kind `Stream Wait Event` (newer Kineto): `stream` waits for the
/// event recorded on `wait_on_stream` by the `cudaEventRecord` of correlation `record`.
#[derive(Clone, Debug)]
pub(super) struct StreamWait {
    pub(super) index: usize,
    pub(super) stream: i64,
    pub(super) wait_on_stream: i64,
    pub(super) record: i64,
    /// Correlation of the `cudaStreamWaitEvent` call.
    pub(super) correlation: i64,
}

/// A CPU-side span: a `ProfilerStep#N` annotation, or an op with recorded input shapes.
#[derive(Clone, Debug)]
pub(super) struct Span {
    pub(super) name: Arc<str>,
    pub(super) ts: Ns,
    pub(super) dur: Ns,
    pub(super) thread: Thread,
    /// `Input Dims` and `Input type` when recorded (`record_shapes=True`), kept for the ops
    /// whose shapes the importer reads (GEMMs, collectives); other shaped spans keep `None`.
    pub(super) shapes: Option<Box<Shapes>>,
}

/// A CPU op's recorded input shapes and element types.
#[derive(Clone, Debug)]
pub(super) struct Shapes {
    /// `Input Dims`.
    pub(super) dims: Vec<Vec<u64>>,
    /// `Input type`.
    pub(super) types: Vec<String>,
}

/// The events of a profiler trace that the importer keeps: its GPU ops, its launch calls, its
/// stream waits, its `ProfilerStep#N` annotations and its CPU ops with recorded shapes, with the
/// rank, world size and device the trace records. Read one with [`Trace::read`] (streaming) or
/// [`Trace::from_text`]; import a step of it with [`Trace::import`].
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub(super) gpu: Vec<GpuOp>,
    pub(super) calls: Vec<Call>,
    pub(super) waits: Vec<StreamWait>,
    pub(super) steps: Vec<Span>,
    /// CPU ops and annotations with recorded shapes (for GEMMs' and collectives' sizes).
    pub(super) shaped: Vec<Span>,
    pub(super) rank: Option<i64>,
    pub(super) world_size: Option<i64>,
    pub(super) device: Option<String>,
    /// Each [`Thread`]'s `(pid, tid)`, by number.
    pub(super) thread_names: Vec<(String, String)>,
}

/// The event's field, or an error naming the event and the field.
fn need<T>(index: usize, name: &str, field: &str, v: Option<T>) -> Result<T, TraceError> {
    v.ok_or_else(|| TraceError::Event {
        index,
        name: name.to_string(),
        reason: format!("`{field}` is missing or not a number"),
    })
}

/// Times and durations the importer takes are below this (ns): 2^62 ns, about 146 years.
/// Kineto writes microseconds since the epoch or a base time (about 2^60.6 ns in 2025), never
/// negative; with every `ts` and every call's end in `[0, 2^62)` and every duration within
/// `±2^62`, the sums and differences the builder takes stay inside `i64`.
pub(super) const MAX_NS: Ns = 1 << 62;

/// The event's `ts` in ns, or an error naming the event: a number in `[0, MAX_NS)`.
fn time(index: usize, name: &str, e: &RawEvent) -> Result<Ns, TraceError> {
    let t = need(index, name, "ts", e.ts.ns())?;
    let reason = if t < 0 {
        format!("`ts` is negative ({t} ns)")
    } else if t >= MAX_NS {
        format!("`ts` is {t} ns, beyond 2^62 ns (146 years)")
    } else {
        return Ok(t);
    };
    Err(TraceError::Event {
        index,
        name: name.to_string(),
        reason,
    })
}

/// The event's `dur` in ns, or an error naming the event: a number below `MAX_NS` in
/// magnitude, and not negative for a GPU op (`negative`: whether a negative one is taken).
fn duration(index: usize, name: &str, e: &RawEvent, negative: bool) -> Result<Ns, TraceError> {
    let d = need(index, name, "dur", e.dur.ns())?;
    let reason = if d < 0 && !negative {
        format!("negative duration {d} ns")
    } else if d.checked_abs().is_none_or(|a| a >= MAX_NS) {
        format!("`dur` is {d} ns, beyond 2^62 ns (146 years)")
    } else {
        return Ok(d);
    };
    Err(TraceError::Event {
        index,
        name: name.to_string(),
        reason,
    })
}

/// The reader's state: the trace so far, the names and threads seen, and the error that stopped
/// it.
#[derive(Default)]
struct Reader {
    trace: Trace,
    names: BTreeSet<Arc<str>>,
    threads: BTreeMap<(String, String), Thread>,
    error: Option<TraceError>,
    /// Whether the top-level `traceEvents` key was met.
    seen_events: bool,
}

impl Sink for Reader {
    fn event(&mut self, index: usize, element: Element) -> Result<(), ()> {
        let result = match element {
            Element::Event(e) => self.read_event(index, &e),
            Element::NotAnObject(kind) => Err(TraceError::Event {
                index,
                name: String::new(),
                reason: format!("the event is {kind}, not an object"),
            }),
        };
        result.map_err(|e| self.error = Some(e))
    }

    fn metadata(&mut self, key: &str, value: Value) {
        let int = |v: Option<&Value>| match v? {
            Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        match (key, value) {
            ("distributedInfo", Value::Object(d)) => {
                self.trace.rank = int(d.get("rank"));
                self.trace.world_size = int(d.get("world_size"));
            }
            ("deviceProperties", Value::Array(devs)) => {
                self.trace.device = devs
                    .first()
                    .and_then(|d| d.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            _ => {}
        }
    }

    fn events_start(&mut self) {
        self.seen_events = true;
        let t = &mut self.trace;
        t.gpu.clear();
        t.calls.clear();
        t.waits.clear();
        t.steps.clear();
        t.shaped.clear();
    }

    fn not_a_trace(&mut self, reason: String) {
        self.error = Some(TraceError::NotATrace { reason });
    }
}

impl Trace {
    /// Reads a trace from `input`, gzipped (by its magic number) or not, as a stream: one event
    /// at a time, keeping only what the importer uses (see the module docs of [`super`]). Cost:
    /// O(events) time; memory O(kept events), about 100 bytes per GPU op, launch call or shaped
    /// CPU op, plus the distinct names. Errors name the event (its index in `traceEvents`) and
    /// the field, or the line and column where the JSON breaks.
    pub fn read<R: BufRead>(input: R) -> Result<Trace, TraceError> {
        Trace::read_json(input).0
    }

    /// [`Trace::read`], or `None` for JSON that is no trace: it has no top-level `traceEvents`
    /// key before its end or before the first syntax error (a native graph, say). A broken
    /// gzip stream is an error either way.
    pub fn read_if_trace<R: BufRead>(input: R) -> Result<Option<Trace>, TraceError> {
        match Trace::read_json(input) {
            (Ok(trace), _) => Ok(Some(trace)),
            (Err(TraceError::Gzip(e)), _) => Err(TraceError::Gzip(e)),
            (Err(_), false) => Ok(None),
            (Err(e), true) => Err(e),
        }
    }

    /// Reads a trace from JSON text (see [`Trace::read`]).
    pub fn from_text(text: &str) -> Result<Trace, TraceError> {
        Trace::read(text.as_bytes())
    }

    /// The trace, gzipped or not, and whether its `traceEvents` key was met.
    fn read_json<R: BufRead>(mut input: R) -> (Result<Trace, TraceError>, bool) {
        let gzip = match input.fill_buf() {
            Ok(buf) => super::is_gzip(buf),
            Err(e) => return (Err(TraceError::Gzip(e.to_string())), false),
        };
        let mut reader = Reader::default();
        let found = if gzip {
            let decoder = flate2::bufread::MultiGzDecoder::new(input);
            let mut d = serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(
                1 << 16,
                decoder,
            ));
            d.deserialize_any(FileSeed(&mut reader))
                .and_then(|found| d.end().map(|()| found))
        } else {
            let mut d = serde_json::Deserializer::from_reader(input);
            d.deserialize_any(FileSeed(&mut reader))
                .and_then(|found| d.end().map(|()| found))
        };
        let seen = reader.seen_events;
        let result = match (found, reader.error.take()) {
            (Err(e), _) if gzip && e.is_io() => Err(TraceError::Gzip(e.to_string())),
            (_, Some(e)) => Err(e),
            (Ok(true), None) => Ok(reader.trace),
            (Ok(false), None) => Err(TraceError::NotATrace {
                reason: "no `traceEvents` array (not a Chrome or PyTorch profiler trace)".into(),
            }),
            (Err(e), None) => Err(TraceError::Json {
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            }),
        };
        (result, seen)
    }
}

impl Reader {
    /// The shared copy of `name`.
    fn name(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.names.get(name) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(name);
        self.names.insert(n.clone());
        n
    }

    /// The number of the event's `(pid, tid)`.
    fn thread(&mut self, e: &RawEvent) -> Thread {
        let key = (e.pid.id(), e.tid.id());
        if let Some(&t) = self.threads.get(&key) {
            return t;
        }
        let t = self.trace.thread_names.len() as Thread;
        self.trace.thread_names.push(key.clone());
        self.threads.insert(key, t);
        t
    }

    /// Reads event `index` of `traceEvents`: a complete (`X`) event is a GPU op, a runtime or
    /// driver call, a stream wait, or a CPU span; other events are skipped.
    fn read_event(&mut self, index: usize, e: &RawEvent) -> Result<(), TraceError> {
        if e.ph.str() != Some("X") {
            return Ok(());
        }
        let cat = e.cat.str().unwrap_or("").to_ascii_lowercase();
        let name = e.name.str().unwrap_or("");
        let args = &e.args;
        let category = match cat.as_str() {
            "kernel" => Some(GpuCategory::Kernel),
            "gpu_memcpy" | "memcpy" => Some(GpuCategory::Memcpy),
            "gpu_memset" | "memset" => Some(GpuCategory::Memset),
            _ => None,
        };
        if let Some(category) = category {
            return self.read_gpu(index, name, category, e);
        }
        match cat.as_str() {
            "cuda_runtime" | "runtime" | "cuda_driver" | "driver" => self.read_call(index, name, e),
            "cuda_sync" => self.read_wait(index, name, args),
            _ => self.read_span(index, name, &cat, e),
        }
    }

    /// Reads a kernel, memcpy or memset.
    fn read_gpu(
        &mut self,
        index: usize,
        name: &str,
        category: GpuCategory,
        e: &RawEvent,
    ) -> Result<(), TraceError> {
        let a = &e.args;
        let start = time(index, name, e)?;
        let dur = duration(index, name, e, false)?;
        let stream = need(index, name, "args.stream", a.stream.int())?;
        let correlation = need(index, name, "args.correlation", a.correlation.int())?;
        let nccl = NcclArgs {
            collective: a.collective.str().map(str::to_string),
            dtype: a.dtype.str().map(str::to_string),
            in_nelems: a.in_nelems.u64(),
            out_nelems: a.out_nelems.u64(),
            group_size: a.group_size.u64(),
        };
        let has_nccl = nccl.collective.is_some()
            || nccl.dtype.is_some()
            || nccl.in_nelems.is_some()
            || nccl.out_nelems.is_some()
            || nccl.group_size.is_some();
        let args = GpuArgs {
            bytes: a.bytes.u64(),
            grid: a.grid.as_deref().map(|g| self.name(g)),
            block: a.block.as_deref().map(|b| self.name(b)),
            nccl: has_nccl.then(|| Box::new(nccl)),
        };
        let name = self.name(name);
        self.trace.gpu.push(GpuOp {
            name,
            category,
            start,
            dur,
            stream,
            correlation,
            args,
        });
        Ok(())
    }

    /// Reads a runtime or driver call; one without a correlation cannot launch anything the
    /// trace shows and is skipped.
    fn read_call(&mut self, index: usize, name: &str, e: &RawEvent) -> Result<(), TraceError> {
        let Some(correlation) = e.args.correlation.int() else {
            return Ok(());
        };
        let ts = time(index, name, e)?;
        // The call's end can be its submit time (`build`): it too stays below `MAX_NS`.
        let dur = e.dur.ns().unwrap_or(0).max(0);
        if dur >= MAX_NS - ts {
            return Err(TraceError::Event {
                index,
                name: name.to_string(),
                reason: format!("`dur` is {dur} ns: the call ends beyond 2^62 ns"),
            });
        }
        let thread = self.thread(e);
        let name = self.name(name);
        self.trace.calls.push(Call {
            name,
            ts,
            dur,
            thread,
            correlation,
        });
        Ok(())
    }

    /// Reads a `Stream Wait Event` synchronisation; other `cuda_sync` events are skipped.
    fn read_wait(&mut self, index: usize, name: &str, args: &RawArgs) -> Result<(), TraceError> {
        if args.sync_kind.str() != Some("Stream Wait Event") {
            return Ok(());
        }
        let field = |f: &str, v: &Scalar| need(index, name, f, v.int());
        self.trace.waits.push(StreamWait {
            index,
            stream: field("args.stream", &args.stream)?,
            wait_on_stream: field("args.wait_on_stream", &args.wait_on_stream)?,
            record: field("args.wait_on_cuda_event_record_corr_id", &args.record)?,
            correlation: field("args.correlation", &args.correlation)?,
        });
        Ok(())
    }

    /// Reads a CPU span: a `ProfilerStep#` annotation is a step, a span with `Input Dims` a
    /// shaped op; any other is skipped.
    fn read_span(
        &mut self,
        index: usize,
        name: &str,
        cat: &str,
        e: &RawEvent,
    ) -> Result<(), TraceError> {
        let is_step = name.starts_with("ProfilerStep#");
        let dims = e.args.input_dims.as_ref().and_then(dims_of);
        if !is_step && dims.is_none() {
            return Ok(());
        }
        let ts = time(index, name, e)?;
        // A span's negative duration is kept (it contains no launch).
        let dur = duration(index, name, e, true)?;
        let shapes = dims.filter(|_| keeps_shapes(name)).map(|dims| {
            Box::new(Shapes {
                dims,
                types: match &e.args.input_type {
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|x| x.as_str().unwrap_or("").to_string())
                        .collect(),
                    _ => Vec::new(),
                },
            })
        });
        let span = Span {
            name: self.name(name),
            ts,
            dur,
            thread: self.thread(e),
            shapes,
        };
        // GPU-side copies of the step annotation (`gpu_user_annotation`) are not
        // steps: the CPU annotation is.
        if is_step && !cat.starts_with("gpu_") {
            self.trace.steps.push(span);
        } else if !is_step {
            self.trace.shaped.push(span);
        }
        Ok(())
    }
}

/// `Input Dims` as lists of sizes (`[[8, 1024], []]`); `None` when malformed.
fn dims_of(v: &Value) -> Option<Vec<Vec<u64>>> {
    let Value::Array(a) = v else { return None };
    a.iter()
        .map(|d| match d {
            Value::Array(xs) => xs.iter().map(Value::as_u64).collect(),
            _ => Some(Vec::new()),
        })
        .collect()
}
