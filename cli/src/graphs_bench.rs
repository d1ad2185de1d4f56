//! `concerto bench graphs`: every scheduler on model x parallelism configurations (or one
//! shard of them).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use concerto_benches::graphs::{self, GraphsRowSummary};
use concerto_benches::shard::Shard;

use crate::data::DataArgs;
use crate::io::read_input;
use crate::opts::OptimizeOpts;
use crate::progress;
use crate::Failure;

/// Arguments of `concerto bench graphs`. All but `--json` and `--shard` serialise into a
/// shard file's configuration.
#[derive(Args, Debug, serde::Serialize)]
pub(crate) struct GraphsArgs {
    #[command(flatten)]
    pub(crate) opts: OptimizeOpts,
    /// Only the configurations whose name contains this.
    #[arg(long, value_name = "PATTERN")]
    pub(crate) only: Option<String>,
    /// Also run these graphs first (XLA HLO text modules, gzipped or not, native JSON graphs
    /// or profiler traces), named by their file name without extensions.
    #[arg(long = "graph", value_name = "FILE")]
    pub(crate) graphs: Vec<PathBuf>,
    /// Also run the three real XLA train steps of the data folder (`data/hlo`: Llama 3.1 8B
    /// and 70B, Mixtral 8x7B; see `data/README.md`), after the `--graph` files.
    #[arg(long)]
    pub(crate) xla_steps: bool,
    #[command(flatten)]
    #[serde(skip)]
    pub(crate) data: DataArgs,
    /// Print one JSON array instead of the table (with `--shard`: the shard's file for
    /// `concerto bench merge`).
    #[arg(long)]
    #[serde(skip)]
    pub(crate) json: bool,
    /// Also write the rows as an SVG bar chart: per graph, concerto's gain over the best
    /// baseline and its gap to the proven bound.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub(crate) svg: Option<PathBuf>,
    /// Run only shard I of N (I from 0): graph k of the run, in its order (the `--graph`
    /// files, then the configurations), belongs to shard k mod N. `concerto bench merge`
    /// joins the shards' `--json` files.
    #[arg(long, value_name = "I/N")]
    #[serde(skip)]
    pub(crate) shard: Option<Shard>,
}

/// The three real XLA train steps of the data folder (`data/hlo/<name>.hlo.gz`).
const XLA_STEPS: [&str; 3] = [
    "llama31_8b_bf16_1x8",
    "llama31_70b_bf16_32x8",
    "mixtral_8x7b_bf16_2x8",
];

pub(crate) fn run(args: &GraphsArgs) -> Result<(), Failure> {
    let pipeline = args.opts.pipeline()?;
    let mut paths = args.graphs.clone();
    if args.xla_steps {
        let dir = args.data.sub("hlo", "--xla-steps")?;
        for m in XLA_STEPS {
            let path = dir.join(format!("{m}.hlo.gz"));
            if !path.is_file() {
                return Err(anyhow::anyhow!("--xla-steps: {} is missing", path.display()).into());
            }
            paths.push(path);
        }
    }
    let import = args.opts.import_options()?;
    let mut extra = Vec::new();
    for path in &paths {
        let only = args.only.as_deref();
        let name = concerto_extract::read::display_stem(path);
        if only.is_some_and(|p| !name.contains(p)) {
            continue;
        }
        let input = read_input(path, &import)
            .with_context(|| format!("bench graphs --graph {}", path.display()))?;
        if input.contention(args.opts.contention) != args.opts.contention {
            // One profile costs every graph of the run; a trace's measured durations already
            // contain the slowdown, so the profile's contention would count it twice.
            return Err(anyhow::anyhow!(
                "bench graphs --graph {}: a profiler trace's durations are measured (contention \
                 included); pass --contention explicitly (1 for none on top), which then applies \
                 to every graph of the run",
                path.display()
            )
            .into());
        }
        extra.push((name, input.graph, input.schedule));
    }
    let bar = progress::bar(args.json);
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let bench = graphs::run_shard(&pipeline, args.only.as_deref(), &extra, shard, bar.as_ref())?;
    let rows: Vec<_> = bench.rows.iter().map(graphs::GraphsRow::summary).collect();
    if let Some(path) = &args.svg {
        std::fs::write(path, graphs::svg_chart(&rows))
            .with_context(|| format!("bench graphs --svg {}", path.display()))?;
    }
    let json = match (args.json, args.shard) {
        (false, _) => None,
        (true, None) => Some(summary_json(&rows)?),
        (true, Some(_)) => Some(serde_json::to_string(
            &bench.shard_file(serde_json::to_value(args)?)?,
        )?),
    };
    finish(&rows, &bench.worse, &bench.search_worse, json)
}

/// The JSON of a run: the array of its rows.
pub(crate) fn summary_json(rows: &[GraphsRowSummary]) -> anyhow::Result<String> {
    Ok(serde_json::to_string(rows)?)
}

/// Prints `json` when given, else the table of `rows`; then, to standard error, the graphs
/// where concerto lost to a baseline, and exit 1 if any.
pub(crate) fn finish(
    rows: &[GraphsRowSummary],
    worse: &[String],
    search_worse: &[String],
    json: Option<String>,
) -> Result<(), Failure> {
    match json {
        Some(json) => println!("{json}"),
        None => print!("{}", graphs::GraphsTable(rows)),
    }
    if !search_worse.is_empty() {
        eprintln!(
            "concerto's own search lost to a baseline (its plan was kept only by falling back) on: {}",
            search_worse.join(", ")
        );
    }
    if !worse.is_empty() {
        eprintln!("concerto is worse than a baseline on: {}", worse.join(", "));
    }
    if !worse.is_empty() || !search_worse.is_empty() {
        return Err(Failure::Rejected);
    }
    Ok(())
}
