//! `concerto optimize`: run the pipeline on a training-step graph and compare with the
//! baselines.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use concerto_graph::trace;
use concerto_pipeline::{NoiseConfig, Row, Scheduled, Scheduler};

use concerto_extract::profile::ProfileReport;
use concerto_extract::read::HloSource;

use crate::io::{profile_lines, profiled_input, read_input, write, write_graph, ProfileArgs};
use crate::opts::OptimizeOpts;
use crate::progress;
use crate::report::{gib, ms, pct};
use crate::Failure;
use concerto_pipeline::table::Table;

/// Arguments of `concerto optimize`.
#[derive(Args, Debug)]
pub(crate) struct OptimizeArgs {
    /// The graph: a native `.json` graph (`concerto model ... -o FILE` writes one) or an XLA HLO
    /// text module (`.hlo`).
    pub(crate) graph: PathBuf,
    #[command(flatten)]
    pub(crate) opts: OptimizeOpts,
    #[command(flatten)]
    pub(crate) profile: ProfileArgs,
    /// Write a Chrome trace (Perfetto) of every scheduler's timeline.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// Write an SVG Gantt chart of every scheduler's timeline (for a profiler trace, the
    /// measured one first), each with its exposed communication marked.
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<PathBuf>,
    /// Only these timelines in `--svg`, in this order (comma-separated scheduler names of the
    /// table, and `measured` for a profiler trace).
    #[arg(long, value_name = "NAMES", value_delimiter = ',', requires = "svg")]
    pub(crate) svg_schedulers: Vec<String>,
    /// Write the plan of the row that was kept (S, S+AD, joint or S+F; JSON, with its graph's
    /// fingerprint) for `concerto simulate`, `concerto run-cuda` and other executors.
    #[arg(long, value_name = "FILE")]
    pub(crate) plan: Option<PathBuf>,
    /// Write the graph the kept plan belongs to (the rewritten one when decompositions or
    /// fusion were kept), in the native JSON format.
    #[arg(long, value_name = "FILE")]
    pub(crate) graph_out: Option<PathBuf>,
    /// Write the plan as a scheduled XLA HLO module (`is_scheduled=true`): the input module
    /// (which must be HLO text) with its entry computation in the plan's order, collectives
    /// as async start/done pairs and `while` loops unrolled. The written module is read back
    /// and checked (same ops and dependencies; replayed in program order, the plan's makespan)
    /// before it is written. The schedule-only (S) plan is written when the kept row rewrote
    /// the graph (decomposition or fusion have no HLO form here).
    #[arg(long, value_name = "FILE")]
    pub(crate) emit_hlo: Option<PathBuf>,
    /// Write concerto's cost model as an XLA PGLE profile (`ProfiledInstructionsProto` text;
    /// name it `.pbtxt`) for the input module's own instruction names: every kernel's cost and
    /// every async pair's latency (`concerto_extract::hlo::pgle`). Give it to XLA with
    /// `--xla_gpu_pgle_profile_file_or_directory_path` so its scheduler plans with these costs.
    #[arg(long, value_name = "FILE")]
    pub(crate) emit_pgle: Option<PathBuf>,
    /// Write a second PGLE profile, the same costs but each collective's latency the compute
    /// concerto's plan runs under it (not its duration): it steers XLA's scheduler towards
    /// concerto's overlaps.
    #[arg(long, value_name = "FILE")]
    pub(crate) emit_pgle_steer: Option<PathBuf>,
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

/// How many import times `--emit-hlo` reserves out of the time limit (see [`configure`]):
/// the export lowers the module once more to check its graph, then parses and lowers what it
/// wrote (larger once loops are unrolled) and simulates it.
const EMIT_RESERVE_IMPORTS: u32 = 5;

fn row_cells(label: &str, s: &Scheduled, po: u64, bound: u64) -> Vec<String> {
    vec![
        label.to_string(),
        ms(s.makespan_ns()),
        pct(s.makespan_ns(), po),
        pct(s.makespan_ns(), bound),
        ms(s.exposed_comm_ns),
        format!("{:.2}", gib(s.peak_memory_bytes)),
    ]
}

pub(crate) fn run(args: &OptimizeArgs) -> Result<(), Failure> {
    // The time limit covers the import too.
    let started = std::time::Instant::now();
    let (c, profile) = configure(args, started)?;
    let imported = started.elapsed();
    warn_if_the_import_spent_the_limit(&c.pipeline, imported);
    let bar = progress::bar(args.json);
    let graph = &c.input.graph;
    let r = c
        .pipeline
        .run(graph, bar.as_ref())
        .with_context(|| format!("optimizing {}", args.graph.display()))?;
    let emitted = write_outputs(args, &c, &r)?;
    if args.json {
        if let Some(line) = &emitted {
            eprintln!("{line}");
        }
        let mut out = serde_json::to_value(r.summary())?;
        if let (Some(p), Some(map)) = (&profile, out.as_object_mut()) {
            map.insert("profile".into(), serde_json::to_value(p)?);
        }
        println!("{out}");
        return Ok(());
    }
    if let (Some(p), Some(trace)) = (&profile, &args.profile.profile) {
        println!("{}", profile_lines(trace, p, 13));
    }
    print_input(args, &c, &r);
    print_table(&r);
    print_details(args, &r);
    if let Some(line) = &emitted {
        println!("{line}");
    }
    print_time(started, imported, &r);
    // The process ends here: freeing the graph and the report (hundreds of MB on a 100k-op
    // step, some 50 ms) would only lengthen the call.
    std::mem::forget(r);
    std::mem::forget(c);
    Ok(())
}

/// Reads the input, costs it from `--profile`, and configures the pipeline for it
/// ([`concerto::configure`]); the time limit, which covers the whole call, keeps a reserve
/// for `--emit-hlo`.
fn configure(
    args: &OptimizeArgs,
    started: std::time::Instant,
) -> Result<(concerto::Configured, Option<ProfileReport>), Failure> {
    let mut options = args.opts.import_options()?;
    options.trace_step = args.opts.step;
    options.trace_launch_times = !args.opts.no_launch_times;
    let mut input = read_input(&args.graph, &options)?;
    let mut pipeline = args.opts.pipeline()?;
    let profile = profiled_input(
        &mut input,
        &args.graph,
        &args.profile,
        &pipeline.config.hardware,
    )?;
    // `--emit-hlo` runs after the pipeline and inside the time limit: measured on the real
    // 70B module (import 0.31 s), 1.7 s under load. The pipeline's limit is that much shorter
    // (at most half).
    if args.emit_hlo.is_some() {
        if let Some(limit) = pipeline.config.schedule.time_limit.as_mut() {
            let reserve = (started.elapsed() * EMIT_RESERVE_IMPORTS).min(*limit / 2);
            *limit -= reserve;
        }
    }
    pipeline.config.started = Some(started);
    pipeline.config.noise = args.noise.map(|pct| NoiseConfig {
        pct,
        samples: args.samples,
    });
    let c = concerto::configure(input, pipeline, args.opts.contention)
        .with_context(|| format!("configuring the run of {}", args.graph.display()))?;
    Ok((c, profile))
}

/// A warning when the import alone took the whole time limit.
fn warn_if_the_import_spent_the_limit(
    pipeline: &concerto_pipeline::Pipeline,
    imported: std::time::Duration,
) {
    if let Some(limit) = pipeline.config.schedule.time_limit {
        if imported >= limit {
            eprintln!(
                "warning: the import alone took {:.2} s of the {:.2} s time limit; the \
                 baselines, the bounds and one list schedule still run, past the limit",
                imported.as_secs_f64(),
                limit.as_secs_f64()
            );
        }
    }
}

/// Writes what the flags ask for (`--trace`, `--svg`, `--plan`, `--graph-out`, `--emit-hlo`,
/// `--emit-pgle`); returns `--emit-hlo`'s line, printed with the report.
fn write_outputs(
    args: &OptimizeArgs,
    c: &concerto::Configured,
    r: &concerto_pipeline::Report,
) -> Result<Option<String>, Failure> {
    let graph = &c.input.graph;
    let timelines: Vec<(&str, &concerto_graph::Timeline)> = r
        .schedule
        .results
        .iter()
        .map(|x| (x.scheduler.as_str(), &x.timeline))
        .collect();
    if let Some(path) = &args.trace {
        write(path, &trace::chrome_trace_string(graph, &timelines))?;
    }
    if let Some(path) = &args.svg {
        let measured = measured_timeline(c, &timelines);
        let mut drawn: Vec<(&str, &concerto_graph::Timeline)> =
            measured.iter().map(|t| ("measured", t)).collect();
        drawn.extend(timelines.iter().copied());
        if !args.svg_schedulers.is_empty() {
            drawn = pick_timelines(&drawn, &args.svg_schedulers)?;
        }
        write(path, &trace::svg_gantt(graph, &drawn))?;
    }
    let (kept_graph, kept_plan) = r.result();
    if let Some(path) = &args.plan {
        write(path, &kept_plan.plan.to_json(kept_graph))?;
    }
    if let Some(path) = &args.graph_out {
        write_graph(path, kept_graph)?;
    }
    let source = c.input.hlo.as_deref();
    let emitted = match &args.emit_hlo {
        Some(path) => Some(emit_hlo(args, source, r, path)?),
        None => None,
    };
    if args.emit_pgle.is_some() || args.emit_pgle_steer.is_some() {
        eprintln!("{}", emit_pgle(args, source, r)?);
    }
    Ok(emitted)
}

/// A profiler trace's measured timeline: each op's measured start and end, on the stream
/// the replay (program order, the recorded order) runs it on. `None` for other inputs.
fn measured_timeline(
    c: &concerto::Configured,
    timelines: &[(&str, &concerto_graph::Timeline)],
) -> Option<concerto_graph::Timeline> {
    let measured = &c.input.trace.as_ref()?.measured;
    let replay = timelines.iter().find(|(n, _)| *n == "program-order")?.1;
    if measured.len() != replay.start.len() {
        return None;
    }
    Some(concerto_graph::Timeline {
        start: measured.iter().map(|m| m.0).collect(),
        end: measured.iter().map(|m| m.1).collect(),
        stream: replay.stream.clone(),
        streams: replay.streams.clone(),
        makespan: measured.iter().map(|m| m.1).max().unwrap_or(0),
    })
}

/// The timelines `names` asks for, in its order: an error names one that is not drawn.
fn pick_timelines<'a>(
    drawn: &[(&'a str, &'a concerto_graph::Timeline)],
    names: &[String],
) -> Result<Vec<(&'a str, &'a concerto_graph::Timeline)>, Failure> {
    names
        .iter()
        .map(|n| {
            drawn.iter().find(|(d, _)| d == n).copied().ok_or_else(|| {
                let known: Vec<&str> = drawn.iter().map(|(d, _)| *d).collect();
                Failure::from(anyhow::anyhow!(
                    "--svg-schedulers: no timeline `{n}` (this run draws {})",
                    known.join(", ")
                ))
            })
        })
        .collect()
}

