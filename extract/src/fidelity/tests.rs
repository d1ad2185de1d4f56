//! Tests of the fidelity report: classes read from the module, exact sums from a synthetic
//! profile, the importer's row-normalisation class and in-place scatter bytes, another
//! module's profile refused, and the real H200 step of `docs/fidelity-data`.

use super::*;
use crate::hlo::{lower, parse, ImportOptions};
use concerto_graph::ComputeClass;
use serde_json::json;

const MODULE: &str = r#"HloModule jit_step

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%loop_body (p: f32[64,256]) -> f32[64,256] {
  %p = f32[64,256]{1,0} parameter(0)
  ROOT %e = f32[64,256]{1,0} exponential(%p)
}

%softmax (p: f32[64,256]) -> f32[64,256] {
  %p = f32[64,256]{1,0} parameter(0)
  %z = f32[] constant(0)
  %r = f32[64]{0} reduce(%p, %z), dimensions={1}, to_apply=%add
  %b = f32[64,256]{1,0} broadcast(%r), dimensions={0}
  ROOT %d = f32[64,256]{1,0} divide(%p, %b)
}

%rowsum (p: f32[64,256]) -> f32[64] {
  %p = f32[64,256]{1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[64]{0} reduce(%p, %z), dimensions={1}, to_apply=%add
}

%scatter (t: f32[1024,256], i: s32[4,1], u: f32[4,256]) -> f32[1024,256] {
  %t = f32[1024,256]{1,0} parameter(0)
  %i = s32[4,1]{1,0} parameter(1)
  %u = f32[4,256]{1,0} parameter(2)
  ROOT %s = f32[1024,256]{1,0} scatter(%t, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add
}

ENTRY %main (x: f32[64,256], q: f32[8,64,32], k: f32[8,32,64], t: f32[1024,256], i: s32[4,1], u: f32[4,256]) -> (f32[64,256], f32[64], f32[8,64,64], f32[1024,256]) {
  %x = f32[64,256]{1,0} parameter(0)
  %q = f32[8,64,32]{2,1,0} parameter(1)
  %k = f32[8,32,64]{2,1,0} parameter(2)
  %t = f32[1024,256]{1,0} parameter(3)
  %i = s32[4,1]{1,0} parameter(4)
  %u = f32[4,256]{1,0} parameter(5)
  %exp = f32[64,256]{1,0} fusion(%x), kind=kLoop, calls=%loop_body
  %norm = f32[64,256]{1,0} fusion(%exp), kind=kCustom, calls=%softmax, backend_config={"fusion_backend_config":{"kind":"__triton"}}
  %sum = f32[64]{0} fusion(%exp), kind=kInput, calls=%rowsum
  %scores = f32[8,64,64]{2,1,0} dot(%q, %k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %upd = f32[1024,256]{1,0} fusion(%t, %i, %u), kind=kInput, calls=%scatter
  ROOT %out = (f32[64,256]{1,0}, f32[64]{0}, f32[8,64,64]{2,1,0}, f32[1024,256]{1,0}) tuple(%norm, %sum, %scores, %upd)
}
"#;

fn module() -> (Module, Graph) {
    let m = parse(MODULE).unwrap();
    let (g, _) = lower(&m, &ImportOptions::default()).unwrap();
    (m, g)
}

/// Two steps; per instruction its kernels' durations (µs) in each step.
fn trace(module: &str, kernels: &[(&str, [f64; 2])]) -> String {
    let mut ev = vec![
        json!({"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}}),
        json!({"ph": "M", "pid": 1, "tid": 7, "name": "thread_name",
               "args": {"name": "Stream #7(Compute)"}}),
    ];
    for step in 0..2 {
        for (n, (op, durs)) in kernels.iter().enumerate() {
            ev.push(
                json!({"ph": "X", "pid": 1, "tid": 7, "ts": 1000.0 * step as f64 + n as f64 * 50.0,
                           "dur": durs[step], "name": format!("k_{op}"),
                           "args": {"hlo_op": op, "hlo_module": module}}),
            );
        }
    }
    json!({"traceEvents": ev}).to_string()
}

fn class_of<'a>(f: &'a Fidelity, class: &str) -> &'a ClassFidelity {
    f.classes
        .iter()
        .find(|c| c.class == class)
        .unwrap_or_else(|| panic!("no class {class} in {:?}", f.classes))
}

#[test]
fn the_importer_classes_normalisations_and_costs_scatters_by_their_updates() {
    let (_, g) = module();
    let class = |name: &str| match g.op(g.find(name).unwrap()).kind {
        OpKind::Compute { class, bytes, .. } => (class, bytes),
        _ => panic!("{name} is no compute op"),
    };
    // A reduction broadcast back over its rows is a normalisation; one returned reduced is not.
    assert_eq!(class("norm").0, ComputeClass::Norm);
    assert_eq!(class("sum").0, ComputeClass::Reduction);
    // The scatter updates 4 rows of 256 f32 in place: indices (16 B) and updates (4 KiB)
    // read, the 4 target rows read and written; not the 1 MiB buffer twice.
    assert_eq!(class("upd").1, 16 + 3 * 4 * 256 * 4);
}

#[test]
fn a_synthetic_profile_gives_exact_class_sums_and_the_step() {
    let (m, g) = module();
    let kernels = [
        ("exp", [3.0, 5.0]),
        ("norm", [10.0, 12.0]),
        ("sum", [2.0, 2.0]),
        ("scores", [7.0, 9.0]),
        ("upd", [1.0, 1.0]),
    ];
    let p = KernelProfile::read(&trace("jit_step", &kernels), "jit_step").unwrap();
    let hw = Hardware::h200();
    let f = Fidelity::of_module(&g, &m, &p, &hw, 40_000).unwrap();
    // The median of two steps is the lower one (a measured time, not an interpolation).
    let rows = [
        ("loop fusions", 3_000),
        ("Triton block-level fusions", 10_000),
        ("input fusions", 3_000),
        ("GEMM, batched", 7_000),
    ];
    for (class, ns) in rows {
        let c = class_of(&f, class);
        assert_eq!(c.measured_ns, ns, "{class}");
        let model: u64 = f
            .ops
            .iter()
            .filter(|o| o.class == class)
            .map(|o| o.modelled_ns)
            .sum();
        assert_eq!(c.modelled_ns, model, "{class}");
    }
    assert_eq!(class_of(&f, "input fusions").instructions, 2);
    // Step: per-step kernel sums 23 and 29 µs, median 23 µs; the model's is the caller's.
    assert_eq!(f.step.measured_ns, 23_000);
    assert_eq!(f.step.modelled_ns, 40_000);
    assert!((f.step.error_pct - 100.0 * 17.0 / 23.0).abs() < 1e-9);
    assert_eq!(f.coverage.instructions_pct, 100.0);
    // The worst op comes first.
    let d = |o: &OpFidelity| o.modelled_ns.abs_diff(o.measured_ns);
    assert!(f.ops.windows(2).all(|w| d(&w[0]) >= d(&w[1])));
}

#[test]
fn unmeasured_ops_stay_out_of_the_rows_and_lower_the_coverage() {
    let (m, g) = module();
    let p = KernelProfile::read(&trace("jit_step", &[("norm", [4.0, 4.0])]), "jit_step").unwrap();
    let f = Fidelity::of_module(&g, &m, &p, &Hardware::h100(), 1).unwrap();
    assert_eq!(f.classes.len(), 1);
    assert_eq!(f.ops.len(), 1);
    assert!(f.coverage.instructions_pct < 100.0 && f.coverage.time_pct < 100.0);
}

#[test]
fn a_profile_of_another_module_is_an_error() {
    let (m, g) = module();
    let p =
        KernelProfile::read(&trace("jit_other", &[("other.1", [1.0, 1.0])]), "jit_other").unwrap();
    let e = Fidelity::of_module(&g, &m, &p, &Hardware::h100(), 1).unwrap_err();
    assert!(e.to_string().contains("another module"), "{e}");
}

#[test]
fn the_real_h200_step_without_and_with_its_profile() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/fidelity-data");
    let m = crate::read::read_module(&dir.join("step.opt.hlo.gz")).unwrap();
    let (g, _) = lower(&m, &ImportOptions::default()).unwrap();
    let text = crate::read::read_text(&dir.join("step_trace.json.gz")).unwrap();
    let p = KernelProfile::read(&text, &m.name).unwrap();
    let hw = Hardware::h200();
    let step: u64 = hw.durations(&g).iter().sum();
    let f = Fidelity::of_module(&g, &m, &p, &hw, step).unwrap();
    let names: Vec<&str> = f.classes.iter().map(|c| c.class.as_str()).collect();
    assert_eq!(
        names,
        [
            "GEMM",
            "Triton block-level fusions",
            "loop fusions",
            "GEMM, batched",
            "input fusions",
            "other (copy)"
        ]
    );
    assert_eq!(f.ops.len(), 337);
    // On the h200 profile the Triton, loop and batched-GEMM classes are within 10 %. Not yet
    // (docs/src/fidelity.md): the unbatched GEMMs, 12 % over XLA's sm_90 table where the
    // autotuned cuBLAS kernels ran faster, and the input fusions, 11 % under, where the
    // embedding gradient's scatter-add ran five times longer than its bytes take.
    for c in &f.classes[1..4] {
        assert!(c.error_pct.abs() <= 10.0, "{c:?}");
    }
    let (gemm, input) = (&f.classes[0], &f.classes[4]);
    assert!((12.0..12.5).contains(&gemm.error_pct), "{gemm:?}");
    assert!((-11.5..-10.5).contains(&input.error_pct), "{input:?}");
    // With the profile as the costs, the model is the measurement.
    let (costed, _) = p.apply(&g, &m, &hw, true).unwrap();
    let step: u64 = costed.ops().map(|o| hw.op_ns(o)).sum();
    let f = Fidelity::of_module(&costed, &m, &p, &hw, step).unwrap();
    assert!(f.step.error_pct.abs() <= 2.0, "{:?}", f.step);
    assert!(f.coverage.time_pct >= 99.0);
    assert!(f.classes.iter().all(|c| c.error_pct == 0.0));
}

#[test]
fn a_fusion_reads_only_what_its_gathers_take() {
    // take_along_axis of a cross-entropy: the [64, 4096] logits are shifted elementwise, then
    // one element per row is gathered; the kernel reads 64 of the 262 144 elements.
    let text = r#"HloModule take

%pick (l: f32[64,4096], i: s32[64,2], m: f32[64]) -> f32[64,1] {
  %l = f32[64,4096]{1,0} parameter(0)
  %m = f32[64]{0} parameter(2)
  %b = f32[64,4096]{1,0} broadcast(%m), dimensions={0}
  %s = f32[64,4096]{1,0} subtract(%l, %b)
  %i = s32[64,2]{1,0} parameter(1)
  ROOT %g = f32[64,1]{1,0} gather(%s, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}
}

ENTRY %main (l: f32[64,4096], i: s32[64,2], m: f32[64]) -> f32[64,1] {
  %l = f32[64,4096]{1,0} parameter(0)
  %i = s32[64,2]{1,0} parameter(1)
  %m = f32[64]{0} parameter(2)
  ROOT %t = f32[64,1]{1,0} fusion(%l, %i, %m), kind=kLoop, calls=%pick
}
"#;
    let (g, _) = lower(&parse(text).unwrap(), &ImportOptions::default()).unwrap();
    let bytes = match g.op(g.find("t").unwrap()).kind {
        OpKind::Compute { bytes, .. } => bytes,
        _ => unreachable!(),
    };
    // 64 logits read (the gather takes 1/4096 of them), the indices and the row maxima whole
    // (a broadcast reads its operand), the 64 results written.
    assert_eq!(bytes, 64 * 4 + 64 * 2 * 4 + 64 * 4 + 64 * 4);
}
