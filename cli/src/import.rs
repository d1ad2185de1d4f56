//! `concerto import`: read an exported graph (XLA HLO text, or a native graph JSON such as
//! the PyTorch adapter writes), cost it, and write the native graph format.
//!
//! Besides the counts and durations it prints the module's memory ([`memory`]): the resident
//! bytes (the entry parameters), the step's outputs (what reaches the entry's root), the peak
//! of the program order (the module's own order, simulated with the hardware's durations and
//! contention) and a peak no order can go below ([`memory::peak_lower_bound`]); for a
//! scheduled module (XLA's compiled modules), its own schedule's simulated makespan and peak.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use concerto_graph::{memory, Hardware, StreamPlan};
use serde::Serialize;

use crate::io::write_graph;
use crate::opts::{import_options, parse_trip_count};
use crate::report::gib;
use crate::Failure;

/// Arguments of `concerto import`.
#[derive(Args, Debug)]
pub(crate) struct ImportArgs {
    /// The graph: an HLO text module (`.hlo` / `.txt`, as `--xla_dump_hlo_as_text` writes it)
    /// or a native graph JSON (`.json`, e.g. from `python -m concerto_torch.export`).
    pub(crate) file: PathBuf,
    /// Hardware profile that costs the ops in the summary.
    #[arg(long, default_value = "h100")]
    pub(crate) hardware: String,
    /// GPUs per node: replica groups that span nodes are inter-node.
    #[arg(long, default_value_t = 8)]
    pub(crate) gpus_per_node: u32,
    /// The trip count of a `while` loop whose count the module does not give (a decode loop,
    /// say), by the loop's instruction name: `--trip-count while.3=16`. Repeatable; wins over
    /// the loop's `backend_config`.
    #[arg(long = "trip-count", value_name = "NAME=N", value_parser = parse_trip_count)]
    pub(crate) trip_counts: Vec<(String, u64)>,
    /// Write the graph (native JSON) to this file.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Serialize)]
struct ImportJson {
    module: String,
    /// Instructions of the entry computation (an HLO module only).
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<usize>,
    ops: usize,
    collectives: BTreeMap<String, usize>,
    links: Vec<String>,
    compute_ns: u64,
    comm_ns: u64,
    hardware: String,
    /// Bytes resident for the whole step (the entry parameters).
    resident_bytes: u64,
    /// Bytes of the step's outputs (ops whose output reaches the entry's root).
    live_out_bytes: u64,
    /// Peak memory of the program order, simulated with the hardware's durations.
    peak_memory_bytes: u64,
    /// A peak no order can go below ([`memory::peak_lower_bound`]).
    peak_lower_bound_bytes: u64,
    /// The module's own schedule (XLA's, for a compiled module), run as XLA's GPU runtime
    /// runs it ([`concerto_extract::hlo::sequence_plan`]): its simulated makespan and the
    /// memory model's peak for it; absent for an unscheduled module.
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule_ns: Option<u64>,
    /// See [`ImportJson::schedule_ns`].
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule_peak_bytes: Option<u64>,
    warnings: Vec<String>,
    time_s: f64,
}

pub(crate) fn run(args: &ImportArgs) -> Result<(), Failure> {
    let began = Instant::now();
    let hardware = Hardware::by_name(&args.hardware)?.with_gpus_per_node(args.gpus_per_node)?;
    let options = import_options(args.gpus_per_node, &args.trip_counts)?;
    // An HLO module is lowered (with its report); anything else is read as a native graph.
    let (graph, report) = if concerto_extract::read::is_hlo(&args.file) {
        let (g, r) = concerto_extract::read::read_hlo(&args.file, &options)?;
        (g, Some(r))
    } else {
        (crate::io::read_graph_with(&args.file, &options)?, None)
    };
    if let Some(path) = &args.output {
        write_graph(path, &graph)?;
    }
    let durations = hardware.durations(&graph);
    let (comm, compute): (Vec<_>, Vec<_>) = graph
        .ops()
        .zip(&durations)
        .partition(|(op, _)| op.is_collective());
    let comm: u64 = comm.into_iter().map(|(_, d)| d).sum();
    let compute: u64 = compute.into_iter().map(|(_, d)| d).sum();
    let summary = concerto_graph::summary::Summary::of(&graph);
    // The module's own order (XLA's schedule when it was dumped scheduled), simulated.
    let plan = StreamPlan::program_order(&graph)?;
    let timeline = concerto_graph::simulate(&graph, &plan, &durations, hardware.contention)?;
    let mem = memory::profile(&graph, &timeline)?;
    let lower = memory::peak_lower_bound(&graph, &durations)?;
    let own = match report.as_ref().and_then(|r| r.sequence.as_ref()) {
        Some(events) => {
            let plan = concerto_extract::hlo::sequence_plan(&graph, events)?;
            let t = concerto_graph::simulate(&graph, &plan, &durations, hardware.contention)?;
            Some((t.makespan, memory::profile(&graph, &t)?.peak_bytes))
        }
        None => None,
    };
    let out = ImportJson {
        module: graph.name().to_string(),
        instructions: report.as_ref().map(|r| r.instructions),
        ops: graph.len(),
        collectives: summary.collectives,
        links: summary.links,
        compute_ns: compute,
        comm_ns: comm,
        hardware: hardware.name.clone(),
        resident_bytes: mem.resident_bytes,
        live_out_bytes: mem.live_out_bytes,
        peak_memory_bytes: mem.peak_bytes,
        peak_lower_bound_bytes: lower,
        schedule_ns: own.map(|o| o.0),
        schedule_peak_bytes: own.map(|o| o.1),
        warnings: report.map(|r| r.warnings).unwrap_or_default(),
        time_s: began.elapsed().as_secs_f64(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
        return Ok(());
    }
    println!("module        {}", out.module);
    match out.instructions {
        Some(n) => println!("instructions  {n} in the entry computation"),
        None => println!("format        native graph JSON"),
    }
    println!(
        "ops           {} ({} collectives)",
        out.ops,
        out.collectives.values().sum::<usize>()
    );
    let kinds: Vec<String> = out
        .collectives
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    println!(
        "collectives   {}",
        if kinds.is_empty() {
            "none".into()
        } else {
            kinds.join(", ")
        }
    );
    println!("links         {}", out.links.join(", "));
    println!(
        "compute       {:.3} ms on {} (sum of op durations)",
        compute as f64 / 1e6,
        out.hardware
    );
    println!(
        "communication {:.3} ms (sum of collective durations)",
        comm as f64 / 1e6
    );
    println!(
        "memory        resident {:.2} GiB, step outputs {:.2} GiB, peak {:.2} GiB in program \
         order (lower bound {:.2} GiB)",
        gib(out.resident_bytes),
        gib(out.live_out_bytes),
        gib(out.peak_memory_bytes),
        gib(out.peak_lower_bound_bytes)
    );
    if let (Some(ns), Some(peak)) = (out.schedule_ns, out.schedule_peak_bytes) {
        println!(
            "schedule      the module's own: {:.3} ms simulated, memory peak {:.2} GiB",
            ns as f64 / 1e6,
            gib(peak)
        );
    }
    for w in &out.warnings {
        println!("warning       {w}");
    }
    if let Some(path) = &args.output {
        println!("written       {}", path.display());
    }
    println!("time          {:.2} s", out.time_s);
    Ok(())
}
