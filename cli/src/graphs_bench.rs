//! `concerto bench graphs`: every scheduler on model x parallelism configurations.

use clap::Args;
use concerto_pipeline::bench::graphs;

use crate::opts::{Decompose, Fuse, OptimizeOpts};
use crate::progress;
use crate::table::Table;
use crate::Failure;

/// Arguments of `concerto bench graphs`.
#[derive(Args, Debug)]
pub(crate) struct GraphsArgs {
    #[command(flatten)]
    pub(crate) opts: OptimizeOpts,
    /// Only the configurations whose name contains this.
    #[arg(long, value_name = "PATTERN")]
    pub(crate) only: Option<String>,
    /// Print one JSON array instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Whether the text table has the fusion columns.
fn fusing_table(args: &GraphsArgs) -> bool {
    !args.json && args.opts.fuse != Fuse::Off
}

pub(crate) fn run(args: &GraphsArgs) -> Result<(), Failure> {
    let pipeline = args.opts.pipeline()?;
    let bar = progress::bar(args.json);
    let bench = graphs::run(&pipeline, args.only.as_deref(), bar.as_ref())?;
    let rows: Vec<_> = bench.rows.iter().map(graphs::GraphsRow::summary).collect();
    let worse = &bench.worse;
    if args.json {
        println!("{}", serde_json::to_string(&rows)?);
    } else {
        let decomposing = args.opts.decompose != Decompose::Off;
        let mut header = vec![
            "config",
            "ops",
            "bound_ms",
            "program_ms",
            "lhs_ms",
            "inductor_ms",
            "concerto_ms",
            "gain_vs_best",
            "above_bound",
            "exposed_ms",
            "plan",
            "time_s",
        ];
        if decomposing {
            header.extend(["S+AD_ms", "AD_gain", "decomps", "AD_s"]);
        }
        let joint = args.opts.decompose == Decompose::Joint;
        if joint {
            header.extend(["joint_ms", "joint_gain", "joint_s"]);
        }
        let fusing = args.opts.fuse != Fuse::Off;
        if fusing {
            header.extend(["S+F_ms", "F_gain", "calls", "F_s"]);
        }
        let mut t = Table::new(&header);
        let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
        for r in &rows {
            let mut cells = vec![
                r.config.to_string(),
                r.comparison.ops.to_string(),
                ms(r.comparison.lower_bound_ns),
                ms(r.comparison.program_order_ns),
                ms(r.comparison.lhs_ns),
                ms(r.comparison.inductor_ns),
                ms(r.comparison.optimized_ns),
                format!("{:.2}%", r.gain_vs_best_baseline_pct),
                format!("{:.2}%", r.gap_to_bound_pct),
                ms(r.comparison.exposed_comm_ns),
                r.origin.to_string(),
                format!("{:.1}", r.time_s),
            ];
            if decomposing {
                cells.extend([
                    r.decomposed_ns.map_or("-".into(), ms),
                    r.ad_gain_pct.map_or("-".into(), |g| format!("{g:.2}%")),
                    match (&r.decompositions, &r.ad_note) {
                        (Some(d), None) => d.len().to_string(),
                        (_, Some(_)) => "0 (rejected)".to_string(),
                        (None, None) => "-".to_string(),
                    },
                    r.ad_time_s.map_or("-".into(), |s| format!("{s:.1}")),
                ]);
            }
            if joint {
                cells.extend([
                    r.joint_ns.map_or("-".into(), ms),
                    match (r.joint_ns, r.decomposed_ns) {
                        (Some(j), Some(d)) => {
                            format!("{:.2}%", (1.0 - j as f64 / d as f64) * 100.0)
                        }
                        _ => "-".into(),
                    },
                    r.joint_time_s.map_or("-".into(), |s| format!("{s:.1}")),
                ]);
            }
            if fusing {
                cells.extend([
                    r.fused_ns.map_or("-".into(), ms),
                    r.fuse_gain_pct.map_or("-".into(), |g| format!("{g:.2}%")),
                    r.collective_calls
                        .map_or("-".into(), |(a, b)| format!("{a}->{b}")),
                    r.fuse_time_s.map_or("-".into(), |s| format!("{s:.1}")),
                ]);
            }
            t.row(cells);
        }
        print!("{}", t.render());
        if decomposing {
            println!(
                "concerto_ms = S (schedule only); S+AD_ms = concerto on the graph rewritten by \
                 the decompositions (decomps of them), kept at S when the rewrite schedules \
                 longer; AD_gain = S+AD vs S; AD_s = selection + S+AD scheduling time"
            );
            for r in &rows {
                if let Some(n) = &r.ad_note {
                    println!("{}: {n}", r.config);
                }
            }
            if joint {
                println!(
                    "joint_ms = every candidate a mode of its region, modes and order decided \
                     together in exact windows from S+AD (never above it); joint_gain = joint \
                     vs S+AD; joint_s = its time (AD_s is the sequential one's)"
                );
                for r in &rows {
                    if let Some(n) = &r.joint_note {
                        println!("{}: {n}", r.config);
                    }
                    if let Some(d) = r.joint_decompositions.as_ref().filter(|d| !d.is_empty()) {
                        println!("{}: joint applied {}", r.config, d.join(", "));
                    }
                }
            }
        }
    }
    if fusing_table(args) {
        println!(
            "S+F_ms = concerto on the graph with collectives fused into buckets chosen under \
             concerto's plan, kept at S when the fused graph schedules longer; F_gain = S+F vs \
             S; calls = collective calls before -> after; F_s = bucket search + S+F scheduling"
        );
        for r in &rows {
            if let Some(n) = &r.fuse_note {
                println!("{}: {n}", r.config);
            }
        }
    }
    if !worse.is_empty() {
        eprintln!("concerto is worse than a baseline on: {}", worse.join(", "));
        return Err(Failure::Rejected);
    }
    Ok(())
}
