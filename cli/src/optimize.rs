//! `concerto optimize`: schedule a training-step graph and compare with the baselines.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use concerto_decomp::fuse::{fuse_under, mapped_order, FuseConfig, Fused};
use concerto_decomp::select::{select, select_exact, SelectConfig, Selected};
use concerto_graph::optimize::{self, OptimizeConfig, Optimized};
use concerto_graph::{trace, Graph, Hardware, OpId, StreamPlan};
use concerto_rcpsp::OddEvenConfig;
use serde::Serialize;

use crate::model::read_graph;
use crate::solve::{default_solver, registry, time_limit};
use crate::table::Table;
use crate::Failure;

/// Arguments of `concerto optimize`.
#[derive(Args, Debug)]
pub(crate) struct OptimizeArgs {
    /// The graph: a native `.json` graph (`concerto model ... -o FILE` writes one) or an XLA HLO
    /// text module (`.hlo`).
    pub(crate) graph: PathBuf,
    #[command(flatten)]
    pub(crate) opts: OptimizeOpts,
    /// Write a Chrome trace (Perfetto) of every scheduler's timeline.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// Write an SVG Gantt chart of every scheduler's timeline.
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<PathBuf>,
    /// Write concerto's stream plan (JSON) for `concerto run-cuda` and other executors.
    #[arg(long, value_name = "FILE")]
    pub(crate) plan: Option<PathBuf>,
    /// Re-simulate every plan with durations perturbed by up to +-PCT % (seeded).
    #[arg(long, value_name = "PCT")]
    pub(crate) noise: Option<f64>,
    /// Samples of `--noise`.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub(crate) samples: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Whether to fuse collectives.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fuse {
    /// No fusion.
    Off,
    /// Fuse, then schedule.
    On,
}

/// Whether and how to decompose.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decompose {
    /// Schedule only.
    Off,
    /// Choose decompositions with the exact selection model (a MILP through the backends),
    /// then schedule.
    Sequential,
    /// Choose decompositions greedily, re-evaluating after each, then schedule.
    Greedy,
    /// Sequential first, then decide every region's decomposition together with the order
    /// around it (exact windows over the union of all candidates).
    Joint,
}

/// Which decomposition families the selection tries.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Families {
    /// Both: splits into chunks and collective-matmul rings.
    All,
    /// Concerto's splits into chunks only.
    Split,
    /// Collective-matmul rings only (Wang et al., ASPLOS 2023).
    Ring,
}

/// The exact selection of decomposition candidates: the MILP through `concerto-backends`
/// (HiGHS, CBC or microlp, as compiled in), or exact enumeration in a build without MILP.
fn exact_selection(
    weights: &[i64],
    groups: &[Vec<usize>],
    conflicts: &[(usize, usize)],
) -> Result<(Vec<usize>, bool), String> {
    #[cfg(any(feature = "microlp", feature = "highs", feature = "cbc"))]
    {
        use concerto_backends::milp::{default_backend, Milp, Selection};
        let s = Selection {
            weights: weights.to_vec(),
            groups: groups.to_vec(),
            conflicts: conflicts.to_vec(),
        };
        let c =
            Milp::new(default_backend()).select(&s, Some(std::time::Duration::from_secs(10)))?;
        Ok((c.items, c.optimal))
    }
    #[cfg(not(any(feature = "microlp", feature = "highs", feature = "cbc")))]
    concerto_decomp::select::enumerate(weights, groups, conflicts)
}