/// The report's first lines: the graph, the trace or the hardware, the lower bound.
fn print_input(args: &OptimizeArgs, c: &concerto::Configured, r: &concerto_pipeline::Report) {
    let s = &r.schedule;
    let graph = &c.input.graph;
    println!(
        "graph        {} ({} ops, {} collectives)",
        graph.name(),
        s.ops,
        s.collectives
    );
    match (&c.input.trace, c.recorded_ns) {
        (Some(t), Some(replay)) => {
            println!(
                "trace        {}: measured {} ms; the program order is the recorded order \
                 (replayed {} ms); measured durations{}{}",
                t.step,
                ms(t.measured_step_ns),
                ms(replay),
                if args.opts.no_launch_times {
                    ", launch times dropped (--no-launch-times)"
                } else {
                    " and launch times"
                },
                if args.opts.contention.is_none() {
                    ", no contention on top (the measured durations contain it)"
                } else {
                    ""
                }
            );
            if s.contention > 1.0 {
                println!(
                    "hardware     compute {:.2}x slower while a collective runs (--contention)",
                    s.contention
                );
            }
            if let Some(recorded) = s.get(Scheduler::ProgramOrder) {
                println!(
                    "orders       {}",
                    order_changes(graph, &recorded.plan, &s.concerto().plan)
                );
            }
        }
        _ => println!(
            "hardware     {} (compute {:.2}x slower while a collective runs)",
            args.opts.import.hardware, s.contention
        ),
    }
    println!(
        "lower bound  {} ms  ({} binds; {})",
        ms(s.lower_bound_ns),
        s.bound_kind,
        s.bounds
            .iter()
            .map(|b| format!("{} {}", b.kind, ms(b.value_ns)))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// The table: every scheduler's row, then concerto's rows on rewritten graphs.
fn print_table(r: &concerto_pipeline::Report) {
    let s = &r.schedule;
    let mut header = vec![
        "scheduler",
        "makespan_ms",
        "vs_program_order",
        "above_bound",
        "exposed_comm_ms",
        "peak_mem_GiB",
    ];
    if r.noise.is_some() {
        header.extend(["noise_mean_ms", "noise_worst_ms"]);
    }
    let mut table = Table::new(&header);
    let po = s
        .get(Scheduler::ProgramOrder)
        .map_or(0, Scheduled::makespan_ns);
    for (i, x) in s.results.iter().enumerate() {
        let mut row = row_cells(x.scheduler.as_str(), x, po, s.lower_bound_ns);
        if let Some(n) = &r.noise {
            row.push(format!("{:.3}", n[i].mean_ns / 1e6));
            row.push(ms(n[i].worst_ns));
        }
        table.row(row);
    }
    let extra = [
        (
            "concerto+fuse",
            r.fusion.as_ref().map(|f| f.schedule.concerto()),
        ),
        (
            "concerto+AD",
            r.decomposed
                .as_ref()
                .and_then(|d| d.schedule.as_ref())
                .map(|o| o.concerto()),
        ),
        (
            "concerto+joint",
            r.joint
                .as_ref()
                .and_then(|j| j.result.as_ref())
                .map(|(_, o)| o.concerto()),
        ),
    ];
    for (label, x) in extra {
        let Some(x) = x else { continue };
        let mut row = row_cells(label, x, po, s.lower_bound_ns);
        if r.noise.is_some() {
            row.extend(["-".to_string(), "-".to_string()]);
        }
        table.row(row);
    }
    print!("{}", table.render());
}

/// The lines under the table: memory, joint, fusion, decomposition, portfolio, solver, noise
/// and the kept row.
fn print_details(args: &OptimizeArgs, r: &concerto_pipeline::Report) {
    let s = &r.schedule;
    if let Some(b) = s.memory_budget_bytes {
        println!(
            "memory       budget {:.2} GiB: concerto's plan peaks at {:.2} GiB (checked); program order {:.2} GiB; no order below {:.2} GiB; solver's own plan {:.2} GiB{}",
            gib(b),
            gib(s.concerto().peak_memory_bytes),
            gib(s.get(Scheduler::ProgramOrder).map_or(0, |x| x.peak_memory_bytes)),
            gib(s.peak_lower_bound_bytes),
            gib(s.solver_plan.peak_memory_bytes),
            if s.solver_plan.peak_memory_bytes > b { " (over)" } else { "" }
        );
    }
    print_rewrites(r);
    println!(
        "portfolio    {}",
        s.portfolio
            .iter()
            .map(|(rule, ns)| format!("{rule} {}", ms(*ns)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let costed = if s.contention > 1.0 {
        format!(
            "{} ms with its last start's simulated durations, {} pass{}",
            ms(s.solver_makespan_ns),
            s.window_passes,
            if s.window_passes == 1 { "" } else { "es" }
        )
    } else {
        format!("contention-free {} ms", ms(s.solver_makespan_ns))
    };
    println!(
        "solver       {}: {} ({costed} from a {} ms start ({}), {} work); its plan simulates to {} ms; concerto's plan: {}",
        s.solver,
        s.solver_status,
        ms(s.start_makespan_ns),
        s.start,
        s.work,
        ms(s.solver_plan.makespan_ns()),
        s.origin
    );
    if let Some(p) = args.noise {
        println!(
            "noise        +-{p}% on every duration, {} samples, seed {}",
            args.samples, args.opts.seed
        );
    }
    let (g, p) = r.result();
    println!(
        "kept         {} {} ms ({} ops){}",
        r.kept.as_str(),
        ms(p.makespan_ns()),
        g.len(),
        if r.kept == Row::S {
            ""
        } else {
            ": the rewritten graph's plan"
        }
    );
}

/// The joint, fusion and decomposition lines, for the rows that ran.
fn print_rewrites(r: &concerto_pipeline::Report) {
    let s = &r.schedule;
    if let Some(j) = &r.joint {
        println!(
            "joint        {} ms with {} decomposition(s) over {} region(s), {} window(s) changed a mode, {} too large for the solver ({:.1} s){}",
            ms(j.makespan_ns),
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
    if let Some(f) = &r.fusion {
        match f.note() {
            Some(note) => println!("fused        {note}"),
            None => println!(
                "fused        {} bucket(s) of {} collectives: {} -> {} collective calls (concerto+fuse)",
                f.fused.buckets.len(),
                f.fused.buckets.iter().map(|b| b.members.len()).sum::<usize>(),
                s.collectives,
                f.calls_after(s)
            ),
        }
    }
    if let Some(d) = &r.decomposed {
        println!(
            "decomposed   {} collective(s), {} ops after the rewrite; concerto+AD = schedule + decomposition (S+AD), concerto = schedule only (S)",
            d.selected.decompositions.len(),
            d.selected.graph.len()
        );
        for x in &d.selected.decompositions {
            println!(
                "  {} {} ({} ops): {} -> {} ms",
                x.collective,
                x.label(),
                x.context_ops,
                ms(x.before_ns),
                ms(x.after_ns)
            );
        }
        if let Some((ns, k)) = d.rejected() {
            println!(
                "             not kept: {k} decomposition(s) scheduled to {} ms > S {} ms",
                ms(ns),
                ms(r.s_ns())
            );
        }
    }
}

/// The `time` line: the whole call and its stages.
fn print_time(
    started: std::time::Instant,
    imported: std::time::Duration,
    r: &concerto_pipeline::Report,
) {
    let stages: Vec<String> = std::iter::once(("import".to_string(), imported))
        .chain(r.schedule.stages.iter().cloned())
        .map(|(name, t)| format!("{name} {:.2}", t.as_secs_f64()))
        .collect();
    println!(
        "time         {:.2} s ({}{})",
        started.elapsed().as_secs_f64(),
        stages.join(", "),
        if r.decomposed.is_some() || r.fusion.is_some() || r.noise.is_some() {
            "; the S step's stages"
        } else {
            ""
        }
    );
}

/// `--emit-hlo`: writes the S plan (or the kept one, when it is on the input graph) into the
/// input module as a scheduled module, checked by [`export_checked`] (a module that already
/// has a schedule, such as XLA's compiled ones, by [`export_verbatim_checked`]: every line
/// kept but the entry's order); returns the line to print.
///
/// [`export_checked`]: concerto_extract::hlo::export_checked
/// [`export_verbatim_checked`]: concerto_extract::hlo::export_verbatim_checked
fn emit_hlo(
    args: &OptimizeArgs,
    source: Option<&HloSource>,
    r: &concerto_pipeline::Report,
    path: &std::path::Path,
) -> Result<String, Failure> {
    use concerto_extract::hlo;
    let Some(source) = source else {
        return Err(anyhow::anyhow!(
            "--emit-hlo needs an XLA HLO text module as input (`.hlo` or `.txt`, gzipped or not), not {}",
            args.graph.display()
        )
        .into());
    };
    let options = args.opts.import_options()?;
    let (graph, s, stood_in) = r.exported();
    let note = stood_in.map_or(String::new(), |row| {
        format!(
            "; the kept {} plan rewrote the graph, so this is the S plan",
            row.as_str()
        )
    });
    // A scheduled module (XLA's compiled ones) keeps every line but the entry's order and the
    // `is_sync` of the starts it moves ([`hlo::export_verbatim_checked`]).
    let scheduled = source
        .module
        .attributes
        .iter()
        .any(|a| a.name == "is_scheduled" && a.value.trim() == "true");
    let checked = if scheduled {
        hlo::export_verbatim_checked(
            &source.text,
            graph,
            &s.plan,
            &s.timeline,
            &r.schedule.durations,
            r.schedule.contention,
            &options,
        )
    } else {
        hlo::export_checked(
            &source.module,
            graph,
            &s.plan,
            &s.timeline,
            &r.schedule.durations,
            r.schedule.contention,
            &options,
        )
    }
    .with_context(|| format!("writing the plan into {}", args.graph.display()))?;
    write(path, &checked.exported.text)?;
    let e = &checked.exported;
    Ok(format!(
        "hlo          wrote {} ({} entry instructions, {} async collective pairs, {} loop iterations unrolled); read back: same {} ops and dependencies, replayed in program order {} ms = the plan's {} ms{note}",
        path.display(),
        e.entry_instructions,
        e.async_pairs,
        e.unrolled_iterations,
        graph.len(),
        ms(checked.replay.makespan),
        ms(checked.plan_ns),
    ))
}

/// `--emit-pgle` and `--emit-pgle-steer`: write the PGLE profile of the input module, and
/// the one steered by concerto's plan; returns the line to print.
fn emit_pgle(
    args: &OptimizeArgs,
    source: Option<&HloSource>,
    r: &concerto_pipeline::Report,
) -> Result<String, Failure> {
    use concerto_extract::hlo::pgle::PgleProfile;
    let Some(source) = source else {
        return Err(anyhow::anyhow!(
            "--emit-pgle needs an XLA HLO text module as input, not {}",
            args.graph.display()
        )
        .into());
    };
    let durations = &r.schedule.durations;
    let mut p = PgleProfile::new(&source.module, &r.graph, durations);
    let mut line = format!(
        "pgle         {} costs, {} latencies",
        p.costs.len(),
        p.latencies.len()
    );
    if let Some(path) = &args.emit_pgle {
        write(path, &p.to_text())?;
        line += &format!("; wrote {}", path.display());
    }
    if let Some(path) = &args.emit_pgle_steer {
        let n = p.steer(&r.graph, durations, &r.schedule.concerto().timeline);
        write(path, &p.to_text())?;
        line += &format!(
            "; wrote {} ({n} latencies steered to the compute concerto's plan overlaps)",
            path.display()
        );
    }
    Ok(line)
}

/// How concerto's plan differs from the recorded one: how many ops it launches at another
/// position of their stream, and the first few.
fn order_changes(
    graph: &concerto_graph::Graph,
    recorded: &concerto_graph::StreamPlan,
    ours: &concerto_graph::StreamPlan,
) -> String {
    let mut moved = 0usize;
    let mut first: Vec<String> = Vec::new();
    let mut total = 0usize;
    for (stream, order) in &ours.streams {
        let Some((_, theirs)) = recorded.streams.iter().find(|(s, _)| s == stream) else {
            continue;
        };
        total += order.len();
        for (k, (a, b)) in order.iter().zip(theirs).enumerate() {
            if a != b {
                moved += 1;
                if first.len() < 3 {
                    first.push(format!("{} #{k}: {}", stream.name(), graph.op(*a).name));
                }
            }
        }
    }
    if moved == 0 {
        format!(
            "concerto's plan launches every op as recorded ({total} ops on {} streams)",
            ours.streams.len()
        )
    } else {
        format!(
            "concerto's plan launches {moved} of {total} ops at another position of their \
             stream (first: {})",
            first.join("; ")
        )
    }
}
