//! Fuzzes parsing and lowering together: any module the parser accepts must lower to a graph
//! or give an error, never panic or recurse without bound.
//!
//! From `extract/`: `cargo +nightly fuzz run hlo_import -- -max_len=4096`.
#![no_main]

use concerto_extract::hlo::{self, ImportOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(module) = hlo::parse(&text) {
        let options = ImportOptions {
            max_unrolled: 20_000,
            ..ImportOptions::default()
        };
        let _ = hlo::lower(&module, &options);
    }
});
