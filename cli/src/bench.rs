//! `concerto bench ...`.

use clap::Subcommand;

use crate::psplib_bench::{self, PsplibArgs};
use crate::Failure;

/// The benchmark families.
#[derive(Subcommand, Debug)]
pub(crate) enum BenchCommand {
    /// Solve every PSPLIB `.sm` instance of a directory, check every schedule and compare with
    /// reference bounds.
    Psplib(PsplibArgs),
}

pub(crate) fn run(cmd: BenchCommand) -> Result<(), Failure> {
    match cmd {
        BenchCommand::Psplib(args) => psplib_bench::run(&args),
    }
}
