//! `bench graphs` as a [`Shardable`] kind ([`crate::shard`]): a row with the bench's verdict
//! on it, the file a shard writes, and the merge that rebuilds the unsharded rows and
//! verdicts.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{GraphsBench, GraphsRowSummary};
use crate::shard::{MergeError, Merged, ShardFile, Shardable};
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

/// The unsharded run rebuilt from its shards ([`crate::shard::merge`] of [`Graphs`]).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphsMerged {
    /// The configuration every shard shares.
    pub config: serde_json::Value,
    /// One row per graph, in run order.
    pub rows: Vec<GraphsRowSummary>,
    /// As [`GraphsBench::worse`].
    pub worse: Vec<String>,
    /// As [`GraphsBench::search_worse`].
    pub search_worse: Vec<String>,
}

/// `bench graphs` as a [`Shardable`] kind: rows are [`GraphsShardRow`]s, one per graph; the
/// configuration is the caller's (whatever decides the rows: hardware, solver, limits, steps,
/// the graphs' selection), which every shard of one run must share and the merge compares
/// without interpreting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Graphs;

impl Shardable for Graphs {
    const NAME: &'static str = "graphs";
    type Config = serde_json::Value;
    type Row = GraphsShardRow;
    type Unsharded = GraphsMerged;

    /// Each row must be of the graph at its position.
    fn check(file: &Path, f: &ShardFile<Self>) -> Result<(), MergeError> {
        match f.rows.iter().find(|r| {
            f.items
                .get(r.index)
                .is_some_and(|i| *i != r.row.summary.config)
        }) {
            Some(r) => Err(MergeError::Rows {
                file: file.to_path_buf(),
                reason: format!(
                    "the row of item {} (`{}`) is of graph `{}`",
                    r.index, f.items[r.index], r.row.summary.config
                ),
            }),
            None => Ok(()),
        }
    }

    /// The rows, and the graphs whose rows say concerto lost, in run order.
    fn unsharded(merged: Merged<Self>) -> GraphsMerged {
        let names = |pick: fn(&GraphsShardRow) -> bool| {
            merged
                .rows
                .iter()
                .filter(|r| pick(r))
                .map(|r| r.summary.config.clone())
                .collect()
        };
        GraphsMerged {
            worse: names(|r| r.worse),
            search_worse: names(|r| r.search_worse),
            rows: merged.rows.into_iter().map(|r| r.summary).collect(),
            config: merged.config,
        }
    }
}

impl GraphsBench {
    /// The shard file of this run, with its configuration `config` (see [`Graphs`]).
    pub fn shard_file(&self, config: serde_json::Value) -> Result<ShardFile<Graphs>, BenchError> {
        let rows = self
            .rows
            .iter()
            .map(|r| GraphsShardRow {
                summary: r.summary(),
                worse: r.worse,
                search_worse: r.search_worse,
            })
            .collect();
        ShardFile::new(self.shard, config, self.items.clone(), rows)
    }
}