/// Options shared by `concerto optimize` and `concerto bench graphs`.
#[derive(Args, Debug, Clone)]
pub(crate) struct OptimizeOpts {
    /// Hardware profile: `h100` (measured tables), `a800` (roofline, the paper's cluster) or
    /// `a800-pcie` (the same without NVLink).
    #[arg(long, default_value = "h100")]
    pub(crate) hardware: String,
    /// GPUs per node: decides which collectives of an imported `.hlo` cross nodes, and the
    /// profile's node size.
    #[arg(long, default_value_t = 8)]
    pub(crate) gpus_per_node: u32,
    /// Compute slowdown while a collective runs (default: the profile's).
    #[arg(long, value_name = "X")]
    pub(crate) contention: Option<f64>,
    /// The exact solver of the windows (`concerto solvers` lists them).
    #[arg(long, default_value_t = default_solver().to_string())]
    pub(crate) solver: String,
    /// Ops per odd-even block (a window holds two blocks).
    #[arg(long, value_name = "B", default_value_t = OptimizeConfig::default().oddeven.block)]
    pub(crate) window: usize,
    /// Largest block of the escalating windows (the driver doubles the block while more than
    /// half the time limit is left).
    #[arg(long, value_name = "B", default_value_t = OptimizeConfig::default().max_block)]
    pub(crate) max_window: usize,
    /// Odd-even rounds.
    #[arg(long, value_name = "K", default_value_t = OptimizeConfig::default().oddeven.rounds)]
    pub(crate) rounds: usize,
    /// Time limit of each window's solve, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = OptimizeConfig::default().oddeven.window_time_limit.as_secs_f64())]
    pub(crate) window_time_limit: f64,
    /// Overall time limit of the solve, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub(crate) time_limit: f64,
    /// How far the Inductor-like baseline moves an op, in program positions.
    #[arg(long, value_name = "N", default_value_t = concerto_graph::baselines::INDUCTOR_DISTANCE)]
    pub(crate) inductor_distance: usize,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Decomposition around critical collectives: `off`, or `sequential` (choose
    /// decompositions on the schedule-only result, then schedule the rewritten graph).
    #[arg(long, value_enum, default_value_t = Decompose::Off)]
    pub(crate) decompose: Decompose,
    /// Collective fusion (bucketing, boundaries chosen by simulating concerto's plan with
    /// each candidate bucket): `on` adds the row `concerto+fuse`, the schedule of the fused
    /// graph, kept when not longer than unfused.
    #[arg(long, value_enum, default_value_t = Fuse::Off)]
    pub(crate) fuse: Fuse,
    /// Cost chunks as the op's duration x X / N instead of looking them up in the tables.
    #[arg(long, value_name = "X")]
    pub(crate) split_slowdown: Option<f64>,
    /// Decomposition families tried: `all`, `split` (Concerto's chunks) or `ring`
    /// (collective matmul around all-gathers and reduce-scatters that feed or follow a GEMM).
    #[arg(long, value_enum, default_value_t = Families::All)]
    pub(crate) families: Families,
    /// Worker threads (windows of one pass in parallel).
    #[arg(long, default_value_t = 1)]
    pub(crate) threads: usize,
}

impl OptimizeOpts {
    pub(crate) fn hardware(&self) -> anyhow::Result<Hardware> {
        let hw = Hardware::by_name(&self.hardware)?.with_gpus_per_node(self.gpus_per_node)?;
        Ok(match self.contention {
            Some(c) => hw.with_contention(c)?,
            None => hw,
        })
    }

    pub(crate) fn config(&self) -> anyhow::Result<OptimizeConfig> {
        if self.window == 0 {
            anyhow::bail!("--window must be at least 1");
        }
        if self.threads == 0 {
            anyhow::bail!("--threads must be at least 1");
        }
        let window_time_limit = time_limit(Some(self.window_time_limit))
            .map_err(|_| {
                anyhow::anyhow!("--window-time-limit must be a positive number of seconds")
            })?
            .expect("given");
        Ok(OptimizeConfig {
            oddeven: OddEvenConfig {
                block: self.window,
                rounds: self.rounds,
                window_time_limit,
                ..OptimizeConfig::default().oddeven
            },
            time_limit: time_limit(Some(self.time_limit))?,
            seed: self.seed,
            threads: self.threads,
            inductor_distance: self.inductor_distance,
            max_block: self.max_window.max(self.window),
            hints: Vec::new(),
        })
    }

