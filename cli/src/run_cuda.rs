//! `concerto run-cuda`: run stream plans on a GPU and compare measured with simulated
//! makespans (see the `concerto-cuda` crate docs for the method).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use concerto_cuda::{compare, CommMode, Executor, ExecutorConfig, Row};
use concerto_graph::{trace, Graph, Hardware, StreamPlan, Timeline};
use concerto_pipeline::Scheduler;
use serde::Serialize;

use crate::io::read_graph_with;
use crate::opts::{Decompose, Fuse, OptimizeOpts};
use crate::report::ms;
use crate::Failure;
use concerto_pipeline::table::Table;

/// Arguments of `concerto run-cuda`.
#[derive(Args, Debug)]
pub(crate) struct RunCudaArgs {
    /// The graph: a native `.json` graph (`concerto model ... -o FILE` writes one) or an XLA
    /// HLO text module (`.hlo`).
    #[arg(value_name = "PLAN_OR_GRAPH")]
    pub(crate) graph: PathBuf,
    /// Run this stream plan of the graph (JSON, `concerto optimize --plan` writes one) as
    /// scheduler `plan`, instead of optimising and running `program-order` and `concerto`.
    #[arg(long, value_name = "FILE")]
    pub(crate) plan: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) opts: OptimizeOpts,
    /// How collectives run: `spin` (a kernel on 2 blocks) or `copy` (a host-to-device copy
    /// sized to take the modelled duration).
    #[arg(long, value_enum, default_value_t = Comm::Spin)]
    pub(crate) comm: Comm,
    /// The GPU (CUDA device ordinal).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) device: usize,
    /// Measured runs per plan after one warm-up run; the run of median makespan is kept.
    #[arg(long, value_name = "N", default_value_t = ExecutorConfig::default().repeats)]
    pub(crate) repeats: usize,
    /// Write a Chrome trace (Perfetto) of the measured timelines, each followed by its
    /// simulated timeline.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `--comm`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Comm {
    /// A spin kernel on a few blocks.
    Spin,
    /// A host-to-device copy from pinned memory.
    Copy,
}

impl From<Comm> for CommMode {
    fn from(c: Comm) -> Self {
        match c {
            Comm::Spin => CommMode::Spin,
            Comm::Copy => CommMode::Copy,
        }
    }
}

/// The JSON report of `concerto run-cuda`.
#[derive(Serialize)]
struct RunCudaJson<'a> {
    graph: String,
    ops: usize,
    collectives: usize,
    hardware: String,
    contention: f64,
    device: &'a str,
    sm_count: u32,
    kernel: &'static str,
    comm: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    copy_bytes_per_ns: Option<f64>,
    repeats: usize,
    rows: &'a [Row],
}

pub(crate) fn run(args: &RunCudaArgs) -> Result<(), Failure> {
    if args.opts.decompose != Decompose::Off || args.opts.fuse != Fuse::Off {
        return Err(anyhow::anyhow!(
            "run-cuda runs the graph as given: --decompose and --fuse are not supported"
        )
        .into());
    }
    if args.repeats == 0 {
        return Err(anyhow::anyhow!("--repeats must be at least 1").into());
    }
    let graph = read_graph_with(&args.graph, &args.opts.import_options()?)?;
    let hardware = args.opts.hardware()?;
    let given = match &args.plan {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let plan = StreamPlan::from_json(&graph, &text)
                .with_context(|| format!("reading plan {}", path.display()))?;
            Some(plan)
        }
        None => None,
    };
    // Open the GPU before the (possibly long) optimisation: no GPU is an error at once.
    let config = ExecutorConfig {
        comm: args.comm.into(),
        repeats: args.repeats,
        ..ExecutorConfig::default()
    };
    let mut executor = Executor::with_config(args.device, config)?;
    let (plans, durations, contention): (Vec<(&str, StreamPlan)>, Vec<u64>, f64) = match given {
        Some(plan) => (
            vec![("plan", plan)],
            hardware.checked_durations(&graph)?,
            hardware.contention,
        ),
        None => {
            let r = args
                .opts
                .pipeline()?
                .schedule(&graph, Vec::new())
                .with_context(|| format!("optimizing {}", args.graph.display()))?;
            let plans = [Scheduler::ProgramOrder, Scheduler::Concerto]
                .into_iter()
                .filter_map(|s| r.get(s).map(|x| (s.as_str(), x.plan.clone())))
                .collect();
            (plans, r.durations, r.contention)
        }
    };
    let named: Vec<(&str, &StreamPlan)> = plans.iter().map(|(n, p)| (*n, p)).collect();
    let rows = compare(&graph, &named, &durations, contention, &mut executor)?;
    if let Some(path) = &args.trace {
        write_trace(path, &graph, &rows)?;
    }
    let comm = CommMode::from(args.comm).as_str();
    if args.json {
        let report = RunCudaJson {
            graph: graph.name().to_string(),
            ops: graph.len(),
            collectives: graph.collective_count(),
            hardware: hardware.name.clone(),
            contention,
            device: executor.device_name(),
            sm_count: executor.sm_count(),
            kernel: executor.kernel_origin(),
            comm,
            copy_bytes_per_ns: executor.copy_bytes_per_ns(),
            repeats: args.repeats,
            rows: &rows,
        };
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    print_text(args, &graph, &hardware, contention, &executor, comm, &rows);
    Ok(())
}

/// `--trace`: every row's measured and simulated timelines as one Chrome trace.
fn write_trace(path: &std::path::Path, graph: &Graph, rows: &[Row]) -> Result<(), Failure> {
    let labels: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                format!("{} (measured)", r.scheduler),
                format!("{} (simulated)", r.scheduler),
            )
        })
        .collect();
    let mut timelines: Vec<(&str, &Timeline)> = Vec::new();
    for (r, (m, s)) in rows.iter().zip(&labels) {
        timelines.push((m, &r.measured));
        timelines.push((s, &r.simulated));
    }
    std::fs::write(path, trace::chrome_trace_string(graph, &timelines))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The report as text.
fn print_text(
    args: &RunCudaArgs,
    graph: &Graph,
    hardware: &Hardware,
    contention: f64,
    executor: &Executor,
    comm: &str,
    rows: &[Row],
) {
    println!(
        "graph        {} ({} ops, {} collectives)",
        graph.name(),
        graph.len(),
        graph.collective_count()
    );
    println!(
        "device       {} (GPU {}, {} SMs, spin kernel from {})",
        executor.device_name(),
        args.device,
        executor.sm_count(),
        executor.kernel_origin()
    );
    let rate = executor
        .copy_bytes_per_ns()
        .map(|r| format!(", {r:.1} GB/s calibrated"))
        .unwrap_or_default();
    println!("collectives  {comm}{rate}");
    println!(
        "simulated    {} profile, compute {:.2}x slower while a collective runs (spin kernels \
         are not slowed: --contention 1 compares without it)",
        hardware.name, contention
    );
    let mut table = Table::new(&["scheduler", "simulated_ms", "measured_ms", "diff"]);
    for r in rows {
        table.row(vec![
            r.scheduler.clone(),
            ms(r.simulated_ns),
            ms(r.measured_ns),
            format!("{:+.1}%", r.diff_pct),
        ]);
    }
    print!("{}", table.render());
    println!(
        "measured     median of {} run(s) after a warm-up run",
        args.repeats
    );
    if rows.iter().any(|r| r.host_bound) {
        println!(
            "warning      the GPU may have waited for the host to enqueue commands in some runs \
             (measured times include launch latency)"
        );
    }
}
