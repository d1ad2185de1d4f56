//! PSPLIB single-mode `.sm` files (Kolisch & Sprecher, "PSPLIB - A project scheduling problem
//! library", EJOR 96, 1996).
//!
//! The file is read by section header, not by line number: the header fields
//! `jobs (incl. supersource/sink )` and `- renewable`, then the sections
//! `PRECEDENCE RELATIONS:`, `REQUESTS/DURATIONS:` and `RESOURCEAVAILABILITIES:`, each ending at
//! a line of `*` or at the end of the file. Jobs are named by their number (`"1"` is the
//! supersource), resources as in the file without spaces (`"R1"`). Multi-mode jobs and
//! non-renewable resources are rejected with [`ReadError::Unsupported`].

use super::text::{Token, Tokens};
use super::ReadError;
use crate::problem::{Problem, ProblemBuilder, Time};

const PRECEDENCES: &str = "PRECEDENCE RELATIONS:";
const REQUESTS: &str = "REQUESTS/DURATIONS:";
const AVAILABILITIES: &str = "RESOURCEAVAILABILITIES:";

struct Lines<'a> {
    file: &'a str,
    lines: Vec<(usize, &'a str)>,
}

impl<'a> Lines<'a> {
    /// The value after the colon of the header line starting with `key`, with its line.
    fn field(&self, key: &'static str) -> Result<(usize, Token<'a>), ReadError> {
        let (n, line) = self
            .lines
            .iter()
            .find(|(_, l)| l.trim_start().starts_with(key))
            .copied()
            .ok_or_else(|| ReadError::MissingSection {
                file: self.file.to_owned(),
                section: key,
            })?;
        let colon = line.find(':').ok_or_else(|| ReadError::Syntax {
            file: self.file.to_owned(),
            line: n,
            column: line.len() + 1,
            expected: format!("`:` after `{key}`"),
            found: "end of line".into(),
        })?;
        let mut tokens = Tokens::new(self.file, std::iter::once((n, line)));
        loop {
            let t = tokens.next(&format!("a number after `{key}`"))?;
            if t.column > colon + 1 {
                return Ok((n, t));
            }
        }
    }

    fn count(&self, key: &'static str) -> Result<(usize, usize), ReadError> {
        let (n, t) = self.field(key)?;
        let v = t.text.parse::<usize>().map_err(|_| ReadError::Syntax {
            file: self.file.to_owned(),
            line: t.line,
            column: t.column,
            expected: format!("a count after `{key}`"),
            found: format!("`{}`", t.text),
        })?;
        Ok((n, v))
    }

    /// The lines of a section, after its header line, up to a line of `*`.
    fn section(&self, header: &'static str) -> Result<&[(usize, &'a str)], ReadError> {
        let start = self
            .lines
            .iter()
            .position(|(_, l)| l.trim_start().starts_with(header))
            .ok_or_else(|| ReadError::MissingSection {
                file: self.file.to_owned(),
                section: header,
            })?;
        let body = &self.lines[start + 1..];
        let end = body
            .iter()
            .position(|(_, l)| l.trim_start().starts_with('*'))
            .unwrap_or(body.len());
        Ok(&body[..end])
    }
}

/// Whether a line is a column header or a rule (`jobnr. ...`, `R 1 R 2`, `-----`) rather than
/// data: it does not start with a digit.
fn is_data(line: &str) -> bool {
    line.trim_start().starts_with(|c: char| c.is_ascii_digit())
}

