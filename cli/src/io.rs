//! Files in and out: graphs (native JSON or HLO, by extension), plans, reports.

use std::path::Path;

use anyhow::Context;
use concerto_extract::hlo::ImportOptions;
use concerto_extract::profile::ProfileReport;
use concerto_extract::Imported;
use concerto_graph::Graph;

/// Reads a graph file: the native JSON format, or XLA HLO text (`.hlo`, `.txt`) imported
/// with `options`; prints the importer's warnings on stderr. Trip counts
/// ([`ImportOptions::trip_counts`], [`ImportOptions::unknown_trip_count`]) are an error with
/// a JSON graph, which has no loops.
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
    if options.unknown_trip_count.is_some() && !concerto_extract::read::is_hlo(path) {
        anyhow::bail!(
            "--unknown-trip-count applies to the while loops of an HLO module (.hlo, .txt), \
             not to {}",
            path.display()
        );
    }
    if options.unbounded_dim_size.is_some() && !concerto_extract::read::is_hlo(path) {
        anyhow::bail!(
            "--unbounded-dim-size applies to the shapes of an HLO module (.hlo, .txt), not \
             to {}",
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

/// `--profile TRACE` and `--profile-strict`: profile-guided costs
/// ([`concerto_extract::profile`]).
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct ProfileArgs {
    /// A `jax.profiler` trace (`*.trace.json.gz`) of the module's step: each instruction it
    /// names costs the median over its steps of its kernels' summed device time; every other
    /// op keeps the model's cost. For an HLO module only.
    #[arg(long, value_name = "TRACE")]
    pub(crate) profile: Option<std::path::PathBuf>,
    /// With `--profile`: an instruction of the profile that the module lacks is an error (as
    /// PGLE's accuracy checker makes it one), not a line of the report.
    #[arg(long, requires = "profile")]
    pub(crate) profile_strict: bool,
}

/// The input read from `path`, costed from `args.profile` when given: its graph gets the
/// measured costs, from its parsed module ([`concerto_extract::profile::apply_imported`]; the
/// model's costs from `hardware` give the coverage). Errors name the files.
pub(crate) fn profiled_input(
    input: &mut Imported,
    path: &Path,
    args: &ProfileArgs,
    hardware: &concerto_graph::Hardware,
) -> anyhow::Result<Option<ProfileReport>> {
    let Some(trace) = &args.profile else {
        return Ok(None);
    };
    let (graph, report) = concerto_extract::profile::apply_imported(
        input,
        path,
        trace,
        hardware,
        args.profile_strict,
    )
    .map_err(anyhow::Error::msg)?;
    input.graph = graph;
    Ok(Some(report))
}

/// The lines that say what a profile did ([`profiled_input`]), for the text reports (labels padded
/// to `width` columns).
pub(crate) fn profile_lines(trace: &Path, r: &ProfileReport, width: usize) -> String {
    let label = format!("{:<width$}", "profile");
    let names = |v: &[String]| {
        let mut s = v.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
        if v.len() > 5 {
            s.push_str(&format!(", ... ({} more)", v.len() - 5));
        }
        s
    };
    let mut out = format!(
        "{label}{}: module {} on {}, {} steps; measured costs for {} of {} ops ({:.1} %), \
         {:.1} % of the model's time; kernel sum {:.3} ms a step (median)",
        trace.display(),
        r.module,
        r.device,
        r.steps,
        r.measured_ops,
        r.ops,
        r.instructions_pct,
        r.time_pct,
        r.step_kernel_ns as f64 / 1e6
    );
    if !r.from_model.is_empty() {
        out.push_str(&format!(
            "\n{label}the model's costs for {} ops: {}",
            r.from_model.len(),
            names(&r.from_model)
        ));
    }
    if !r.not_in_module.is_empty() {
        out.push_str(&format!(
            "\n{label}{} instructions of the profile are not in the module: {}",
            r.not_in_module.len(),
            names(&r.not_in_module)
        ));
    }
    if !r.uneven.is_empty() {
        out.push_str(&format!(
            "\n{label}kernels not split evenly between loop iterations (equal shares): {}",
            names(&r.uneven)
        ));
    }
    out
}
