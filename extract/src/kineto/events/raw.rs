//! The serde side of the streaming reader: one event of `traceEvents` at a time, as a
//! [`RawEvent`] that holds only the fields the importer reads (composite values it does not
//! read are skipped by the parser, never built). The top-level object's `traceEvents` array is
//! read element by element ([`EventsSeed`]), so memory grows with what the importer keeps, not
//! with the trace.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A field's JSON value, with arrays and objects skipped (only their kind is kept).
#[derive(Clone, Debug, Default)]
pub(super) enum Scalar {
    /// The field is absent.
    #[default]
    Missing,
    Null,
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// A positive integer beyond `i64::MAX`.
    Big(u64),
    Float(f64),
    Str(String),
    Array,
    Object,
}

impl Scalar {
    /// The string, if the value is one.
    pub(super) fn str(&self) -> Option<&str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A non-negative integer (as `serde_json::Value::as_u64` reads it).
    pub(super) fn u64(&self) -> Option<u64> {
        match *self {
            Scalar::Int(i) => u64::try_from(i).ok(),
            Scalar::Big(u) => Some(u),
            _ => None,
        }
    }

    /// An integer: a number (a float truncated) or a string holding one.
    pub(super) fn int(&self) -> Option<i64> {
        match self {
            Scalar::Int(i) => Some(*i),
            Scalar::Big(u) => Some(*u as f64 as i64),
            Scalar::Float(f) => Some(*f as i64),
            Scalar::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A Kineto time (µs) in ns; `None` when it is no number or overflows.
    pub(super) fn ns(&self) -> Option<i64> {
        let f = match *self {
            Scalar::Int(i) => return i.checked_mul(1000),
            Scalar::Big(u) => u as f64,
            Scalar::Float(f) => f,
            _ => return None,
        };
        let x = (f * 1000.0).round();
        (x.is_finite() && x.abs() < 9.0e18).then_some(x as i64)
    }

    /// A thread or process id as text (a number, or a string such as `"Spans"`).
    pub(super) fn id(&self) -> String {
        match self {
            Scalar::Missing => String::new(),
            Scalar::Null => "null".into(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Big(u) => u.to_string(),
            Scalar::Float(f) => Value::from(*f).to_string(),
            Scalar::Str(s) => s.clone(),
            Scalar::Array => "[array]".into(),
            Scalar::Object => "{object}".into(),
        }
    }
}

/// Visits any JSON value as a [`Scalar`], skipping the content of arrays and objects.
struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or(Scalar::Big(v), Scalar::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Array)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Object)
    }
}

impl<'de> de::Deserialize<'de> for Scalar {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// A map key looked up in a fixed list without allocating: its index, or `None` for a key the
/// reader skips.
struct KeySeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Option<usize>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|k| *k == v))
    }
}

/// The `args` fields the importer reads (a later duplicate key wins, as in a parsed object).
#[derive(Debug, Default)]
pub(super) struct RawArgs {
    pub(super) stream: Scalar,
    pub(super) correlation: Scalar,
    pub(super) bytes: Scalar,
    /// `grid` and `block` as JSON text (`[128,1,1]`).
    pub(super) grid: Option<String>,
    pub(super) block: Option<String>,
    pub(super) collective: Scalar,
    pub(super) dtype: Scalar,
    pub(super) in_nelems: Scalar,
    pub(super) out_nelems: Scalar,
    pub(super) group_size: Scalar,
    pub(super) input_dims: Option<Value>,
    pub(super) input_type: Option<Value>,
    pub(super) sync_kind: Scalar,
    pub(super) wait_on_stream: Scalar,
    pub(super) record: Scalar,
}

const ARG_KEYS: &[&str] = &[
    "stream",
    "correlation",
    "bytes",
    "grid",
    "block",
    "Collective name",
    "dtype",
    "In msg nelems",
    "Out msg nelems",
    "Group size",
    "Input Dims",
    "Input type",
    "cuda_sync_kind",
    "wait_on_stream",
    "wait_on_cuda_event_record_corr_id",
];

impl RawArgs {
    fn read_field<'de, A: MapAccess<'de>>(
        &mut self,
        k: usize,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let json = |v: Value| Some(v.to_string());
        match k {
            0 => self.stream = map.next_value()?,
            1 => self.correlation = map.next_value()?,
            2 => self.bytes = map.next_value()?,
            3 => self.grid = json(map.next_value()?),
            4 => self.block = json(map.next_value()?),
            5 => self.collective = map.next_value()?,
            6 => self.dtype = map.next_value()?,
            7 => self.in_nelems = map.next_value()?,
            8 => self.out_nelems = map.next_value()?,
            9 => self.group_size = map.next_value()?,
            10 => self.input_dims = Some(map.next_value()?),
            11 => self.input_type = Some(map.next_value()?),
            12 => self.sync_kind = map.next_value()?,
            13 => self.wait_on_stream = map.next_value()?,
            _ => self.record = map.next_value()?,
        }
        Ok(())
    }
}

/// `args` as [`RawArgs`]; `args` that is not an object reads as no arguments.
struct ArgsVisitor;

