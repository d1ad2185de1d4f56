//! Reading and writing problems and schedules.
//!
//! | format | read | write | module |
//! |---|---|---|---|
//! | PSPLIB single-mode `.sm` (Kolisch & Sprecher 1996) | yes | no | [`psplib`] |
//! | Patterson `.rcp` (Patterson 1984; the RCPLIB/PSPLIB "rcp" layout) | yes | no | [`patterson`] |
//! | Concerto JSON problem / schedule | yes | yes | [`json`] |
//!
//! Every error names the file, and for text formats the line and column and what was
//! expected there.

pub mod json;
pub mod patterson;
pub mod psplib;
mod text;

use std::path::Path;

use crate::problem::{Problem, ProblemError};

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The text does not follow the format.
    #[error("{file}:{line}:{column}: expected {expected}, found {found}")]
    Syntax {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the format requires there.
        expected: String,
        /// What is there (`end of file` at the end).
        found: String,
    },
    /// A section the format requires is absent.
    #[error("{file}: missing section `{section}`")]
    MissingSection {
        /// The file.
        file: String,
        /// The section's header.
        section: &'static str,
    },
    /// The file uses a feature of its format that Concerto does not model.
    #[error("{file}:{line}: {what} is not supported")]
    Unsupported {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The feature.
        what: String,
    },
    /// The file parses but describes an invalid problem (a cycle, a demand over capacity).
    #[error("{file}: {source}")]
    Invalid {
        /// The file.
        file: String,
        /// What is wrong with the problem.
        #[source]
        source: ProblemError,
    },
    /// The JSON is malformed or does not match the schema.
    #[error("{file}:{line}:{column}: {message}")]
    Json {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's message.
        message: String,
    },
    /// A schedule file names an activity the problem does not have.
    #[error("{file}: the schedule names activity `{name}`, which the problem does not have")]
    UnknownActivity {
        /// The file.
        file: String,
        /// The name.
        name: String,
    },
    /// A schedule file gives two start times for one activity.
    #[error("{file}: the schedule gives activity `{name}` two start times")]
    RepeatedActivity {
        /// The file.
        file: String,
        /// The name.
        name: String,
    },
    /// A schedule file lacks start times for some activities.
    #[error("{file}: no start time for {} activit{}: {}", .missing.len(), if .missing.len() == 1 { "y" } else { "ies" }, .missing.join(", "))]
    MissingStarts {
        /// The file.
        file: String,
        /// The activities without a start, in problem order.
        missing: Vec<String>,
    },
    /// The file's extension is not one of the known formats.
    #[error("{file}: unknown problem format `{extension}`: expected .sm (PSPLIB), .rcp (Patterson) or .json")]
    UnknownFormat {
        /// The file.
        file: String,
        /// Its extension.
        extension: String,
    },
}

/// Reads a problem, choosing the format by extension: `.sm`, `.rcp` or `.json`.
pub fn read_problem(path: impl AsRef<Path>) -> Result<Problem, ReadError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let parse: fn(&str, &str) -> Result<Problem, ReadError> = match extension.as_str() {
        "sm" => psplib::parse,
        "rcp" => patterson::parse,
        "json" => json::parse_problem,
        _ => return Err(ReadError::UnknownFormat { file, extension }),
    };
    let text = read_text(path)?;
    parse(&text, &file)
}

/// Reads a file to a string, naming it in the error.
pub(crate) fn read_text(path: &Path) -> Result<String, ReadError> {
    std::fs::read_to_string(path).map_err(|source| ReadError::Io {
        file: path.display().to_string(),
        source,
    })
}

pub use json::{problem_to_json, read_schedule, schedule_from_json, schedule_to_json};
