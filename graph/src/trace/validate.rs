//! Validation of a Chrome trace against the rules of the Trace Event Format, for the events
//! [`super::chrome_trace`] emits.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::METADATA_NAMES;

/// An integer JSON value (signed or unsigned).
fn integer(v: &Value) -> Option<i128> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
}

/// Microseconds as rounded nanoseconds, as Perfetto stores them.
fn to_ns(us: f64) -> f64 {
    (us * 1000.0).round()
}

/// A complete event kept for the overlap check.
struct Slice {
    start_ns: f64,
    end_ns: f64,
    index: usize,
}

/// Checks a Chrome trace against the rules of the Trace Event Format (JSON Object Format) for
/// the events this module emits, so that Perfetto and `chrome://tracing` load it as meant:
///
/// * the top level is an object with a `traceEvents` array (`displayTimeUnit`, if present, is
///   `"ms"` or `"ns"`; `otherData`, if present, is an object);
/// * every event is an object whose `ph` is a string, `"X"` (complete) or `"M"` (metadata);
/// * a complete event has a string `name`, numeric `ts >= 0` and `dur >= 0`, integer `pid` and
///   `tid`, and, if present, a string `cat` and an object `args`;
/// * a metadata event is named `process_name`, `thread_name`, `process_sort_index` or
///   `thread_sort_index`, has an integer `pid` (and `tid` for the thread ones) and an `args`
///   object with a string `name` (the `*_name` events) or an integer `sort_index`;
/// * no two complete events of one thread (`pid`, `tid`) overlap, times rounded to whole
///   nanoseconds as Perfetto stores them (events that only touch, or have zero duration at an
///   end of another, do not overlap): Perfetto would nest overlapping slices, which
///   misrepresents a FIFO stream.
///
/// Returns the number of complete events, or a message naming the first offending event by its
/// index in `traceEvents`. Cost: O(events log events).
pub fn validate_chrome_trace(value: &Value) -> Result<usize, String> {
    let events = trace_events(value)?;
    let mut tracks: BTreeMap<(i128, i128), Vec<Slice>> = BTreeMap::new();
    let mut complete = 0;
    for (i, e) in events.iter().enumerate() {
        let event = Event {
            i,
            e: e.as_object().ok_or_else(|| at(i, "not an object"))?,
        };
        let ph = event
            .e
            .get("ph")
            .ok_or_else(|| event.at("no `ph`"))?
            .as_str()
            .ok_or_else(|| event.at("`ph` is not a string"))?;
        match ph {
            "X" => {
                let (track, slice) = event.complete()?;
                tracks.entry(track).or_default().push(slice);
                complete += 1;
            }
            "M" => event.metadata()?,
            other => {
                return Err(event.at(&format!(
                    "phase `{other}` is not one this exporter emits (\"X\" or \"M\")"
                )))
            }
        }
    }
    check_overlaps(events, &mut tracks)?;
    Ok(complete)
}

/// The `traceEvents` array of a trace, once its top-level fields are checked.
fn trace_events(value: &Value) -> Result<&Vec<Value>, String> {
    let top = value.as_object().ok_or(
        "the trace is not a JSON object (the JSON Object Format is {\"traceEvents\": [...]})",
    )?;
    let events = top
        .get("traceEvents")
        .ok_or("the trace has no `traceEvents` field")?
        .as_array()
        .ok_or("`traceEvents` is not an array")?;
    if let Some(unit) = top.get("displayTimeUnit") {
        if unit != "ms" && unit != "ns" {
            return Err(format!("`displayTimeUnit` is {unit}, not \"ms\" or \"ns\""));
        }
    }
    if let Some(other) = top.get("otherData") {
        if !other.is_object() {
            return Err("`otherData` is not an object".into());
        }
    }
    Ok(events)
}

/// A message about event `i` of `traceEvents`.
fn at(i: usize, what: &str) -> String {
    format!("traceEvents[{i}]: {what}")
}

/// An event of `traceEvents`, an object, with its index.
struct Event<'v> {
    /// Its index in `traceEvents`.
    i: usize,
    /// Its fields.
    e: &'v Map<String, Value>,
}

