//! Reading a table of peer runs: the CSV format of the module above, gzipped or not.

use std::collections::BTreeMap;
use std::path::Path;

use concerto_rcpsp::ReadError;

use super::PeerResult;
use crate::BenchError;

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

/// Parses a table of peer runs (see the module docs) in file order. Every row must have a
/// cell for each column of the header (double-quoted cells may hold commas), numbers where
/// numbers go (`time_s` at least 0, `time_limit_s` above 0, `workers` a count), one row per
/// run and instance, and the same solver, version, time limit, workers and hardware on every
/// row of a run. An error names `file`, the line and the column. Cost: O(size of the text).
pub fn parse_peers(text: &str, file: &str) -> Result<Vec<PeerResult>, ReadError> {
    let at = Place { file };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((header_line, header)) = lines.next() else {
        return Err(at.syntax(1, 1, "a header line", "an empty file".into()));
    };
    let (width, columns) = at.header(header_line, header)?;
    let mut rows: Vec<PeerResult> = Vec::new();
    // The first row of each run, and the line of each (run, instance).
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (line, text) in lines {
        let cells = at.cells(line, text, width)?;
        let row = at.row(line, &cells, &columns)?;
        if let Some(first) = seen.insert((row.run.clone(), row.instance.clone()), line) {
            return Err(at.syntax(
                line,
                cells[columns[INSTANCE]].0,
                &format!("one row per run and instance (run `{}`)", row.run),
                format!("`{}` again, first on line {first}", row.instance),
            ));
        }
        match runs.get(&row.run) {
            None => {
                runs.insert(row.run.clone(), rows.len());
            }
            Some(&k) => at.same_run(&rows[k], &row, &cells, &columns)?,
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Indices into [`COLUMNS`].
const SOLVER: usize = 0;
const VERSION: usize = 1;
const RUN: usize = 2;
const SET: usize = 3;
const INSTANCE: usize = 4;
const STATUS: usize = 5;
const TIME: usize = 6;
const LIMIT: usize = 7;
const WORKERS: usize = 8;
const HARDWARE: usize = 9;

/// The file being parsed, for errors that name it.
struct Place<'a> {
    file: &'a str,
}

impl Place<'_> {
    fn syntax(&self, line: usize, column: usize, expected: &str, found: String) -> ReadError {
        ReadError::Syntax {
            file: self.file.to_owned(),
            line,
            column,
            expected: expected.to_owned(),
            found,
        }
    }

    /// The cells of a line, as many as the header has.
    fn cells(
        &self,
        line: usize,
        text: &str,
        width: usize,
    ) -> Result<Vec<(usize, String)>, ReadError> {
        let cells = split_cells(text)
            .map_err(|column| self.syntax(line, column, "a closing quote", "end of line".into()))?;
        if cells.len() != width {
            return Err(self.syntax(
                line,
                cells.last().map_or(1, |(c, _)| *c),
                &format!("{width} cells, as in the header"),
                format!("{}", cells.len()),
            ));
        }
        Ok(cells)
    }

    /// The header's width and, for each of [`COLUMNS`], its cell index.
    fn header(
        &self,
        line: usize,
        header: &str,
    ) -> Result<(usize, [usize; COLUMNS.len()]), ReadError> {
        let names: Vec<String> = split_cells(header)
            .map_err(|column| self.syntax(line, column, "a closing quote", "end of line".into()))?
            .into_iter()
            .map(|(_, cell)| cell)
            .collect();
        let mut index = [0; COLUMNS.len()];
        for (k, name) in COLUMNS.iter().enumerate() {
            index[k] = names.iter().position(|c| c == name).ok_or_else(|| {
                self.syntax(
                    line,
                    1,
                    &format!("a column `{name}` in the header"),
                    format!("`{header}`"),
                )
            })?;
        }
        Ok((names.len(), index))
    }

    /// One row's values, checked.
    fn row(
        &self,
        line: usize,
        cells: &[(usize, String)],
        columns: &[usize; COLUMNS.len()],
    ) -> Result<PeerResult, ReadError> {
        let text_of = |k: usize| cells[columns[k]].1.clone();
        let number = |k: usize, what: &str, ok: fn(f64) -> bool| -> Result<f64, ReadError> {
            let (column, cell) = &cells[columns[k]];
            cell.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && ok(*v))
                .ok_or_else(|| self.syntax(line, *column, what, format!("`{cell}`")))
        };
        for (k, what) in [(RUN, "a run name"), (INSTANCE, "an instance name")] {
            let (column, cell) = &cells[columns[k]];
            if cell.is_empty() {
                return Err(self.syntax(line, *column, what, "an empty cell".into()));
            }
        }
        let (column, cell) = &cells[columns[WORKERS]];
        let workers = cell
            .parse::<usize>()
            .map_err(|_| self.syntax(line, *column, "a count of workers", format!("`{cell}`")))?;
        Ok(PeerResult {
            solver: text_of(SOLVER),
            version: text_of(VERSION),
            run: text_of(RUN),
            set: text_of(SET),
            instance: text_of(INSTANCE),
            status: text_of(STATUS),
            time_s: number(TIME, "seconds (0 or more) for `time_s`", |v| v >= 0.0)?,
            time_limit_s: number(LIMIT, "seconds (more than 0) for `time_limit_s`", |v| {
                v > 0.0
            })?,
            workers,
            hardware: text_of(HARDWARE),
            line,
        })
    }

    /// An error where `row` differs from the first row of its run in what a run fixes.
    fn same_run(
        &self,
        first: &PeerResult,
        row: &PeerResult,
        cells: &[(usize, String)],
        columns: &[usize; COLUMNS.len()],
    ) -> Result<(), ReadError> {
        let differs = [
            (SOLVER, first.solver != row.solver),
            (VERSION, first.version != row.version),
            (LIMIT, first.time_limit_s != row.time_limit_s),
            (WORKERS, first.workers != row.workers),
            (HARDWARE, first.hardware != row.hardware),
        ];
        match differs.iter().find(|d| d.1) {
            None => Ok(()),
            Some(&(k, _)) => {
                let what = COLUMNS[k];
                Err(self.syntax(
                    row.line,
                    cells[columns[k]].0,
                    &format!(
                        "the `{what}` of run `{}` on line {}, `{}`",
                        row.run,
                        first.line,
                        text_at(first, what)
                    ),
                    format!("`{}`", cells[columns[k]].1),
                ))
            }
        }
    }
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
