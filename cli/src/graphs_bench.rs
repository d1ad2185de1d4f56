//! `concerto bench graphs`: every scheduler on model x parallelism configurations.

use clap::Args;
use concerto_pipeline::bench::graphs;

use crate::opts::OptimizeOpts;
use crate::progress;
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

pub(crate) fn run(args: &GraphsArgs) -> Result<(), Failure> {
    let pipeline = args.opts.pipeline()?;
    let bar = progress::bar(args.json);
    let bench = graphs::run(&pipeline, args.only.as_deref(), bar.as_ref())?;
    let rows: Vec<_> = bench.rows.iter().map(graphs::GraphsRow::summary).collect();
    let worse = &bench.worse;
    if args.json {
        println!("{}", serde_json::to_string(&rows)?);
    } else {
        print!("{bench}");
    }
    if !worse.is_empty() {
        eprintln!("concerto is worse than a baseline on: {}", worse.join(", "));
        return Err(Failure::Rejected);
    }
    Ok(())
}
