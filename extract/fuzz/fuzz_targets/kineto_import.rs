//! Fuzzes the profiler-trace importer end to end: any bytes go through `decode` (gzip by magic
//! number, UTF-8 check), then `import` with the default options, then, for a graph it accepts,
//! `replay`; each step must give a result or a clear error, never panic, overflow or hang.
//!
//! From `extract/`: `cargo +nightly fuzz run kineto_import -- -max_len=8192 -dict=fuzz/kineto.dict`.
#![no_main]

use concerto_extract::kineto::{self, TraceOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = kineto::decode(data) else {
        return;
    };
    if let Ok((graph, _report)) = kineto::import(&text, &TraceOptions::default()) {
        let _ = kineto::replay(&graph);
    }
});
