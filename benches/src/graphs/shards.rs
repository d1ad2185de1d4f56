//! The shard files of a `bench graphs` run and their merge ([`crate::shard`]): a row
//! with the bench's verdict on it, the file a shard writes, and the merge that rebuilds the
//! unsharded rows and verdicts.

use serde::{Deserialize, Serialize};

use super::{GraphsBench, GraphsRowSummary};
use crate::BenchError;

/// A row of a `bench graphs` shard file: the row's summary and what the bench concluded from
/// it ([`GraphsBench::worse`], [`GraphsBench::search_worse`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphsShardRow {
    /// The row flattened for JSON.
    pub summary: GraphsRowSummary,
    /// Whether concerto's plan simulates longer than a baseline's.
    pub worse: bool,
    /// Whether concerto's own search lost to a baseline.
    pub search_worse: bool,
}

/// The unsharded run rebuilt from its shards ([`merge`]).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphsMerged<C> {
    /// The configuration every shard shares.
    pub config: C,
    /// One row per graph, in run order.
    pub rows: Vec<GraphsRowSummary>,
    /// As [`GraphsBench::worse`].
    pub worse: Vec<String>,
    /// As [`GraphsBench::search_worse`].
    pub search_worse: Vec<String>,
}

impl GraphsBench {
    /// The shard file of this run, with its configuration `config`: whatever decides the rows
    /// (hardware, solver, limits, steps, the graphs' selection), which every shard of one run
    /// must share and the merge compares without interpreting.
    pub fn shard_file<C>(
        &self,
        config: C,
    ) -> Result<crate::shard::ShardFile<C, GraphsShardRow>, BenchError> {
        let rows = self
            .rows
            .iter()
            .map(|r| GraphsShardRow {
                summary: r.summary(),
                worse: r.worse,
                search_worse: r.search_worse,
            })
            .collect();
        crate::shard::ShardFile::new(
            crate::shard::BenchKind::Graphs,
            self.shard,
            config,
            self.items.clone(),
            rows,
        )
    }
}

/// Merges the shard files of one run (see [`crate::shard::merge`]); each row must be of the
/// graph at its position.
pub fn merge<C: PartialEq + Serialize>(
    files: Vec<(
        std::path::PathBuf,
        crate::shard::ShardFile<C, GraphsShardRow>,
    )>,
) -> Result<GraphsMerged<C>, crate::shard::MergeError> {
    for (file, f) in &files {
        if let Some(r) = f.rows.iter().find(|r| {
            f.items
                .get(r.index)
                .is_some_and(|i| *i != r.row.summary.config)
        }) {
            return Err(crate::shard::MergeError::Rows {
                file: file.clone(),
                reason: format!(
                    "the row of item {} (`{}`) is of graph `{}`",
                    r.index, f.items[r.index], r.row.summary.config
                ),
            });
        }
    }
    let merged = crate::shard::merge(crate::shard::BenchKind::Graphs, files)?;
    let names = |pick: fn(&GraphsShardRow) -> bool| {
        merged
            .rows
            .iter()
            .filter(|r| pick(r))
            .map(|r| r.summary.config.clone())
            .collect()
    };
    Ok(GraphsMerged {
        worse: names(|r| r.worse),
        search_worse: names(|r| r.search_worse),
        rows: merged.rows.into_iter().map(|r| r.summary).collect(),
        config: merged.config,
    })
}
