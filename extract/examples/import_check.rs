//! Imports HLO text files one by one and prints one verdict line per file: the importer half
//! of the grammar census (`scripts/xla-grammar-census`, `tools/concerto_tools/grammar_census.py`).
//!
//! ```text
//! cargo run --release -p concerto-extract --example import_check -- FILE...
//! cargo run --release -p concerto-extract --example import_check < paths.txt
//! cargo run --release -p concerto-extract --example import_check -- --unknown-trip-count 1 < paths.txt
//! ```
//!
//! `--unknown-trip-count N` (before the paths) sets [`ImportOptions::unknown_trip_count`]:
//! every loop whose trip count cannot be read runs `N` times. `--unbounded-dim-size N` sets
//! [`ImportOptions::unbounded_dim_size`]: every unbounded dimension `?` has size `N`.
//!
//! With no arguments it reads paths from standard input, one a line, and answers each as soon
//! as it is done (the census drives it as a worker and kills it on a hang). Each answer is one
//! tab-separated line: `PATH\tok\tOPS`, `PATH\terror\tKIND\tMESSAGE` (KIND: `syntax`,
//! `lowering` or `graph`; the message on one line) or `PATH\tpanic\tMESSAGE`. A panic is
//! caught and reported, and the worker goes on; the exit status is 0 unless a path cannot be
//! read.

use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;

use concerto_extract::hlo::{lower, parse_with, HloError, ImportOptions};

/// The verdict line for the HLO text `text` imported with `options`.
fn verdict(text: &str, options: &ImportOptions) -> String {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let module = parse_with(text, &options.parse_options())?;
        let (graph, _) = lower(&module, options)?;
        Ok::<usize, HloError>(graph.len())
    }));
    let one_line = |s: String| s.replace(['\n', '\t', '\r'], " ");
    match outcome {
        Ok(Ok(ops)) => format!("ok\t{ops}"),
        Ok(Err(e)) => {
            let kind = match e {
                HloError::Syntax { .. } => "syntax",
                HloError::Lowering { .. } => "lowering",
                _ => "graph",
            };
            format!("error\t{kind}\t{}", one_line(e.to_string()))
        }
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            format!("panic\t{}", one_line(message))
        }
    }
}

fn main() -> ExitCode {
    // Panics are reported on stdout; keep stderr for the census's own messages.
    std::panic::set_hook(Box::new(|_| {}));
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = ImportOptions::default();
    while let Some(flag @ ("--unknown-trip-count" | "--unbounded-dim-size")) =
        args.first().map(String::as_str)
    {
        let Some(n) = args.get(1).and_then(|n| n.parse::<u64>().ok()) else {
            eprintln!("import_check: {flag} needs a whole number");
            return ExitCode::FAILURE;
        };
        if flag == "--unknown-trip-count" {
            options.unknown_trip_count = Some(n);
        } else {
            options.unbounded_dim_size = Some(n);
        }
        args.drain(..2);
    }
    let paths: Box<dyn Iterator<Item = String>> = if args.is_empty() {
        Box::new(std::io::stdin().lock().lines().map_while(Result::ok))
    } else {
        Box::new(args.into_iter())
    };
    let mut status = ExitCode::SUCCESS;
    let mut out = std::io::stdout().lock();
    for path in paths {
        let path = path.trim().to_string();
        if path.is_empty() {
            continue;
        }
        let line = match std::fs::read_to_string(&path) {
            Ok(text) => verdict(&text, &options),
            Err(e) => {
                status = ExitCode::FAILURE;
                format!("unreadable\t{e}")
            }
        };
        if writeln!(out, "{path}\t{line}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return ExitCode::FAILURE;
        }
    }
    status
}