    /// The decompositions `--decompose` asks for, and the schedule of the rewritten graph.
    pub(crate) fn decompose(&self, graph: &Graph) -> anyhow::Result<Option<(Selected, Optimized)>> {
        let Some(selected) = self.select(graph)? else {
            return Ok(None);
        };
        let optimized = self.run(&selected.graph)?;
        Ok(Some((selected, optimized)))
    }

    /// The selection's options: `--split-slowdown` and `--families`.
    pub(crate) fn select_config(&self) -> SelectConfig {
        let defaults = SelectConfig::default();
        SelectConfig {
            slowdown: self.split_slowdown,
            axes: match self.families {
                Families::Ring => Vec::new(),
                _ => defaults.axes.clone(),
            },
            rings: self.families != Families::Split,
            ..defaults
        }
    }

    /// The decompositions `--decompose` asks for (`None` when off), not scheduled.
    pub(crate) fn select(&self, graph: &Graph) -> anyhow::Result<Option<Selected>> {
        if self.decompose == Decompose::Off {
            return Ok(None);
        }
        if let Some(x) = self.split_slowdown {
            if !(x.is_finite() && x > 0.0) {
                anyhow::bail!("--split-slowdown must be a positive number, got {x}");
            }
        }
        let hardware = self.hardware()?;
        let config = self.select_config();
        let selected = match self.decompose {
            Decompose::Greedy => select(graph, &hardware, &config)?,
            _ => select_exact(graph, &hardware, &config, &exact_selection)?,
        };
        Ok(Some(selected))
    }

