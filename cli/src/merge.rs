//! `concerto bench merge`: join the `--shard I/N --json` files of one `bench psplib`,
//! `bench graphs` or `bench scale` run into what the unsharded run prints. The checks and the
//! merge are [`concerto_benches::shard`]'s, each bench a [`Shardable`] kind; this lists the
//! kinds it merges ([`KINDS`]) and prints the result through the same code as the benches
//! themselves.

use std::path::PathBuf;

use clap::Args;
use concerto_benches::graphs::Graphs;
use concerto_benches::psplib::Psplib;
use concerto_benches::scale::Scale;
use concerto_benches::shard::{ShardTexts, Shardable};

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

/// Every bench whose shard files `bench merge` joins, in the order its errors name them.
const KINDS: &[&str] = &[Psplib::NAME, Graphs::NAME, Scale::NAME];

pub(crate) fn run(args: &MergeArgs) -> Result<(), Failure> {
    let files = ShardTexts::read(&args.files, KINDS)?;
    match files.bench() {
        Psplib::NAME => {
            let m = files.merge::<Psplib>()?;
            let json = match args.json {
                true => Some(psplib_bench::summary_json(&m.config.run, &m.report, None)?),
                false => None,
            };
            psplib_bench::finish(&m.config.run, &m.config.reference, &m.report, None, json)
        }
        Graphs::NAME => {
            let m = files.merge::<Graphs>()?;
            let json = match args.json {
                true => Some(graphs_bench::summary_json(&m.rows)?),
                false => None,
            };
            graphs_bench::finish(&m.rows, &m.worse, &m.search_worse, json)
        }
        Scale::NAME => {
            let m = files.merge::<Scale>()?;
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
