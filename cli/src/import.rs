//! `concerto import`: read an exported graph (XLA HLO text, a PyTorch profiler trace, or a
//! native graph JSON such as the PyTorch adapter writes), cost it, and write the native graph
//! format.
//!
//! For a profiler trace it also prints the step's measured GPU time and the recorded order
//! replayed by the simulator with the measured durations and release times
//! ([`concerto_extract::kineto::replay`]), and the error between the two.
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

use crate::io::{profile_lines, profiled_input, write_graph, ProfileArgs};
use crate::opts::ImportFlags;
use crate::report::gib;
use crate::Failure;
use concerto_extract::profile::ProfileReport;
use concerto_extract::Imported;

/// Arguments of `concerto import`.
#[derive(Args, Debug)]
pub(crate) struct ImportArgs {
    /// The graph: an HLO text module (`.hlo` / `.txt`, as `--xla_dump_hlo_as_text` writes it),
    /// a PyTorch profiler trace (`.json` / `.json.gz` with `traceEvents`), or a native graph
    /// JSON (`.json`, e.g. from `python -m concerto_torch.export`).
    pub(crate) file: PathBuf,
    /// For a profiler trace: import `ProfilerStep#N` (default: the median step).
    #[arg(long, value_name = "N")]
    pub(crate) step: Option<u64>,
    #[command(flatten)]
    pub(crate) import: ImportFlags,
    #[command(flatten)]
    pub(crate) profile: ProfileArgs,
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
    /// A profiler trace: the imported step (`ProfilerStep#N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<String>,
    /// A profiler trace: the step's measured GPU span (first kernel start to last end).
    #[serde(skip_serializing_if = "Option::is_none")]
    measured_step_ns: Option<u64>,
    /// A profiler trace: the recorded order simulated with the measured durations and release
    /// times, without contention.
    #[serde(skip_serializing_if = "Option::is_none")]
    replay_ns: Option<u64>,
    /// `100 (replay - measured) / measured`.
    #[serde(skip_serializing_if = "Option::is_none")]
    replay_error_pct: Option<f64>,
    /// What `--profile` measured and left to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<ProfileReport>,
    /// A profiler trace: everything else the importer measured and decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<concerto_extract::kineto::TraceReport>,
    warnings: Vec<String>,
    time_s: f64,
}

pub(crate) fn run(args: &ImportArgs) -> Result<(), Failure> {
    let began = Instant::now();
    let mut input = read(args)?;
    let hardware = input.costed_on(args.import.hardware()?, None)?;
    let profile = profiled_input(&mut input, &args.file, &args.profile, &hardware)?;
    let replay = match &input.trace {
        Some(_) => Some(concerto_extract::kineto::replay(&input.graph)?),
        None => None,
    };
    if let Some(path) = &args.output {
        write_graph(path, &input.graph)?;
    }
    let mut out = summarise(&input, &hardware, replay)?;
    out.profile = profile;
    out.time_s = began.elapsed().as_secs_f64();
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
        return Ok(());
    }
    print_summary(args, &out);
    Ok(())
}

/// Reads the file: an HLO module (lowered, with its report), a profiler trace or a native
/// graph; `--step` only for a trace.
fn read(args: &ImportArgs) -> Result<Imported, Failure> {
    let mut options = args.import.import_options()?;
    options.trace_step = args.step;
    if concerto_extract::read::is_hlo(&args.file) {
        if args.step.is_some() {
            return Err(anyhow::anyhow!(
                "--step picks a step of a profiler trace, not of an HLO module"
            )
            .into());
        }
        // The importer's warnings are the summary's lines here, not stderr's.
        return Ok(concerto_extract::read_imported(&args.file, &options)?);
    }
    let imported = crate::io::read_input(&args.file, &options)?;
    if args.step.is_some() && imported.trace.is_none() {
        return Err(anyhow::anyhow!(
            "--step picks a step of a profiler trace; {} is a native graph",
            args.file.display()
        )
        .into());
    }
    Ok(imported)
}

