//! Other solvers' published runs on the PSPLIB sets, and how many of the instances a bench ran
//! each of them proved optimal within a time limit: the table of `concerto bench psplib
//! --reference-runs`.
//!
//! The data is a CSV table, gzipped or not, one row per run and instance, with the header
//! `solver,version,run,set,instance,status,makespan,lower_bound,time_s,time_limit_s,workers,hardware`
//! (columns found by name; `makespan` and `lower_bound` are not read). The repository's is
//! `data/psplib/reference/solvers_j30_j60.csv.gz`: OR-Tools CP-SAT 9.11 (8 workers, 900 s) and
//! OptalCP 0.9 (4 workers, 600 s) on j30 and j60, from ScheduleOpt/optalcp-benchmarks and
//! PyJobShop/Experiments (`data/README.md`). Nothing here is typed in: every count comes from
//! the table when the bench runs.
//!
//! A run proves an instance within `T` seconds when its status is one of [`PROVEN`] and its
//! `time_s` is at most `T`; any other status (`Feasible`, `Solution`, ...) proves nothing.
//! Concerto's own row counts its rows the same way: status `optimal` within `T`.

use std::collections::{BTreeMap, BTreeSet};

use super::PsplibRow;

/// The statuses that mean a run proved its makespan optimal, compared without regard to case:
/// OR-Tools CP-SAT writes `Optimal`, OptalCP `Optimum`.
pub const PROVEN: [&str; 2] = ["Optimal", "Optimum"];

/// One row of the table: one peer run on one instance.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerResult {
    /// The solver (`OR-Tools CP-SAT`).
    pub solver: String,
    /// Its version, as the run reports it.
    pub version: String,
    /// The run's name: rows with the same name are one run.
    pub run: String,
    /// The instance set (`j30`).
    pub set: String,
    /// The instance (`j301_1`, the file stem).
    pub instance: String,
    /// The run's status on the instance, as written (`Optimal`, `Feasible`, ...).
    pub status: String,
    /// Seconds to the status.
    pub time_s: f64,
    /// The run's time limit per instance, in seconds.
    pub time_limit_s: f64,
    /// The run's workers (threads) per instance.
    pub workers: usize,
    /// The hardware, as the run reports it.
    pub hardware: String,
    /// The row's 1-based line in the file.
    pub line: usize,
}

impl PeerResult {
    /// Whether the status is a proof of optimality ([`PROVEN`]).
    pub fn is_proven(&self) -> bool {
        PROVEN.iter().any(|s| s.eq_ignore_ascii_case(&self.status))
    }

    /// Whether the run proved the instance optimal within `limit_s` seconds.
    pub fn proven_within(&self, limit_s: f64) -> bool {
        self.is_proven() && self.time_s <= limit_s
    }
}

mod read;
#[cfg(test)]
mod tests;

pub use read::{parse_peers, read_peers};

/// One peer run on one set, counted on the instances of that set the bench ran.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PeerRun {
    /// The solver.
    pub solver: String,
    /// Its version.
    pub version: String,
    /// The run's name in the table.
    pub run: String,
    /// The instance set.
    pub set: String,
    /// Workers per instance.
    pub workers: usize,
    /// The hardware, as the run reports it.
    pub hardware: String,
    /// The run's own time limit per instance, in seconds.
    pub time_limit_s: f64,
    /// The run's rows of this set in the table.
    pub set_instances: usize,
    /// Of those, the instances the bench ran: what the counts below are out of.
    pub instances: usize,
    /// Proven within the bench's time limit (`None` when the bench had none).
    pub proven_within_time_limit: Option<usize>,
    /// Proven within the run's own limit.
    pub proven_within_own_limit: usize,
}

/// Concerto's row beside the peers: the bench's own proofs on one set.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OwnRun {
    /// The solver.
    pub solver: String,
    /// Concerto's version.
    pub version: String,
    /// The set (as the table names the instances' set; `-` for instances it does not know).
    pub set: String,
    /// Threads of each solve.
    pub threads: usize,
    /// Always `this machine`.
    pub hardware: String,
    /// Instances of the set the bench ran.
    pub instances: usize,
    /// Status `optimal` within the time limit (`None` when the bench had none).
    pub proven_within_time_limit: Option<usize>,
    /// Status `optimal`, whatever the time.
    pub proven: usize,
}