impl<'de> Visitor<'de> for ArgsVisitor {
    type Value = RawArgs;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of arguments")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawArgs, A::Error> {
        let mut args = RawArgs::default();
        while let Some(key) = map.next_key_seed(KeySeed(ARG_KEYS))? {
            match key {
                Some(k) => args.read_field(k, &mut map)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(args)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawArgs, A::Error> {
        ScalarVisitor.visit_seq(seq).map(|_| RawArgs::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
    fn visit_unit<E>(self) -> Result<RawArgs, E> {
        Ok(RawArgs::default())
    }
}

impl<'de> de::Deserialize<'de> for RawArgs {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<RawArgs, D::Error> {
        d.deserialize_any(ArgsVisitor)
    }
}

/// The fields of one event the importer reads.
#[derive(Debug, Default)]
pub(super) struct RawEvent {
    pub(super) ph: Scalar,
    pub(super) cat: Scalar,
    pub(super) name: Scalar,
    pub(super) pid: Scalar,
    pub(super) tid: Scalar,
    pub(super) ts: Scalar,
    pub(super) dur: Scalar,
    pub(super) args: RawArgs,
}

const EVENT_KEYS: &[&str] = &["ph", "cat", "name", "pid", "tid", "ts", "dur", "args"];

/// An element of `traceEvents`: an event object, or the kind of what stands in its place.
pub(super) enum Element {
    Event(Box<RawEvent>),
    NotAnObject(&'static str),
}

struct ElementVisitor;

impl<'de> Visitor<'de> for ElementVisitor {
    type Value = Element;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Element, A::Error> {
        let mut e = RawEvent::default();
        while let Some(key) = map.next_key_seed(KeySeed(EVENT_KEYS))? {
            match key {
                Some(0) => e.ph = map.next_value()?,
                Some(1) => e.cat = map.next_value()?,
                Some(2) => e.name = map.next_value()?,
                Some(3) => e.pid = map.next_value()?,
                Some(4) => e.tid = map.next_value()?,
                Some(5) => e.ts = map.next_value()?,
                Some(6) => e.dur = map.next_value()?,
                Some(_) => e.args = map.next_value()?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Element::Event(Box::new(e)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Element, A::Error> {
        ScalarVisitor.visit_seq(seq)?;
        Ok(Element::NotAnObject("an array"))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Element, E> {
        Ok(Element::NotAnObject("a boolean"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Element, E> {
        Ok(Element::NotAnObject("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Element, E> {
        Ok(Element::NotAnObject("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Element, E> {
        Ok(Element::NotAnObject("a number"))
    }
    fn visit_str<E>(self, _: &str) -> Result<Element, E> {
        Ok(Element::NotAnObject("a string"))
    }
    fn visit_unit<E>(self) -> Result<Element, E> {
        Ok(Element::NotAnObject("null"))
    }
}

struct ElementSeed;

impl<'de> DeserializeSeed<'de> for ElementSeed {
    type Value = Element;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Element, D::Error> {
        d.deserialize_any(ElementVisitor)
    }
}

/// What the top-level reader hands each element and each metadata value to.
pub(super) trait Sink {
    /// Takes element `index` of `traceEvents`; an error (which the sink keeps) stops the
    /// reading.
    fn event(&mut self, index: usize, element: Element) -> Result<(), ()>;
    /// Takes the top-level `key`'s value (only `distributedInfo` and `deviceProperties`).
    fn metadata(&mut self, key: &str, value: Value);
    /// A `traceEvents` array starts (a second one replaces the first, as in a parsed object).
    fn events_start(&mut self);
    /// Records why the input is not a trace (the reader then stops with a marker error).
    fn not_a_trace(&mut self, reason: String);
}

/// `traceEvents`, element by element.
struct EventsSeed<'s, S>(&'s mut S);

impl<'de, S: Sink> DeserializeSeed<'de> for EventsSeed<'_, S> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for EventsSeed<'_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        while let Some(element) = seq.next_element_seed(ElementSeed)? {
            self.0
                .event(index, element)
                .map_err(|()| de::Error::custom("bad event"))?;
            index += 1;
        }
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        ScalarVisitor.visit_map(map)?;
        Err(not_an_array(self.0, "an object"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(not_an_array(self.0, "a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(not_an_array(self.0, "a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(not_an_array(self.0, "a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(not_an_array(self.0, "a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(not_an_array(self.0, "a string"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(not_an_array(self.0, "null"))
    }
}

fn not_an_array<S: Sink, E: de::Error>(sink: &mut S, kind: &str) -> E {
    sink.not_a_trace(format!("`traceEvents` is {kind}, not an array"));
    E::custom("not a trace")
}

/// The top-level object: `traceEvents` streamed into the sink, the metadata it reads parsed,
/// every other key skipped. Its value: whether `traceEvents` was there.
pub(super) struct FileSeed<'s, S>(pub(super) &'s mut S);

impl<'de, S: Sink> Visitor<'de> for FileSeed<'_, S> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object with `traceEvents`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        const KEYS: &[&str] = &["traceEvents", "distributedInfo", "deviceProperties"];
        let mut found = false;
        while let Some(key) = map.next_key_seed(KeySeed(KEYS))? {
            match key {
                Some(0) => {
                    self.0.events_start();
                    map.next_value_seed(EventsSeed(&mut *self.0))?;
                    found = true;
                }
                Some(k) => {
                    let value: Value = map.next_value()?;
                    self.0.metadata(KEYS[k], value);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        ScalarVisitor.visit_seq(seq)?;
        Err(top_level(self.0, "an array"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Err(top_level(self.0, "a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Err(top_level(self.0, "a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Err(top_level(self.0, "a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Err(top_level(self.0, "a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Err(top_level(self.0, "a string"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Err(top_level(self.0, "null"))
    }
}

fn top_level<S: Sink, E: de::Error>(sink: &mut S, kind: &str) -> E {
    sink.not_a_trace(format!("the top level is {kind}, not an object"));
    E::custom("not a trace")
}
