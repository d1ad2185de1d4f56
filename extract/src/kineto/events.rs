//! The events of a Kineto trace that the importer reads, typed, with errors that name the
//! event (its index in `traceEvents`) and the field.

use serde_json::{Map, Value};

use super::TraceError;

/// Nanoseconds since the trace's clock origin (Kineto writes microseconds, sometimes with a
/// fractional part).
pub(super) type Ns = i64;

/// A GPU activity: a kernel, a memcpy or a memset.
#[derive(Clone, Debug)]
pub(super) struct GpuOp {
    pub(super) name: String,
    pub(super) category: GpuCategory,
    pub(super) start: Ns,
    pub(super) dur: Ns,
    pub(super) stream: i64,
    pub(super) correlation: i64,
    /// `args`, for the collective's sizes and the copy's bytes.
    pub(super) args: Map<String, Value>,
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
    pub(super) name: String,
    pub(super) ts: Ns,
    /// How long the call ran on the CPU (0 when not recorded).
    pub(super) dur: Ns,
    pub(super) thread: (String, String),
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
    pub(super) name: String,
    pub(super) ts: Ns,
    pub(super) dur: Ns,
    pub(super) thread: (String, String),
    /// `Input Dims` when recorded (`record_shapes=True`).
    pub(super) dims: Option<Vec<Vec<u64>>>,
    /// `Input type` when recorded.
    pub(super) types: Vec<String>,
}

/// The parts of a trace the importer uses.
#[derive(Clone, Debug, Default)]
pub(super) struct Trace {
    pub(super) gpu: Vec<GpuOp>,
    pub(super) calls: Vec<Call>,
    pub(super) waits: Vec<StreamWait>,
    pub(super) steps: Vec<Span>,
    /// CPU ops and annotations with recorded shapes (for collectives' sizes).
    pub(super) shaped: Vec<Span>,
    pub(super) rank: Option<i64>,
    pub(super) world_size: Option<i64>,
    pub(super) device: Option<String>,
}

/// Converts a Kineto time (µs) to ns.
fn ns(v: &Value) -> Option<Ns> {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.checked_mul(1000)
            } else {
                let f = n.as_f64()?;
                let x = (f * 1000.0).round();
                (x.is_finite() && x.abs() < 9.0e18).then_some(x as i64)
            }
        }
        _ => None,
    }
}

