//! `concerto bench graphs`: every scheduler on model x parallelism configurations.

use clap::Args;
use concerto_graph::models::{
    self, EvoformerConfig, GptConfig, Model, Parallel, VitConfig, WideResNetConfig, Zero,
};
use concerto_graph::trace;
use serde::Serialize;

use crate::decompose;
use crate::optimize::{ComparisonJson, Decompose, DecompositionJson, Fuse, OptimizeOpts};
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

/// A benchmark configuration.
pub(crate) struct Config {
    pub(crate) name: &'static str,
    pub(crate) model: Model,
    pub(crate) parallel: Parallel,
}

fn parallel(pp: u32, tp: u32, dp: u32, zero: Zero) -> Parallel {
    Parallel {
        dp,
        tp,
        pp,
        zero,
        microbatches: if pp > 1 { 2 * pp } else { 1 },
        ..Parallel::default()
    }
}

/// The configurations: the Concerto paper's GPT plans ((pp, tp, dp) = (1,16,1), (1,8,2),
/// (2,4,2)) and ZeRO-3 on 8/16/32 GPUs, plus ViT, Wide ResNet and Evoformer.
pub(crate) fn configs() -> Vec<Config> {
    let gpt = GptConfig::default();
    let small_gpt = GptConfig {
        layers: 8,
        hidden: 2048,
        heads: 16,
        seq: 2048,
        micro_batch: 4,
        ..GptConfig::default()
    };
    vec![
        Config {
            name: "gpt-tp8",
            model: Model::Gpt(gpt.clone()),
            parallel: parallel(1, 8, 1, Zero::None),
        },
        Config {
            name: "gpt-pp1-tp16-dp1",
            model: Model::Gpt(gpt.clone()),
            parallel: parallel(1, 16, 1, Zero::None),
        },
        Config {
            name: "gpt-pp1-tp8-dp2",
            model: Model::Gpt(gpt.clone()),
            parallel: parallel(1, 8, 2, Zero::None),
        },
        Config {
            name: "gpt-pp2-tp4-dp2",
            model: Model::Gpt(gpt),
            parallel: parallel(2, 4, 2, Zero::None),
        },
        Config {
            name: "gpt-zero3-dp8",
            model: Model::Gpt(small_gpt.clone()),
            parallel: parallel(1, 1, 8, Zero::Stage3),
        },
        Config {
            name: "gpt-zero3-dp16",
            model: Model::Gpt(small_gpt.clone()),
            parallel: parallel(1, 1, 16, Zero::Stage3),
        },
        Config {
            name: "gpt-zero3-dp32",
            model: Model::Gpt(small_gpt.clone()),
            parallel: parallel(1, 1, 32, Zero::Stage3),
        },
        Config {
            name: "gpt-zero2-dp16",
            model: Model::Gpt(small_gpt),
            parallel: parallel(1, 1, 16, Zero::Stage2),
        },
        Config {
            name: "vit-tp4-dp2",
            model: Model::Vit(VitConfig::default()),
            parallel: parallel(1, 4, 2, Zero::None),
        },
        Config {
            name: "wide-resnet-dp16",
            model: Model::WideResNet(WideResNetConfig::default()),
            parallel: parallel(1, 1, 16, Zero::None),
        },
        Config {
            name: "evoformer-dap4-dp2",
            model: Model::Evoformer(EvoformerConfig::default()),
            parallel: parallel(1, 4, 2, Zero::None),
        },
    ]
}

#[derive(Serialize)]
struct Row {
    config: &'static str,
    #[serde(flatten)]
    comparison: ComparisonJson,
    gain_vs_best_baseline_pct: f64,
    gap_to_bound_pct: f64,
    origin: &'static str,
    solver_status: String,
    trace_events: usize,
    time_s: f64,
    /// S+AD: concerto on the rewritten graph, never above `optimized_ns` (S is kept when the
    /// rewrite schedules longer). With `--decompose` only, like the fields below.
    #[serde(skip_serializing_if = "Option::is_none")]
    decomposed_ns: Option<u64>,
    /// S+AD vs S, positive when shorter.
    #[serde(skip_serializing_if = "Option::is_none")]
    ad_gain_pct: Option<f64>,
    /// The decompositions applied (empty when none helped or the rewrite was rejected).
    #[serde(skip_serializing_if = "Option::is_none")]
    decompositions: Option<Vec<DecompositionJson>>,
    /// Why the decompositions chosen were not applied, when they were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    ad_note: Option<String>,
    /// Selection plus scheduling of the rewritten graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    ad_time_s: Option<f64>,
    /// `--decompose joint`: modes and order decided together, never above S+AD.
    #[serde(skip_serializing_if = "Option::is_none")]
    joint_ns: Option<u64>,
    /// The candidates the joint solve applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    joint_decompositions: Option<Vec<String>>,
    /// Wall time of the joint step (candidates, union, windows, final schedule).
    #[serde(skip_serializing_if = "Option::is_none")]
    joint_time_s: Option<f64>,
    /// Why S+AD was kept, when the joint plan simulated longer.
    #[serde(skip_serializing_if = "Option::is_none")]
    joint_note: Option<String>,
    /// S+F: concerto on the fused graph, never above `optimized_ns` (S is kept when the fused
    /// graph schedules longer). With `--fuse on` only, like the fields below.
    #[serde(skip_serializing_if = "Option::is_none")]
    fused_ns: Option<u64>,
    /// S+F vs S, positive when shorter.
    #[serde(skip_serializing_if = "Option::is_none")]
    fuse_gain_pct: Option<f64>,
    /// Collective calls before and after fusion.
    #[serde(skip_serializing_if = "Option::is_none")]
    collective_calls: Option<(usize, usize)>,
    /// Why the fusion found was not kept, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    fuse_note: Option<String>,
    /// Bucket search plus scheduling of the fused graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    fuse_time_s: Option<f64>,
}

