//! `concerto bench merge`: join the `--shard I/N --json` files of one `bench psplib`,
//! `bench graphs` or `bench scale` run into what the unsharded run prints. The checks and the
//! merge are [`concerto_benches::shard::read`]; this prints the result through the
//! same code as the benches themselves.

use std::path::PathBuf;

use clap::Args;
use concerto_benches::shard::{self, MergedBench};

use crate::{graphs_bench, psplib_bench, scale_bench, Failure};

/// Arguments of `concerto bench merge`.
#[derive(Args, Debug)]
pub(crate) struct MergeArgs {
    /// The shard files, one per shard of the split, in any order.
    #[arg(value_name = "FILES", required = true)]
    files: Vec<PathBuf>,
    /// Print the unsharded run's JSON instead of its table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &MergeArgs) -> Result<(), Failure> {
    match shard::read(&args.files)? {
        MergedBench::Psplib(m) => {
            let json = match args.json {
                true => Some(psplib_bench::summary_json(&m.config.run, &m.report)?),
                false => None,
            };
            psplib_bench::finish(&m.config.run, &m.config.reference, &m.report, json)
        }
        MergedBench::Graphs(m) => {
            let json = match args.json {
                true => Some(graphs_bench::summary_json(&m.rows)?),
                false => None,
            };
            graphs_bench::finish(&m.rows, &m.worse, &m.search_worse, json)
        }
        MergedBench::Scale(m) => {
            let json = match args.json {
                true => Some(scale_bench::summary_json(&m.config.run, &m.rows)?),
                false => None,
            };
            scale_bench::finish(&m.rows, json)
        }
        _ => Err(
            anyhow::anyhow!("bench merge: the files are of a bench this build cannot print").into(),
        ),
    }
}
