//! Helpers shared by the binary's integration tests.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `concerto` with `args`.
pub(crate) fn concerto(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_concerto"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Standard output as text.
pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh directory for one test's files.
pub(crate) fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("concerto-cli-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs `concerto` with `args`, which must succeed and print one JSON object.
#[allow(dead_code)] // not every test binary reads JSON
pub(crate) fn json(args: &[&str]) -> serde_json::Value {
    let o = concerto(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("one JSON object")
}
