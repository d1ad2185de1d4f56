//! `concerto bench ablation`: the Concerto paper's two ablations on this project's models and
//! hardware profiles.
//!
//! 1. **Scheduling and decomposition** on GPT tensor-parallel plans: the baseline (program
//!    order, what Megatron-LM issues eagerly), S (concerto's schedule only) and S+AD (schedule
//!    plus the decompositions of `--decompose sequential`), in the paper's two settings: (1,16,1)
//!    with NVLink in 16-bit precision and (1,8,2) without NVLink (PCIe) in fp32, each also on
//!    the measured `h100` profile. The column `shape` says whether baseline > S > S+AD holds.
//! 2. **Fusion** on ZeRO-3 at 8, 16 and 32 GPUs: S (unfused) and S+F (concerto on the graph
//!    with collectives fused into buckets chosen under concerto's plan, kept only when not
//!    longer).
//! 3. **Decomposition families** on the same GPT with sequence parallelism (the tensor-parallel
//!    all-reduces become all-gathers and reduce-scatters along the sequence, where Google's
//!    collective matmul applies): S+AD with Concerto's splits only, with collective-matmul
//!    rings only, and with both, on one graph.
//!
//! Every makespan is simulated from a plan that passed the plan and schedule checks of the
//! optimisation pipeline (`concerto_benches::ablation`, which this renders). Exit 1
//! when concerto's schedule loses to a baseline anywhere.

use clap::Args;
use concerto_benches::ablation;

use crate::opts::OptimizeOpts;
use crate::progress;
use crate::Failure;

/// Arguments of `concerto bench ablation`.
#[derive(Args, Debug)]
#[command(mut_arg("hardware", |a| a.hide(true)))]
pub(crate) struct AblationArgs {
    /// Solver options (the hardware is per row; `--decompose` and `--fuse` are set per table).
    #[command(flatten)]
    pub(crate) opts: OptimizeOpts,
    /// Only the rows whose name contains this (e.g. `PCIe`, `zero3`).
    #[arg(long, value_name = "PATTERN")]
    pub(crate) only: Option<String>,
    /// Print one JSON object (`ablation` and `fusion` arrays) instead of the tables.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: &AblationArgs) -> Result<(), Failure> {
    let pipeline = args.opts.pipeline()?;
    let bar = progress::bar(args.json);
    let report = ablation::run(&pipeline, args.only.as_deref(), bar.as_ref())?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{report}");
    }
    if !report.worse.is_empty() {
        eprintln!(
            "concerto is worse than a baseline on: {}",
            report.worse.join(", ")
        );
        return Err(Failure::Rejected);
    }
    Ok(())
}
