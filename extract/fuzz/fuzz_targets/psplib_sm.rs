//! Fuzzes the .sm (PSPLIB single-mode) reader of the `rcpsp` crate, then what a solve does first with an
//! instance it accepts: its lower bound, and a parallel-SGS schedule that the independent
//! checker must accept. Each step must give a result or a clear error, never panic, overflow
//! or hang.
//!
//! From `extract/`: `cargo +nightly fuzz run psplib_sm -- -max_len=4096`.
#![no_main]

use concerto_rcpsp::{check, io::psplib, lower_bound, sgs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(problem) = psplib::parse(text, "fuzz.sm") else {
        return;
    };
    if problem.len() > 256 {
        return;
    }
    let bound = lower_bound(&problem);
    let priority: Vec<i64> = (0..problem.len() as i64).collect();
    let schedule = sgs::parallel(&problem, &priority);
    let makespan = check(&problem, &schedule).expect("the SGS schedule passes the checker");
    assert!(makespan >= bound.value, "{makespan} < {bound:?}");
});
