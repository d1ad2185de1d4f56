//! Reading a `jax.profiler` trace (the Chrome trace JSON that `jax.profiler.trace` writes as
//! `*.trace.json.gz`) into the measured kernel times of one XLA module's instructions.
//!
//! A device event is a complete event (`"ph": "X"`) whose `args` name the HLO instruction
//! (`hlo_op`) and module (`hlo_module`) it belongs to; a cuBLAS call is two of them, a memset
//! and the GEMM. Where the trace has thread names (`"ph": "M"`, `thread_name`), only the
//! events of the GPU streams (`Stream #...`) count, so that the `XLA Ops` line, which repeats
//! them, is not counted twice. Steps are the module's events on the `XLA Modules` line when the
//! trace has one; otherwise every instruction's kernels are split in time order into as many
//! steps as the greatest common divisor of their counts (each step runs each instruction's
//! kernels once).
//!
//! The file is read as a stream (gzip decoded on the way) and its events one by one (serde's
//! sequence visitor), keeping only the device events and the metadata, so memory grows with
//! the device events, not the trace.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::ProfileError;

/// A string field that may hold another JSON type in events this reader skips.
#[derive(Deserialize)]
#[serde(untagged)]
enum Loose {
    Str(String),
    Int(i64),
    Other(IgnoredAny),
}

impl Loose {
    fn text(&self) -> Option<String> {
        match self {
            Loose::Str(s) => Some(s.clone()),
            Loose::Int(i) => Some(i.to_string()),
            Loose::Other(_) => None,
        }
    }
}

#[derive(Deserialize)]
struct RawArgs {
    hlo_op: Option<Loose>,
    hlo_module: Option<Loose>,
    name: Option<Loose>,
}

#[derive(Deserialize)]
struct RawEvent {
    ph: Option<Loose>,
    name: Option<Loose>,
    pid: Option<Loose>,
    tid: Option<Loose>,
    ts: Option<serde_json::Number>,
    dur: Option<serde_json::Number>,
    args: Option<RawArgs>,
}

/// One complete event kept from the trace.
#[derive(Clone, Debug)]
pub(super) struct Event {
    /// Its index in `traceEvents` (errors name it).
    pub index: usize,
    pub name: String,
    pub pid: String,
    pub tid: String,
    /// Start and duration, in ns.
    pub ts_ns: f64,
    pub dur_ns: u64,
    /// `args.hlo_op` and `args.hlo_module` (both set, or the event is on the modules line).
    pub hlo_op: Option<String>,
    pub hlo_module: Option<String>,
}

/// What the trace holds: its complete events of interest and its process and thread names.
#[derive(Debug, Default)]
pub(super) struct Events {
    pub events: Vec<Event>,
    pub processes: BTreeMap<String, String>,
    pub threads: BTreeMap<(String, String), String>,
}

struct EventsSeed<'a>(&'a mut Events);

impl<'de> DeserializeSeed<'de> for EventsSeed<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of trace events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            let raw = seq
                .next_element::<RawEvent>()
                .map_err(|e| de::Error::custom(format!("event {index}: {e}")))?;
            let Some(raw) = raw else { return Ok(()) };
            keep(self.0, index, raw).map_err(de::Error::custom)?;
            index += 1;
        }
    }
}

struct FileSeed<'a>(&'a mut Events, &'a mut bool);

impl<'de> Visitor<'de> for FileSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object with `traceEvents`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "traceEvents" {
                map.next_value_seed(EventsSeed(self.0))?;
                *self.1 = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// A number of µs as ns, or what is wrong with it.
fn micros(n: Option<&serde_json::Number>, what: &str) -> Result<f64, String> {
    let v = n
        .and_then(serde_json::Number::as_f64)
        .ok_or_else(|| format!("`{what}` is missing"))?;
    if !v.is_finite() || !(0.0..=1e15).contains(&v) {
        return Err(format!("`{what}` is {v}, not a time in µs"));
    }
    Ok(v * 1000.0)
}

fn keep(out: &mut Events, index: usize, raw: RawEvent) -> Result<(), String> {
    let text = |l: &Option<Loose>| l.as_ref().and_then(Loose::text).unwrap_or_default();
    let ph = text(&raw.ph);
    let (pid, tid) = (text(&raw.pid), text(&raw.tid));
    let name = text(&raw.name);
    let arg = |f: fn(&RawArgs) -> &Option<Loose>| raw.args.as_ref().and_then(|a| f(a).as_ref());
    match ph.as_str() {
        "M" => {
            let value = arg(|a| &a.name).and_then(Loose::text).unwrap_or_default();
            match name.as_str() {
                "process_name" => {
                    out.processes.insert(pid, value);
                }
                "thread_name" => {
                    out.threads.insert((pid, tid), value);
                }
                _ => {}
            }
            Ok(())
        }
        "X" => {
            let hlo_op = arg(|a| &a.hlo_op).and_then(Loose::text);
            let hlo_module = arg(|a| &a.hlo_module).and_then(Loose::text);
            let named = |e: String| format!("event {index} (`{name}`): {e}");
            let ts_ns = micros(raw.ts.as_ref(), "ts").map_err(named)?;
            let dur_ns = micros(raw.dur.as_ref(), "dur").map_err(named)?;
            if hlo_op.is_some() != hlo_module.is_some() {
                return Err(named(
                    "it has one of `args.hlo_op` and `args.hlo_module` but not the other".into(),
                ));
            }
            out.events.push(Event {
                index,
                name,
                pid,
                tid,
                ts_ns,
                dur_ns: dur_ns.round() as u64,
                hlo_op,
                hlo_module,
            });
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The complete events and names of the trace read from `input`, gzipped (by its magic
/// number) or not, as a stream (see the module docs). Errors give the event's index, or the
/// line and column where the JSON breaks.
pub(super) fn events<R: std::io::BufRead>(mut input: R) -> Result<Events, ProfileError> {
    let gzip = input
        .fill_buf()
        .map(crate::kineto::is_gzip)
        .map_err(|e| ProfileError::Json(format!("reading: {e}")))?;
    if gzip {
        let decoder = flate2::bufread::MultiGzDecoder::new(input);
        events_of(std::io::BufReader::with_capacity(1 << 16, decoder))
    } else {
        events_of(input)
    }
}

fn events_of<R: std::io::Read>(input: R) -> Result<Events, ProfileError> {
    let mut out = Events::default();
    let mut found = false;
    let mut d = serde_json::Deserializer::from_reader(input);
    de::Deserializer::deserialize_map(&mut d, FileSeed(&mut out, &mut found))
        .and_then(|()| d.end())
        .map_err(|e| ProfileError::Json(e.to_string()))?;
    if !found {
        return Err(ProfileError::Json(
            "no `traceEvents`: not a jax.profiler trace".into(),
        ));
    }
    Ok(out)
}
