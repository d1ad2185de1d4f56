//! `concerto calibrate TRACE`: the cost model against a measured step of a PyTorch profiler
//! trace ([`concerto_extract::kineto::calibrate`]), a profile fitted to it (`-o FILE`, which
//! `--hardware FILE` takes), and the fitted profile checked on another step of the same trace.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use concerto_extract::kineto::{self, calibrate::Calibration, TraceOptions};
use concerto_graph::Hardware;
use serde::Serialize;

use crate::io::write;
use crate::Failure;
use concerto_pipeline::table::Table;

/// Arguments of `concerto calibrate`.
#[derive(Args, Debug)]
pub(crate) struct CalibrateArgs {
    /// A PyTorch profiler trace (`.json` or `.json.gz`).
    pub(crate) trace: PathBuf,
    /// The profile to compare with: a name, or a fitted profile file; default: by the trace's
    /// GPU (`v100`, `a100`, `h100`).
    #[arg(long)]
    pub(crate) hardware: Option<String>,
    /// The step to fit on (default: the median step).
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
    let bytes =
        std::fs::read(&args.trace).with_context(|| format!("reading {}", args.trace.display()))?;
    let text =
        kineto::decode(&bytes).with_context(|| format!("reading {}", args.trace.display()))?;
    let options = TraceOptions {
        step,
        gpus_per_node: args.gpus_per_node,
        ..TraceOptions::default()
    };
    kineto::import(&text, &options)
        .with_context(|| format!("importing trace {}", args.trace.display()))
}

pub(crate) fn run(args: &CalibrateArgs) -> Result<(), Failure> {
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
    // The fit checked on another step: the one after the fitted step, else the one before.
    let other = report
        .steps
        .iter()
        .position(|s| s.name == report.step)
        .and_then(|k| {
            report
                .steps
                .get(k + 1)
                .or(k.checked_sub(1).and_then(|j| report.steps.get(j)))
        })
        .and_then(|s| s.name.strip_prefix("ProfilerStep#"))
        .and_then(|n| n.parse::<u64>().ok());
    let held_out = match other {
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
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
        return Ok(());
    }
    println!(
        "trace        {} {} ({})",
        out.trace,
        out.step,
        report.device.as_deref().unwrap_or("GPU not recorded")
    );
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
    Ok(())
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
