//! `concerto fidelity MODULE [TRACE]`: the cost model against measured kernels, per kernel
//! class, per instruction and for the step ([`concerto_extract::fidelity`]).
//!
//! `MODULE` is an HLO module and `TRACE` a `jax.profiler` trace of it: the step is the
//! median over steps of the summed kernel time against the simulated makespan of the module's
//! own schedule. Or `MODULE` is a PyTorch profiler trace, which carries its own measurements
//! (no `TRACE`): its schedule holds the host's launch times, so the step is the summed kernel
//! time of the imported step against the model's sum for the same kernels. `--profile` costs
//! the model's side from a profile too (profile-guided costs), to check them.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use concerto_extract::fidelity::Fidelity;
use concerto_extract::profile::KernelProfile;
use concerto_graph::{Graph, Hardware, StreamPlan};
use serde::Serialize;

use crate::io::{profile_lines, profiled_input, ProfileArgs};
use crate::opts::import_options;
use crate::Failure;
use concerto_pipeline::table::Table;

/// Arguments of `concerto fidelity`.
#[derive(Args, Debug)]
pub(crate) struct FidelityArgs {
    /// An HLO text module (XLA's `*after_optimizations.txt`, plain or `.gz`), or a PyTorch
    /// profiler trace (`.json` / `.json.gz`), whose kernels are the measurement.
    pub(crate) module: PathBuf,
    /// For an HLO module: a `jax.profiler` trace of it (`*.trace.json.gz`), the measurement.
    pub(crate) trace: Option<PathBuf>,
    /// Hardware profile of the model.
    #[arg(long, default_value = "h100")]
    pub(crate) hardware: String,
    /// GPUs per node: replica groups that span nodes are inter-node.
    #[arg(long, default_value_t = 8)]
    pub(crate) gpus_per_node: u32,
    #[command(flatten)]
    pub(crate) profile: ProfileArgs,
    /// How many of the worst instructions to list.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub(crate) worst: usize,
    /// Print one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Serialize)]
struct FidelityJson {
    module: String,
    hardware: String,
    /// The device and steps of the measurement, for a `jax.profiler` trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<usize>,
    #[serde(flatten)]
    fidelity: Fidelity,
}

/// The simulated makespan of `graph` in `plan` on `hardware`.
fn makespan(graph: &Graph, plan: &StreamPlan, hardware: &Hardware) -> anyhow::Result<u64> {
    let durations = hardware.checked_durations(graph)?;
    Ok(concerto_graph::simulate(graph, plan, &durations, hardware.contention)?.makespan)
}

pub(crate) fn run(args: &FidelityArgs) -> Result<(), Failure> {
    let hardware = Hardware::load(&args.hardware)?.with_gpus_per_node(args.gpus_per_node)?;
    let options = import_options(args.gpus_per_node, &[])?;
    let out = if concerto_extract::read::is_hlo(&args.module) {
        let trace = args.trace.as_ref().ok_or_else(|| {
            anyhow::anyhow!(
                "{} is an HLO module: give the jax.profiler trace of its step as TRACE",
                args.module.display()
            )
        })?;
        let mut input = concerto_extract::read_imported(&args.module, &options)?;
        let applied = profiled_input(&mut input, &args.module, &args.profile, &hardware)?;
        let source = input.hlo.clone().ok_or_else(|| {
            anyhow::anyhow!("{} was not read as an HLO module", args.module.display())
        })?;
        let (graph, module, report) = (input.graph, &source.module, &source.report);
        let plan = match &report.sequence {
            Some(events) => concerto_extract::hlo::sequence_plan(&graph, events)?,
            None => StreamPlan::program_order(&graph)?,
        };
        let step = makespan(&graph, &plan, &hardware)?;
        let file = std::fs::File::open(trace)
            .map_err(|e| anyhow::anyhow!("reading profile {}: {e}", trace.display()))?;
        let measured = KernelProfile::read_from(std::io::BufReader::new(file), &module.name)
            .map_err(|e| anyhow::anyhow!("reading profile {}: {e}", trace.display()))?;
        let fidelity =
            Fidelity::of_module(&graph, module, &measured, &hardware, step).map_err(|e| {
                anyhow::anyhow!(
                    "comparing {} with {}: {e}",
                    args.module.display(),
                    trace.display()
                )
            })?;
        if let (Some(p), Some(r), false) = (&args.profile.profile, &applied, args.json) {
            println!("{}", profile_lines(p, r, 9));
        }
        FidelityJson {
            module: module.name.clone(),
            hardware: hardware.name.clone(),
            device: Some(measured.device.clone()),
            steps: Some(measured.steps),
            fidelity,
        }
    } else {
        if args.trace.is_some() || args.profile.profile.is_some() {
            return Err(anyhow::anyhow!(
                "{} is not an HLO module: a profiler trace is its own measurement, so TRACE \
                 and --profile apply to HLO modules only",
                args.module.display()
            )
            .into());
        }
        let imported = crate::io::read_input(&args.module, &options)?;
        if imported.trace.is_none() {
            return Err(anyhow::anyhow!(
                "{} is a native graph: fidelity needs measurements (an HLO module and its \
                 jax.profiler trace, or a PyTorch profiler trace)",
                args.module.display()
            )
            .into());
        }
        let graph = imported.graph;
        FidelityJson {
            module: graph.name().to_string(),
            hardware: hardware.name.clone(),
            device: None,
            steps: None,
            fidelity: Fidelity::of_measured_graph(&graph, &hardware),
        }
    };
    if args.json {
        let mut out = out;
        out.fidelity.ops.truncate(args.worst);
        println!(
            "{}",
            serde_json::to_string_pretty(&out).context("writing JSON")?
        );
    } else {
        print_text(&out, args.worst);
    }
    Ok(())
}

/// `ns` as milliseconds with three decimals.
fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn print_text(out: &FidelityJson, worst: usize) {
    let f = &out.fidelity;
    let measured_on = match (&out.device, out.steps) {
        (Some(d), Some(s)) => format!("{d}, median of {s} steps"),
        _ => "the trace's kernels".into(),
    };
    println!(
        "module    {} (measured: {measured_on}; modelled: `{}`)",
        out.module, out.hardware
    );
    let mut t = Table::new(&["class", "instr.", "measured ms", "modelled ms", "error %"]);
    for c in &f.classes {
        t.row(vec![
            c.class.clone(),
            c.instructions.to_string(),
            ms(c.measured_ns),
            ms(c.modelled_ns),
            format!("{:+.1}", c.error_pct),
        ]);
    }
    print!("{}", t.render());
    println!(
        "step      measured {} ms, modelled {} ms ({:+.1} %)",
        ms(f.step.measured_ns),
        ms(f.step.modelled_ns),
        f.step.error_pct
    );
    println!(
        "coverage  {:.1} % of the ops, {:.1} % of the modelled time measured",
        f.coverage.instructions_pct, f.coverage.time_pct
    );
    if f.shapeless > 0 {
        println!(
            "shapes    {} of the {} measured ops carry neither flops nor bytes (the trace \
             recorded no shapes): the model gives them only a kernel's floor",
            f.shapeless,
            f.ops.len()
        );
    }
    if worst > 0 && !f.ops.is_empty() {
        let mut w = Table::new(&[
            "instruction",
            "class",
            "measured µs",
            "modelled µs",
            "error %",
        ]);
        for o in f.ops.iter().take(worst) {
            w.row(vec![
                o.name.clone(),
                o.class.clone(),
                format!("{:.1}", o.measured_ns as f64 / 1e3),
                format!("{:.1}", o.modelled_ns as f64 / 1e3),
                format!("{:+.0}", o.error_pct),
            ]);
        }
        println!("worst instructions:");
        print!("{}", w.render());
    }
}
