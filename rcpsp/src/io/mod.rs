//! Reading and writing problems and schedules.
//!
//! | format | read | write | module |
//! |---|---|---|---|
//! | PSPLIB single-mode `.sm` (Kolisch & Sprecher 1996) | yes | no | [`psplib`] |
//! | Patterson `.rcp` (Patterson 1984; the RCPLIB/PSPLIB "rcp" layout) | yes | no | [`patterson`] |
//! | Concerto JSON problem / schedule | yes | yes | [`json`] |
//!
//! Every error names the file, and for text formats the line and column and what was
//! expected there. Any of them may be gzipped (`j301_1.sm.gz`): a file that starts with
//! gzip's magic number is decompressed, and a final `.gz` is left out when the format is
//! chosen by extension.

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

/// Reads a problem, choosing the format by extension: `.sm`, `.rcp` or `.json`, each
/// optionally gzipped (`.sm.gz`).
pub fn read_problem(path: impl AsRef<Path>) -> Result<Problem, ReadError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let extension = format_extension(path);
    let parse: fn(&str, &str) -> Result<Problem, ReadError> = match extension.as_str() {
        "sm" => psplib::parse,
        "rcp" => patterson::parse,
        "json" => json::parse_problem,
        _ => return Err(ReadError::UnknownFormat { file, extension }),
    };
    let text = read_text(path)?;
    parse(&text, &file)
}

/// The extension that names a file's format, lower case: the last one, or the one before a
/// final `.gz` (`sm` for `j301_1.sm.gz`).
pub fn format_extension(path: &Path) -> String {
    let ext = |p: &Path| {
        p.extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    match ext(path).as_str() {
        "gz" => path
            .file_stem()
            .map_or_else(String::new, |s| ext(Path::new(s))),
        e => e.to_owned(),
    }
}

/// The file name without its format extension (and without a final `.gz`): `j301_1` for
/// `j30/j301_1.sm.gz`.
pub fn instance_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_owned(),
        _ => name.to_owned(),
    }
}

/// Reads a file to a string, naming it in the error; a file that starts with gzip's magic
/// number is decompressed first (multi-member streams too).
pub(crate) fn read_text(path: &Path) -> Result<String, ReadError> {
    let io = |source| ReadError::Io {
        file: path.display().to_string(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return String::from_utf8(bytes).map_err(|e| {
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
            ))
        });
    }
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::MultiGzDecoder::new(&bytes[..]),
        &mut text,
    )
    .map_err(|e| io(std::io::Error::new(e.kind(), format!("gzip: {e}"))))?;
    Ok(text)
}

pub use json::{problem_to_json, read_schedule, schedule_from_json, schedule_to_json};

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    /// `j301_1.sm.gz` reads as `j301_1.sm` (the same problem); a damaged stream is an I/O
    /// error naming the file.
    #[test]
    fn gzipped_instances_read_like_plain_ones() {
        let dir = std::env::temp_dir().join(format!("concerto-rcpsp-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures/psplib/j30/j301_1.sm"
        ));
        let zipped = dir.join("j301_1.sm.gz");
        let bytes = gzip(&std::fs::read(plain).unwrap());
        std::fs::write(&zipped, &bytes).unwrap();
        let (a, b) = (read_problem(plain).unwrap(), read_problem(&zipped).unwrap());
        assert_eq!(problem_to_json(&a), problem_to_json(&b));
        let damaged = dir.join("damaged.sm.gz");
        std::fs::write(&damaged, &bytes[..bytes.len() / 3]).unwrap();
        let e = read_problem(&damaged).unwrap_err();
        assert!(matches!(e, ReadError::Io { .. }), "{e}");
        assert!(
            e.to_string().contains("damaged.sm.gz") && e.to_string().contains("gzip"),
            "{e}"
        );
        let e = read_problem(dir.join("x.csv.gz")).unwrap_err();
        assert!(
            matches!(e, ReadError::UnknownFormat { ref extension, .. } if extension == "csv"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_and_formats_ignore_a_final_gz() {
        for (path, ext, name) in [
            ("data/psplib/j30/j301_1.sm.gz", "sm", "j301_1"),
            ("j301_1.sm", "sm", "j301_1"),
            ("x/p.RCP", "rcp", "p"),
            ("a.b.json.gz", "json", "a.b"),
            ("plain", "", "plain"),
        ] {
            assert_eq!(format_extension(Path::new(path)), ext, "{path}");
            assert_eq!(instance_name(Path::new(path)), name, "{path}");
        }
    }
}
