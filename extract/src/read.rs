//! Reading a graph from any supported file, by its extension.
//!
//! `.hlo` and `.txt` are XLA HLO text modules ([`crate::hlo`]), gzipped or not (`.hlo.gz`);
//! anything else is JSON, gzipped or not (by its magic number): a PyTorch profiler trace
//! ([`crate::kineto`], read as a stream) when it has a `traceEvents` key, else the native JSON graph format ([`Graph::from_json`]). Every
//! error names the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use concerto_graph::{Graph, GraphError, Hardware, StreamPlan};

use crate::hlo::{self, HloError, ImportOptions, ImportReport};
use crate::kineto::{self, TraceError, TraceOptions, TraceReport};

/// Why a graph file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The HLO module could not be parsed or lowered.
    #[error("importing {path}: {source}")]
    Hlo {
        /// The file.
        path: PathBuf,
        /// Where and why (line and column for parse errors).
        source: HloError,
    },
    /// The profiler trace is malformed, or has no step to import.
    #[error("importing trace {path}: {source}")]
    Trace {
        /// The file.
        path: PathBuf,
        /// Where and why (the event index, or line and column).
        source: TraceError,
    },
    /// The native JSON graph is malformed or invalid.
    #[error("reading graph {path}: {source}")]
    Graph {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: GraphError,
    },
}

/// Whether `path` is read as an HLO text module (`.hlo`, `.txt`, or either with `.gz`).
pub fn is_hlo(path: &Path) -> bool {
    let ext = |p: &Path| p.extension().and_then(|e| e.to_str()).map(str::to_owned);
    let ext = match ext(path).as_deref() {
        Some("gz") => path.file_stem().and_then(|s| ext(Path::new(s))),
        other => other.map(str::to_owned),
    };
    matches!(ext.as_deref(), Some("hlo" | "txt"))
}

/// A graph file's name without its format's extensions: `llama31_8b_bf16_1x8` for
/// `llama31_8b_bf16_1x8.hlo.gz`, `a100_2rank_rank0` for `a100_2rank_rank0.json.gz`.
pub fn display_stem(path: &Path) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_owned(),
        _ => name.to_owned(),
    }
}

/// Reads the text file at `path`, decompressing it when it starts with gzip's magic number
/// (errors name the file).
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let bytes = if kineto::is_gzip(&bytes) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&bytes[..]), &mut out)
            .map_err(|e| io(std::io::Error::new(e.kind(), format!("gzip: {e}"))))?;
        out
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        ))
    })
}

