//! Fuzzes the `jax.profiler` trace reader of profile-guided costs: any bytes go through
//! `decode` (gzip by magic number, UTF-8 check), then `KernelProfile::read` for the module
//! `jit_step`, then, for a profile it accepts, `apply` to a small module of that name; each
//! step must give a result or a clear error, never panic, overflow or hang.
//!
//! From `extract/`: `cargo +nightly fuzz run jax_profile -- -max_len=8192 -dict=fuzz/kineto.dict`.
#![no_main]

use concerto_extract::hlo::{lower, parse, ImportOptions};
use concerto_extract::kineto;
use concerto_extract::profile::KernelProfile;
use concerto_graph::Hardware;
use libfuzzer_sys::fuzz_target;

const MODULE: &str = "HloModule jit_step\n\nENTRY %main (p: f32[8]) -> f32[8] {\n  \
    %p = f32[8]{0} parameter(0)\n  %a = f32[8]{0} negate(%p)\n  \
    ROOT %b = f32[8]{0} multiply(%a, %a)\n}\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = kineto::decode(data) else {
        return;
    };
    if let Ok(profile) = KernelProfile::read(&text, "jit_step") {
        let module = parse(MODULE).expect("the fixed module parses");
        let (graph, _) = lower(&module, &ImportOptions::default()).expect("and lowers");
        let _ = profile.apply(&graph, &module, &Hardware::h100(), false);
    }
});
