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
//! optimisation pipeline. Exit 1 when concerto's schedule loses to a baseline anywhere.

use std::time::Instant;

use clap::Args;
use concerto_graph::models::{self, GptConfig, Model, Parallel, Zero};
use concerto_graph::optimize::Optimized;
use concerto_graph::{DType, Graph};
use serde::Serialize;

use crate::decompose;
use crate::optimize::{Decompose, DecompositionJson, Families, Fuse, OptimizeOpts};
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

/// One row of the scheduling/decomposition ablation.
#[derive(Serialize)]
struct AblationRow {
    config: String,
    hardware: &'static str,
    precision: &'static str,
    ops: usize,
    /// Program order: the baseline.
    baseline_ns: u64,
    /// The best of program order, lhs and inductor.
    best_baseline_ns: u64,
    /// S: concerto's schedule of the graph.
    optimized_ns: u64,
    /// S+AD, never above S.
    decomposed_ns: u64,
    decompositions: Vec<DecompositionJson>,
    /// baseline > S > S+AD.
    shape: bool,
    time_s: f64,
}

/// One row of the ZeRO-3 fusion table.
#[derive(Serialize)]
struct FusionRow {
    config: String,
    hardware: &'static str,
    gpus: u32,
    /// Program order, unfused.
    baseline_ns: u64,
    /// S: concerto on the unfused graph.
    optimized_ns: u64,
    /// S+F: concerto on the fused graph, never above S.
    fused_ns: u64,
    /// S+F vs S, positive when shorter.
    fuse_gain_pct: f64,
    /// Collective calls before and after fusion.
    collective_calls: (usize, usize),
    /// Peak memory of the tensor lifetimes, unfused and fused (bytes).
    peak_memory_bytes: (u64, u64),
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    time_s: f64,
}

/// One row of the decomposition-families table.
#[derive(Serialize)]
struct FamiliesRow {
    config: String,
    hardware: &'static str,
    ops: usize,
    /// Program order.
    baseline_ns: u64,
    /// S.
    optimized_ns: u64,
    /// S+AD with splits only, rings only, both (each never above S).
    split_ns: u64,
    ring_ns: u64,
    all_ns: u64,
    /// What `all` applied.
    decompositions: Vec<DecompositionJson>,
    time_s: f64,
}

#[derive(Serialize)]
struct Report {
    ablation: Vec<AblationRow>,
    fusion: Vec<FusionRow>,
    families: Vec<FamiliesRow>,
}

/// A GPT plan of the ablation.
struct Setting {
    name: &'static str,
    hardware: &'static str,
    model: Model,
    parallel: Parallel,
}

fn plan(pp: u32, tp: u32, dp: u32, zero: Zero, precision: DType) -> Parallel {
    Parallel {
        microbatches: Parallel::default_microbatches(pp),
        zero,
        precision,
        ..Parallel::new(dp, tp, pp)
    }
}

/// The paper's GPT plans: 8 layers, hidden 4096, 4 sequences of 2048 per step.
fn ablation_settings() -> Vec<Setting> {
    let gpt = Model::Gpt(GptConfig {
        micro_batch: 4,
        ..GptConfig::default()
    });
    let s = |name, hardware, tp, dp, precision| Setting {
        name,
        hardware,
        model: gpt.clone(),
        parallel: plan(1, tp, dp, Zero::None, precision),
    };
    vec![
        s("gpt (1,16,1) NVLink bf16", "a800", 16, 1, DType::Bf16),
        s("gpt (1,8,2) PCIe fp32", "a800-pcie", 8, 2, DType::F32),
        s("gpt (1,16,1) bf16", "h100", 16, 1, DType::Bf16),
        s("gpt (1,8,2) bf16", "h100", 8, 2, DType::Bf16),
    ]
}

/// The ablation's GPT with sequence parallelism: (1,8,1) on both profiles, (1,16,1) across two
/// nodes on the roofline one.
fn families_settings() -> Vec<Setting> {
    let gpt = Model::Gpt(GptConfig {
        micro_batch: 4,
        ..GptConfig::default()
    });
    let s = |name, hardware, tp| Setting {
        name,
        hardware,
        model: gpt.clone(),
        parallel: plan(1, tp, 1, Zero::None, DType::Bf16).with_sequence_parallel(true),
    };
    vec![
        s("gpt (1,8,1) SP bf16", "h100", 8),
        s("gpt (1,8,1) SP NVLink bf16", "a800", 8),
        s("gpt (1,16,1) SP NVLink bf16", "a800", 16),
    ]
}