/// Reads and parses the HLO module at `path`, gzipped or not (errors name the file).
pub fn read_module(path: &Path) -> Result<hlo::Module, ReadError> {
    let text = read_text(path)?;
    hlo::parse(&text).map_err(|source| ReadError::Hlo {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads and lowers the HLO module at `path` with `options`.
pub fn read_hlo(path: &Path, options: &ImportOptions) -> Result<(Graph, ImportReport), ReadError> {
    let text = read_text(path)?;
    let module =
        hlo::parse_with(&text, &options.parse_options()).map_err(|source| ReadError::Hlo {
            path: path.to_path_buf(),
            source,
        })?;
    hlo::lower(&module, options).map_err(|source| ReadError::Hlo {
        path: path.to_path_buf(),
        source,
    })
}

/// An HLO module as it was read: its text, the parsed module and what lowering it reported.
/// What writes a plan back into the module (`hlo::export_checked`,
/// `hlo::export_verbatim_checked`, `hlo::pgle`) and what costs it from a profile
/// ([`crate::profile`]) start from here, without reading the file again.
#[derive(Debug)]
#[non_exhaustive]
pub struct HloSource {
    /// The module's text, decompressed.
    pub text: String,
    /// The parsed module.
    pub module: hlo::Module,
    /// What lowering it did besides the graph (opcode counts, warnings, its own schedule).
    pub report: ImportReport,
}

/// A graph read from a file, with what the file said besides the graph.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Imported {
    /// The graph.
    pub graph: Graph,
    /// The importer's warnings (unknown opcodes costed as memory-bound ops, and the like).
    pub warnings: Vec<String>,
    /// The schedule the file carried, as a stream plan of `graph`: a scheduled HLO module's
    /// own sequence (XLA's, for a compiled module; [`hlo::sequence_plan`]). A profiler trace's
    /// recorded order is the graph's program order instead, so it is `None` there.
    pub schedule: Option<StreamPlan>,
    /// For a profiler trace: the step, its measured time and how it was read.
    pub trace: Option<TraceReport>,
    /// For an HLO module: its text, the parsed module and the lowering's report.
    pub hlo: Option<Arc<HloSource>>,
}

impl Imported {
    /// A graph that came with nothing else (no warnings, no schedule, no trace): one built in
    /// memory or read from a native JSON text.
    pub fn from_graph(graph: Graph) -> Imported {
        Imported {
            graph,
            warnings: Vec::new(),
            schedule: None,
            trace: None,
            hlo: None,
        }
    }

    /// The contention to cost this input with: `explicit` when given; else 1 (none on top)
    /// for a profiler trace, whose measured durations already contain the slowdown of compute
    /// beside the collectives that ran; else `None`, the profile's own.
    pub fn contention(&self, explicit: Option<f64>) -> Option<f64> {
        explicit.or(self.trace.as_ref().map(|_| 1.0))
    }

    /// `hardware` with [`Imported::contention`] applied: the profile this input is costed on.
    pub fn costed_on(
        &self,
        hardware: Hardware,
        explicit: Option<f64>,
    ) -> Result<Hardware, GraphError> {
        match self.contention(explicit) {
            Some(c) => hardware.with_contention(c),
            None => Ok(hardware),
        }
    }
}

/// What a non-HLO file holds.
enum Json {
    Trace(Graph, Box<TraceReport>),
    Graph(Graph),
}

/// Reads a JSON file (gzipped or not): a profiler trace, read as a stream
/// ([`kineto::Trace::read_if_trace`]: memory grows with what the importer keeps, not with the
/// file), or else a native graph.
fn read_json(path: &Path, options: &ImportOptions) -> Result<Json, ReadError> {
    let file = std::fs::File::open(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let trace_err = |source| ReadError::Trace {
        path: path.to_path_buf(),
        source,
    };
    let input = std::io::BufReader::with_capacity(1 << 16, file);
    if let Some(trace) = kineto::Trace::read_if_trace(input).map_err(trace_err)? {
        let trace_options = TraceOptions {
            step: options.trace_step,
            gpus_per_node: options.gpus_per_node,
            launch_times: options.trace_launch_times,
        };
        let (graph, report) = trace.import(&trace_options).map_err(trace_err)?;
        return Ok(Json::Trace(graph, Box::new(report)));
    }
    let text = read_text(path)?;
    let graph = Graph::from_json(&text).map_err(|source| ReadError::Graph {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Json::Graph(graph))
}

/// Reads the graph at `path` (see the module docs), with the importer's warnings and the
/// module's own schedule ([`Imported`]).
pub fn read_imported(path: &Path, options: &ImportOptions) -> Result<Imported, ReadError> {
    if is_hlo(path) {
        let text = read_text(path)?;
        let hlo_err = |source| ReadError::Hlo {
            path: path.to_path_buf(),
            source,
        };
        let module = hlo::parse_with(&text, &options.parse_options()).map_err(hlo_err)?;
        let (graph, report) = hlo::lower(&module, options).map_err(hlo_err)?;
        let schedule = match &report.sequence {
            Some(events) => {
                Some(
                    hlo::sequence_plan(&graph, events).map_err(|e| ReadError::Hlo {
                        path: path.to_path_buf(),
                        source: HloError::Graph(e),
                    })?,
                )
            }
            None => None,
        };
        return Ok(Imported {
            graph,
            warnings: report.warnings.clone(),
            schedule,
            trace: None,
            hlo: Some(Arc::new(HloSource {
                text,
                module,
                report,
            })),
        });
    }
    Ok(match read_json(path, options)? {
        Json::Trace(graph, report) => Imported {
            graph,
            warnings: report.warnings.clone(),
            schedule: None,
            trace: Some(*report),
            hlo: None,
        },
        Json::Graph(graph) => Imported::from_graph(graph),
    })
}

/// Reads the graph at `path` (see the module docs). For an HLO module or a trace, also returns
/// the importer's warnings (unknown opcodes costed as memory-bound ops, and the like).
pub fn read_graph(path: &Path, options: &ImportOptions) -> Result<(Graph, Vec<String>), ReadError> {
    if is_hlo(path) {
        let (graph, report) = read_hlo(path, options)?;
        return Ok((graph, report.warnings));
    }
    Ok(match read_json(path, options)? {
        Json::Trace(graph, report) => (graph, report.warnings),
        Json::Graph(graph) => (graph, Vec::new()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("concerto-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.json");
        let e = read_graph(&missing, &ImportOptions::default()).unwrap_err();
        assert!(e.to_string().contains("missing.json"), "{e}");
        let bad = dir.join("bad.hlo");
        std::fs::write(&bad, "HloModule m\n\nENTRY e {\n  x = f32[] nonsense(\n}\n").unwrap();
        let e = read_graph(&bad, &ImportOptions::default()).unwrap_err();
        assert!(matches!(e, ReadError::Hlo { .. }), "{e}");
        assert!(e.to_string().contains("bad.hlo"), "{e}");
        let json = dir.join("bad.json");
        std::fs::write(&json, "{").unwrap();
        let e = read_graph(&json, &ImportOptions::default()).unwrap_err();
        assert!(matches!(e, ReadError::Graph { .. }), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A gzipped HLO module reads as the plain one (same graph, same schedule); a damaged gzip
    /// stream is an I/O error naming the file, never a panic or a parse of garbage.
    #[test]
    fn gzipped_modules_read_like_plain_ones() {
        use std::io::Write as _;
        let dir = std::env::temp_dir().join(format!("concerto-read-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures/hlo_gpu/gpt_mix2x4_l1_cublas.gpu.hlo"
        ));
        let text = std::fs::read(plain).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        let bytes = gz.finish().unwrap();
        let zipped = dir.join("m.gpu.hlo.gz");
        std::fs::write(&zipped, &bytes).unwrap();
        assert!(is_hlo(&zipped) && is_hlo(plain) && !is_hlo(&dir.join("t.json.gz")));
        let options = ImportOptions::default();
        let (a, b) = (
            read_imported(plain, &options).unwrap(),
            read_imported(&zipped, &options).unwrap(),
        );
        assert_eq!(a.graph.fingerprint(), b.graph.fingerprint());
        assert_eq!(a.schedule, b.schedule);
        assert!(
            b.schedule.is_some(),
            "a compiled module carries XLA's schedule"
        );
        let damaged = dir.join("damaged.hlo.gz");
        std::fs::write(&damaged, &bytes[..bytes.len() / 2]).unwrap();
        let e = read_graph(&damaged, &options).unwrap_err();
        assert!(matches!(e, ReadError::Io { .. }), "{e}");
        assert!(
            e.to_string().contains("damaged.hlo.gz") && e.to_string().contains("gzip"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn display_stems_drop_the_format_extensions() {
        for (path, stem) in [
            ("data/hlo/llama31_8b_bf16_1x8.hlo.gz", "llama31_8b_bf16_1x8"),
            ("a/m.hlo", "m"),
            ("t/a100_2rank_rank0.json.gz", "a100_2rank_rank0"),
            ("g.json", "g"),
            ("noext", "noext"),
        ] {
            assert_eq!(display_stem(Path::new(path)), stem, "{path}");
        }
    }
}
