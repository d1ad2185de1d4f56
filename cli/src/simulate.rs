//! `concerto simulate`: evaluate any stream plan of a graph with the simulator.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use concerto_graph::{trace, StreamPlan};
use serde::Serialize;

use crate::io::{profile_lines, profiled_input, read_input, write, ProfileArgs};
use crate::opts::ImportFlags;
use crate::report::{gib, ms};
use crate::Failure;
use concerto_extract::profile::ProfileReport;

/// Arguments of `concerto simulate`.
#[derive(Args, Debug)]
pub(crate) struct SimulateArgs {
    /// The graph the plan belongs to: native `.json` or an XLA HLO text module (`.hlo`).
    pub(crate) graph: PathBuf,
    /// The plan (JSON, as `concerto optimize --plan` writes it).
    #[arg(long, value_name = "FILE")]
    pub(crate) plan: PathBuf,
    #[command(flatten)]
    pub(crate) import: ImportFlags,
    /// Compute slowdown while a collective runs (default: the profile's).
    #[arg(long, value_name = "X")]
    pub(crate) contention: Option<f64>,
    /// Write a Chrome trace (Perfetto) of the timeline.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// Write an SVG Gantt chart of the timeline.
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<PathBuf>,
    /// Check the plan against a memory budget: bytes (`72GiB`) or a percentage of the graph's
    /// program order's peak (`100%`); a plan over it is reported with when and what was live,
    /// and the command exits 1.
    #[arg(long, value_name = "BYTES|PCT%", value_parser = concerto_pipeline::MemoryBudget::parse)]
    pub(crate) memory_budget: Option<concerto_pipeline::MemoryBudget>,
    #[command(flatten)]
    pub(crate) profile: ProfileArgs,
    /// Print one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Serialize)]
struct SimulateJson {
    graph: String,
    hardware: String,
    contention: f64,
    ops: usize,
    makespan_ns: u64,
    exposed_comm_ns: u64,
    peak_memory_bytes: u64,
    lower_bound_ns: u64,
    bound_kind: &'static str,
    resident_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_budget_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    within_budget: Option<bool>,
    /// What `--profile` measured and left to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<ProfileReport>,
}

pub(crate) fn run(args: &SimulateArgs) -> Result<(), Failure> {
    let mut input = read_input(&args.graph, &args.import.import_options()?)?;
    let hardware = input.costed_on(args.import.hardware()?, args.contention)?;
    let profile = profiled_input(&mut input, &args.graph, &args.profile, &hardware)?;
    let graph = input.graph;
    let text = std::fs::read_to_string(&args.plan)
        .with_context(|| format!("reading {}", args.plan.display()))?;
    let plan = StreamPlan::from_json(&graph, &text)
        .with_context(|| format!("reading plan {}", args.plan.display()))?;
    let e = concerto_pipeline::evaluate(&graph, &hardware, &plan)
        .with_context(|| format!("simulating {}", args.plan.display()))?;
    let timelines = [("plan", &e.timeline)];
    if let Some(path) = &args.trace {
        write(path, &trace::chrome_trace_string(&graph, &timelines))?;
    }
    if let Some(path) = &args.svg {
        write(path, &trace::svg_gantt(&graph, &timelines))?;
    }
    let out = SimulateJson {
        graph: graph.name().to_string(),
        hardware: hardware.name.clone(),
        contention: hardware.contention,
        ops: graph.len(),
        makespan_ns: e.makespan_ns,
        exposed_comm_ns: e.exposed_comm_ns,
        peak_memory_bytes: e.peak_memory_bytes,
        lower_bound_ns: e.lower_bound_ns,
        bound_kind: e.bound_kind.as_str(),
        resident_bytes: graph.resident_bytes(),
        memory_budget_bytes: None,
        within_budget: None,
        profile,
    };
    // The independent memory checker, when a budget is given.
    let mut out = out;
    let mut over = None;
    if let Some(b) = args.memory_budget {
        let bytes = b.bytes(&graph, &hardware)?;
        out.memory_budget_bytes = Some(bytes);
        match concerto_graph::memory::check_memory(&graph, &e.timeline, bytes) {
            Ok(_) => out.within_budget = Some(true),
            Err(err) => {
                out.within_budget = Some(false);
                over = Some(err.to_string());
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
        if over.is_some() {
            return Err(Failure::Rejected);
        }
        return Ok(());
    }
    println!("graph        {} ({} ops)", out.graph, out.ops);
    println!(
        "hardware     {} (compute {:.2}x slower while a collective runs)",
        out.hardware, out.contention
    );
    if let (Some(p), Some(trace)) = (&out.profile, &args.profile.profile) {
        println!("{}", profile_lines(trace, p, 13));
    }
    println!(
        "makespan     {} ms ({:+.1}% above the lower bound {} ms, {})",
        ms(out.makespan_ns),
        (out.makespan_ns as f64 / out.lower_bound_ns.max(1) as f64 - 1.0) * 100.0,
        ms(out.lower_bound_ns),
        out.bound_kind
    );
    println!("exposed comm {} ms", ms(out.exposed_comm_ns));
    println!(
        "peak memory  {:.2} GiB ({:.2} GiB resident)",
        gib(out.peak_memory_bytes),
        gib(out.resident_bytes)
    );
    if let Some(b) = out.memory_budget_bytes {
        match &over {
            None => println!("budget       {:.2} GiB: within", gib(b)),
            Some(why) => {
                println!("budget       {:.2} GiB: over: {why}", gib(b));
                return Err(Failure::Rejected);
            }
        }
    }
    Ok(())
}