/// The summary of `input` costed on `hardware`: counts, durations, memory, the module's own
/// schedule, the trace's step (`replay`: its recorded order replayed). No profile, time 0.
fn summarise(
    input: &Imported,
    hardware: &Hardware,
    replay: Option<u64>,
) -> Result<ImportJson, Failure> {
    let graph = &input.graph;
    let report = input.hlo.as_ref().map(|h| &h.report);
    let trace = input.trace.clone();
    let durations = hardware.checked_durations(graph)?;
    let (comm, compute): (Vec<_>, Vec<_>) = graph
        .ops()
        .zip(&durations)
        .partition(|(op, _)| op.is_collective());
    let comm: u64 = comm.into_iter().map(|(_, d)| d).sum();
    let compute: u64 = compute.into_iter().map(|(_, d)| d).sum();
    let summary = concerto_graph::summary::Summary::of(graph);
    // The module's own order (XLA's schedule when it was dumped scheduled), simulated.
    let plan = StreamPlan::program_order(graph)?;
    let timeline = concerto_graph::simulate(graph, &plan, &durations, hardware.contention)?;
    let mem = memory::profile(graph, &timeline)?;
    let lower = memory::peak_lower_bound(graph, &durations)?;
    let own = match report.and_then(|r| r.sequence.as_ref()) {
        Some(events) => {
            let plan = concerto_extract::hlo::sequence_plan(graph, events)?;
            let t = concerto_graph::simulate(graph, &plan, &durations, hardware.contention)?;
            Some((t.makespan, memory::profile(graph, &t)?.peak_bytes))
        }
        None => None,
    };
    Ok(ImportJson {
        module: graph.name().to_string(),
        instructions: report.map(|r| r.instructions),
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
        step: trace.as_ref().map(|t| t.step.clone()),
        measured_step_ns: trace.as_ref().map(|t| t.measured_step_ns),
        replay_ns: replay,
        replay_error_pct: trace
            .as_ref()
            .zip(replay)
            .map(|(t, r)| concerto_extract::kineto::error_pct(r, t.measured_step_ns)),
        warnings: match (report, &trace) {
            (Some(r), _) => r.warnings.clone(),
            (None, Some(t)) => t.warnings.clone(),
            (None, None) => Vec::new(),
        },
        trace,
        profile: None,
        time_s: 0.0,
    })
}

/// The summary as text.
fn print_summary(args: &ImportArgs, out: &ImportJson) {
    println!("module        {}", out.module);
    if let (Some(p), Some(trace)) = (&out.profile, &args.profile.profile) {
        println!("{}", profile_lines(trace, p, 14));
    }
    match (out.instructions, &out.trace) {
        (Some(n), _) => println!("instructions  {n} in the entry computation"),
        (None, Some(t)) => print_trace(t, out.replay_ns.unwrap_or(0)),
        (None, None) => println!("format        native graph JSON"),
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
        "compute       {:.3} ms {} (sum of op durations)",
        out.compute_ns as f64 / 1e6,
        if out.trace.is_some() {
            "measured".to_string()
        } else {
            format!("on {}", out.hardware)
        }
    );
    println!(
        "communication {:.3} ms (sum of collective durations)",
        out.comm_ns as f64 / 1e6
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
}

/// The trace's lines of the summary.
fn print_trace(t: &concerto_extract::kineto::TraceReport, replay: u64) {
    println!(
        "format        PyTorch profiler trace{}{}",
        t.device
            .as_ref()
            .map(|d| format!(", {d}"))
            .unwrap_or_default(),
        match (t.rank, t.world_size) {
            (Some(r), Some(w)) => format!(", rank {r} of {w}"),
            _ => String::new(),
        }
    );
    let steps: Vec<String> = t
        .steps
        .iter()
        .map(|s| format!("{} {:.3} ms", s.name, s.measured_ns as f64 / 1e6))
        .collect();
    println!("steps         {}", steps.join(", "));
    println!(
        "step          {} (measured GPU span {:.3} ms)",
        t.step,
        t.measured_step_ns as f64 / 1e6
    );
    println!(
        "replay        {:.3} ms: the recorded order simulated with the measured durations and \
         launch times ({:+.2} %)",
        replay as f64 / 1e6,
        concerto_extract::kineto::error_pct(replay, t.measured_step_ns)
    );
    let streams: Vec<String> = t
        .streams
        .iter()
        .map(|s| format!("{} -> {} ({} ops)", s.cuda_stream, s.stream, s.ops))
        .collect();
    println!("streams       {}", streams.join(", "));
    println!(
        "waits         {} exact, {} inferred, {} moved, {} dropped, {} outside the step",
        t.waits.exact, t.waits.inferred, t.waits.moved, t.waits.dropped, t.waits.outside
    );
    println!(
        "launch        latency {:.1} us added to every CPU launch time",
        t.launch_latency_ns as f64 / 1e3
    );
    if t.multi_op_launches > 0 || t.unlaunched_ops > 0 {
        println!(
            "launches      {} launch calls ran several GPU ops (graph replays); {} GPU ops have \
             no launch call (released at their measured start)",
            t.multi_op_launches, t.unlaunched_ops
        );
    }
}