    /// Joint decomposition and scheduling (`--decompose joint`): every candidate of the
    /// sequential selection becomes a mode of its region in one union graph, started from the
    /// sequential choice `sequential` (the decompositions S+AD applied) and improved by exact
    /// windows with the modal solver of `--solver`. `sad_ns` is the S+AD makespan: the result
    /// reported is never above it (when the joint plan simulates longer, S+AD is kept).
    pub(crate) fn joint(
        &self,
        graph: &Graph,
        sequential: &[DecompositionJson],
        sad_ns: u64,
    ) -> anyhow::Result<JointResult> {
        use concerto_decomp::joint::{solve_joint, Candidate, JointSolveConfig};
        let began = std::time::Instant::now();
        let hardware = self.hardware()?;
        let config = self.select_config();
        let (_, scored) = concerto_decomp::select::candidates(graph, &hardware, &config)?;
        let candidates: Vec<Candidate> = scored
            .iter()
            .map(|c| Candidate {
                label: format!("{} {}", c.decomposition.collective, c.decomposition.label()),
                context: c.context.clone(),
            })
            .collect();
        let start: Vec<usize> = scored
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                sequential.iter().any(|d| {
                    d.collective == c.decomposition.collective && d.label == c.decomposition.label()
                })
            })
            .map(|(i, _)| i)
            .collect();
        if candidates.is_empty() {
            return Ok(JointResult {
                joint_ns: sad_ns,
                chosen: Vec::new(),
                regions: 0,
                mode_changes: 0,
                skipped: 0,
                note: Some("no candidate decomposition: joint = S+AD".into()),
                time: began.elapsed(),
            });
        }
        let solver = concerto_backends::modal_solver(&self.solver)?;
        let slowdown = self.split_slowdown;
        let hw = hardware.clone();
        let chunk = move |ctx: &concerto_decomp::Context, op: &concerto_graph::Op, i: u32| {
            let slow = slowdown.map(|f| (f, hw.op_ns(op)));
            concerto_decomp::rules::chunk(op, ctx.axis, ctx.n, i, slow)
        };
        let optimize = |g: &Graph, hints: Vec<StreamPlan>| {
            self.run_with(g, hints)
                .map_err(|e| concerto_decomp::DecompError::InvalidContext {
                    reason: format!("scheduling a joint graph: {e:#}"),
                })
        };
        let solve_config = JointSolveConfig {
            windows: concerto_rcpsp::joint::JointConfig::default(),
            time_limit: std::time::Duration::from_secs_f64(self.time_limit.max(0.001)),
        };
        let solved = solve_joint(
            graph,
            &hardware,
            &candidates,
            &chunk,
            &start,
            solver.as_ref(),
            &optimize,
            &solve_config,
        )?;
        let ns = solved.optimized.concerto().makespan_ns();
        let (joint_ns, note) = if ns <= sad_ns {
            (ns, None)
        } else {
            (
                sad_ns,
                Some(format!(
                    "the joint plan simulates to {:.3} ms, {} ns above S+AD {:.3} ms: S+AD kept",
                    ns as f64 / 1e6,
                    ns - sad_ns,
                    sad_ns as f64 / 1e6
                )),
            )
        };
        Ok(JointResult {
            joint_ns,
            chosen: if note.is_some() {
                Vec::new()
            } else {
                solved.chosen.iter().map(|(_, l)| l.clone()).collect()
            },
            regions: solved.union.regions.len(),
            mode_changes: solved.report.mode_changes,
            skipped: solved.report.skipped,
            note,
            time: began.elapsed(),
        })
    }

    /// The fusion `--fuse on` asks for, and the schedule of the fused graph. The buckets are
    /// chosen under `scheduled`'s concerto plan of `graph` (each candidate keeps that plan's
    /// order, [`fuse_under`]); the fused graph is then scheduled again, with that order as a
    /// hint, so its concerto row is never behind the plan that chose the buckets.
    pub(crate) fn fuse(
        &self,
        graph: &Graph,
        scheduled: &Optimized,
    ) -> anyhow::Result<Option<FusedSchedule>> {
        if self.fuse == Fuse::Off {
            return Ok(None);
        }
        let hardware = self.hardware()?;
        let timeline = &scheduled.concerto().timeline;
        let fused = fuse_under(graph, &hardware, timeline, &FuseConfig::default())?;
        let mut order: Vec<OpId> = graph.ids().collect();
        order.sort_by_key(|o| (timeline.start[o.0], o.0));
        let hint = StreamPlan::from_order(
            &fused.graph,
            &mapped_order(&fused.graph, &fused.origin, &order)?,
        )?;
        let optimized = self.run_with(&fused.graph, vec![hint])?;
        Ok(Some((fused, optimized)))
    }

    /// [`OptimizeOpts::fuse`], kept only when the scheduled fused graph is not longer than
    /// `scheduled` (the schedule of `graph`); otherwise `None` and a note that says why.
    pub(crate) fn fuse_kept(
        &self,
        graph: &Graph,
        scheduled: &Optimized,
    ) -> anyhow::Result<(Option<FusedSchedule>, Option<String>)> {
        Ok(match self.fuse(graph, scheduled)? {
            Some((f, o)) if o.concerto().makespan_ns() > scheduled.concerto().makespan_ns() => {
                let note = format!(
                    "fusion not kept: {} bucket(s) scheduled to {:.3} ms, longer than unfused",
                    f.buckets.len(),
                    o.concerto().makespan_ns() as f64 / 1e6
                );
                (None, Some(note))
            }
            other => (other, None),
        })
    }

    pub(crate) fn run(&self, graph: &Graph) -> anyhow::Result<Optimized> {
        self.run_with(graph, Vec::new())
    }

    /// [`OptimizeOpts::run`] with plans that compete with the baselines
    /// ([`OptimizeConfig::hints`]).
    pub(crate) fn run_with(
        &self,
        graph: &Graph,
        hints: Vec<StreamPlan>,
    ) -> anyhow::Result<Optimized> {
        let hardware = self.hardware()?;
        let config = OptimizeConfig {
            hints,
            ..self.config()?
        };
        let solver = registry().get(&self.solver)?;
        Ok(optimize::optimize(graph, &hardware, solver, &config)?)
    }
}

