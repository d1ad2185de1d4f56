//! `bench psplib` as a [`Shardable`] kind ([`crate::shard`]): what every shard of one run
//! must share, the file a shard writes, and the merge that rebuilds the unsharded report,
//! whose summary is the unsharded run's.

use std::path::{Path, PathBuf};

use super::{instance_name, PsplibReport, PsplibRow, PsplibRun, PsplibSummary};
use crate::shard::{MergeError, Merged, Shard, ShardFile, Shardable};
use crate::BenchError;

/// The odd-even driver's settings of a run that solves by windows (`--window B`), as given.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WindowSettings {
    /// Activities per block.
    pub block: usize,
    /// Odd-even rounds.
    pub rounds: usize,
    /// Time limit of each window's solve, in seconds.
    pub window_time_limit_s: f64,
    /// Time of the starting heuristic, in seconds, when limited by time.
    pub start_time_s: Option<f64>,
}

/// Everything about a `bench psplib` run that decides its rows and its summary: what every
/// shard of one run shares ([`crate::shard`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PsplibShardConfig {
    /// What the JSON prints.
    pub run: PsplibRun,
    /// The reference table, as given.
    pub reference: String,
    /// The file-name pattern of the selection.
    pub only: Option<String>,
    /// The selection's length limit.
    pub limit: Option<usize>,
    /// The odd-even driver's settings, when it solves.
    pub window: Option<WindowSettings>,
}

/// The unsharded run rebuilt from its shards ([`crate::shard::merge`] of [`Psplib`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PsplibMerged {
    /// The configuration every shard shares.
    pub config: PsplibShardConfig,
    /// Every row in the unsharded order, and their summary.
    pub report: PsplibReport,
}

/// `bench psplib` as a [`Shardable`] kind: rows are [`PsplibRow`]s, one per instance, and
/// the unsharded run is a [`PsplibMerged`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Psplib;

impl Shardable for Psplib {
    const NAME: &'static str = "psplib";
    type Config = PsplibShardConfig;
    type Row = PsplibRow;
    type Unsharded = PsplibMerged;

    /// Each row must be of the instance at its position.
    fn check(file: &Path, f: &ShardFile<Self>) -> Result<(), MergeError> {
        match f
            .rows
            .iter()
            .find(|r| f.items.get(r.index).is_some_and(|i| *i != r.row.instance))
        {
            Some(r) => Err(MergeError::Rows {
                file: file.to_path_buf(),
                reason: format!(
                    "the row of item {} (`{}`) is of instance `{}`",
                    r.index, f.items[r.index], r.row.instance
                ),
            }),
            None => Ok(()),
        }
    }

    /// The summary is [`PsplibSummary::of`] the rows in the unsharded order: the unsharded
    /// run's.
    fn unsharded(merged: Merged<Self>) -> PsplibMerged {
        let summary = PsplibSummary::of(&merged.rows);
        PsplibMerged {
            config: merged.config,
            report: PsplibReport {
                rows: merged.rows,
                summary,
            },
        }
    }
}

/// The shard file of `shard` of a run over `instances` (every instance of the unsharded run,
/// in its order) whose report over the shard's instances is `report`.
pub fn shard_file(
    config: PsplibShardConfig,
    shard: Shard,
    instances: &[PathBuf],
    report: PsplibReport,
) -> Result<ShardFile<Psplib>, BenchError> {
    let items = instances.iter().map(|p| instance_name(p)).collect();
    ShardFile::new(shard, config, items, report.rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows whose percentages sum to different floats in different orders, through shard
    /// files as JSON text, merge to the unsharded run's JSON byte for byte. (The floats are
    /// short decimals, which any float parser reads back exactly.)
    #[test]
    fn shards_merge_to_the_unsharded_json_byte_for_byte() {
        use crate::psplib::{PsplibJson, PsplibRow, PsplibRun, PsplibSummary};
        let pcts = [2.7, 16.9, 15.3, 5.1, 9.9, 9.0, 13.0, 15.8, 1.9, 0.6, 16.7];
        let rows: Vec<PsplibRow> = pcts
            .iter()
            .enumerate()
            .map(|(k, &p)| PsplibRow {
                instance: format!("j30{k}_1"),
                jobs: 32,
                status: "feasible".into(),
                makespan: Some(50),
                lower_bound: Some(40),
                critical_path: 40,
                best_known: Some(45),
                best_known_optimal: Some(true),
                pct_above_best_known: Some(p),
                pct_above_cpm: Some(p + 10.0),
                time_s: 0.25 * (k % 4) as f64 + 0.5,
                checked: true,
                findings: Vec::new(),
            })
            .collect();
        let instances: Vec<PathBuf> = rows
            .iter()
            .map(|r| PathBuf::from(format!("{}.sm", r.instance)))
            .collect();
        let run = PsplibRun {
            solver: "sgs".into(),
            dir: "j30".into(),
            time_limit_s: None,
            work_limit: Some(20),
            seed: 0,
            jobs: 1,
            threads: 1,
        };
        let config = PsplibShardConfig {
            run: run.clone(),
            reference: "j30.csv".into(),
            only: None,
            limit: None,
            window: None,
        };
        let json = |summary: &PsplibSummary| {
            serde_json::to_string(&PsplibJson {
                run: &run,
                summary,
                reference_runs: None,
            })
            .unwrap()
        };
        let unsharded = json(&PsplibSummary::of(&rows));
        let files: Vec<_> = (0..4)
            .rev()
            .map(|i| {
                let shard = Shard::new(i, 4).unwrap();
                let report = PsplibReport {
                    summary: PsplibSummary::of(&shard.pick(&rows)),
                    rows: shard.pick(&rows),
                };
                let file = shard_file(config.clone(), shard, &instances, report).unwrap();
                let text = serde_json::to_string(&file).unwrap();
                let back: ShardFile<Psplib> = serde_json::from_str(&text).unwrap();
                (PathBuf::from(format!("shard-{i}.json")), back)
            })
            .collect();
        // Summing the shards' rows shard by shard gives other floats: the order matters.
        let by_shard: Vec<PsplibRow> = files
            .iter()
            .flat_map(|(_, f)| f.rows.iter().map(|r| r.row.clone()))
            .collect();
        assert_ne!(json(&PsplibSummary::of(&by_shard)), unsharded);
        let merged = crate::shard::merge::<Psplib>(files).unwrap();
        assert_eq!(merged.report.rows, rows);
        assert_eq!(merged.config, config);
        assert_eq!(json(&merged.report.summary), unsharded);
    }
}
