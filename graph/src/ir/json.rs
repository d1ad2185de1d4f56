//! The native JSON format of a [`Graph`] ([`Graph::to_json`], [`Graph::from_json`]), also
//! the form of a graph inside another serde structure.

use serde::{Deserialize, Serialize};

use super::{Graph, GraphBuilder, Op, OpId};
use crate::error::GraphError;

/// Current version of the native JSON format.
pub const FORMAT_VERSION: u32 = 1;
/// The `format` field of the native JSON format.
pub const FORMAT_NAME: &str = "concerto-graph";

/// An input of an op in the JSON format: `[producer, tensor]` or just `producer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum InputRecord {
    Op(usize),
    Tensor(usize, usize),
}

/// An op of the JSON format, as read.
#[derive(Deserialize)]
struct OpRecord {
    #[serde(flatten)]
    op: Op,
    #[serde(default)]
    inputs: Vec<InputRecord>,
}

/// The JSON format, as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphRecord {
    format: String,
    version: u32,
    name: String,
    #[serde(default)]
    resident_bytes: u64,
    ops: Vec<OpRecord>,
}

/// An op of the JSON format, as written (borrowing the graph; the same fields as
/// [`OpRecord`]).
#[derive(Serialize)]
struct OpRecordRef<'a> {
    #[serde(flatten)]
    op: &'a Op,
    inputs: Vec<InputRecord>,
}

/// The JSON format, as written (the same fields as [`GraphRecord`]).
#[derive(Serialize)]
struct GraphRecordRef<'a> {
    format: &'static str,
    version: u32,
    name: &'a str,
    #[serde(skip_serializing_if = "is_zero")]
    resident_bytes: u64,
    ops: Vec<OpRecordRef<'a>>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// `Serialize` writes the native JSON format's record (what [`Graph::to_json`] prints), so a
/// graph inside another serde structure has the same form as a graph file.
#[cfg(feature = "serde")]
impl Serialize for Graph {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.record().serialize(serializer)
    }
}

/// `Deserialize` reads the native JSON format's record and checks it as [`Graph::from_json`]
/// does (format, version, inputs earlier in program order). The record's `inputs` are
/// untagged and its ops flattened, so the data format must be self-describing (JSON, YAML,
/// ...).
#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for Graph {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Graph, D::Error> {
        let record = GraphRecord::deserialize(deserializer)?;
        Graph::from_record(record).map_err(serde::de::Error::custom)
    }
}

impl Graph {
    /// The native JSON format (see [`Graph::from_json`]).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.record()).expect("a graph always serialises")
    }

    /// The record that the native JSON format writes.
    fn record(&self) -> GraphRecordRef<'_> {
        GraphRecordRef {
            format: FORMAT_NAME,
            version: FORMAT_VERSION,
            name: self.name(),
            resident_bytes: self.resident_bytes(),
            ops: self
                .ids()
                .map(|id| OpRecordRef {
                    op: self.op(id),
                    inputs: self
                        .inputs(id)
                        .into_iter()
                        .map(|(p, t)| {
                            if t == 0 {
                                InputRecord::Op(p.0)
                            } else {
                                InputRecord::Tensor(p.0, t)
                            }
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Reads the native JSON format, version 1:
    ///
    /// ```json
    /// {"format": "concerto-graph", "version": 1, "name": "tiny",
    ///  "ops": [
    ///    {"name": "fc", "kind": {"type": "compute", "class": "gemm", "flops": 2000, "bytes": 300,
    ///                           "gemm": {"b": 1, "m": 10, "n": 10, "k": 10}},
    ///     "outputs": [{"shape": [10, 10], "dtype": "bf16"}]},
    ///    {"name": "ar", "kind": {"type": "collective", "kind": "all-reduce", "bytes": 200,
    ///                           "group": 8, "link": "intra-node"},
    ///     "inputs": [0], "duration_ns": 1500}
    ///  ]}
    /// ```
    ///
    /// `inputs` lists producers by index, each earlier in the list (program order), as
    /// `p` or `[p, tensor]`; `duration_ns` overrides the cost model. Optional memory fields
    /// ([`crate::memory`]): `resident_bytes` at the top (bytes resident for the whole step:
    /// parameters, optimizer state; default 0) and `"live_out": true` on an op whose outputs are
    /// kept to the end of the step (default false). Errors name the op and the line and column
    /// of malformed JSON.
    pub fn from_json(text: &str) -> Result<Graph, GraphError> {
        let record: GraphRecord = serde_json::from_str(text).map_err(|e| GraphError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        Graph::from_record(record)
    }

    /// The graph of a record read from the native JSON format, checked (see
    /// [`Graph::from_json`]).
    fn from_record(record: GraphRecord) -> Result<Graph, GraphError> {
        if record.format != FORMAT_NAME {
            return Err(GraphError::Format {
                found: record.format,
            });
        }
        if record.version != FORMAT_VERSION {
            return Err(GraphError::Version {
                found: record.version,
                supported: FORMAT_VERSION,
            });
        }
        let mut b = GraphBuilder::new(record.name);
        b.set_resident_bytes(record.resident_bytes);
        for r in record.ops {
            let inputs: Vec<(OpId, usize)> = r
                .inputs
                .iter()
                .map(|i| match *i {
                    InputRecord::Op(p) => (OpId(p), 0),
                    InputRecord::Tensor(p, t) => (OpId(p), t),
                })
                .collect();
            b.try_add(r.op, &inputs)?;
        }
        Ok(b.finish())
    }
}