/// The data lines of a section, one token cursor each; exactly `jobs` of them.
fn records<'a>(
    file: &'a str,
    section: &[(usize, &'a str)],
    jobs: usize,
    header: &str,
) -> Result<Vec<Tokens<'a>>, ReadError> {
    let data: Vec<(usize, &str)> = section
        .iter()
        .copied()
        .filter(|(_, l)| is_data(l))
        .collect();
    if data.len() != jobs {
        let (line, found) = match data.get(jobs) {
            Some(&(n, l)) => (n, format!("`{}`", l.trim())),
            None => (
                section.last().map_or(1, |&(n, _)| n + 1),
                format!("{} job line(s)", data.len()),
            ),
        };
        return Err(ReadError::Syntax {
            file: file.to_owned(),
            line,
            column: 1,
            expected: format!("{jobs} job lines in `{header}`"),
            found,
        });
    }
    Ok(data
        .into_iter()
        .map(|line| Tokens::new(file, std::iter::once(line)))
        .collect())
}

/// Reads the job number that starts a record and checks it is `j`.
fn job_number(t: &mut Tokens<'_>, j: usize, header: &str) -> Result<(), ReadError> {
    let expected = format!("job number {j} in `{header}`");
    let (nr, tok) = t.number::<usize>(&expected)?;
    if nr != j {
        return Err(t.error_at(tok, &expected));
    }
    Ok(())
}

/// Fails if a record has tokens left.
fn end_of_record(t: &Tokens<'_>, expected: &str) -> Result<(), ReadError> {
    match t.peek() {
        Some(extra) => Err(t.error_at(extra, expected)),
        None => Ok(()),
    }
}

/// Parses the text of a `.sm` file; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Problem, ReadError> {
    let lines = Lines {
        file,
        lines: text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect(),
    };
    let (jobs, renewable) = lines.sizes()?;
    let requests = lines.section(REQUESTS)?;
    let names = resource_names(requests, renewable);
    let successors = lines.successors(jobs)?;
    let (durations, demands) = requests_of(file, requests, jobs, &names)?;
    // Capacities.
    let avail = lines.section(AVAILABILITIES)?;
    let mut t = Tokens::new(file, avail.iter().copied().filter(|(_, l)| is_data(l)));
    let mut caps = Vec::with_capacity(renewable);
    for name in &names {
        caps.push(t.number::<u32>(&format!("the capacity of {name}"))?.0);
    }
    let mut b = ProblemBuilder::new();
    let resources: Vec<_> = names
        .iter()
        .zip(&caps)
        .map(|(name, &cap)| b.resource(name.clone(), cap))
        .collect();
    let ids: Vec<_> = durations
        .iter()
        .enumerate()
        .map(|(j, &d)| b.activity((j + 1).to_string(), d))
        .collect();
    for (j, row) in demands.iter().enumerate() {
        for (r, &q) in row.iter().enumerate() {
            if q > 0 {
                b.demand(ids[j], resources[r], q);
            }
        }
    }
    for (j, s) in successors {
        b.precedence(ids[j - 1], ids[s - 1]);
    }
    b.build().map_err(|source| ReadError::Invalid {
        file: file.to_owned(),
        source,
    })
}

