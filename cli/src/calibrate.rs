//! `concerto calibrate TRACE`: the cost model against a measured step of a PyTorch profiler
//! trace ([`concerto_extract::kineto::calibrate`]), a profile fitted to it (`-o FILE`, which
//! `--hardware FILE` takes), and the fitted profile checked on another step of the same trace.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use concerto_extract::kineto::{self, calibrate::Calibration, TraceOptions};
use concerto_extract::profile::KernelProfile;
use concerto_graph::Hardware;
use serde::Serialize;

use crate::io::write;
use crate::opts::import_options;
use crate::Failure;
use concerto_pipeline::table::Table;

/// Arguments of `concerto calibrate`.
#[derive(Args, Debug)]
pub(crate) struct CalibrateArgs {
    /// A PyTorch profiler trace (`.json` or `.json.gz`), or with `--module` a `jax.profiler`
    /// trace (`*.trace.json.gz`) of that module's step.
    pub(crate) trace: PathBuf,
    /// The HLO module (XLA's `*after_optimizations.txt`, plain or `.gz`) that TRACE, a
    /// `jax.profiler` trace, profiled: its instructions are costed by the model and measured
    /// by their kernels, one profiled step at a time.
    #[arg(long, value_name = "MODULE")]
    pub(crate) module: Option<PathBuf>,
    /// The profile to compare with: a name, or a fitted profile file; default: by the trace's
    /// GPU (`v100`, `a100`, `h100`).
    #[arg(long)]
    pub(crate) hardware: Option<String>,
    /// The step to fit on (default: the median step): `ProfilerStep#N` of a PyTorch trace,
    /// the N-th profiled step (from 0) of a `jax.profiler` trace.
    #[arg(long, value_name = "N")]
    pub(crate) step: Option<u64>,
    /// Write the fitted profile here (JSON; `--hardware FILE` reads it).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// GPUs per node (a larger world makes the collectives inter-node).
    #[arg(long, default_value_t = 8)]
    pub(crate) gpus_per_node: u32,
    /// Print one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Serialize)]
struct CalibrateJson {
    trace: String,
    step: String,
    fitted: Calibration,
    /// The fitted profile on another step of the trace, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    held_out: Option<HeldOut>,
}

#[derive(Serialize)]
struct HeldOut {
    step: String,
    base: Calibration,
    fitted: Calibration,
}

/// The built-in profile of a trace's GPU name.
fn profile_of(device: Option<&str>) -> &'static str {
    let d = device.unwrap_or("").to_ascii_uppercase();
    if d.contains("V100") {
        "v100"
    } else if d.contains("H100") || d.contains("H200") {
        "h100"
    } else if d.contains("A800") {
        "a800"
    } else {
        "a100"
    }
}

fn import(
    args: &CalibrateArgs,
    step: Option<u64>,
) -> anyhow::Result<(concerto_graph::Graph, kineto::TraceReport)> {
    let file = std::fs::File::open(&args.trace)
        .with_context(|| format!("reading {}", args.trace.display()))?;
    let trace = kineto::Trace::read(std::io::BufReader::new(file))
        .with_context(|| format!("reading {}", args.trace.display()))?;
    let options = TraceOptions {
        step,
        gpus_per_node: args.gpus_per_node,
        ..TraceOptions::default()
    };
    trace
        .import(&options)
        .with_context(|| format!("importing trace {}", args.trace.display()))
}

/// `calibrate TRACE --module MODULE`: the module costed from one step of a `jax.profiler`
/// trace ([`kineto::calibrate::calibrate_measured`]), fitted on the median step (or `--step`)
/// and checked on the next one (or the one before). Returns the report and the device.
fn jax_calibration(args: &CalibrateArgs, module: &Path) -> anyhow::Result<(CalibrateJson, String)> {
    let hardware = Hardware::load(args.hardware.as_deref().unwrap_or("h100"))?
        .with_gpus_per_node(args.gpus_per_node)?;
    let m = concerto_extract::read::read_module(module)?;
    let options = import_options(args.gpus_per_node, &[])?;
    let (graph, _) = concerto_extract::hlo::lower(&m, &options)
        .with_context(|| format!("importing {}", module.display()))?;
    let text = concerto_extract::read::read_text(&args.trace)?;
    let profile = KernelProfile::read(&text, &m.name)
        .map_err(|e| anyhow::anyhow!("reading profile {}: {e}", args.trace.display()))?;
    let fit_step = match args.step {
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|&k| k < profile.steps)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--step {n}: the profile has steps 0 to {}",
                    profile.steps - 1
                )
            })?,
        None => profile.median_step(),
    };
    let file = args.trace.file_name().map_or_else(
        || args.trace.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    let source = format!("{file} step {fit_step} of module {}", m.name);
    let measured_step = |k: usize, hw: &Hardware| -> anyhow::Result<Calibration> {
        let one = profile.step(k).expect("a step of the profile");
        let (costed, _) = one
            .apply(&graph, &m, hw, false)
            .map_err(|e| anyhow::anyhow!("costing {} from its profile: {e}", module.display()))?;
        Ok(kineto::calibrate::calibrate_measured(&costed, hw, &source))
    };
    let fitted = measured_step(fit_step, &hardware)?;
    if let Some(path) = &args.output {
        write(path, &fitted.fit.to_json())?;
    }
    let held_out = match profile.held_out_step(fit_step) {
        Some(k) => {
            let fitted_hw =
                Hardware::fitted(&fitted.fit)?.with_gpus_per_node(args.gpus_per_node)?;
            Some(HeldOut {
                step: format!("step {k}"),
                base: measured_step(k, &hardware)?,
                fitted: measured_step(k, &fitted_hw)?,
            })
        }
        None => None,
    };
    let out = CalibrateJson {
        trace: file,
        step: format!("step {fit_step}"),
        fitted,
        held_out,
    };
    Ok((out, format!("{}, module {}", profile.device, m.name)))
}

