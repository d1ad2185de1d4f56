//! `concerto`: schedule deep-learning steps and RCPSP instances with exact solvers.
//!
//! Exit status: 0 on success, 1 when `check` finds violations or a bench finds a result that
//! contradicts its reference, 2 on bad input (unreadable or invalid files, unknown solvers, bad
//! limits).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod ablation_bench;
mod bench;
mod calibrate;
mod check;
mod data;
mod decompose;
mod fidelity;
mod graphs_bench;
mod import;
mod io;
mod merge;
mod model;
mod optimize;
mod opts;
mod pareto;
mod progress;
mod psplib_bench;
mod report;
mod run_cuda;
mod scale_bench;
mod simulate;
mod solve;
mod traces_bench;

/// Schedule deep-learning steps and RCPSP instances with exact solvers.
#[derive(Parser, Debug)]
#[command(name = "concerto", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Solve an RCPSP instance (.sm, .rcp or .json) and print status, makespan and bound.
    Solve(solve::SolveArgs),
    /// Check a schedule (JSON) against a problem; exit 1 and list violations if invalid.
    Check(check::CheckArgs),
    /// Import a graph (an XLA HLO text module, a PyTorch profiler trace, or a native graph
    /// JSON such as the PyTorch adapter writes), costed on a hardware profile.
    Import(import::ImportArgs),
    /// Compare the cost model with a PyTorch profiler trace's measured kernels, or a
    /// jax.profiler trace's with `--module`, per class; fit a profile to them (`-o FILE`, for
    /// `--hardware FILE`).
    Calibrate(calibrate::CalibrateArgs),
    /// The cost model against measured kernels, per kernel class, per instruction and for the
    /// step: an HLO module with a jax.profiler trace of it, or a PyTorch profiler trace.
    Fidelity(fidelity::FidelityArgs),
    /// Build a training-step graph of a model under a parallel plan.
    Model(model::ModelArgs),
    /// Schedule a training-step graph; compare with program order, an XLA-LHS-like and an
    /// Inductor-like scheduler under the simulator.
    Optimize(optimize::OptimizeArgs),
    /// Evaluate a stream plan of a graph (`optimize --plan` writes one; so may other tools)
    /// with the simulator: makespan, exposed communication, peak memory, trace and SVG.
    Simulate(simulate::SimulateArgs),
    /// Makespan against peak memory: concerto under a descending series of memory budgets,
    /// as a table, JSON (`--json`) and an SVG plot (`--svg`).
    Pareto(pareto::ParetoArgs),
    /// Show a graph's critical collectives, the decompositions chosen around them and the
    /// schedule-only (S) vs decomposed (S+AD) makespans; `--sweep-slowdown` for sensitivity.
    Decompose(decompose::DecomposeArgs),
    /// Run stream plans on a GPU with CUDA streams and events; compare measured with simulated
    /// makespans.
    RunCuda(run_cuda::RunCudaArgs),
    /// Benchmarks over instance sets.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// List the solvers this program knows, and the cargo feature of those not compiled in.
    Solvers,
}

/// What a command reports besides success.
pub(crate) enum Failure {
    /// The answer is "no" (violations found, a contradiction with a reference): exit 1.
    Rejected,
    /// Bad input or a failing solver: exit 2.
    Error(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Error(e.into())
    }
}

/// Ends the process quietly, with exit status 0, when printing to standard output fails
/// because its reader went away (`concerto import TRACE | head -1`): `println!` panics on a
/// broken pipe, and a reader that stopped reading asked for no more output, so that is no
/// error of the command. Every other panic keeps the default report.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_broken_pipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Solve(args) => solve::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Fidelity(args) => fidelity::run(&args),
        Command::Model(args) => model::run(&args),
        Command::Optimize(args) => optimize::run(&args),
        Command::Simulate(args) => simulate::run(&args),
        Command::Pareto(args) => pareto::run(&args),
        Command::Decompose(args) => decompose::run(&args),
        Command::RunCuda(args) => run_cuda::run(&args),
        Command::Bench(cmd) => bench::run(cmd),
        Command::Solvers => {
            solve::list_solvers();
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Rejected) => ExitCode::from(1),
        Err(Failure::Error(e)) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(2)
        }
    }
}
