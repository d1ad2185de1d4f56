//! Tests of profile-guided costs: exact costs from a synthetic trace, loops split by
//! iteration, the steps of a modules line, errors for another module and malformed events, and
//! the real H200 step of `docs/fidelity-data`.

use super::*;
use crate::hlo::{lower, parse, ImportOptions};
use serde_json::json;

const MODULE: &str = r#"HloModule jit_step

%body (s: (s32[], f32[8])) -> (s32[], f32[8]) {
  %s = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %n = s32[] add(%i, %one)
  %v = f32[8]{0} get-tuple-element(%s), index=1
  %w = f32[8]{0} exponential(%v)
  ROOT %r = (s32[], f32[8]{0}) tuple(%n, %w)
}

%cond (s: (s32[], f32[8])) -> pred[] {
  %s = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %k = s32[] constant(2)
  ROOT %lt = pred[] compare(%i, %k), direction=LT
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %a = f32[8]{0} negate(%p)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{0}) tuple(%zero, %a)
  %loop = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body
  %x = f32[8]{0} get-tuple-element(%loop), index=1
  ROOT %b = f32[8]{0} multiply(%x, %x)
}
"#;

fn module() -> (Module, Graph) {
    let m = parse(MODULE).unwrap();
    let (g, _) = lower(&m, &ImportOptions::default()).unwrap();
    (m, g)
}

fn kernel(op: &str, ts_us: f64, dur_us: f64) -> serde_json::Value {
    json!({"ph": "X", "pid": 1, "tid": 14, "ts": ts_us, "dur": dur_us, "name": format!("k_{op}"),
           "args": {"hlo_op": op, "hlo_module": "jit_step"}})
}

fn meta() -> Vec<serde_json::Value> {
    vec![
        json!({"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}}),
        json!({"ph": "M", "pid": 1, "tid": 14, "name": "thread_name",
               "args": {"name": "Stream #14(Compute)"}}),
    ]
}

/// Three steps; `a` is two kernels (a memset and a GEMM, as cuBLAS launches), the loop body's
/// `w` one kernel per iteration (2 iterations), `b` one kernel. Durations in µs.
fn synthetic() -> String {
    let mut ev = meta();
    let steps = [
        ([1.0, 10.0], [5.0, 7.0], 3.0),
        ([1.0, 12.0], [6.0, 8.0], 2.0),
        ([2.0, 11.0], [4.0, 9.0], 4.0),
    ];
    for (s, (a, w, b)) in steps.iter().enumerate() {
        let t = 1000.0 * s as f64;
        ev.push(kernel("a", t, a[0]));
        ev.push(kernel("a", t + 1.0, a[1]));
        ev.push(kernel("w", t + 20.0, w[0]));
        ev.push(kernel("w", t + 30.0, w[1]));
        ev.push(kernel("b", t + 40.0, *b));
    }
    json!({"traceEvents": ev}).to_string()
}

fn duration(g: &Graph, name: &str) -> Option<u64> {
    g.op(g.find(name).unwrap_or_else(|| panic!("no op {name}")))
        .duration_ns
}

#[test]
fn a_synthetic_profile_gives_exactly_its_medians() {
    let (m, g) = module();
    let p = KernelProfile::read(&synthetic(), "jit_step").unwrap();
    assert_eq!((p.steps, p.steps_from), (3, "kernel counts"));
    assert_eq!(p.device, "/device:GPU:0");
    let hw = Hardware::h100();
    let (costed, r) = p.apply(&g, &m, &hw, true).unwrap();
    // a: sums 11, 13, 13 µs -> median 13 µs; b: 3, 2, 4 -> 3 µs.
    assert_eq!(duration(&costed, "a"), Some(13_000));
    assert_eq!(duration(&costed, "b"), Some(3_000));
    // The loop's two iterations: the first kernel of each step is iteration 0's.
    assert_eq!(duration(&costed, "loop.it0.w"), Some(5_000));
    assert_eq!(duration(&costed, "loop.it1.w"), Some(8_000));
    // The loop counter ran no kernel: the model's cost, and the report says so.
    assert_eq!(duration(&costed, "loop.it0.n"), None);
    assert_eq!(r.from_model, ["loop.it0.n", "loop.it1.n"]);
    assert_eq!((r.ops, r.measured_ops, r.steps), (6, 4, 3));
    assert!(r.not_in_module.is_empty() && r.uneven.is_empty());
    assert!(r.time_pct > 0.0 && r.time_pct < 100.0, "{}", r.time_pct);
    // Per step: 11+12+3, 13+14+2, 13+13+4 µs; the median is 29 µs.
    assert_eq!(p.step_kernel_ns, [26_000, 29_000, 30_000]);
    assert_eq!(r.step_kernel_ns, 29_000);
    // The original graph is untouched.
    assert_eq!(duration(&g, "a"), None);
}

#[test]
fn a_modules_line_gives_the_steps() {
    let (m, g) = module();
    let mut ev = meta();
    ev.push(json!({"ph": "M", "pid": 1, "tid": 2, "name": "thread_name",
                   "args": {"name": "XLA Modules"}}));
    // Two runs of the module; a kernel of another module and one between the runs are not its.
    for (s, d) in [(0.0, 4.0), (100.0, 6.0)] {
        ev.push(json!({"ph": "X", "pid": 1, "tid": 2, "ts": s, "dur": 50.0,
                       "name": "jit_step(7)"}));
        ev.push(kernel("a", s + 1.0, d));
        ev.push(kernel("b", s + 2.0, 1.0));
    }
    ev.push(kernel("a", 70.0, 500.0));
    let mut other = kernel("a", 120.0, 900.0);
    other["args"]["hlo_module"] = json!("jit_other");
    ev.push(other);
    let text = json!({"traceEvents": ev}).to_string();
    let p = KernelProfile::read(&text, "jit_step").unwrap();
    assert_eq!((p.steps, p.steps_from), (2, "XLA Modules line"));
    let (costed, _) = p.apply(&g, &m, &Hardware::h100(), false).unwrap();
    assert_eq!(duration(&costed, "a"), Some(4_000));
}

#[test]
fn instructions_the_module_lacks_are_reported_or_refused_under_strict() {
    let (m, g) = module();
    let mut ev = meta();
    ev.push(kernel("a", 0.0, 2.0));
    ev.push(kernel("fusion.99", 5.0, 2.0));
    let text = json!({"traceEvents": ev}).to_string();
    let p = KernelProfile::read(&text, "jit_step").unwrap();
    let (_, r) = p.apply(&g, &m, &Hardware::h100(), false).unwrap();
    assert_eq!(r.not_in_module, ["fusion.99"]);
    let e = p.apply(&g, &m, &Hardware::h100(), true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the profile names 1 instructions the module lacks: fusion.99"
    );
}

#[test]
fn a_profile_of_another_module_is_a_clear_error() {
    let (m, g) = module();
    // Another module's name.
    let e = KernelProfile::read(&synthetic(), "jit_train").unwrap_err();
    assert_eq!(
        e.to_string(),
        "the profile has no kernel of module `jit_train`; it has kernels of jit_step (15)"
    );
    // The same name, another step: none of its instructions is an op of the graph.
    let mut ev = meta();
    ev.push(kernel("fusion.1", 0.0, 2.0));
    ev.push(kernel("custom-call.3", 5.0, 2.0));
    let text = json!({"traceEvents": ev}).to_string();
    let p = KernelProfile::read(&text, "jit_step").unwrap();
    let e = p.apply(&g, &m, &Hardware::h100(), false).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "the profile of module `jit_step` names none of the graph's 6 ops (instructions \
             custom-call.3, fusion.1): a profile of another module"
        ),
        "{e}"
    );
}