/// The `--reference-runs` table: every peer run of the table on the sets the bench ran,
/// counted on the instances it ran, beside the bench's own proofs. `--json` prints it under
/// `reference_runs`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReferenceRuns {
    /// The table of peer runs, as given.
    pub csv: String,
    /// The bench's time limit per instance, in seconds: `None` for a run limited by work (or
    /// not at all), where no count within the same time exists.
    pub time_limit_s: Option<f64>,
    /// Instances the bench ran.
    pub instances: usize,
    /// The peer runs, by set (in the table's order) then run (in the table's order).
    pub runs: Vec<PeerRun>,
    /// The bench's own row for each set, in the same order.
    pub concerto: Vec<OwnRun>,
}

/// What [`reference_runs`] needs to know about the bench's own run.
#[derive(Clone, Copy, Debug)]
pub struct OwnSettings<'a> {
    /// The solver's name.
    pub solver: &'a str,
    /// Concerto's version.
    pub version: &'a str,
    /// Threads of each solve.
    pub threads: usize,
    /// The time limit per instance, in seconds, if any.
    pub time_limit_s: Option<f64>,
}

/// Counts, for every peer run and set that has a row on an instance of `rows`, the instances
/// of `rows` it proved within `own.time_limit_s` and within its own limit; and the bench's
/// own proofs the same way, set by set (an instance's set is the one the table gives it).
/// Only instances of `rows` count, so a bench of a subset compares on that subset. Cost:
/// O(p log r) for p peer rows and r bench rows.
pub fn reference_runs(
    peers: &[PeerResult],
    rows: &[PsplibRow],
    own: OwnSettings<'_>,
    csv: &str,
) -> ReferenceRuns {
    let ran: BTreeSet<&str> = rows.iter().map(|r| r.instance.as_str()).collect();
    // Sets in the table's order, and each instance's set.
    let mut sets: Vec<&str> = Vec::new();
    let mut set_of: BTreeMap<&str, &str> = BTreeMap::new();
    // (set, run) in the table's order, with its rows.
    let mut groups: Vec<((&str, &str), Vec<&PeerResult>)> = Vec::new();
    let mut group_of: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for p in peers {
        set_of.entry(p.instance.as_str()).or_insert(p.set.as_str());
        let key = (p.set.as_str(), p.run.as_str());
        let k = *group_of.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[k].1.push(p);
    }
    for p in peers {
        if ran.contains(p.instance.as_str()) && !sets.contains(&p.set.as_str()) {
            sets.push(&p.set);
        }
    }
    let mut runs = Vec::new();
    for set in &sets {
        for ((_, _), group) in groups.iter().filter(|((s, _), _)| s == set) {
            let first = group[0];
            let on: Vec<&&PeerResult> = group
                .iter()
                .filter(|p| ran.contains(p.instance.as_str()))
                .collect();
            if on.is_empty() {
                continue;
            }
            runs.push(PeerRun {
                solver: first.solver.clone(),
                version: first.version.clone(),
                run: first.run.clone(),
                set: (*set).to_owned(),
                workers: first.workers,
                hardware: first.hardware.clone(),
                time_limit_s: first.time_limit_s,
                set_instances: group.len(),
                instances: on.len(),
                proven_within_time_limit: own
                    .time_limit_s
                    .map(|t| on.iter().filter(|p| p.proven_within(t)).count()),
                proven_within_own_limit: on
                    .iter()
                    .filter(|p| p.proven_within(p.time_limit_s))
                    .count(),
            });
        }
    }
    let unknown = "-";
    let mut own_sets = sets.clone();
    if rows
        .iter()
        .any(|r| !set_of.contains_key(r.instance.as_str()))
    {
        own_sets.push(unknown);
    }
    let optimal = concerto_rcpsp::Status::Optimal.as_str();
    let concerto = own_sets
        .iter()
        .map(|set| {
            let of_set: Vec<&PsplibRow> = rows
                .iter()
                .filter(|r| set_of.get(r.instance.as_str()).copied().unwrap_or(unknown) == *set)
                .collect();
            let proven = |r: &&&PsplibRow| r.status == optimal;
            OwnRun {
                solver: own.solver.to_owned(),
                version: own.version.to_owned(),
                set: (*set).to_owned(),
                threads: own.threads,
                hardware: "this machine".into(),
                instances: of_set.len(),
                proven_within_time_limit: own.time_limit_s.map(|t| {
                    of_set
                        .iter()
                        .filter(proven)
                        .filter(|r| r.time_s <= t)
                        .count()
                }),
                proven: of_set.iter().filter(proven).count(),
            }
        })
        .collect();
    ReferenceRuns {
        csv: csv.to_owned(),
        time_limit_s: own.time_limit_s,
        instances: rows.len(),
        runs,
        concerto,
    }
}