/// Whether the text table has the fusion columns.
fn fusing_table(args: &GraphsArgs) -> bool {
    !args.json && args.opts.fuse != Fuse::Off
}

pub(crate) fn run(args: &GraphsArgs) -> Result<(), Failure> {
    let mut rows = Vec::new();
    let mut worse = Vec::new();
    for c in configs() {
        if args.only.as_deref().is_some_and(|p| !c.name.contains(p)) {
            continue;
        }
        let graph = models::build(&c.model, &c.parallel)?;
        let r = args.opts.run(&graph)?;
        let timelines: Vec<_> = r
            .results
            .iter()
            .map(|s| (s.scheduler, &s.timeline))
            .collect();
        let events = trace::validate_chrome_trace(&trace::chrome_trace(&graph, &timelines))
            .map_err(|e| anyhow::anyhow!("{}: invalid Chrome trace: {e}", c.name))?;
        let best = r.best_baseline_ns();
        let opt = r.concerto().makespan_ns();
        if r.results.iter().any(|s| opt > s.makespan_ns()) {
            worse.push(c.name);
        }
        let ad = if args.opts.decompose == Decompose::Off {
            None
        } else {
            Some(
                decompose::sequential(&args.opts, &graph, opt)
                    .map_err(|e| e.context(format!("{}: decomposing", c.name)))?,
            )
        };
        let joint = match (&ad, args.opts.decompose) {
            (Some(a), Decompose::Joint) => Some(
                args.opts
                    .joint(&graph, &a.decompositions, a.decomposed_ns)
                    .map_err(|e| e.context(format!("{}: joint", c.name)))?,
            ),
            _ => None,
        };
        let ad_note = ad.as_ref().and_then(|a| a.rejected).map(|(ns, k)| {
            format!(
                "not applied: {k} decomposition(s) scheduled to {:.3} ms > S {:.3} ms",
                ns as f64 / 1e6,
                opt as f64 / 1e6
            )
        });
        let fuse_began = std::time::Instant::now();
        let (fu, fuse_note) = if args.opts.fuse == Fuse::Off {
            (None, None)
        } else {
            args.opts
                .fuse_kept(&graph, &r)
                .map_err(|e| e.context(format!("{}: fusing", c.name)))?
        };
        let fusing = args.opts.fuse != Fuse::Off;
        let fused_ns = fusing.then(|| fu.as_ref().map_or(opt, |f| f.1.concerto().makespan_ns()));
        let row = Row {
            config: c.name,
            comparison: ComparisonJson::of(&r),
            gain_vs_best_baseline_pct: (1.0 - opt as f64 / best as f64) * 100.0,
            gap_to_bound_pct: (opt as f64 / r.lower_bound_ns as f64 - 1.0) * 100.0,
            origin: r.origin,
            solver_status: r.solver_status.to_string(),
            trace_events: events,
            time_s: r.time.as_secs_f64(),
            decomposed_ns: ad.as_ref().map(|a| a.decomposed_ns),
            ad_gain_pct: ad
                .as_ref()
                .map(|a| (1.0 - a.decomposed_ns as f64 / opt as f64) * 100.0),
            ad_time_s: ad.as_ref().map(|a| a.time.as_secs_f64()),
            decompositions: ad.map(|a| a.decompositions),
            ad_note,
            joint_ns: joint.as_ref().map(|j| j.joint_ns),
            joint_decompositions: joint.as_ref().map(|j| j.chosen.clone()),
            joint_time_s: joint.as_ref().map(|j| j.time.as_secs_f64()),
            joint_note: joint.and_then(|j| j.note),
            fused_ns,
            fuse_gain_pct: fused_ns.map(|f| (1.0 - f as f64 / opt as f64) * 100.0),
            collective_calls: fusing.then(|| {
                let after = fu.as_ref().map_or(r.collectives, |f| f.1.collectives);
                (r.collectives, after)
            }),
            fuse_note,
            fuse_time_s: fusing.then(|| fuse_began.elapsed().as_secs_f64()),
        };
        if !args.json {
            let sad = match (row.decomposed_ns, &row.decompositions) {
                (Some(ns), Some(d)) => format!(
                    ", S+AD {:.3} ms with {} decomposition(s){}",
                    ns as f64 / 1e6,
                    d.len(),
                    row.ad_note
                        .as_ref()
                        .map_or(String::new(), |n| format!(" ({n})"))
                ),
                _ => String::new(),
            };
            eprintln!(
                "{}: {} ops, concerto {:.3} ms vs best baseline {:.3} ms{sad} ({:.1} s)",
                row.config,
                row.comparison.ops,
                opt as f64 / 1e6,
                best as f64 / 1e6,
                row.time_s + row.ad_time_s.unwrap_or(0.0)
            );
        }
        rows.push(row);
    }
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
