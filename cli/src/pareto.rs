//! `concerto pareto`: makespan against peak memory over a descending series of budgets
//! ([`concerto_pipeline::pareto`]), as a table, JSON and an SVG plot.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::io::{read_input, write};
use crate::opts::OptimizeOpts;
use crate::{progress, Failure};

/// Arguments of `concerto pareto`.
#[derive(Args, Debug)]
pub(crate) struct ParetoArgs {
    /// The graph: native `.json` or an XLA HLO text module (`.hlo`).
    pub(crate) graph: PathBuf,
    /// Budgets after the unbounded run (each one S step within the time limit or work budget).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub(crate) points: usize,
    /// Write the plot (SVG) to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) opts: OptimizeOpts,
}

pub(crate) fn run(args: &ParetoArgs) -> Result<(), Failure> {
    if args.opts.memory_budget.is_some() {
        return Err(anyhow::anyhow!(
            "pareto sweeps its own budgets: --memory-budget does not apply"
        )
        .into());
    }
    let input = read_input(&args.graph, &args.opts.import_options()?)?;
    let configured = concerto::configure(input, args.opts.pipeline()?, args.opts.contention)
        .with_context(|| format!("configuring the run of {}", args.graph.display()))?;
    let (pipeline, graph) = (configured.pipeline, configured.input.graph);
    let bar = progress::bar(args.json);
    let front = concerto_pipeline::pareto(&pipeline, &graph, args.points, bar.as_ref())?;
    if let Some(path) = &args.svg {
        write(path, &front.svg())?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&front)?);
    } else {
        println!("graph        {} ({} ops)", front.graph, graph.len());
        print!("{}", front.table());
    }
    Ok(())
}