impl Lines<'_> {
    /// The numbers of jobs and renewable resources; errors on other resource kinds or no
    /// jobs.
    fn sizes(&self) -> Result<(usize, usize), ReadError> {
        let file = self.file;
        let (jobs_line, jobs) = self.count("jobs (incl. supersource/sink )")?;
        let (renewable_line, renewable) = self.count("- renewable")?;
        for key in ["- nonrenewable", "- doubly constrained"] {
            if let Ok((n, count)) = self.count(key) {
                if count > 0 {
                    return Err(ReadError::Unsupported {
                        file: file.to_owned(),
                        line: n,
                        what: format!("{count} {} resource(s)", key.trim_start_matches("- ")),
                    });
                }
            }
        }
        if jobs == 0 {
            return Err(ReadError::Syntax {
                file: file.to_owned(),
                line: renewable_line,
                column: 1,
                expected: "at least one job".into(),
                found: "0 jobs".into(),
            });
        }
        // Each job and each resource has numbers of its own in the file: a count past the
        // file's number of words is an error here, before anything is sized by it.
        let words: usize = self
            .lines
            .iter()
            .map(|(_, l)| l.split_whitespace().count())
            .sum();
        for (line, what, count) in [
            (jobs_line, "jobs", jobs),
            (renewable_line, "renewable resources", renewable),
        ] {
            if count > words {
                return Err(ReadError::Syntax {
                    file: file.to_owned(),
                    line,
                    column: 1,
                    expected: format!("at most {words} {what}: the file has {words} words"),
                    found: format!("{count} {what}"),
                });
            }
        }
        Ok((jobs, renewable))
    }

    /// The precedences, one job per line: `(job, successor)` numbered from 1; errors on a
    /// job of several modes.
    fn successors(&self, jobs: usize) -> Result<Vec<(usize, usize)>, ReadError> {
        let file = self.file;
        let prec = self.section(PRECEDENCES)?;
        let mut rows = records(file, prec, jobs, PRECEDENCES)?;
        let mut successors: Vec<(usize, usize)> = Vec::new();
        for (j, t) in (1..=jobs).zip(rows.iter_mut()) {
            job_number(t, j, PRECEDENCES)?;
            let (modes, tok) = t.number::<usize>("a mode count")?;
            if modes != 1 {
                return Err(ReadError::Unsupported {
                    file: file.to_owned(),
                    line: tok.line,
                    what: format!("job {j} with {modes} modes (only single-mode .sm files)"),
                });
            }
            let (count, _) = t.number::<usize>("a successor count")?;
            for k in 1..=count {
                let expected =
                    format!("successor {k} of {count} of job {j} (a job number from 1 to {jobs})");
                let (s, tok) = t.number::<usize>(&expected)?;
                if s == 0 || s > jobs {
                    return Err(t.error_at(tok, &expected));
                }
                successors.push((j, s));
            }
            end_of_record(
                t,
                &format!("the end of job {j}'s line after {count} successors"),
            )?;
        }
        Ok(successors)
    }
}

/// Resource names from the REQUESTS/DURATIONS column header ("R 1  R 2 ..." or "R1 R2");
/// `R1..` when they do not number `renewable`.
fn resource_names(requests: &[(usize, &str)], renewable: usize) -> Vec<String> {
    let header = requests
        .iter()
        .find(|(_, l)| l.trim_start().starts_with("jobnr"))
        .map(|(_, l)| *l)
        .unwrap_or("");
    let mut names: Vec<String> = Vec::new();
    let words: Vec<&str> = header
        .split_whitespace()
        .skip_while(|w| *w != "duration")
        .skip(1)
        .collect();
    let mut k = 0;
    while k < words.len() {
        if words[k].chars().all(|c| c.is_ascii_alphabetic()) && k + 1 < words.len() {
            names.push(format!("{}{}", words[k], words[k + 1]));
            k += 2;
        } else {
            names.push(words[k].to_owned());
            k += 1;
        }
    }
    if names.len() != renewable {
        names = (1..=renewable).map(|r| format!("R{r}")).collect();
    }
    names
}

/// Durations and demands, one job per line in mode 1.
fn requests_of(
    file: &str,
    requests: &[(usize, &str)],
    jobs: usize,
    names: &[String],
) -> Result<(Vec<Time>, Vec<Vec<u32>>), ReadError> {
    let renewable = names.len();
    let mut rows = records(file, requests, jobs, REQUESTS)?;
    let mut durations = vec![0 as Time; jobs];
    let mut demands = vec![vec![0u32; renewable]; jobs];
    for (j, t) in (1..=jobs).zip(rows.iter_mut()) {
        job_number(t, j, REQUESTS)?;
        let (mode, tok) = t.number::<usize>("mode 1")?;
        if mode != 1 {
            return Err(t.error_at(tok, "mode 1"));
        }
        let (d, _) = t.number::<Time>(&format!("the duration of job {j}"))?;
        durations[j - 1] = d;
        for (r, name) in names.iter().enumerate() {
            let (q, _) = t.number::<u32>(&format!("the demand of job {j} for {name}"))?;
            demands[j - 1][r] = q;
        }
        end_of_record(
            t,
            &format!("the end of job {j}'s line after {renewable} demands"),
        )?;
    }
    Ok((durations, demands))
}

