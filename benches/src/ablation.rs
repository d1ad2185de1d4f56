//! `bench ablation`: the Concerto paper's ablations on this project's models and hardware
//! profiles.
//!
//! 1. **Scheduling and decomposition** on GPT tensor-parallel plans: the baseline (program
//!    order, what Megatron-LM issues eagerly), S (concerto's schedule only) and S+AD (schedule
//!    plus decompositions), in the paper's two settings: (1,16,1) with NVLink in 16-bit
//!    precision and (1,8,2) without NVLink (PCIe) in fp32, each also on the measured `h100`
//!    profile. [`AblationRow::shape`] says whether baseline > S > S+AD holds.
//! 2. **Fusion** on ZeRO-3 at 8, 16 and 32 GPUs: S (unfused) and S+F (concerto on the graph
//!    with collectives fused into buckets chosen under concerto's plan, kept only when not
//!    longer).
//! 3. **Decomposition families** on the same GPT with sequence parallelism: S+AD with
//!    Concerto's splits only, with collective-matmul rings only, and with both.
//!
//! Every makespan is simulated from a plan of the [`Pipeline`], whose rewrites are kept by
//! [`concerto_pipeline::policy::keep`]. Cost: one pipeline run per row (three S+AD runs per families row).

use std::fmt;
use std::time::Instant;

use concerto_graph::{DType, Graph, Hardware};
use concerto_models::{GptConfig, Model, Parallel, Zero};
use serde::Serialize;

use crate::BenchError;
use concerto_pipeline::pipeline::{Decompose, Families, Pipeline};
use concerto_pipeline::progress::Progress;
use concerto_pipeline::schedule::{Optimized, Scheduler};
use concerto_pipeline::summary::{count_labels, DecompositionSummary};
use concerto_pipeline::table::Table;

/// A GPT plan of the ablation.
#[derive(Clone, Debug)]
pub struct Setting {
    /// Its name (`gpt (1,16,1) NVLink bf16`, ...).
    pub name: &'static str,
    /// The hardware profile's name.
    pub hardware: &'static str,
    /// The model.
    pub model: Model,
    /// The parallel plan.
    pub parallel: Parallel,
}

fn plan(pp: u32, tp: u32, dp: u32, zero: Zero, precision: DType) -> Parallel {
    Parallel {
        microbatches: Parallel::default_microbatches(pp),
        zero,
        precision,
        ..Parallel::new(dp, tp, pp)
    }
}

fn paper_gpt() -> Model {
    Model::Gpt(GptConfig {
        micro_batch: 4,
        ..GptConfig::default()
    })
}

