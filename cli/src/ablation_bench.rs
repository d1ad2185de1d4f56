//! `concerto bench ablation`: the Concerto paper's two ablations on this project's models and
//! hardware profiles.
//!
//! 1. **Scheduling and decomposition** on GPT tensor-parallel plans: the baseline (program
//!    order, what Megatron-LM issues eagerly), S (concerto's schedule only) and S+AD (schedule
//!    plus the decompositions of `--decompose sequential`), in the paper's two settings: (1,16,1)
//!    with NVLink in 16-bit precision and (1,8,2) without NVLink (PCIe) in fp32, each also on
//!    the measured `h100` profile. The column `shape` says whether baseline > S > S+AD holds.
//! 2. **Fusion** on ZeRO-3 at 8, 16 and 32 GPUs: S (unfused) and S+F (concerto on the graph
//!    with collectives fused into buckets chosen under concerto's plan, kept only when not
//!    longer).
//! 3. **Decomposition families** on the same GPT with sequence parallelism (the tensor-parallel
//!    all-reduces become all-gathers and reduce-scatters along the sequence, where Google's
//!    collective matmul applies): S+AD with Concerto's splits only, with collective-matmul
//!    rings only, and with both, on one graph.
//!
//! Every makespan is simulated from a plan that passed the plan and schedule checks of the
//! optimisation pipeline (`concerto_pipeline::bench::ablation`, which this renders). Exit 1
//! when concerto's schedule loses to a baseline anywhere.

use clap::Args;
use concerto_pipeline::bench::ablation::{self, AblationRow, FamiliesRow, FusionRow};
use concerto_pipeline::summary::count_labels;

use crate::opts::OptimizeOpts;
use crate::progress;
use crate::report::ms;
use crate::table::Table;
use crate::Failure;

/// Arguments of `concerto bench ablation`.
#[derive(Args, Debug)]
#[command(mut_arg("hardware", |a| a.hide(true)))]
pub(crate) struct AblationArgs {
    /// Solver options (the hardware is per row; `--decompose` and `--fuse` are set per table).
    #[command(flatten)]
    pub(crate) opts: OptimizeOpts,
    /// Only the rows whose name contains this (e.g. `PCIe`, `zero3`).
    #[arg(long, value_name = "PATTERN")]
    pub(crate) only: Option<String>,
    /// Print one JSON object (`ablation` and `fusion` arrays) instead of the tables.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &AblationArgs) -> Result<(), Failure> {
    let pipeline = args.opts.pipeline()?;
    let bar = progress::bar(args.json);
    let report = ablation::run(&pipeline, args.only.as_deref(), bar.as_ref())?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_tables(&report.ablation, &report.fusion, &report.families);
    }
    if !report.worse.is_empty() {
        eprintln!(
            "concerto is worse than a baseline on: {}",
            report.worse.join(", ")
        );
        return Err(Failure::Rejected);
    }
    Ok(())
}

/// The tables that have rows, a blank line between them.
fn print_tables(ablation: &[AblationRow], fusion: &[FusionRow], families: &[FamiliesRow]) {
    let mut first = true;
    let mut gap = || {
        if !std::mem::take(&mut first) {
            println!();
        }
    };
    if !ablation.is_empty() {
        gap();
        print_ablation(ablation);
    }
    if !fusion.is_empty() {
        gap();
        print_fusion(fusion);
    }
    if !families.is_empty() {
        gap();
        print_families(families);
    }
}

fn print_ablation(ablation: &[AblationRow]) {
    let mut t = Table::new(&[
        "config",
        "hardware",
        "ops",
        "baseline_ms",
        "best_baseline_ms",
        "S_ms",
        "S+AD_ms",
        "S/base",
        "S+AD/base",
        "decomps",
        "shape",
        "time_s",
    ]);
    for r in ablation {
        let ratio = |ns: u64| format!("{:.3}", ns as f64 / r.baseline_ns as f64);
        let decomps = count_labels(&r.decompositions);
        t.row(vec![
            r.config.clone(),
            r.hardware.to_string(),
            r.ops.to_string(),
            ms(r.baseline_ns),
            ms(r.best_baseline_ns),
            ms(r.optimized_ns),
            ms(r.decomposed_ns),
            ratio(r.optimized_ns),
            ratio(r.decomposed_ns),
            decomps,
            if r.shape { "yes" } else { "no" }.to_string(),
            format!("{:.1}", r.time_s),
        ]);
    }
    print!("{}", t.render());
    println!(
        "baseline = program order; S = concerto's schedule; S+AD = with decompositions \
         (--decompose sequential), kept at S when longer; shape = baseline > S > S+AD"
    );
}

fn print_fusion(fusion: &[FusionRow]) {
    let mut t = Table::new(&[
        "config",
        "hardware",
        "gpus",
        "baseline_ms",
        "S_ms",
        "S+F_ms",
        "F_gain",
        "calls",
        "peak_GiB",
        "time_s",
    ]);
    let gib = |b: u64| format!("{:.2}", b as f64 / (1u64 << 30) as f64);
    for r in fusion {
        t.row(vec![
            r.config.clone(),
            r.hardware.to_string(),
            r.gpus.to_string(),
            ms(r.baseline_ns),
            ms(r.optimized_ns),
            ms(r.fused_ns),
            format!("{:.2}%", r.fuse_gain_pct),
            format!("{}->{}", r.collective_calls.0, r.collective_calls.1),
            format!(
                "{}->{}",
                gib(r.peak_memory_bytes.0),
                gib(r.peak_memory_bytes.1)
            ),
            format!("{:.1}", r.time_s),
        ]);
    }
    print!("{}", t.render());
    println!(
        "S+F = concerto on the graph with collectives fused into buckets chosen under \
         concerto's plan (--fuse on), kept at S when longer; F_gain = S+F vs S"
    );
    for r in fusion {
        if let Some(n) = &r.note {
            println!("{}: {n}", r.config);
        }
    }
}

fn print_families(families: &[FamiliesRow]) {
    let mut t = Table::new(&[
        "config",
        "hardware",
        "ops",
        "baseline_ms",
        "S_ms",
        "split_ms",
        "ring_ms",
        "both_ms",
        "both_gain",
        "decomps (both)",
        "time_s",
    ]);
    for r in families {
        t.row(vec![
            r.config.clone(),
            r.hardware.to_string(),
            r.ops.to_string(),
            ms(r.baseline_ns),
            ms(r.optimized_ns),
            ms(r.split_ns),
            ms(r.ring_ns),
            ms(r.all_ns),
            format!(
                "{:.2}%",
                (1.0 - r.all_ns as f64 / r.optimized_ns as f64) * 100.0
            ),
            count_labels(&r.decompositions),
            format!("{:.1}", r.time_s),
        ]);
    }
    print!("{}", t.render());
    println!(
        "S+AD per family (--families split|ring|all), each kept at S when longer; ring = \
         collective matmul (Wang et al., ASPLOS 2023) around the sequence-parallel all-gathers \
         and reduce-scatters"
    );
}