/// One row of a reference table (`instance,lower_bound,upper_bound,optimal,critical_path_lb,jobs`,
/// as in `data/psplib/reference/j30.csv.gz`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The instance name without extension (`j301_1`).
    pub instance: String,
    /// Best known lower bound.
    pub lower_bound: Time,
    /// Best known makespan.
    pub upper_bound: Time,
    /// Whether `upper_bound` is proven optimal.
    pub optimal: bool,
    /// The critical-path bound, if the table has the column.
    pub critical_path: Option<Time>,
}

/// Parses a reference table by its header: the columns `instance`, `lower_bound`,
/// `upper_bound` and `optimal` (`yes`/`no`/`true`/`false`/`1`/`0`) are required,
/// `critical_path_lb` is optional, others are ignored. Returns the rows in file order.
pub fn parse_reference(text: &str, file: &str) -> Result<Vec<Reference>, ReadError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or_else(|| ReadError::Syntax {
        file: file.to_owned(),
        line: 1,
        column: 1,
        expected: "a header line".into(),
        found: "an empty file".into(),
    })?;
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    let column = |name: &'static str| columns.iter().position(|c| *c == name);
    let required = |name: &'static str| {
        column(name).ok_or_else(|| ReadError::Syntax {
            file: file.to_owned(),
            line: 1,
            column: 1,
            expected: format!("a column `{name}` in the header"),
            found: format!("`{header}`"),
        })
    };
    let (ci, clb, cub, copt) = (
        required("instance")?,
        required("lower_bound")?,
        required("upper_bound")?,
        required("optimal")?,
    );
    let ccp = column("critical_path_lb");
    let mut rows = Vec::new();
    for (i, line) in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let cell = |c: usize, what: &str| -> Result<&str, ReadError> {
            cells.get(c).copied().ok_or_else(|| ReadError::Syntax {
                file: file.to_owned(),
                line: i + 1,
                column: line.len() + 1,
                expected: format!("a value for `{what}` (column {})", c + 1),
                found: "end of line".into(),
            })
        };
        let column_of =
            |c: usize| -> usize { cells[..c].iter().map(|s| s.len() + 1).sum::<usize>() + 1 };
        let number = |c: usize, what: &str| -> Result<Time, ReadError> {
            let s = cell(c, what)?;
            s.parse().map_err(|_| ReadError::Syntax {
                file: file.to_owned(),
                line: i + 1,
                column: column_of(c),
                expected: format!("an integer for `{what}`"),
                found: format!("`{s}`"),
            })
        };
        let optimal = match cell(copt, "optimal")?.to_ascii_lowercase().as_str() {
            "yes" | "true" | "1" => true,
            "no" | "false" | "0" => false,
            other => {
                return Err(ReadError::Syntax {
                    file: file.to_owned(),
                    line: i + 1,
                    column: column_of(copt),
                    expected: "yes or no for `optimal`".into(),
                    found: format!("`{other}`"),
                })
            }
        };
        rows.push(Reference {
            instance: cell(ci, "instance")?.to_owned(),
            lower_bound: number(clb, "lower_bound")?,
            upper_bound: number(cub, "upper_bound")?,
            optimal,
            critical_path: match ccp {
                Some(c) => Some(number(c, "critical_path_lb")?),
                None => None,
            },
        });
    }
    Ok(rows)
}

/// Reads a reference table file (see [`parse_reference`]).
pub fn read_reference(path: impl AsRef<std::path::Path>) -> Result<Vec<Reference>, ReadError> {
    let path = path.as_ref();
    parse_reference(&super::read_text(path)?, &path.display().to_string())
}