#[test]
fn malformed_traces_name_the_event() {
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (
            json!({"ph": "X", "pid": 1, "tid": 14, "ts": 1.0, "name": "k",
                   "args": {"hlo_op": "a", "hlo_module": "jit_step"}}),
            "event 2 (`k`): `dur` is missing",
        ),
        (
            json!({"ph": "X", "pid": 1, "tid": 14, "ts": 1.0, "dur": -3.0, "name": "k",
                   "args": {"hlo_op": "a", "hlo_module": "jit_step"}}),
            "event 2 (`k`): `dur` is -3, not a time in µs",
        ),
        (
            json!({"ph": "X", "pid": 1, "tid": 14, "ts": 1.0, "dur": "3", "name": "k"}),
            "event 2: invalid type: string \"3\", expected a JSON number",
        ),
        (
            json!({"ph": "X", "pid": 1, "tid": 14, "ts": 1.0, "dur": 3.0, "name": "k",
                   "args": {"hlo_op": "a"}}),
            "event 2 (`k`): it has one of `args.hlo_op` and `args.hlo_module` but not the other",
        ),
    ];
    for (bad, want) in cases {
        let mut ev = meta();
        ev.push(bad);
        let text = json!({"traceEvents": ev}).to_string();
        let e = KernelProfile::read(&text, "jit_step")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(want), "{e}\nwant: {want}");
    }
    for (text, want) in [
        (
            "{\"traceEvents\": [",
            "event 0: EOF while parsing a list at line 1 column 17",
        ),
        (
            "{\"events\": []}",
            "no `traceEvents`: not a jax.profiler trace",
        ),
        (
            "[1, 2]",
            "invalid type: sequence, expected a JSON object with `traceEvents`",
        ),
    ] {
        let e = KernelProfile::read(text, "jit_step")
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e}\nwant: {want}");
    }
}

#[test]
fn the_real_h200_step_is_covered_by_its_profile() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/fidelity-data");
    let m = crate::read::read_module(&dir.join("step.opt.hlo.gz")).unwrap();
    let (g, _) = lower(&m, &ImportOptions::default()).unwrap();
    let text = crate::read::read_text(&dir.join("step_trace.json.gz")).unwrap();
    let p = KernelProfile::read(&text, &m.name).unwrap();
    assert_eq!(p.steps, 5);
    // The step times measured by `concerto_tools.gpu_measure` (step_kernels.json), to the ns.
    let want = [
        27_271_897u64,
        27_236_956,
        27_397_341,
        27_983_321,
        27_815_837,
    ];
    for (got, want) in p.step_kernel_ns.iter().zip(want) {
        assert!(got.abs_diff(want) <= 500, "{got} against {want}");
    }
    let (costed, r) = p.apply(&g, &m, &Hardware::h100(), true).unwrap();
    assert!(r.not_in_module.is_empty());
    assert!(r.time_pct >= 99.0, "{r:?}");
    let measured: u64 = costed.ops().filter_map(|o| o.duration_ns).sum();
    assert!(
        measured.abs_diff(r.step_kernel_ns) * 100 <= r.step_kernel_ns,
        "{measured}"
    );
}
