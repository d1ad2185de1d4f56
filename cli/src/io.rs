//! Files in and out: graphs (native JSON or HLO, by extension), plans, reports.

use std::path::Path;

use anyhow::Context;
use concerto_extract::hlo::ImportOptions;
use concerto_extract::Imported;
use concerto_graph::Graph;

/// Reads a graph file: the native JSON format, or XLA HLO text (`.hlo`, `.txt`) imported
/// with `options`; prints the importer's warnings on stderr. Trip counts
/// ([`ImportOptions::trip_counts`]) are an error with a JSON graph, which has no loops.
pub(crate) fn read_graph_with(path: &Path, options: &ImportOptions) -> anyhow::Result<Graph> {
    Ok(read_input(path, options)?.graph)
}

/// [`read_graph_with`], with the schedule the file carried ([`Imported::schedule`]: a
/// scheduled HLO module's own sequence, XLA's for a compiled module).
pub(crate) fn read_input(path: &Path, options: &ImportOptions) -> anyhow::Result<Imported> {
    if options.gpus_per_node == 0 {
        anyhow::bail!("--gpus-per-node must be at least 1");
    }
    if !options.trip_counts.is_empty() && !concerto_extract::read::is_hlo(path) {
        anyhow::bail!(
            "--trip-count applies to the while loops of an HLO module (.hlo, .txt), not to {}",
            path.display()
        );
    }
    let imported = concerto_extract::read_imported(path, options)?;
    for w in &imported.warnings {
        eprintln!("warning: {w}");
    }
    Ok(imported)
}

/// Writes `text` to `path`, naming the file on error.
pub(crate) fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes `graph` in the native JSON format.
pub(crate) fn write_graph(path: &Path, graph: &Graph) -> anyhow::Result<()> {
    write(path, &graph.to_json())
}
