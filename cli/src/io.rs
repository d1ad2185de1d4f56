//! Files in and out: graphs (native JSON or HLO, by extension), plans, reports.

use std::path::Path;

use anyhow::Context;
use concerto_extract::hlo::ImportOptions;
use concerto_graph::Graph;

/// Reads a graph file: the native JSON format, or XLA HLO text (`.hlo`, `.txt`) imported
/// with `gpus_per_node` GPUs per node; prints the importer's warnings on stderr.
pub(crate) fn read_graph(path: &Path, gpus_per_node: u32) -> anyhow::Result<Graph> {
    if gpus_per_node == 0 {
        anyhow::bail!("--gpus-per-node must be at least 1");
    }
    let options = ImportOptions {
        gpus_per_node,
        ..ImportOptions::default()
    };
    let (graph, warnings) = concerto_extract::read_graph(path, &options)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    Ok(graph)
}

/// Writes `text` to `path`, naming the file on error.
pub(crate) fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes `graph` in the native JSON format.
pub(crate) fn write_graph(path: &Path, graph: &Graph) -> anyhow::Result<()> {
    write(path, &graph.to_json())
}
