//! `concerto decompose`: the critical collectives of a graph, the decompositions chosen around
//! them, and the schedule-only (S) and schedule-plus-decomposition (S+AD) makespans; with
//! `--sweep-slowdown`, the same selection under fixed split slowdowns (sensitivity).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use concerto_graph::Graph;
use concerto_pipeline::analysis::{candidates_tried, critical_collectives, CriticalCollective};
use concerto_pipeline::{Decomposed, Selected};
use serde::Serialize;

use crate::io::read_graph;
use crate::opts::{Decompose, OptimizeOpts};
use crate::report::{gain_pct, ms, DecompositionJson};
use crate::table::Table;
use crate::Failure;

/// Arguments of `concerto decompose`.
#[derive(Args, Debug)]
#[command(mut_arg("decompose", |a| a
    .default_value("sequential")
    .help("How to choose decompositions (`off` is refused here)")))]
pub(crate) struct DecomposeArgs {
    /// The graph: a native `.json` graph or an XLA HLO text module (`.hlo`).
    pub(crate) graph: PathBuf,
    #[command(flatten)]
    pub(crate) opts: OptimizeOpts,
    /// Comma-separated split slowdowns (chunk duration = op duration x X / N): one selection
    /// and one S+AD schedule per factor, after one with the measured tables.
    #[arg(long, value_name = "X,...", conflicts_with = "split_slowdown")]
    pub(crate) sweep_slowdown: Option<String>,
    /// Also list every candidate tried around the critical collectives, of both families (a
    /// split into chunks, a collective-matmul ring), each evaluated alone, gaining or not.
    #[arg(long, conflicts_with = "sweep_slowdown")]
    pub(crate) candidates: bool,
    /// Print JSON (an object, or an array of rows with `--sweep-slowdown`) instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The split slowdowns of `--sweep-slowdown`: (label as written, factor).
fn parse_factors(list: &str) -> anyhow::Result<Vec<(String, f64)>> {
    let help = "expected a comma-separated list of positive factors, e.g. 1.0,1.1,1.2,1.5";
    if list.trim().is_empty() {
        anyhow::bail!("--sweep-slowdown: empty list ({help})");
    }
    list.split(',')
        .map(|s| {
            let s = s.trim();
            let x: f64 = s
                .parse()
                .map_err(|_| anyhow::anyhow!("--sweep-slowdown: `{s}` is not a number ({help})"))?;
            if !(x.is_finite() && x > 0.0) {
                anyhow::bail!(
                    "--sweep-slowdown: the factor `{s}` is not a positive number ({help})"
                );
            }
            Ok((s.to_string(), x))
        })
        .collect()
}

/// `2x3, 4x1`: each chunk count and how many decompositions use it.
fn n_values(s: &Selected) -> String {
    let mut counts = std::collections::BTreeMap::<u32, usize>::new();
    for d in &s.decompositions {
        *counts.entry(d.n).or_default() += 1;
    }
    if counts.is_empty() {
        return "-".into();
    }
    counts
        .iter()
        .map(|(n, k)| format!("{n}x{k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A critical collective in the JSON report.
#[derive(Serialize)]
struct CriticalJson {
    name: String,
    kind: String,
    bytes: u64,
    duration_ns: u64,
    exposed_ns: u64,
}

impl From<CriticalCollective> for CriticalJson {
    fn from(c: CriticalCollective) -> Self {
        Self {
            name: c.name,
            kind: c.kind,
            bytes: c.bytes,
            duration_ns: c.duration_ns,
            exposed_ns: c.exposed_ns,
        }
    }
}

/// A decomposition chosen, with its evaluated effect.
#[derive(Serialize)]
struct ChosenJson {
    #[serde(flatten)]
    d: DecompositionJson,
    before_ns: u64,
    after_ns: u64,
}

fn chosen_json(s: &Selected) -> Vec<ChosenJson> {
    s.decompositions
        .iter()
        .map(|x| ChosenJson {
            d: DecompositionJson::of(x),
            before_ns: x.before_ns,
            after_ns: x.after_ns,
        })
        .collect()
}

/// A candidate tried, evaluated alone (`--candidates`).
#[derive(Serialize)]
struct CandidateJson {
    collective: String,
    family: &'static str,
    /// `rows/4`, `ring/8`.
    label: String,
    context_ops: usize,
    evaluated_ns: u64,
    /// Evaluated gain over the best baseline, percent (negative: longer).
    gain_pct: f64,
}

/// The JSON report of `concerto decompose` without a sweep.
#[derive(Serialize)]
struct DecomposeJson {
    graph: String,
    hardware: String,
    contention: f64,
    ops: usize,
    collectives: usize,
    slowdown: Option<f64>,
    baseline_ns: u64,
    threshold: f64,
    critical: Vec<CriticalJson>,
    /// With `--candidates`: every candidate tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    candidates: Option<Vec<CandidateJson>>,
    decompositions: Vec<ChosenJson>,
    n_values: String,
    evaluated_before_ns: u64,
    evaluated_after_ns: u64,
    optimized_ns: u64,
    /// S+AD as the pipeline reports it: the rewritten graph's makespan when not longer
    /// than S, else S.
    decomposed_ns: u64,
    /// The rewritten graph's makespan, kept or not (`null` when nothing was chosen).
    rewritten_ns: Option<u64>,
    decomposed_ops: usize,
    ad_gain_pct: f64,
    time_s: f64,
}

/// One row of `--sweep-slowdown`.
#[derive(Serialize)]
struct SweepJson {
    /// `measured` or the factor as written.
    label: String,
    /// `null` for the measured tables.
    slowdown: Option<f64>,
    decompositions: Vec<ChosenJson>,
    n_values: String,
    evaluated_before_ns: u64,
    evaluated_after_ns: u64,
    optimized_ns: u64,
    /// S+AD as the pipeline reports it: the rewritten graph's makespan when not longer
    /// than S, else S.
    decomposed_ns: u64,
    /// The rewritten graph's makespan, kept or not (`null` when nothing was chosen).
    rewritten_ns: Option<u64>,
    decomposed_ops: usize,
    ad_gain_pct: f64,
    time_s: f64,
}

pub(crate) fn run(args: &DecomposeArgs) -> Result<(), Failure> {
    if args.opts.decompose == Decompose::Off {
        return Err(anyhow::anyhow!(
            "--decompose off: `concerto decompose` always decomposes (use `concerto optimize` \
             to schedule only)"
        )
        .into());
    }
    let factors = match &args.sweep_slowdown {
        Some(list) => Some(parse_factors(list)?),
        None => None,
    };
    if let Some(x) = args.opts.split_slowdown {
        if !(x.is_finite() && x > 0.0) {
            return Err(
                anyhow::anyhow!("--split-slowdown must be a positive number, got {x}").into(),
            );
        }
    }
    let mut pipeline = args.opts.pipeline()?;
    let hardware = pipeline.config.hardware.clone();
    let graph = read_graph(&args.graph, args.opts.gpus_per_node)?;
    let t = Instant::now();
    let s = pipeline
        .schedule(&graph, Vec::new())
        .with_context(|| format!("optimizing {}", args.graph.display()))?;
    let s_ns = s.concerto().makespan_ns();
    // One selection and S+AD schedule per slowdown; `None` is the measured tables.
    let slowdowns: Vec<(String, Option<f64>)> = match &factors {
        Some(f) => std::iter::once(("measured".to_string(), None))
            .chain(f.iter().map(|(l, x)| (l.clone(), Some(*x))))
            .collect(),
        None => vec![(
            args.opts
                .split_slowdown
                .map_or("measured".to_string(), |x| x.to_string()),
            args.opts.split_slowdown,
        )],
    };
    let mut rows = Vec::new();
    for (label, slowdown) in slowdowns {
        let t = Instant::now();
        pipeline.config.select.slowdown = slowdown;
        let d: Decomposed = pipeline
            .decompose(&graph, s_ns)
            .with_context(|| format!("decomposing {} (slowdown {label})", graph.name()))?;
        let ops = match &d.schedule {
            Some(o) if d.kept => o.ops,
            _ => s.ops,
        };
        if factors.is_some() && !args.json {
            eprintln!(
                "{label}: {} decomposition(s), S+AD {} ms ({:.1} s)",
                d.selected.decompositions.len(),
                ms(d.makespan_ns),
                t.elapsed().as_secs_f64()
            );
        }
        rows.push(SweepJson {
            label,
            slowdown,
            decompositions: chosen_json(&d.selected),
            n_values: n_values(&d.selected),
            evaluated_before_ns: d.selected.before_ns,
            evaluated_after_ns: d.selected.after_ns,
            optimized_ns: s_ns,
            decomposed_ns: d.makespan_ns,
            rewritten_ns: d.schedule.as_ref().map(|o| o.concerto().makespan_ns()),
            decomposed_ops: ops,
            ad_gain_pct: gain_pct(s_ns, d.makespan_ns),
            time_s: t.elapsed().as_secs_f64(),
        });
    }
    if factors.is_some() {
        print_sweep(args, &graph, &hardware.name, s_ns, &rows)?;
        return Ok(());
    }
    let row = rows.pop().expect("one row");
    let threshold = pipeline.config.select.threshold;
    let (baseline_ns, crit) = critical_collectives(&graph, &hardware, threshold)?;
    let crit: Vec<CriticalJson> = crit.into_iter().map(CriticalJson::from).collect();
    let candidates = if args.candidates {
        pipeline.config.select.slowdown = args.opts.split_slowdown;
        let (before, tried) = candidates_tried(&graph, &hardware, &pipeline.config.select)?;
        Some(
            tried
                .iter()
                .map(|c| {
                    let d = &c.decomposition;
                    CandidateJson {
                        collective: d.collective.clone(),
                        family: d.family.as_str(),
                        label: d.label(),
                        context_ops: d.context_ops,
                        evaluated_ns: d.after_ns,
                        gain_pct: gain_pct(before, d.after_ns),
                    }
                })
                .collect(),
        )
    } else {
        None
    };
    let report = DecomposeJson {
        graph: graph.name().to_string(),
        hardware: hardware.name.clone(),
        contention: s.contention,
        ops: s.ops,
        collectives: s.collectives,
        slowdown: row.slowdown,
        baseline_ns,
        threshold,
        critical: crit,
        candidates,
        decompositions: row.decompositions,
        n_values: row.n_values,
        evaluated_before_ns: row.evaluated_before_ns,
        evaluated_after_ns: row.evaluated_after_ns,
        optimized_ns: s_ns,
        decomposed_ns: row.decomposed_ns,
        rewritten_ns: row.rewritten_ns,
        decomposed_ops: row.decomposed_ops,
        ad_gain_pct: row.ad_gain_pct,
        time_s: t.elapsed().as_secs_f64(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    let r = &report;
    println!(
        "graph          {} ({} ops, {} collectives)",
        r.graph, r.ops, r.collectives
    );
    println!(
        "hardware       {} (compute {:.2}x slower while a collective runs)",
        r.hardware, r.contention
    );
    println!(
        "best baseline  {} ms (best of program order, lhs and inductor, simulated)",
        ms(r.baseline_ns)
    );
    println!(
        "critical       {} collective(s) exposed for >= {}% of that makespan",
        r.critical.len(),
        r.threshold * 100.0
    );
    if !r.critical.is_empty() {
        let mut t = Table::new(&["collective", "kind", "MiB", "duration_ms", "exposed_ms"]);
        for c in &r.critical {
            t.row(vec![
                c.name.clone(),
                c.kind.to_string(),
                format!("{:.2}", c.bytes as f64 / (1u64 << 20) as f64),
                ms(c.duration_ns),
                ms(c.exposed_ns),
            ]);
        }
        print!("{}", t.render());
    }
    if let Some(cands) = &r.candidates {
        println!(
            "candidates     {} tried, each alone (evaluated: best baseline schedule)",
            cands.len()
        );
        let mut t = Table::new(&[
            "collective",
            "family",
            "candidate",
            "context_ops",
            "evaluated_ms",
            "gain",
        ]);
        for c in cands {
            t.row(vec![
                c.collective.clone(),
                c.family.to_string(),
                c.label.clone(),
                c.context_ops.to_string(),
                ms(c.evaluated_ns),
                format!("{:+.2}%", c.gain_pct),
            ]);
        }
        print!("{}", t.render());
    }
    let cost = match r.slowdown {
        Some(x) => format!("chunks cost op x {x} / N"),
        None => "chunks costed by the profile, like any op".to_string(),
    };
    println!(
        "chosen         {} decomposition(s), N {} ({cost}); evaluated {} -> {} ms",
        r.decompositions.len(),
        r.n_values,
        ms(r.evaluated_before_ns),
        ms(r.evaluated_after_ns)
    );
    if !r.decompositions.is_empty() {
        let mut t = Table::new(&[
            "collective",
            "family",
            "axis",
            "N",
            "context_ops",
            "before_ms",
            "after_ms",
        ]);
        for d in &r.decompositions {
            t.row(vec![
                d.d.collective.clone(),
                d.d.family.to_string(),
                d.d.axis.to_string(),
                d.d.n.to_string(),
                d.d.context_size.to_string(),
                ms(d.before_ns),
                ms(d.after_ns),
            ]);
        }
        print!("{}", t.render());
    }
    println!(
        "S              {} ms (concerto, schedule only)",
        ms(r.optimized_ns)
    );
    println!(
        "S+AD           {} ms (concerto on the rewritten graph, {} ops): {:+.2}% vs S",
        ms(r.decomposed_ns),
        r.decomposed_ops,
        r.ad_gain_pct
    );
    if let Some(ns) = r.rewritten_ns.filter(|&ns| ns > r.optimized_ns) {
        println!(
            "               the rewritten graph schedules to {} ms, longer than S: these \
             decompositions are not kept",
            ms(ns)
        );
    }
    println!("time           {:.2} s", r.time_s);
    Ok(())
}

fn print_sweep(
    args: &DecomposeArgs,
    graph: &Graph,
    hardware: &str,
    s_ns: u64,
    rows: &[SweepJson],
) -> anyhow::Result<()> {
    if args.json {
        println!("{}", serde_json::to_string(rows)?);
        return Ok(());
    }
    println!(
        "graph     {} ({} ops, {} collectives) on {hardware}",
        graph.name(),
        graph.len(),
        graph.collective_count()
    );
    println!("S         {} ms (concerto, schedule only)", ms(s_ns));
    let mut t = Table::new(&[
        "slowdown",
        "decomps",
        "N",
        "eval_before_ms",
        "eval_after_ms",
        "S+AD_ms",
        "AD_gain",
        "time_s",
    ]);
    for r in rows {
        t.row(vec![
            r.label.clone(),
            r.decompositions.len().to_string(),
            r.n_values.clone(),
            ms(r.evaluated_before_ns),
            ms(r.evaluated_after_ns),
            ms(r.decomposed_ns),
            format!("{:+.2}%", r.ad_gain_pct),
            format!("{:.1}", r.time_s),
        ]);
    }
    print!("{}", t.render());
    println!(
        "slowdown X: chunks cost op duration x X / N; measured: chunks from the hardware tables. \
         AD_gain: S+AD vs S, positive when shorter."
    );
    for r in rows.iter() {
        if let Some(ns) = r.rewritten_ns.filter(|&ns| ns > r.optimized_ns) {
            println!(
                "{}: the rewritten graph schedules to {} ms, longer than S: not kept",
                r.label,
                ms(ns)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_parse_or_name_the_flag() {
        let f = parse_factors("1.0, 1.5,2").unwrap();
        assert_eq!(
            f,
            vec![("1.0".into(), 1.0), ("1.5".into(), 1.5), ("2".into(), 2.0)]
        );
        for bad in ["", "1.0,x", "0", "1,-1", "nan", "inf", "1,,2"] {
            let e = parse_factors(bad).unwrap_err().to_string();
            assert!(e.starts_with("--sweep-slowdown"), "{bad}: {e}");
        }
    }
}
