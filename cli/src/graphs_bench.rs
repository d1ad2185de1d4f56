//! `concerto bench graphs`: every scheduler on model x parallelism configurations.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use concerto_pipeline::bench::graphs;

use crate::io::read_input;
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
    /// Also run these graphs first (XLA HLO text modules or native JSON graphs), named by
    /// their file stem; `--shared` adds the three modules of `$CONCERTO_SHARED/hlo`.
    #[arg(long = "graph", value_name = "FILE")]
    pub(crate) graphs: Vec<PathBuf>,
    /// Also run the real XLA train steps in `$CONCERTO_SHARED/hlo` (default `../shared`).
    #[arg(long)]
    pub(crate) shared: bool,
    /// Print one JSON array instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The three real XLA modules of the shared data folder.
const SHARED_MODULES: [&str; 3] = [
    "llama31_8b_bf16_1x8",
    "llama31_70b_bf16_32x8",
    "mixtral_8x7b_bf16_2x8",
];

pub(crate) fn run(args: &GraphsArgs) -> Result<(), Failure> {
    let pipeline = args.opts.pipeline()?;
    let mut paths = args.graphs.clone();
    if args.shared {
        let dir = PathBuf::from(
            std::env::var("CONCERTO_SHARED").unwrap_or_else(|_| "../shared".to_string()),
        )
        .join("hlo");
        for m in SHARED_MODULES {
            let path = dir.join(format!("{m}.hlo"));
            if !path.is_file() {
                return Err(anyhow::anyhow!(
                    "--shared: {} is missing (set CONCERTO_SHARED to the shared data folder)",
                    path.display()
                )
                .into());
            }
            paths.push(path);
        }
    }
    let import = args.opts.import_options()?;
    let mut extra = Vec::new();
    for path in &paths {
        let only = args.only.as_deref();
        let name = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        if only.is_some_and(|p| !name.contains(p)) {
            continue;
        }
        let input = read_input(path, &import)
            .with_context(|| format!("bench graphs --graph {}", path.display()))?;
        extra.push((name, input.graph, input.schedule));
    }
    let bar = progress::bar(args.json);
    let bench = graphs::run(&pipeline, args.only.as_deref(), &extra, bar.as_ref())?;
    let rows: Vec<_> = bench.rows.iter().map(graphs::GraphsRow::summary).collect();
    let worse = &bench.worse;
    if args.json {
        println!("{}", serde_json::to_string(&rows)?);
    } else {
        print!("{bench}");
    }
    if !bench.search_worse.is_empty() {
        eprintln!(
            "concerto's own search lost to a baseline (its plan was kept only by falling back) on: {}",
            bench.search_worse.join(", ")
        );
    }
    if !worse.is_empty() {
        eprintln!("concerto is worse than a baseline on: {}", worse.join(", "));
    }
    if !worse.is_empty() || !bench.search_worse.is_empty() {
        return Err(Failure::Rejected);
    }
    Ok(())
}