/// A thread or process id as Kineto writes it (a number, or a string such as `"Spans"`).
fn id(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
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
fn time(index: usize, name: &str, e: &Map<String, Value>) -> Result<Ns, TraceError> {
    let t = need(index, name, "ts", e.get("ts").and_then(ns))?;
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
fn duration(
    index: usize,
    name: &str,
    e: &Map<String, Value>,
    negative: bool,
) -> Result<Ns, TraceError> {
    let d = need(index, name, "dur", e.get("dur").and_then(ns))?;
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

impl Trace {
    /// Reads the events of a parsed trace (see the module docs of [`super`]).
    pub(super) fn from_value(root: &Value) -> Result<Trace, TraceError> {
        let (top, events) = top_level(root)?;
        let mut t = Trace::default();
        t.read_metadata(top);
        for (index, event) in events.iter().enumerate() {
            t.read_event(index, event)?;
        }
        Ok(t)
    }

    /// Reads the rank, world size and device name the trace records.
    fn read_metadata(&mut self, top: &Map<String, Value>) {
        if let Some(Value::Object(d)) = top.get("distributedInfo") {
            self.rank = int(d.get("rank"));
            self.world_size = int(d.get("world_size"));
        }
        if let Some(Value::Array(devs)) = top.get("deviceProperties") {
            self.device = devs
                .first()
                .and_then(|d| d.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string);
        }
    }

    /// Reads event `index` of `traceEvents`: a complete (`X`) event is a GPU op, a runtime or
    /// driver call, a stream wait, or a CPU span; other events are skipped.
    fn read_event(&mut self, index: usize, event: &Value) -> Result<(), TraceError> {
        let Value::Object(e) = event else {
            return Err(TraceError::Event {
                index,
                name: String::new(),
                reason: format!("the event is {}, not an object", kind(event)),
            });
        };
        if e.get("ph").and_then(Value::as_str) != Some("X") {
            return Ok(());
        }
        let cat = e
            .get("cat")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_lowercase();
        let name = e.get("name").and_then(Value::as_str).unwrap_or("");
        let empty = Map::new();
        let args = match e.get("args") {
            Some(Value::Object(a)) => a,
            _ => &empty,
        };
        let category = match cat.as_str() {
            "kernel" => Some(GpuCategory::Kernel),
            "gpu_memcpy" | "memcpy" => Some(GpuCategory::Memcpy),
            "gpu_memset" | "memset" => Some(GpuCategory::Memset),
            _ => None,
        };
        if let Some(category) = category {
            let start = time(index, name, e)?;
            let dur = duration(index, name, e, false)?;
            self.gpu.push(GpuOp {
                name: name.to_string(),
                category,
                start,
                dur,
                stream: need(index, name, "args.stream", int(args.get("stream")))?,
                correlation: need(
                    index,
                    name,
                    "args.correlation",
                    int(args.get("correlation")),
                )?,
                args: args.clone(),
            });
            return Ok(());
        }
        match cat.as_str() {
            "cuda_runtime" | "runtime" | "cuda_driver" | "driver" => {
                self.read_call(index, name, e, args)
            }
            "cuda_sync" => self.read_wait(index, name, args),
            _ => self.read_span(index, name, &cat, e, args),
        }
    }

    /// Reads a runtime or driver call; one without a correlation cannot launch anything the
    /// trace shows and is skipped.
    fn read_call(
        &mut self,
        index: usize,
        name: &str,
        e: &Map<String, Value>,
        args: &Map<String, Value>,
    ) -> Result<(), TraceError> {
        let Some(correlation) = int(args.get("correlation")) else {
            return Ok(());
        };
        let ts = time(index, name, e)?;
        // The call's end can be its submit time (`build`): it too stays below
        // `MAX_NS`.
        let dur = e.get("dur").and_then(ns).unwrap_or(0).max(0);
        if dur >= MAX_NS - ts {
            return Err(TraceError::Event {
                index,
                name: name.to_string(),
                reason: format!("`dur` is {dur} ns: the call ends beyond 2^62 ns"),
            });
        }
        self.calls.push(Call {
            name: name.to_string(),
            ts,
            dur,
            thread: (id(e.get("pid")), id(e.get("tid"))),
            correlation,
        });
        Ok(())
    }

    /// Reads a `Stream Wait Event` synchronisation; other `cuda_sync` events are skipped.
    fn read_wait(
        &mut self,
        index: usize,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<(), TraceError> {
        if args.get("cuda_sync_kind").and_then(Value::as_str) != Some("Stream Wait Event") {
            return Ok(());
        }
        let field = |f: &str| need(index, name, f, int(args.get(&f[5..])));
        self.waits.push(StreamWait {
            index,
            stream: field("args.stream")?,
            wait_on_stream: field("args.wait_on_stream")?,
            record: field("args.wait_on_cuda_event_record_corr_id")?,
            correlation: field("args.correlation")?,
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
        e: &Map<String, Value>,
        args: &Map<String, Value>,
    ) -> Result<(), TraceError> {
        let is_step = name.starts_with("ProfilerStep#");
        let dims = args.get("Input Dims").and_then(dims_of);
        if !is_step && dims.is_none() {
            return Ok(());
        }
        let span = Span {
            name: name.to_string(),
            ts: time(index, name, e)?,
            // A span's negative duration is kept (it contains no launch).
            dur: duration(index, name, e, true)?,
            thread: (id(e.get("pid")), id(e.get("tid"))),
            dims,
            types: match args.get("Input type") {
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|x| x.as_str().unwrap_or("").to_string())
                    .collect(),
                _ => Vec::new(),
            },
        };
        // GPU-side copies of the step annotation (`gpu_user_annotation`) are not
        // steps: the CPU annotation is.
        if is_step && !cat.starts_with("gpu_") {
            self.steps.push(span);
        } else if !is_step {
            self.shaped.push(span);
        }
        Ok(())
    }
}

/// A trace's top-level object and its `traceEvents` array.
fn top_level(root: &Value) -> Result<(&Map<String, Value>, &Vec<Value>), TraceError> {
    let Value::Object(top) = root else {
        return Err(TraceError::NotATrace {
            reason: format!("the top level is {}, not an object", kind(root)),
        });
    };
    match top.get("traceEvents") {
        Some(Value::Array(a)) => Ok((top, a)),
        Some(other) => Err(TraceError::NotATrace {
            reason: format!("`traceEvents` is {}, not an array", kind(other)),
        }),
        None => Err(TraceError::NotATrace {
            reason: "no `traceEvents` array (not a Chrome or PyTorch profiler trace)".into(),
        }),
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

/// What kind of JSON value `v` is, for errors.
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
