//! `concerto decompose`: the critical collectives of a graph, the decompositions chosen around
//! them, and the schedule-only (S) and schedule-plus-decomposition (S+AD) makespans; with
//! `--sweep-slowdown`, the same selection under fixed split slowdowns (sensitivity).

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use concerto_graph::Graph;
use concerto_pipeline::analysis::{decompose_report, sweep_row, DecomposeReport, SweepRow};
use concerto_pipeline::table::Table;

use crate::io::read_input;
use crate::opts::{Decompose, OptimizeOpts};
use crate::progress;
use crate::report::ms;
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
    let input = read_input(&args.graph, &args.opts.import_options()?)?;
    let configured = concerto::configure(input, args.opts.pipeline()?, args.opts.contention)
        .with_context(|| format!("configuring the run of {}", args.graph.display()))?;
    let mut pipeline = configured.pipeline;
    let graph = configured.input.graph;
    let hardware = pipeline.config.hardware.clone();
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
    let bar = progress::bar(args.json);
    bar.start("decompose", Some(slowdowns.len() as u64));
    for (label, slowdown) in slowdowns {
        let row = sweep_row(&pipeline, &graph, &s, label.clone(), slowdown)
            .with_context(|| format!("decomposing {} (slowdown {label})", graph.name()))?;
        let done = format!("{label}: S+AD {} ms", ms(row.decomposed_ns));
        bar.advance(1, &done);
        rows.push(row);
    }
    bar.finish();
    if factors.is_some() {
        print_sweep(args, &graph, &hardware.name, s_ns, &rows)?;
        return Ok(());
    }
    let row = rows.pop().expect("one row");
    pipeline.config.select.slowdown = args.opts.split_slowdown;
    let report = decompose_report(&pipeline, &graph, &s, row, args.candidates)?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    print_report(&report);
    Ok(())
}

/// The decomposition report as text.
fn print_report(report: &DecomposeReport) {
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
                d.decomposition.collective.clone(),
                d.decomposition.family.to_string(),
                d.decomposition.axis.to_string(),
                d.decomposition.n.to_string(),
                d.decomposition.context_size.to_string(),
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
}

fn print_sweep(
    args: &DecomposeArgs,
    graph: &Graph,
    hardware: &str,
    s_ns: u64,
    rows: &[SweepRow],
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
