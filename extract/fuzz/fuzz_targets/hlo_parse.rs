//! Fuzzes the HLO text parser, without and with a size for unbounded dimensions: it must
//! return `Ok` or `Err` on any input, never panic, overflow or recurse without bound.
//!
//! From `extract/`: `cargo +nightly fuzz run hlo_parse -- -max_len=4096`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // UTF-8 input as is; other bytes converted lossily (U+FFFD is a multi-byte character,
    // which exercises column counting).
    let text = String::from_utf8_lossy(data);
    let _ = concerto_extract::hlo::parse(&text);
    // With a size for unbounded dimensions `?` too.
    let options = concerto_extract::hlo::ParseOptions {
        unbounded_dim_size: Some(3),
    };
    let _ = concerto_extract::hlo::parse_with(&text, &options);
});