pub(crate) fn run(args: &CalibrateArgs) -> Result<(), Failure> {
    let (out, device) = match &args.module {
        Some(module) => jax_calibration(args, module)?,
        None => trace_calibration(args)?,
    };
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
        return Ok(());
    }
    print_report(args, &out, &device);
    Ok(())
}

/// `calibrate TRACE` of a PyTorch profiler trace: fitted on one step, checked on the next.
/// Returns the report and the trace's GPU.
fn trace_calibration(args: &CalibrateArgs) -> anyhow::Result<(CalibrateJson, String)> {
    let (graph, report) = import(args, args.step)?;
    let name = args
        .hardware
        .clone()
        .unwrap_or_else(|| profile_of(report.device.as_deref()).to_string());
    let hardware = Hardware::load(&name)?.with_gpus_per_node(args.gpus_per_node)?;
    let file = args.trace.file_name().map_or_else(
        || args.trace.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    let source = format!("{file} {}", report.step);
    let fitted = kineto::calibrate::calibrate(&graph, &report, &hardware, &source);
    if let Some(path) = &args.output {
        write(path, &fitted.fit.to_json())?;
    }
    // The fit checked on another step.
    let held_out = match report.held_out_step() {
        Some(n) => {
            let (g, r) = import(args, Some(n))?;
            let fitted_hw =
                Hardware::fitted(&fitted.fit)?.with_gpus_per_node(args.gpus_per_node)?;
            Some(HeldOut {
                step: r.step.clone(),
                base: kineto::calibrate::calibrate(&g, &r, &hardware, &source),
                fitted: kineto::calibrate::calibrate(&g, &r, &fitted_hw, &source),
            })
        }
        None => None,
    };
    let out = CalibrateJson {
        trace: file,
        step: report.step.clone(),
        fitted,
        held_out,
    };
    let device = report
        .device
        .clone()
        .unwrap_or_else(|| "GPU not recorded".into());
    Ok((out, device))
}

/// The text report of a calibration.
fn print_report(args: &CalibrateArgs, out: &CalibrateJson, device: &str) {
    println!("trace        {} {} ({device})", out.trace, out.step);
    println!(
        "hardware     {} (the cost model compared with)",
        out.fitted.hardware
    );
    print_rows(&out.fitted, None);
    let c = &out.fitted;
    let skipped: Vec<String> = c
        .unmodelled
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    println!(
        "unmodelled   {} (no recorded shape or byte count: measured time only)",
        if skipped.is_empty() {
            "none".into()
        } else {
            skipped.join(", ")
        }
    );
    match &c.contention {
        Some(k) => println!(
            "contention   {:.3}x: {} kernels measured beside an NCCL kernel ({} runs) and alone ({} runs)",
            k.factor, k.kernels, k.overlapped_runs, k.alone_runs
        ),
        None if args.module.is_some() => println!(
            "contention   no estimate (a jax.profiler trace of one module: no kernel ran beside a collective and alone)"
        ),
        None => println!("contention   no estimate (no kernel ran both beside an NCCL kernel and alone, 3 times each)"),
    }
    let f = &c.fit;
    let scales: Vec<String> = f
        .compute_scale
        .iter()
        .map(|(k, x)| format!("{k} x{x:.3}"))
        .collect();
    println!(
        "fit          {}{}{}{}{}",
        if scales.is_empty() {
            "no class scale".to_string()
        } else {
            scales.join(", ")
        },
        f.collective
            .as_ref()
            .map(|r| format!(
                "; ring {:.1} GB/s, alpha {:.0} ns",
                r.bytes_per_sec / 1e9,
                r.alpha_ns
            ))
            .unwrap_or_default(),
        f.collective_scale
            .iter()
            .map(|(k, x)| format!(", {k} x{x:.3}"))
            .collect::<String>(),
        f.min_kernel_ns
            .map(|n| format!("; kernel floor {n} ns"))
            .unwrap_or_default(),
        f.contention
            .map(|x| format!("; contention {x:.3}"))
            .unwrap_or_default(),
    );
    if let Some(h) = &out.held_out {
        println!(
            "held out     {} (the fit checked on a step it was not fitted on)",
            h.step
        );
        print_rows(&h.base, Some(&h.fitted));
    }
    if let Some(path) = &args.output {
        println!("written      {}", path.display());
    }
}

/// The error table; with `fitted`, a second error column for the fitted profile.
fn print_rows(base: &Calibration, fitted: Option<&Calibration>) {
    let mut header = vec![
        "class",
        "ops",
        "measured_ms",
        "model_ms",
        "error",
        "median_ratio",
    ];
    if fitted.is_some() {
        header.extend(["fitted_ms", "fitted_error"]);
    }
    let mut t = Table::new(&header);
    for r in &base.rows {
        let mut row = vec![
            r.class.clone(),
            r.ops.to_string(),
            format!("{:.3}", r.measured_ns as f64 / 1e6),
            format!("{:.3}", r.model_ns as f64 / 1e6),
            format!("{:+.1}%", r.error_pct),
            format!("{:.2}", r.median_ratio),
        ];
        if let Some(f) = fitted {
            match f.rows.iter().find(|x| x.class == r.class) {
                Some(x) => {
                    row.push(format!("{:.3}", x.model_ns as f64 / 1e6));
                    row.push(format!("{:+.1}%", x.error_pct));
                }
                None => row.extend(["-".into(), "-".into()]),
            }
        }
        t.row(row);
    }
    if base.rows.is_empty() {
        println!("classes      none with a recorded shape or byte count");
    } else {
        print!("{}", t.render());
    }
}