/// The paper's GPT plans: 8 layers, hidden 4096, 4 sequences of 2048 per step.
pub fn ablation_settings() -> Vec<Setting> {
    let s = |name, hardware, tp, dp, precision| Setting {
        name,
        hardware,
        model: paper_gpt(),
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
pub fn families_settings() -> Vec<Setting> {
    let s = |name, hardware, tp| Setting {
        name,
        hardware,
        model: paper_gpt(),
        parallel: plan(1, tp, 1, Zero::None, DType::Bf16).with_sequence_parallel(true),
    };
    vec![
        s("gpt (1,8,1) SP bf16", "h100", 8),
        s("gpt (1,8,1) SP NVLink bf16", "a800", 8),
        s("gpt (1,16,1) SP NVLink bf16", "a800", 16),
    ]
}

/// ZeRO-3 on 8, 16 and 32 GPUs: the 8-layer, hidden-2048 GPT of `bench graphs`.
pub fn fusion_settings() -> Vec<Setting> {
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

/// One row of the scheduling/decomposition ablation.
#[derive(Clone, Debug, Serialize)]
pub struct AblationRow {
    /// The setting's name.
    pub config: String,
    /// The hardware profile.
    pub hardware: &'static str,
    /// `bf16`, `fp16` or `fp32`.
    pub precision: &'static str,
    /// Ops of the graph.
    pub ops: usize,
    /// Program order: the baseline.
    pub baseline_ns: u64,
    /// The best of program order, lhs and inductor.
    pub best_baseline_ns: u64,
    /// S: concerto's schedule of the graph.
    pub optimized_ns: u64,
    /// S+AD, never above S.
    pub decomposed_ns: u64,
    /// The decompositions S+AD applied.
    pub decompositions: Vec<DecompositionSummary>,
    /// baseline > S > S+AD.
    pub shape: bool,
    /// Wall time of the row.
    pub time_s: f64,
}

/// One row of the ZeRO-3 fusion table.
#[derive(Clone, Debug, Serialize)]
pub struct FusionRow {
    /// The setting's name.
    pub config: String,
    /// The hardware profile.
    pub hardware: &'static str,
    /// GPUs (data-parallel degree).
    pub gpus: u32,
    /// Program order, unfused.
    pub baseline_ns: u64,
    /// S: concerto on the unfused graph.
    pub optimized_ns: u64,
    /// S+F: concerto on the fused graph, never above S.
    pub fused_ns: u64,
    /// S+F vs S, positive when shorter.
    pub fuse_gain_pct: f64,
    /// Collective calls before and after fusion.
    pub collective_calls: (usize, usize),
    /// Peak memory of the tensor lifetimes, unfused and fused (bytes).
    pub peak_memory_bytes: (u64, u64),
    /// Why the fusion found was not kept, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Wall time of the row.
    pub time_s: f64,
}

/// One row of the decomposition-families table.
#[derive(Clone, Debug, Serialize)]
pub struct FamiliesRow {
    /// The setting's name.
    pub config: String,
    /// The hardware profile.
    pub hardware: &'static str,
    /// Ops of the graph.
    pub ops: usize,
    /// Program order.
    pub baseline_ns: u64,
    /// S.
    pub optimized_ns: u64,
    /// S+AD with splits only (never above S).
    pub split_ns: u64,
    /// S+AD with rings only (never above S).
    pub ring_ns: u64,
    /// S+AD with both (never above S).
    pub all_ns: u64,
    /// What `all` applied.
    pub decompositions: Vec<DecompositionSummary>,
    /// Wall time of the row.
    pub time_s: f64,
}

/// What [`run`] found: the three tables (rows of the settings selected) and where concerto lost
/// to a baseline (never, unless something is broken).
#[derive(Clone, Debug, Default, Serialize)]
pub struct AblationReport {
    /// Scheduling and decomposition.
    pub ablation: Vec<AblationRow>,
    /// Fusion.
    pub fusion: Vec<FusionRow>,
    /// Decomposition families.
    pub families: Vec<FamiliesRow>,
    /// Settings where concerto's plan simulates longer than a baseline's.
    #[serde(skip)]
    pub worse: Vec<&'static str>,
}

/// `base` on `s`'s hardware with decomposition `decompose`, families `families` (`None`:
/// `base`'s selection) and fusion `fuse`; the rest (solver, limits, seed, slowdown) as given.
fn configured(
    base: &Pipeline,
    s: &Setting,
    decompose: Decompose,
    families: Option<Families>,
    fuse: bool,
) -> Result<Pipeline, concerto_pipeline::PipelineError> {
    let mut p = base.clone();
    p.config.hardware = Hardware::by_name(s.hardware)?
        .with_gpus_per_node(s.parallel.gpus_per_node)?
        .with_contention(base.config.hardware.contention)?;
    p.config.decompose = decompose;
    if let Some(f) = families {
        p.config.select = f.select_config(base.config.select.slowdown);
    }
    p.config.fuse = fuse;
    Ok(p)
}

fn baseline_ns(r: &Optimized) -> u64 {
    r.get(Scheduler::ProgramOrder)
        .map_or(0, |x| x.makespan_ns())
}

fn loses(r: &Optimized) -> bool {
    let opt = r.concerto().makespan_ns();
    r.results.iter().any(|x| opt > x.makespan_ns())
}

/// Runs the three tables on the settings whose name contains `only` (all when `None`), with
/// `base`'s solvers and limits, its contention factor and split slowdown, and `decompose` for
/// the decomposition rows ([`Decompose::Sequential`] when it is off). Each row's hardware is the
/// setting's; `base`'s hardware profile is not used.
pub fn run(
    base: &Pipeline,
    only: Option<&str>,
    progress: &dyn Progress,
) -> Result<AblationReport, BenchError> {
    let wanted = |name: &str| only.is_none_or(|p| name.contains(p));
    let decompose = match base.config.decompose {
        Decompose::Off => Decompose::Sequential,
        d => d,
    };
    let ablation: Vec<Setting> = ablation_settings()
        .into_iter()
        .filter(|s| wanted(s.name))
        .collect();
    let fusion: Vec<Setting> = fusion_settings()
        .into_iter()
        .filter(|s| wanted(s.name))
        .collect();
    let families: Vec<Setting> = families_settings()
        .into_iter()
        .filter(|s| wanted(s.name))
        .collect();
    progress.start(
        "bench ablation",
        Some((ablation.len() + fusion.len() + families.len()) as u64),
    );
    let mut out = AblationReport::default();
    for s in &ablation {
        let row = ablation_row(base, s, decompose)?;
        progress.advance(
            1,
            &format!(
                "{} on {}: S {:.3} ms, S+AD {:.3} ms",
                row.1.config,
                row.1.hardware,
                row.1.optimized_ns as f64 / 1e6,
                row.1.decomposed_ns as f64 / 1e6
            ),
        );
        if row.0 {
            out.worse.push(s.name);
        }
        out.ablation.push(row.1);
    }
    for s in &fusion {
        let row = fusion_row(base, s)?;
        progress.advance(
            1,
            &format!(
                "{}: S {:.3} ms, S+F {:.3} ms",
                row.1.config,
                row.1.optimized_ns as f64 / 1e6,
                row.1.fused_ns as f64 / 1e6
            ),
        );
        if row.0 {
            out.worse.push(s.name);
        }
        out.fusion.push(row.1);
    }
    for s in &families {
        let row = families_row(base, s, decompose)?;
        progress.advance(
            1,
            &format!(
                "{}: S {:.3} ms, S+AD split {:.3} / ring {:.3} / all {:.3} ms",
                row.1.config,
                row.1.optimized_ns as f64 / 1e6,
                row.1.split_ns as f64 / 1e6,
                row.1.ring_ns as f64 / 1e6,
                row.1.all_ns as f64 / 1e6
            ),
        );
        if row.0 {
            out.worse.push(s.name);
        }
        out.families.push(row.1);
    }
    progress.finish();
    Ok(out)
}

/// One row of the ablation table: program order, S and S+AD on `s` (and whether concerto
/// lost to a baseline).
fn ablation_row(
    base: &Pipeline,
    s: &Setting,
    decompose: Decompose,
) -> Result<(bool, AblationRow), BenchError> {
    one(s, |g| {
        let began = Instant::now();
        let p = configured(base, s, decompose, None, false)?;
        let r = p.run(g, &concerto_pipeline::progress::Silent)?;
        let d = r.decomposed.as_ref().expect("decomposition is on");
        let (base_ns, opt) = (baseline_ns(&r.schedule), r.s_ns());
        Ok((
            loses(&r.schedule),
            AblationRow {
                config: s.name.to_string(),
                hardware: s.hardware,
                precision: precision_name(s.parallel.precision),
                ops: r.schedule.ops,
                baseline_ns: base_ns,
                best_baseline_ns: r.schedule.best_baseline_ns(),
                optimized_ns: opt,
                decomposed_ns: d.makespan_ns,
                decompositions: DecompositionSummary::all(d.applied()),
                shape: base_ns > opt && opt > d.makespan_ns,
                time_s: began.elapsed().as_secs_f64(),
            },
        ))
    })
}

/// One row of the fusion table: S and S+F on `s` (and whether concerto lost to a baseline).
fn fusion_row(base: &Pipeline, s: &Setting) -> Result<(bool, FusionRow), BenchError> {
    one(s, |g| {
        let began = Instant::now();
        let p = configured(base, s, Decompose::Off, None, true)?;
        let r = p.run(g, &concerto_pipeline::progress::Silent)?;
        let f = r.fusion.as_ref().expect("fusion is on");
        let s_row = r.schedule.concerto();
        let peak = if f.kept {
            f.schedule.concerto().peak_memory_bytes
        } else {
            s_row.peak_memory_bytes
        };
        let opt = r.s_ns();
        Ok((
            loses(&r.schedule),
            FusionRow {
                config: s.name.to_string(),
                hardware: s.hardware,
                gpus: s.parallel.dp,
                baseline_ns: baseline_ns(&r.schedule),
                optimized_ns: opt,
                fused_ns: f.makespan_ns,
                fuse_gain_pct: (1.0 - f.makespan_ns as f64 / opt as f64) * 100.0,
                collective_calls: (r.schedule.collectives, f.calls_after(&r.schedule)),
                peak_memory_bytes: (s_row.peak_memory_bytes, peak),
                note: f.note(),
                time_s: began.elapsed().as_secs_f64(),
            },
        ))
    })
}

/// One row of the families table: S, then S+AD with splits only, rings only and both, on
/// `s` (and whether concerto lost to a baseline).
fn families_row(
    base: &Pipeline,
    s: &Setting,
    decompose: Decompose,
) -> Result<(bool, FamiliesRow), BenchError> {
    one(s, |g| {
        let began = Instant::now();
        let p = configured(base, s, decompose, None, false)?;
        let s_run = p.schedule(g, Vec::new())?;
        let opt = s_run.concerto().makespan_ns();
        let mut by_family = Vec::new();
        for f in [Families::Split, Families::Ring, Families::All] {
            let p = configured(base, s, decompose, Some(f), false)?;
            by_family.push(p.decompose(g, opt)?);
        }
        let all = by_family.pop().expect("three");
        Ok((
            loses(&s_run),
            FamiliesRow {
                config: s.name.to_string(),
                hardware: s.hardware,
                ops: s_run.ops,
                baseline_ns: baseline_ns(&s_run),
                optimized_ns: opt,
                split_ns: by_family[0].makespan_ns,
                ring_ns: by_family[1].makespan_ns,
                all_ns: all.makespan_ns,
                decompositions: DecompositionSummary::all(all.applied()),
                time_s: began.elapsed().as_secs_f64(),
            },
        ))
    })
}

/// Builds `s`'s graph and runs `f` on it, naming the setting in any error.
fn one<T>(
    s: &Setting,
    f: impl FnOnce(&Graph) -> Result<T, concerto_pipeline::PipelineError>,
) -> Result<T, BenchError> {
    let failed = |source: concerto_pipeline::PipelineError| BenchError::Pipeline {
        config: s.name.to_string(),
        source: Box::new(source),
    };
    let graph = concerto_models::build(&s.model, &s.parallel).map_err(|e| failed(e.into()))?;
    f(&graph).map_err(failed)
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// The tables that have rows, a blank line between them, each with a line that says what its
/// columns mean.
impl fmt::Display for AblationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.ablation.is_empty() {
            parts.push(ablation_table(&self.ablation));
        }
        if !self.fusion.is_empty() {
            parts.push(fusion_table(&self.fusion));
        }
        if !self.families.is_empty() {
            parts.push(families_table(&self.families));
        }
        f.write_str(&parts.join("\n"))
    }
}

fn ablation_table(ablation: &[AblationRow]) -> String {
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
    let mut out = t.render();
    out += "baseline = program order; S = concerto's schedule; S+AD = with decompositions \
            (--decompose sequential), kept at S when longer; shape = baseline > S > S+AD\n";
    out
}

fn fusion_table(fusion: &[FusionRow]) -> String {
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
    let gib = |b: u64| format!("{:.2}", concerto_pipeline::table::gib(b));
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
    let mut out = t.render();
    out += "S+F = concerto on the graph with collectives fused into buckets chosen under \
            concerto's plan (--fuse on), kept at S when longer; F_gain = S+F vs S\n";
    for r in fusion {
        if let Some(n) = &r.note {
            out += &format!("{}: {n}\n", r.config);
        }
    }
    out
}

fn families_table(families: &[FamiliesRow]) -> String {
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
    let mut out = t.render();
    out += "S+AD per family (--families split|ring|all), each kept at S when longer; ring = \
            collective matmul (Wang et al., ASPLOS 2023) around the sequence-parallel \
            all-gathers and reduce-scatters\n";
    out
}
