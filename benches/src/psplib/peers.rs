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
use std::path::Path;

use concerto_rcpsp::ReadError;

use super::PsplibRow;
use crate::BenchError;

/// The statuses that mean a run proved its makespan optimal, compared without regard to case:
/// OR-Tools CP-SAT writes `Optimal`, OptalCP `Optimum`.
pub const PROVEN: [&str; 2] = ["Optimal", "Optimum"];

/// The columns [`parse_peers`] requires in the header.
const COLUMNS: [&str; 10] = [
    "solver",
    "version",
    "run",
    "set",
    "instance",
    "status",
    "time_s",
    "time_limit_s",
    "workers",
    "hardware",
];

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

/// Parses a table of peer runs (see the module docs) in file order. Every row must have a
/// cell for each column of the header (double-quoted cells may hold commas), numbers where
/// numbers go (`time_s` at least 0, `time_limit_s` above 0, `workers` a count), one row per
/// run and instance, and the same solver, version, time limit, workers and hardware on every
/// row of a run. An error names `file`, the line and the column. Cost: O(size of the text).
pub fn parse_peers(text: &str, file: &str) -> Result<Vec<PeerResult>, ReadError> {
    let syntax = |line: usize, column: usize, expected: String, found: String| ReadError::Syntax {
        file: file.to_owned(),
        line,
        column,
        expected,
        found,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((header_line, header)) = lines.next() else {
        return Err(syntax(1, 1, "a header line".into(), "an empty file".into()));
    };
    let names: Vec<String> = split_cells(header)
        .map_err(|column| {
            syntax(
                header_line,
                column,
                "a closing quote".into(),
                "end of line".into(),
            )
        })?
        .into_iter()
        .map(|(_, cell)| cell)
        .collect();
    let mut index = [0; COLUMNS.len()];
    for (k, name) in COLUMNS.iter().enumerate() {
        index[k] = names.iter().position(|c| c == name).ok_or_else(|| {
            syntax(
                header_line,
                1,
                format!("a column `{name}` in the header"),
                format!("`{header}`"),
            )
        })?;
    }
    let [c_solver, c_version, c_run, c_set, c_instance, c_status, c_time, c_limit, c_workers, c_hardware] =
        index;
    let mut rows: Vec<PeerResult> = Vec::new();
    // The first row of each run, and the line of each (run, instance).
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (line, text) in lines {
        let cells = split_cells(text).map_err(|column| {
            syntax(line, column, "a closing quote".into(), "end of line".into())
        })?;
        if cells.len() != names.len() {
            return Err(syntax(
                line,
                cells.last().map_or(1, |(c, _)| *c),
                format!("{} cells, as in the header", names.len()),
                format!("{}", cells.len()),
            ));
        }
        let text_of = |c: usize| cells[c].1.clone();
        let number = |c: usize, what: &str, ok: fn(f64) -> bool| -> Result<f64, ReadError> {
            let (column, cell) = &cells[c];
            cell.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && ok(*v))
                .ok_or_else(|| syntax(line, *column, what.into(), format!("`{cell}`")))
        };
        let workers = {
            let (column, cell) = &cells[c_workers];
            cell.parse::<usize>().map_err(|_| {
                syntax(
                    line,
                    *column,
                    "a count of workers".into(),
                    format!("`{cell}`"),
                )
            })?
        };
        let row = PeerResult {
            solver: text_of(c_solver),
            version: text_of(c_version),
            run: text_of(c_run),
            set: text_of(c_set),
            instance: text_of(c_instance),
            status: text_of(c_status),
            time_s: number(c_time, "seconds (0 or more) for `time_s`", |v| v >= 0.0)?,
            time_limit_s: number(c_limit, "seconds (more than 0) for `time_limit_s`", |v| {
                v > 0.0
            })?,
            workers,
            hardware: text_of(c_hardware),
            line,
        };
        for (c, what) in [(c_run, "a run name"), (c_instance, "an instance name")] {
            if cells[c].1.is_empty() {
                return Err(syntax(
                    line,
                    cells[c].0,
                    what.into(),
                    "an empty cell".into(),
                ));
            }
        }
        if let Some(first) = seen.insert((row.run.clone(), row.instance.clone()), line) {
            return Err(syntax(
                line,
                cells[c_instance].0,
                format!("one row per run and instance (run `{}`)", row.run),
                format!("`{}` again, first on line {first}", row.instance),
            ));
        }
        match runs.get(&row.run) {
            None => {
                runs.insert(row.run.clone(), rows.len());
            }
            Some(&k) => {
                let first = &rows[k];
                let differs = [
                    (c_solver, "solver", first.solver != row.solver),
                    (c_version, "version", first.version != row.version),
                    (
                        c_limit,
                        "time_limit_s",
                        first.time_limit_s != row.time_limit_s,
                    ),
                    (c_workers, "workers", first.workers != row.workers),
                    (c_hardware, "hardware", first.hardware != row.hardware),
                ];
                if let Some((c, what, _)) = differs.iter().find(|d| d.2) {
                    return Err(syntax(
                        line,
                        cells[*c].0,
                        format!(
                            "the `{what}` of run `{}` on line {}, `{}`",
                            row.run,
                            first.line,
                            text_at(first, what)
                        ),
                        format!("`{}`", cells[*c].1),
                    ));
                }
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

/// The cell of `row` under column `what`, as text (for an error message).
fn text_at(row: &PeerResult, what: &str) -> String {
    match what {
        "solver" => row.solver.clone(),
        "version" => row.version.clone(),
        "time_limit_s" => row.time_limit_s.to_string(),
        "workers" => row.workers.to_string(),
        _ => row.hardware.clone(),
    }
}

/// The cells of a CSV line with their 1-based columns, trimmed; a cell in double quotes may
/// hold commas (and `""` for a quote). `Err(column)` where a quote is not closed.
fn split_cells(line: &str) -> Result<Vec<(usize, String)>, usize> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut start = 1;
    let mut quoted: Option<usize> = None;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match (quoted, c) {
            (Some(_), '"') if chars.peek().is_some_and(|&(_, d)| d == '"') => {
                cell.push('"');
                chars.next();
            }
            (Some(_), '"') => quoted = None,
            (Some(_), c) => cell.push(c),
            (None, '"') if cell.trim().is_empty() => {
                cell.clear();
                quoted = Some(i + 1);
            }
            (None, ',') => {
                cells.push((start, std::mem::take(&mut cell).trim().to_owned()));
                start = i + 2;
            }
            (None, c) => cell.push(c),
        }
    }
    if let Some(column) = quoted {
        return Err(column);
    }
    cells.push((start, cell.trim().to_owned()));
    Ok(cells)
}

/// Reads a table of peer runs (see [`parse_peers`]), gzipped or not (a file that starts with
/// gzip's magic number is decompressed). An unreadable file is an error naming it. Cost:
/// O(size of the file).
pub fn read_peers(path: &Path) -> Result<Vec<PeerResult>, BenchError> {
    let file = path.display().to_string();
    let io = |source: std::io::Error| ReadError::Io {
        file: file.clone(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::MultiGzDecoder::new(&bytes[..]),
            &mut text,
        )
        .map_err(|e| io(std::io::Error::new(e.kind(), format!("gzip: {e}"))))?;
        text
    } else {
        String::from_utf8(bytes).map_err(|e| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
            ))
        })?
    };
    Ok(parse_peers(&text, &file)?)
}

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
                t.row(row);
                if r.instances < r.set_instances {
                    subset.push(format!("{} of {}", r.set_instances, r.run));
                }
            }
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
            t.row(row);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "solver,version,run,set,instance,status,makespan,lower_bound,time_s,time_limit_s,workers,hardware";

    /// Two runs on three j30 instances and one j60 instance.
    fn csv() -> String {
        [
            HEADER,
            "A,1.0,a_8w,j30,j301_1,Optimal,43,43,0.5,900,8,cluster",
            "A,1.0,a_8w,j30,j301_2,Optimal,47,47,12.0,900,8,cluster",
            "A,1.0,a_8w,j30,j301_3,Feasible,50,48,900.3,900,8,cluster",
            "A,1.0,a_8w,j60,j601_1,Optimal,77,77,3,900,8,cluster",
            "B,\"0.9, beta\",b_4w,j30,j301_1,Optimum,43,43,10,600,4,Ryzen",
            "B,\"0.9, beta\",b_4w,j30,j301_2,Solution,48,47,600,600,4,Ryzen",
            "B,\"0.9, beta\",b_4w,j30,j301_3,Optimum,48,48,9.99,600,4,Ryzen",
        ]
        .join("\n")
    }

    fn row(instance: &str, status: &str, time_s: f64) -> PsplibRow {
        PsplibRow {
            instance: instance.into(),
            jobs: 32,
            status: status.into(),
            makespan: Some(43),
            lower_bound: Some(43),
            critical_path: 40,
            best_known: Some(43),
            best_known_optimal: Some(true),
            pct_above_best_known: Some(0.0),
            pct_above_cpm: Some(7.5),
            time_s,
            checked: true,
            findings: Vec::new(),
        }
    }

    fn own(time_limit_s: Option<f64>) -> OwnSettings<'static> {
        OwnSettings {
            solver: "pumpkin",
            version: "concerto 0.1.0",
            threads: 2,
            time_limit_s,
        }
    }

    #[test]
    fn parses_rows_with_quoted_cells() {
        let peers = parse_peers(&csv(), "peers.csv").unwrap();
        assert_eq!(peers.len(), 7);
        assert_eq!(peers[4].version, "0.9, beta");
        assert_eq!(peers[4].hardware, "Ryzen");
        assert_eq!(peers[4].line, 6);
        assert_eq!((peers[0].time_limit_s, peers[0].workers), (900.0, 8));
    }

    /// Within 10 s: A proves j301_1 (0.5 s), not j301_2 (12 s) nor the `Feasible` j301_3;
    /// B proves j301_1 (10 s, at the limit) and j301_3 (9.99 s), not the `Solution` j301_2.
    /// Within their own limits: A proves 2, B 2.
    #[test]
    fn counts_proofs_within_a_limit_and_the_runs_own() {
        let peers = parse_peers(&csv(), "peers.csv").unwrap();
        let rows = [
            row("j301_1", "optimal", 0.1),
            row("j301_2", "optimal", 10.5),
            row("j301_3", "feasible", 10.0),
        ];
        let r = reference_runs(&peers, &rows, own(Some(10.0)), "peers.csv");
        let counts: Vec<_> = r
            .runs
            .iter()
            .map(|p| {
                (
                    p.run.as_str(),
                    p.set.as_str(),
                    p.instances,
                    p.proven_within_time_limit,
                    p.proven_within_own_limit,
                )
            })
            .collect();
        assert_eq!(
            counts,
            [
                ("a_8w", "j30", 3, Some(1), 2),
                ("b_4w", "j30", 3, Some(2), 2)
            ]
        );
        assert_eq!(r.concerto.len(), 1);
        // j301_2 is optimal, but after 10 s: not within the limit.
        assert_eq!(r.concerto[0].proven_within_time_limit, Some(1));
        assert_eq!((r.concerto[0].instances, r.concerto[0].proven), (3, 2));
        let table = r.table();
        assert!(table.contains("Proven optimal within 10 s"), "{table}");
        assert!(table.contains("2 within 900 s"), "{table}");
        assert!(!table.contains("subset"), "{table}");
    }

    /// A bench of two instances counts the peers on those two only, and says so.
    #[test]
    fn counts_only_the_instances_the_bench_ran() {
        let peers = parse_peers(&csv(), "peers.csv").unwrap();
        let rows = [row("j301_2", "optimal", 1.0), row("j301_3", "optimal", 1.0)];
        let r = reference_runs(&peers, &rows, own(Some(10.0)), "peers.csv");
        let b = r.runs.iter().find(|p| p.run == "b_4w").unwrap();
        assert_eq!((b.instances, b.set_instances), (2, 3));
        assert_eq!(
            (b.proven_within_time_limit, b.proven_within_own_limit),
            (Some(1), 1)
        );
        let a = r.runs.iter().find(|p| p.run == "a_8w").unwrap();
        assert_eq!(
            (a.instances, a.set_instances, a.proven_within_time_limit),
            (2, 3, Some(0))
        );
        assert!(
            r.table().contains("This run solved a subset"),
            "{}",
            r.table()
        );
        // The j60 row of `a_8w` is of no instance the bench ran.
        assert!(r.runs.iter().all(|p| p.set == "j30"));
    }

    /// Without a time limit, the peers are counted within their own limits only.
    #[test]
    fn a_work_limited_run_has_no_same_time_count() {
        let peers = parse_peers(&csv(), "peers.csv").unwrap();
        let rows = [
            row("j301_1", "optimal", 30.0),
            row("j601_1", "feasible", 1.0),
        ];
        let r = reference_runs(&peers, &rows, own(None), "peers.csv");
        assert!(r.runs.iter().all(|p| p.proven_within_time_limit.is_none()));
        let sets: Vec<_> = r
            .concerto
            .iter()
            .map(|o| (o.set.as_str(), o.proven))
            .collect();
        assert_eq!(sets, [("j30", 1), ("j60", 0)]);
        let table = r.table();
        assert!(table.contains("no same-time comparison"), "{table}");
        assert!(table.contains("1 (work-limited)"), "{table}");
    }

    #[test]
    fn only_proofs_count() {
        let mut p = parse_peers(&csv(), "peers.csv").unwrap().remove(0);
        for (status, proven) in [
            ("Optimal", true),
            ("optimum", true),
            ("Feasible", false),
            ("Solution", false),
            ("Unknown", false),
            ("Infeasible", false),
        ] {
            p.status = status.into();
            assert_eq!(p.is_proven(), proven, "{status}");
        }
        p.status = "Optimal".into();
        assert!(p.proven_within(0.5) && !p.proven_within(0.49));
    }

    #[test]
    fn a_malformed_line_is_an_error_naming_it() {
        let bad = |from: &str, to: &str| {
            let text = csv().replacen(from, to, 1);
            parse_peers(&text, "peers.csv").unwrap_err().to_string()
        };
        let e = bad("12.0,900", "soon,900");
        assert!(e.starts_with("peers.csv:3:"), "{e}");
        assert!(e.contains("`time_s`") && e.contains("`soon`"), "{e}");
        let e = bad("0.5,900,8,cluster", "0.5,900,8");
        assert!(e.starts_with("peers.csv:2:"), "{e}");
        assert!(e.contains("12 cells"), "{e}");
        let e = bad("9.99,600,4", "9.99,600,four");
        assert!(e.starts_with("peers.csv:8:") && e.contains("`four`"), "{e}");
        let e = bad("j301_2,Solution", "j301_1,Solution");
        assert!(
            e.starts_with("peers.csv:7:") && e.contains("first on line 6"),
            "{e}"
        );
        let e = bad("12.0,900,8", "12.0,300,8");
        assert!(
            e.starts_with("peers.csv:3:") && e.contains("time_limit_s"),
            "{e}"
        );
        let e = bad(
            ",\"0.9, beta\",b_4w,j30,j301_3",
            ",\"0.9, beta,b_4w,j30,j301_3",
        );
        assert!(
            e.starts_with("peers.csv:8:") && e.contains("closing quote"),
            "{e}"
        );
        let e = bad("time_limit_s", "limit_s");
        assert!(
            e.starts_with("peers.csv:1:") && e.contains("`time_limit_s`"),
            "{e}"
        );
        let e = parse_peers("\n", "peers.csv").unwrap_err().to_string();
        assert!(e.starts_with("peers.csv:1:1:"), "{e}");
    }

    #[test]
    fn reads_gzipped_and_names_a_missing_file() {
        let dir = std::env::temp_dir().join(format!("concerto-peers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("peers.csv.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, csv().as_bytes()).unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        assert_eq!(read_peers(&path).unwrap().len(), 7);
        let missing = dir.join("none.csv.gz");
        let e = read_peers(&missing).unwrap_err().to_string();
        assert!(e.contains("none.csv.gz"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