/// What `--decompose joint` found.
pub(crate) struct JointResult {
    /// The joint makespan (simulated), never above S+AD.
    pub(crate) joint_ns: u64,
    /// The candidates applied (`<collective> <axis>/<n>`).
    pub(crate) chosen: Vec<String>,
    /// Regions of the union graph.
    pub(crate) regions: usize,
    /// Windows that changed a region's mode.
    pub(crate) mode_changes: usize,
    /// Windows the modal solver refused as too large.
    pub(crate) skipped: usize,
    /// Why S+AD was kept, when it was.
    pub(crate) note: Option<String>,
    /// Candidates, union, windows and the final schedule.
    pub(crate) time: std::time::Duration,
}

/// A fusion and the schedule of the fused graph.
pub(crate) type FusedSchedule = (Fused, Optimized);

/// One scheduler in the JSON report.
#[derive(Serialize)]
struct SchedulerJson {
    makespan_ns: u64,
    exposed_comm_ns: u64,
    peak_memory_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    noise_mean_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    noise_worst_ns: Option<u64>,
}

/// One decomposition in JSON reports.
#[derive(Serialize)]
pub(crate) struct DecompositionJson {
    pub(crate) collective: String,
    /// `split` or `collective-matmul`.
    pub(crate) family: &'static str,
    pub(crate) axis: &'static str,
    pub(crate) n: u32,
    pub(crate) context_size: usize,
    /// `rows/4` for a split, `ring/8` for a collective matmul (tables only).
    #[serde(skip)]
    pub(crate) label: String,
}

pub(crate) fn decompositions_json(s: &Selected) -> Vec<DecompositionJson> {
    s.decompositions
        .iter()
        .map(|d| DecompositionJson {
            collective: d.collective.clone(),
            family: d.family.as_str(),
            axis: d.axis.as_str(),
            n: d.n,
            context_size: d.context_ops,
            label: d.label(),
        })
        .collect()
}

/// The keys every optimisation report shares (`concerto optimize --json`, the rows of
/// `concerto bench graphs --json`): concerto's plan against the baselines and the bound.
#[derive(Serialize)]
pub(crate) struct ComparisonJson {
    pub(crate) ops: usize,
    pub(crate) collectives: usize,
    pub(crate) lower_bound_ns: u64,
    pub(crate) program_order_ns: u64,
    pub(crate) lhs_ns: u64,
    pub(crate) inductor_ns: u64,
    pub(crate) optimized_ns: u64,
    pub(crate) exposed_comm_ns: u64,
    pub(crate) peak_memory_bytes: u64,
}

impl ComparisonJson {
    pub(crate) fn of(r: &Optimized) -> Self {
        let get = |name: &str| r.get(name).map_or(0, |s| s.makespan_ns());
        let c = r.concerto();
        Self {
            ops: r.ops,
            collectives: r.collectives,
            lower_bound_ns: r.lower_bound_ns,
            program_order_ns: get("program-order"),
            lhs_ns: get("lhs"),
            inductor_ns: get("inductor"),
            optimized_ns: c.makespan_ns(),
            exposed_comm_ns: c.exposed_comm_ns,
            peak_memory_bytes: c.peak_memory_bytes,
        }
    }
}

/// The JSON report of `concerto optimize`.
#[derive(Serialize)]
pub(crate) struct OptimizeJson {
    graph: String,
    hardware: String,
    contention: f64,
    #[serde(flatten)]
    comparison: ComparisonJson,
    time_s: f64,
    origin: &'static str,
    solver: String,
    solver_status: String,
    solver_makespan_ns: u64,
    start_makespan_ns: u64,
    schedulers: std::collections::BTreeMap<&'static str, SchedulerJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fused_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    buckets: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decomposed_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decompositions: Option<Vec<DecompositionJson>>,
    /// `--decompose joint`: the joint makespan, never above S+AD (or S).
    #[serde(skip_serializing_if = "Option::is_none")]
    joint_ns: Option<u64>,
    /// `--decompose joint`: the candidates applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    joint_decompositions: Option<Vec<String>>,
    /// `--decompose joint`: wall time of the joint step.
    #[serde(skip_serializing_if = "Option::is_none")]
    joint_time_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    noise_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    noise_samples: Option<usize>,
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:+.1}%", (a as f64 / b as f64 - 1.0) * 100.0)
    }
}

