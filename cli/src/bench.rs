//! `concerto bench ...`.

use clap::Subcommand;

use crate::ablation_bench::{self, AblationArgs};
use crate::graphs_bench::{self, GraphsArgs};
use crate::merge::{self, MergeArgs};
use crate::psplib_bench::{self, PsplibArgs};
use crate::scale_bench::{self, ScaleArgs};
use crate::traces_bench::{self, TracesArgs};
use crate::Failure;

/// The benchmark families.
#[derive(Subcommand, Debug)]
pub(crate) enum BenchCommand {
    /// Solve every PSPLIB `.sm` instance of a directory, check every schedule and compare with
    /// reference bounds.
    Psplib(PsplibArgs),
    /// The odd-even driver on generated DL-like training steps of growing size, against the
    /// plain heuristic given the same wall time.
    Scale(ScaleArgs),
    /// Every scheduler (program order, lhs, inductor, concerto) on model x parallelism
    /// configurations; exit 1 if concerto is worse than a baseline anywhere.
    Graphs(GraphsArgs),
    /// The Concerto paper's ablations: baseline / S / S+AD on GPT tensor-parallel plans (NVLink
    /// bf16, PCIe fp32) and fusion off / on on ZeRO-3 at 8, 16 and 32 GPUs.
    Ablation(AblationArgs),
    /// The simulator against measured steps: every step of PyTorch profiler traces imported
    /// and its recorded order replayed (error, worst step, largest op shift, the GPU alone).
    Traces(TracesArgs),
    /// Join the `--shard I/N --json` files of one `bench psplib`, `bench graphs` or `bench
    /// scale` run into what the unsharded run prints (its table, or with `--json` its JSON);
    /// refuse files of different runs, a missing or repeated shard, or a malformed file.
    Merge(MergeArgs),
}

pub(crate) fn run(cmd: BenchCommand) -> Result<(), Failure> {
    match cmd {
        BenchCommand::Psplib(args) => psplib_bench::run(&args),
        BenchCommand::Scale(args) => scale_bench::run(&args),
        BenchCommand::Graphs(args) => graphs_bench::run(&args),
        BenchCommand::Ablation(args) => ablation_bench::run(&args),
        BenchCommand::Traces(args) => traces_bench::run(&args),
        BenchCommand::Merge(args) => merge::run(&args),
    }
}