/// ZeRO-3 on 8, 16 and 32 GPUs: the 8-layer, hidden-2048 GPT of `bench graphs`.
fn fusion_settings() -> Vec<Setting> {
    let gpt = Model::Gpt(GptConfig {
        layers: 8,
        hidden: 2048,
        heads: 16,
        seq: 2048,
        micro_batch: 4,
        ..GptConfig::default()
    });
    [8, 16, 32]
        .into_iter()
        .map(|dp| Setting {
            name: match dp {
                8 => "gpt zero3 dp8",
                16 => "gpt zero3 dp16",
                _ => "gpt zero3 dp32",
            },
            hardware: "h100",
            model: gpt.clone(),
            parallel: plan(1, 1, dp, Zero::Stage3, DType::Bf16),
        })
        .collect()
}

fn precision_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "fp32",
        DType::F16 => "fp16",
        _ => "bf16",
    }
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// A decomposition row's options (its hardware, fusion off, `--decompose sequential` unless
/// another was asked), its graph and concerto's schedule of it; the row goes into `worse`
/// when concerto's schedule loses to a baseline.
fn scheduled(
    args: &AblationArgs,
    s: &Setting,
    worse: &mut Vec<&'static str>,
) -> anyhow::Result<(OptimizeOpts, Graph, Optimized)> {
    let mut opts = args.opts.clone();
    opts.hardware = s.hardware.to_string();
    opts.gpus_per_node = s.parallel.gpus_per_node;
    opts.fuse = Fuse::Off;
    if opts.decompose == Decompose::Off {
        opts.decompose = Decompose::Sequential;
    }
    let graph = models::build(&s.model, &s.parallel)?;
    let r = opts.run(&graph)?;
    let opt = r.concerto().makespan_ns();
    if r.results.iter().any(|x| opt > x.makespan_ns()) {
        worse.push(s.name);
    }
    Ok((opts, graph, r))
}