/// Seconds as the table prints them: `10`, `0.5`.
fn secs(s: f64) -> String {
    format!("{s}")
}

impl ReferenceRuns {
    /// The table `bench psplib --reference-runs` prints: a line saying what is counted, a
    /// row per peer run and set then the bench's row for that set, and lines on a subset or
    /// a run without a time limit.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let within = self
            .time_limit_s
            .map(|t| format!("proven within {} s", secs(t)));
        out.push_str(&match self.time_limit_s {
            Some(t) => format!(
                "Proven optimal within {} s, the limit of this run, by the runs of {}:\n",
                secs(t),
                self.csv
            ),
            None => format!(
                "Proven optimal by the runs of {}, within their own limits:\n",
                self.csv
            ),
        });
        let mut header = vec![
            "set",
            "solver",
            "version",
            "workers",
            "hardware",
            "limit",
            "instances",
        ];
        if let Some(w) = &within {
            header.push(w);
        }
        header.push("proven within own limit");
        let mut t = concerto_pipeline::table::Table::new(&header);
        let mut subset = Vec::new();
        let mut shorter = Vec::new();
        for own in &self.concerto {
            for r in self.runs.iter().filter(|r| r.set == own.set) {
                t.row(self.peer_row(r, &mut shorter));
                if r.instances < r.set_instances {
                    subset.push(format!("{} of {}", r.set_instances, r.run));
                }
            }
            t.row(self.own_row(own));
        }
        out.push_str(&t.render());
        if self.runs.is_empty() {
            out.push_str(&format!(
                "No run of {} has a row on the {} instance(s) of this run.\n",
                self.csv, self.instances
            ));
        }
        if !subset.is_empty() {
            out.push_str(&format!(
                "This run solved a subset: the peers are counted on its {} instances, not on all \
                 of theirs ({}).\n",
                self.instances,
                subset.join(", ")
            ));
        }
        if !shorter.is_empty() {
            out.push_str(&format!(
                "Runs that stopped before this run's limit, counted within their own: {}.\n",
                shorter.join(", ")
            ));
        }
        if self.time_limit_s.is_none() {
            out.push_str(
                "This run had no time limit (it was work-limited), so no same-time comparison \
                 exists: the peers are counted within their own limits.\n",
            );
        }
        out.push_str(&format!(
            "Proven: status {} in the table with time_s at most the limit; this run's: status \
             optimal within the limit.\n",
            PROVEN.join(" or ")
        ));
        out
    }

    /// A peer run's row; a run that stopped before the bench's limit is added to `shorter`.
    fn peer_row(&self, r: &PeerRun, shorter: &mut Vec<String>) -> Vec<String> {
        let limit = format!("{} s", secs(r.time_limit_s));
        let mut row = vec![
            r.set.clone(),
            r.solver.clone(),
            r.version.clone(),
            r.workers.to_string(),
            r.hardware.clone(),
            limit.clone(),
            r.instances.to_string(),
        ];
        let own_limit = format!("{} within {limit}", r.proven_within_own_limit);
        match (self.time_limit_s, r.proven_within_time_limit) {
            (Some(t), Some(n)) => {
                row.push(n.to_string());
                if r.time_limit_s > t {
                    row.push(own_limit);
                } else {
                    row.push("-".into());
                    if r.time_limit_s < t {
                        shorter.push(format!("{} ({limit})", r.run));
                    }
                }
            }
            _ => row.push(own_limit),
        }
        row
    }

    /// The bench's own row for a set.
    fn own_row(&self, own: &OwnRun) -> Vec<String> {
        let mut row = vec![
            own.set.clone(),
            own.solver.clone(),
            own.version.clone(),
            format!(
                "{} thread{}",
                own.threads,
                if own.threads == 1 { "" } else { "s" }
            ),
            own.hardware.clone(),
            self.time_limit_s
                .map_or("none".into(), |t| format!("{} s", secs(t))),
            own.instances.to_string(),
        ];
        match own.proven_within_time_limit {
            Some(n) => {
                row.push(n.to_string());
                row.push("-".into());
            }
            None => row.push(format!("{} (work-limited)", own.proven)),
        }
        row
    }
}