impl Event<'_> {
    /// A message about this event.
    fn at(&self, what: &str) -> String {
        at(self.i, what)
    }

    /// The integer field `key`.
    fn int_field(&self, key: &str) -> Result<i128, String> {
        self.e
            .get(key)
            .and_then(integer)
            .ok_or_else(|| self.at(&format!("`{key}` is missing or not an integer")))
    }

    /// Checks a complete event; returns its thread (`pid`, `tid`) and its slice.
    fn complete(&self) -> Result<((i128, i128), Slice), String> {
        let e = self.e;
        let name = e
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| self.at("complete event without a string `name`"))?;
        let at = |what: &str| self.at(&format!("complete event `{name}`: {what}"));
        let number = |key: &str| -> Result<f64, String> {
            let v = e
                .get(key)
                .and_then(Value::as_f64)
                .ok_or_else(|| at(&format!("`{key}` is missing or not a number")))?;
            if v < 0.0 {
                return Err(at(&format!("`{key}` is negative ({v})")));
            }
            Ok(v)
        };
        let ts = number("ts")?;
        let dur = number("dur")?;
        let pid = self.int_field("pid")?;
        let tid = self.int_field("tid")?;
        if e.get("cat").is_some_and(|c| !c.is_string()) {
            return Err(at("`cat` is not a string"));
        }
        if e.get("args").is_some_and(|a| !a.is_object()) {
            return Err(at("`args` is not an object"));
        }
        let start_ns = to_ns(ts);
        Ok((
            (pid, tid),
            Slice {
                start_ns,
                end_ns: start_ns + to_ns(dur),
                index: self.i,
            },
        ))
    }

    /// Checks a metadata event.
    fn metadata(&self) -> Result<(), String> {
        let e = self.e;
        let name = e
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| self.at("metadata event without a string `name`"))?;
        if !METADATA_NAMES.contains(&name) {
            return Err(self.at(&format!(
                "metadata event `{name}` is not one of {}",
                METADATA_NAMES.join(", ")
            )));
        }
        self.int_field("pid")?;
        if name.starts_with("thread_") {
            self.int_field("tid")?;
        }
        let args = e
            .get("args")
            .and_then(Value::as_object)
            .ok_or_else(|| self.at(&format!("metadata event `{name}` without an `args` object")))?;
        let ok = if name.ends_with("_name") {
            args.get("name").is_some_and(Value::is_string)
        } else {
            args.get("sort_index").and_then(integer).is_some()
        };
        if !ok {
            let key = if name.ends_with("_name") {
                "a string `name`"
            } else {
                "an integer `sort_index`"
            };
            return Err(self.at(&format!("metadata event `{name}` needs {key} in `args`")));
        }
        Ok(())
    }
}

/// Checks that no two complete events of one thread overlap: per thread, by start (then end),
/// each slice must start at or after the latest end so far. Reports the offender with the
/// smallest index.
fn check_overlaps(
    events: &[Value],
    tracks: &mut BTreeMap<(i128, i128), Vec<Slice>>,
) -> Result<(), String> {
    let mut first: Option<(usize, usize, (i128, i128))> = None;
    for (&track, slices) in tracks {
        slices.sort_by(|a, b| {
            a.start_ns
                .total_cmp(&b.start_ns)
                .then(a.end_ns.total_cmp(&b.end_ns))
                .then(a.index.cmp(&b.index))
        });
        let mut latest: Option<(f64, usize)> = None;
        for s in slices.iter() {
            if let Some((end, holder)) = latest {
                if s.start_ns < end && first.is_none_or(|(f, _, _)| s.index < f) {
                    first = Some((s.index, holder, track));
                }
                if s.end_ns > end {
                    latest = Some((s.end_ns, s.index));
                }
            } else {
                latest = Some((s.end_ns, s.index));
            }
        }
    }
    if let Some((i, j, (pid, tid))) = first {
        let name = |k: usize| events[k].get("name").and_then(Value::as_str).unwrap_or("");
        let ts = |k: usize| events[k].get("ts").cloned().unwrap_or(Value::Null);
        return Err(format!(
            "traceEvents[{i}]: complete event `{}` (pid {pid}, tid {tid}, ts {}) overlaps \
             traceEvents[{j}] `{}` (ts {}) on the same thread; Perfetto would nest them",
            name(i),
            ts(i),
            name(j),
            ts(j),
        ));
    }
    Ok(())
}