pub(crate) fn run(args: &AblationArgs) -> Result<(), Failure> {
    let mut worse = Vec::new();
    let mut ablation = Vec::new();
    let wanted = |name: &str| args.only.as_deref().is_none_or(|p| name.contains(p));
    for s in ablation_settings().into_iter().filter(|s| wanted(s.name)) {
        let began = Instant::now();
        let (opts, graph, r) = scheduled(args, &s, &mut worse)?;
        let opt = r.concerto().makespan_ns();
        let ad = decompose::sequential(&opts, &graph, opt)
            .map_err(|e| e.context(format!("{}: decomposing", s.name)))?;
        let baseline = r.get("program-order").map_or(0, |x| x.makespan_ns());
        let row = AblationRow {
            config: s.name.to_string(),
            hardware: s.hardware,
            precision: precision_name(s.parallel.precision),
            ops: r.ops,
            baseline_ns: baseline,
            best_baseline_ns: r.best_baseline_ns(),
            optimized_ns: opt,
            decomposed_ns: ad.decomposed_ns,
            shape: baseline > opt && opt > ad.decomposed_ns,
            decompositions: ad.decompositions,
            time_s: began.elapsed().as_secs_f64(),
        };
        if !args.json {
            eprintln!(
                "{} on {}: baseline {} ms, S {} ms, S+AD {} ms ({:.1} s)",
                row.config,
                row.hardware,
                ms(row.baseline_ns),
                ms(row.optimized_ns),
                ms(row.decomposed_ns),
                row.time_s
            );
        }
        ablation.push(row);
    }
    let mut fusion = Vec::new();
    for s in fusion_settings().into_iter().filter(|s| wanted(s.name)) {
        let began = Instant::now();
        let mut opts = args.opts.clone();
        opts.hardware = s.hardware.to_string();
        opts.gpus_per_node = s.parallel.gpus_per_node;
        opts.decompose = Decompose::Off;
        opts.fuse = Fuse::On;
        let graph = models::build(&s.model, &s.parallel)?;
        let r = opts.run(&graph)?;
        let opt = r.concerto().makespan_ns();
        if r.results.iter().any(|x| opt > x.makespan_ns()) {
            worse.push(s.name);
        }
        let (fu, note) = opts
            .fuse_kept(&graph, &r)
            .map_err(|e| e.context(format!("{}: fusing", s.name)))?;
        let (fused_ns, calls, peak) = match &fu {
            Some((_, o)) => (
                o.concerto().makespan_ns(),
                o.collectives,
                o.concerto().peak_memory_bytes,
            ),
            None => (opt, r.collectives, r.concerto().peak_memory_bytes),
        };
        let row = FusionRow {
            config: s.name.to_string(),
            hardware: s.hardware,
            gpus: s.parallel.dp,
            baseline_ns: r.get("program-order").map_or(0, |x| x.makespan_ns()),
            optimized_ns: opt,
            fused_ns,
            fuse_gain_pct: (1.0 - fused_ns as f64 / opt as f64) * 100.0,
            collective_calls: (r.collectives, calls),
            peak_memory_bytes: (r.concerto().peak_memory_bytes, peak),
            note,
            time_s: began.elapsed().as_secs_f64(),
        };
        if !args.json {
            eprintln!(
                "{} on {}: S {} ms, S+F {} ms ({:.1} s)",
                row.config,
                row.hardware,
                ms(row.optimized_ns),
                ms(row.fused_ns),
                row.time_s
            );
        }
        fusion.push(row);
    }
    let mut families = Vec::new();
    for s in families_settings().into_iter().filter(|s| wanted(s.name)) {
        let began = Instant::now();
        let (mut opts, graph, r) = scheduled(args, &s, &mut worse)?;
        let opt = r.concerto().makespan_ns();
        let mut by_family = Vec::new();
        for f in [Families::Split, Families::Ring, Families::All] {
            opts.families = f;
            let ad = decompose::sequential(&opts, &graph, opt)
                .map_err(|e| e.context(format!("{}: decomposing ({f:?})", s.name)))?;
            by_family.push(ad);
        }
        let all = by_family.pop().expect("three");
        let row = FamiliesRow {
            config: s.name.to_string(),
            hardware: s.hardware,
            ops: r.ops,
            baseline_ns: r.get("program-order").map_or(0, |x| x.makespan_ns()),
            optimized_ns: opt,
            split_ns: by_family[0].decomposed_ns,
            ring_ns: by_family[1].decomposed_ns,
            all_ns: all.decomposed_ns,
            decompositions: all.decompositions,
            time_s: began.elapsed().as_secs_f64(),
        };
        if !args.json {
            eprintln!(
                "{} on {}: S {} ms, S+AD split {} / ring {} / all {} ms ({:.1} s)",
                row.config,
                row.hardware,
                ms(row.optimized_ns),
                ms(row.split_ns),
                ms(row.ring_ns),
                ms(row.all_ns),
                row.time_s
            );
        }
        families.push(row);
    }
    if args.json {
        let report = Report {
            ablation,
            fusion,
            families,
        };
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_tables(&ablation, &fusion, &families);
    }
    if !worse.is_empty() {
        eprintln!("concerto is worse than a baseline on: {}", worse.join(", "));
        return Err(Failure::Rejected);
    }
    Ok(())
}

/// `count x label`, e.g. `6x rows/4, 16x cols/2, 2x ring/8`, or `-`.
fn decomps_summary(decompositions: &[DecompositionJson]) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for d in decompositions {
        let label = d.label.clone();
        match groups.iter_mut().find(|(k, _)| *k == label) {
            Some((_, c)) => *c += 1,
            None => groups.push((label, 1)),
        }
    }
    if groups.is_empty() {
        return "-".to_string();
    }
    groups
        .iter()
        .map(|(label, c)| format!("{c}x {label}"))
        .collect::<Vec<_>>()
        .join(", ")
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
        let decomps = decomps_summary(&r.decompositions);
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
            decomps_summary(&r.decompositions),
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
