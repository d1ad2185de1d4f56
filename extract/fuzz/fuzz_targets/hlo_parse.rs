//! Fuzzes the HLO text parser: it must return `Ok` or `Err` on any input, never panic,
//! overflow or recurse without bound.
//!
//! From `extract/`: `cargo +nightly fuzz run hlo_parse -- -max_len=4096`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // UTF-8 input as is; other bytes converted lossily (U+FFFD is a multi-byte character,
    // which exercises column counting).
    let _ = match std::str::from_utf8(data) {
        Ok(text) => concerto_extract::hlo::parse(text),
        Err(_) => concerto_extract::hlo::parse(&String::from_utf8_lossy(data)),
    };
});
