//! The differential test against XLA's parser on a sample of XLA's own test modules
//! (`fixtures/hlo_xla_tests`, chosen by `scripts/xla-grammar-census --sample`).
//!
//! `MANIFEST.tsv` gives, per module, XLA's parser's verdict (checked against jaxlib by
//! `tools/tests/test_grammar_sample.py`) and concerto's expected verdict: every module XLA
//! accepts imports, except loops without a known trip count, which must fail with the error
//! that names the loop; modules XLA rejects must fail with the error kind given. No module
//! may panic.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use concerto_extract::hlo::{lower, parse, HloError, ImportOptions};

/// The sample's folder.
fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/hlo_xla_tests")
}

/// One manifest row.
struct Row {
    file: String,
    xla: String,
    concerto: String,
}

fn manifest() -> Vec<Row> {
    let text = std::fs::read_to_string(dir().join("MANIFEST.tsv")).expect("MANIFEST.tsv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split('\t').collect();
    assert_eq!(header[..5], ["file", "source", "index", "xla", "concerto"]);
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() >= 5, "short manifest line: {l}");
            Row {
                file: f[0].to_string(),
                xla: f[3].to_string(),
                concerto: f[4].to_string(),
            }
        })
        .collect()
}

/// Concerto's verdict on `text`: `imported`, `error:KIND` with the message, or a panic.
fn import(text: &str) -> Result<Result<(), HloError>, String> {
    catch_unwind(AssertUnwindSafe(|| {
        let module = parse(text)?;
        lower(&module, &ImportOptions::default()).map(|_| ())
    }))
    .map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    })
}

#[test]
fn the_sample_imports_as_the_manifest_says() {
    let rows = manifest();
    assert!(
        rows.len() >= 100,
        "only {} modules in the sample",
        rows.len()
    );
    let accepted = rows.iter().filter(|r| r.xla == "accepted").count();
    assert!(accepted >= 80, "only {accepted} modules XLA accepts");
    let mut failures = Vec::new();
    for row in &rows {
        // The manifest itself must hold the acceptance rule.
        match (row.xla.as_str(), row.concerto.as_str()) {
            ("accepted", "imported" | "error:trip-count") | ("rejected", _) => {}
            (x, c) => failures.push(format!("{}: manifest says XLA {x}, concerto {c}", row.file)),
        }
        let text = std::fs::read_to_string(dir().join(&row.file)).expect("a sample module");
        let got = match import(&text) {
            Err(panic) => {
                failures.push(format!("{}: panicked: {panic}", row.file));
                continue;
            }
            Ok(got) => got,
        };
        let ok = match (row.concerto.as_str(), &got) {
            ("imported", Ok(())) => true,
            ("error:trip-count", Err(HloError::Lowering { message, .. })) => {
                message.contains("while loop `%") && message.contains("has no known trip count")
            }
            ("error:syntax", Err(HloError::Syntax { .. })) => true,
            ("error:lowering" | "error:unroll-limit", Err(HloError::Lowering { .. })) => true,
            ("error:graph", Err(HloError::Graph(_))) => true,
            _ => false,
        };
        if !ok {
            let got = match got {
                Ok(()) => "imported".to_string(),
                Err(e) => format!("error: {e}"),
            };
            failures.push(format!(
                "{}: expected {}, got {got}",
                row.file, row.concerto
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// With a count for the loops whose count cannot be read (`--unknown-trip-count`), every
/// module of the sample that XLA accepts imports.
#[test]
fn with_a_count_for_unread_loops_every_accepted_module_imports() {
    let options = ImportOptions {
        unknown_trip_count: Some(1),
        ..ImportOptions::default()
    };
    let mut failures = Vec::new();
    let mut counted = 0;
    for row in manifest().iter().filter(|r| r.xla == "accepted") {
        let text = std::fs::read_to_string(dir().join(&row.file)).expect("a sample module");
        let module = parse(&text).expect("XLA accepts it, the first test parses it");
        match lower(&module, &options) {
            Ok((_, report)) if row.concerto == "error:trip-count" => {
                // The loop is counted, with a warning that names it.
                counted += 1;
                if !report
                    .warnings
                    .iter()
                    .any(|w| w.contains("has no known trip count"))
                {
                    failures.push(format!("{}: no warning names the loop", row.file));
                }
            }
            Ok(_) => {}
            Err(e) => failures.push(format!("{}: {e}", row.file)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        counted >= 10,
        "only {counted} modules with a loop without a count"
    );
}