pub(crate) fn run(args: &OptimizeArgs) -> Result<(), Failure> {
    let graph = read_graph(&args.graph, args.opts.gpus_per_node)?;
    let hardware = args.opts.hardware()?;
    let r = args
        .opts
        .run(&graph)
        .with_context(|| format!("optimizing {}", args.graph.display()))?;
    let ad = args.opts.decompose(&graph)?;
    let joint = if args.opts.decompose == Decompose::Joint {
        // Joint starts from S+AD, or from S when the decompositions scheduled longer.
        let s_ns = r.concerto().makespan_ns();
        let (sequential, sad_ns) = match &ad {
            Some((sel, o)) if o.concerto().makespan_ns() <= s_ns => {
                (decompositions_json(sel), o.concerto().makespan_ns())
            }
            _ => (Vec::new(), s_ns),
        };
        Some(
            args.opts
                .joint(&graph, &sequential, sad_ns)
                .context("joint decomposition and scheduling")?,
        )
    } else {
        None
    };
    let (fu, fusion_note) = args.opts.fuse_kept(&graph, &r)?;
    let noise = match args.noise {
        Some(p) => {
            let plans: Vec<_> = r.results.iter().map(|s| &s.plan).collect();
            Some(optimize::noise(
                &graph,
                &plans,
                &r.durations,
                r.contention,
                p,
                args.samples,
                args.opts.seed,
            )?)
        }
        None => None,
    };
    let timelines: Vec<(&str, &concerto_graph::Timeline)> = r
        .results
        .iter()
        .map(|s| (s.scheduler, &s.timeline))
        .collect();
    if let Some(path) = &args.trace {
        write(path, &trace::chrome_trace_string(&graph, &timelines))?;
    }
    if let Some(path) = &args.svg {
        write(path, &trace::svg_gantt(&graph, &timelines))?;
    }
    if let Some(path) = &args.plan {
        write(path, &r.concerto().plan.to_json(&graph))?;
    }
    let get = |name: &str| r.get(name).map_or(0, |s| s.makespan_ns());
    if args.json {
        let report = OptimizeJson {
            graph: graph.name().to_string(),
            hardware: hardware.name.clone(),
            contention: r.contention,
            comparison: ComparisonJson::of(&r),
            time_s: r.time.as_secs_f64(),
            origin: r.origin,
            solver: r.solver.clone(),
            solver_status: r.solver_status.to_string(),
            solver_makespan_ns: r.solver_makespan_ns,
            start_makespan_ns: r.start_makespan_ns,
            schedulers: r
                .results
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    (
                        s.scheduler,
                        SchedulerJson {
                            makespan_ns: s.makespan_ns(),
                            exposed_comm_ns: s.exposed_comm_ns,
                            peak_memory_bytes: s.peak_memory_bytes,
                            noise_mean_ns: noise.as_ref().map(|n| n[i].mean_ns),
                            noise_worst_ns: noise.as_ref().map(|n| n[i].worst_ns),
                        },
                    )
                })
                .collect(),
            fused_ns: match &fu {
                Some((_, o)) => Some(o.concerto().makespan_ns()),
                None if fusion_note.is_some() => Some(r.concerto().makespan_ns()),
                None => None,
            },
            buckets: match &fu {
                Some((f, _)) => Some(f.buckets.len()),
                None if fusion_note.is_some() => Some(0),
                None => None,
            },
            decomposed_ns: ad.as_ref().map(|(_, o)| o.concerto().makespan_ns()),
            decompositions: ad.as_ref().map(|(s, _)| decompositions_json(s)),
            joint_ns: joint.as_ref().map(|j| j.joint_ns),
            joint_decompositions: joint.as_ref().map(|j| j.chosen.clone()),
            joint_time_s: joint.as_ref().map(|j| j.time.as_secs_f64()),
            noise_pct: args.noise,
            noise_samples: args.noise.map(|_| args.samples),
        };
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!(
        "graph        {} ({} ops, {} collectives)",
        graph.name(),
        r.ops,
        r.collectives
    );
    println!(
        "hardware     {} (compute {:.2}x slower while a collective runs)",
        hardware.name, r.contention
    );
    println!(
        "lower bound  {} ms  (max of critical path and busiest stream)",
        ms(r.lower_bound_ns)
    );
    let mut header = vec![
        "scheduler",
        "makespan_ms",
        "vs_program_order",
        "above_bound",
        "exposed_comm_ms",
        "peak_mem_GiB",
    ];
    if noise.is_some() {
        header.extend(["noise_mean_ms", "noise_worst_ms"]);
    }
    let mut table = Table::new(&header);
    let po = get("program-order");
    for (i, s) in r.results.iter().enumerate() {
        let mut row = vec![
            s.scheduler.to_string(),
            ms(s.makespan_ns()),
            pct(s.makespan_ns(), po),
            pct(s.makespan_ns(), r.lower_bound_ns),
            ms(s.exposed_comm_ns),
            format!("{:.2}", s.peak_memory_bytes as f64 / (1u64 << 30) as f64),
        ];
        if let Some(n) = &noise {
            row.push(format!("{:.3}", n[i].mean_ns / 1e6));
            row.push(ms(n[i].worst_ns));
        }
        table.row(row);
    }
    let extra = [
        ("concerto+fuse", fu.as_ref().map(|x| &x.1)),
        ("concerto+AD", ad.as_ref().map(|x| &x.1)),
    ];
    for (label, o) in extra {
        let Some(o) = o else { continue };
        let s = o.concerto();
        let mut row = vec![
            label.to_string(),
            ms(s.makespan_ns()),
            pct(s.makespan_ns(), po),
            pct(s.makespan_ns(), r.lower_bound_ns),
            ms(s.exposed_comm_ns),
            format!("{:.2}", s.peak_memory_bytes as f64 / (1u64 << 30) as f64),
        ];
        if noise.is_some() {
            row.extend(["-".to_string(), "-".to_string()]);
        }
        table.row(row);
    }
    print!("{}", table.render());
    if let Some(j) = &joint {
        println!(
            "joint        {} ms with {} decomposition(s) over {} region(s), {} window(s) changed a mode, {} too large for the solver ({:.1} s){}",
            ms(j.joint_ns),
            j.chosen.len(),
            j.regions,
            j.mode_changes,
            j.skipped,
            j.time.as_secs_f64(),
            j.note.as_ref().map_or(String::new(), |n| format!("; {n}"))
        );
        for c in &j.chosen {
            println!("  {c}");
        }
    }
    if let Some(note) = &fusion_note {
        println!("fused        {note}");
    }
    if let Some((f, o)) = &fu {
        println!(
            "fused        {} bucket(s) of {} collectives: {} -> {} collective calls (concerto+fuse)",
            f.buckets.len(),
            f.buckets.iter().map(|b| b.members.len()).sum::<usize>(),
            r.collectives,
            o.collectives
        );
    }
    if let Some((sel, o)) = &ad {
        println!(
            "decomposed   {} collective(s), {} ops after the rewrite; concerto+AD = schedule + decomposition (S+AD), concerto = schedule only (S)",
            sel.decompositions.len(),
            o.ops
        );
        for d in &sel.decompositions {
            println!(
                "  {} {} ({} ops): {} -> {} ms",
                d.collective,
                d.label(),
                d.context_ops,
                ms(d.before_ns),
                ms(d.after_ns)
            );
        }
    }
    println!(
        "solver       {}: {} (contention-free {} ms from a {} ms start); concerto's plan: {}",
        r.solver,
        r.solver_status,
        ms(r.solver_makespan_ns),
        ms(r.start_makespan_ns),
        r.origin
    );
    if let Some(p) = args.noise {
        println!(
            "noise        +-{p}% on every duration, {} samples, seed {}",
            args.samples, args.opts.seed
        );
    }
    println!("time         {:.2} s", r.time.as_secs_f64());
    Ok(())
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
