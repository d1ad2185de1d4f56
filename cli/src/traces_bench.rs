//! `concerto bench traces`: the simulator against measured steps. Each profiler trace is read
//! once, as a stream, and every step of it imported and its recorded order replayed
//! ([`kineto::fidelity`]); the table shows the median step, the worst step, the largest shift of
//! one op, and the step without its CPU launch times (the GPU alone).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use concerto_extract::kineto::{self, fidelity::Fidelity, TraceOptions};
use concerto_pipeline::table::Table;
use serde::Serialize;

use crate::data::DataArgs;
use crate::Failure;

/// The traces of the data folder's `kineto/` (`.json`, `.json.gz`), by name.
fn public_traces(data: &DataArgs) -> anyhow::Result<Vec<PathBuf>> {
    let dir = data.sub("kineto", "bench traces")?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("bench traces: reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.to_string_lossy().ends_with(".json.gz") || p.extension().is_some_and(|e| e == "json")
        })
        .collect();
    found.sort();
    if found.is_empty() {
        anyhow::bail!("bench traces: no trace in {}", dir.display());
    }
    Ok(found)
}

/// Arguments of `concerto bench traces`.
#[derive(Args, Debug)]
pub(crate) struct TracesArgs {
    /// Profiler traces (`.json`, `.json.gz`). None: the five public traces of the data
    /// folder (`data/kineto`, see `data/README.md`).
    pub(crate) traces: Vec<PathBuf>,
    /// Also the five public traces of the data folder, after the traces given.
    #[arg(long)]
    pub(crate) public_traces: bool,
    #[command(flatten)]
    pub(crate) data: DataArgs,
    /// GPUs per node (a larger world makes the collectives inter-node).
    #[arg(long, default_value_t = 8)]
    pub(crate) gpus_per_node: u32,
    /// Print one JSON array instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Serialize)]
struct Row {
    trace: String,
    waits: kineto::WaitCounts,
    streams: usize,
    launch_latency_ns: u64,
    fidelity: Fidelity,
}

pub(crate) fn run(args: &TracesArgs) -> Result<(), Failure> {
    let mut paths = args.traces.clone();
    if args.public_traces || paths.is_empty() {
        paths.extend(public_traces(&args.data)?);
    }
    let options = TraceOptions {
        gpus_per_node: args.gpus_per_node,
        ..TraceOptions::default()
    };
    let mut rows = Vec::new();
    for path in &paths {
        let what = || format!("bench traces {}", path.display());
        let file = std::fs::File::open(path).with_context(what)?;
        let trace = kineto::Trace::read(std::io::BufReader::new(file)).with_context(what)?;
        let (_, report) = trace.import(&options).with_context(what)?;
        let fidelity = kineto::fidelity::fidelity_of(&trace, &options).with_context(what)?;
        let name = concerto_extract::read::display_stem(path);
        rows.push(Row {
            trace: name,
            waits: report.waits,
            streams: report.streams.len(),
            launch_latency_ns: report.launch_latency_ns,
            fidelity,
        });
    }
    if args.json {
        println!("{}", serde_json::to_string(&rows)?);
        return Ok(());
    }
    let mut t = Table::new(&[
        "trace",
        "step",
        "ops",
        "measured_ms",
        "replay_ms",
        "error",
        "worst_step",
        "max_shift_us",
        "gpu_only_ms",
        "launch_bound",
        "waits_e/i/m/d",
    ]);
    for r in &rows {
        let f = &r.fidelity;
        let m = &f.steps[f.median];
        let worst = f
            .steps
            .iter()
            .map(|s| s.error_pct)
            .max_by(|a, b| a.abs().total_cmp(&b.abs()))
            .unwrap_or(0.0);
        t.row(vec![
            r.trace.clone(),
            format!(
                "{} of {}",
                m.step.trim_start_matches("ProfilerStep"),
                f.steps.len()
            ),
            m.ops.to_string(),
            format!("{:.3}", m.measured_ns as f64 / 1e6),
            format!("{:.3}", m.replay_ns as f64 / 1e6),
            format!("{:+.2}%", m.error_pct),
            format!("{worst:+.2}%"),
            format!("{:.1}", m.max_shift_ns as f64 / 1e3),
            format!("{:.3}", m.gpu_only_ns as f64 / 1e6),
            format!(
                "{:.0}%",
                100.0 * (m.measured_ns.saturating_sub(m.gpu_only_ns)) as f64
                    / m.measured_ns.max(1) as f64
            ),
            format!(
                "{}/{}/{}/{}",
                r.waits.exact, r.waits.inferred, r.waits.moved, r.waits.dropped
            ),
        ]);
    }
    println!("{}", t.render().trim_end());
    Ok(())
}
