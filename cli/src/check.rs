//! `concerto check`.

use std::path::PathBuf;

use clap::Args;
use concerto_rcpsp::{check, io, read_problem, ReadError, Violation, Violations};

use crate::Failure;

/// Arguments of `concerto check`.
#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    /// The problem (`.sm`, `.rcp` or `.json`).
    pub(crate) problem: PathBuf,
    /// The schedule, as written by `concerto solve --output`.
    pub(crate) schedule: PathBuf,
}

pub(crate) fn run(args: &CheckArgs) -> Result<(), Failure> {
    let problem = read_problem(&args.problem)?;
    let schedule = match io::read_schedule(&problem, &args.schedule) {
        Ok(s) => s,
        // A schedule without some start times is an answer ("invalid"), not a broken file.
        Err(ReadError::MissingStarts { missing, .. }) => {
            let violations = Violations(
                missing
                    .into_iter()
                    .map(|activity| Violation::MissingActivity { activity })
                    .collect(),
            );
            println!("invalid: {violations}");
            return Err(Failure::Rejected);
        }
        Err(e) => return Err(e.into()),
    };
    match check(&problem, &schedule) {
        Ok(makespan) => {
            println!("valid: makespan {makespan}");
            Ok(())
        }
        Err(violations) => {
            println!("invalid: {violations}");
            Err(Failure::Rejected)
        }
    }
}
