//! Tests of what XLA's GPU compiler writes: cuBLAS and cuDNN custom-calls, fusion kinds,
//! collectives wrapped in `async-start`, and the module's own schedule as a stream plan.

use super::*;
use crate::hlo::parse;
use concerto_graph::{simulate, CollectiveKind, ComputeClass, OpKind, Stream};

fn import(text: &str) -> (Graph, ImportReport) {
    let m = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    lower(&m, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn op<'g>(g: &'g Graph, name: &str) -> (OpId, &'g Op) {
    let id = g.find(name).unwrap_or_else(|| panic!("no op `{name}`"));
    (id, g.op(id))
}

const CUBLAS: &str = r#"HloModule m

ENTRY %main (a: bf16[64,128], b: bf16[128,256]) -> f32[64,256] {
  %a = bf16[64,128]{1,0} parameter(0)
  %b = bf16[128,256]{1,0} parameter(1)
  %gemm = (f32[64,256]{1,0}, s8[4194304]{0}) custom-call(%a, %b), custom_call_target="__cublas$lt$matmul", backend_config={"operation_queue_id":"0","gemm_backend_config":{"alpha_real":1,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},"epilogue":"DEFAULT"}}
  ROOT %out = f32[64,256]{1,0} get-tuple-element(%gemm), index=0
}
"#;

#[test]
fn cublas_gemms_are_costed_from_their_dimension_numbers() {
    let (g, report) = import(CUBLAS);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let (_, gemm) = op(&g, "gemm");
    let OpKind::Compute {
        class,
        flops,
        bytes,
        gemm: shape,
    } = gemm.kind
    else {
        panic!("{gemm:?}")
    };
    assert_eq!(class, ComputeClass::Gemm);
    assert_eq!(flops, 2 * 64 * 256 * 128);
    // Operands and the product; the cuBLAS workspace (element 1) is no traffic.
    assert_eq!(bytes, (64 * 128 + 128 * 256) * 2 + 64 * 256 * 4);
    let s = shape.expect("a GEMM shape");
    assert_eq!((s.b, s.m, s.n, s.k), (1, 64, 256, 128));
    // It reads bf16 and writes f32: the bf16 tables cost it.
    assert_eq!(gemm.operand_dtype, Some(DType::Bf16));
}

/// XLA's tests write GEMMs without dimension numbers: a plain product `[m, k] x [k, n]` is
/// costed as one, with or without a `backend_config`.
#[test]
fn a_cublas_gemm_without_dimension_numbers_is_a_plain_product_when_its_shapes_are() {
    let start = CUBLAS.find(", backend_config=").unwrap();
    let end = CUBLAS[start..].find('\n').unwrap() + start;
    let bare = format!("{}{}", &CUBLAS[..start], &CUBLAS[end..]);
    for text in [
        CUBLAS.replace(r#""dot_dimension_numbers""#, r#""dims""#),
        bare,
    ] {
        let (g, _) = import(&text);
        let (_, gemm) = op(&g, "gemm");
        let OpKind::Compute {
            flops, gemm: shape, ..
        } = gemm.kind
        else {
            panic!("{gemm:?}")
        };
        assert_eq!(flops, 2 * 64 * 256 * 128, "{text}");
        let s = shape.expect("a GEMM shape");
        assert_eq!((s.b, s.m, s.n, s.k), (1, 64, 256, 128));
    }
}

/// Shapes that are no plain product (the rhs transposed) leave no dimension numbers to
/// assume: an error naming the GEMM.
#[test]
fn a_cublas_gemm_without_dimension_numbers_nor_plain_shapes_is_an_error_naming_it() {
    let text = CUBLAS
        .replace(r#""dot_dimension_numbers""#, r#""dims""#)
        .replace("bf16[128,256]", "bf16[256,128]")
        .replace("bf16[128,256]{1,0}", "bf16[256,128]{1,0}");
    let m = parse(&text).unwrap();
    let e = lower(&m, &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`gemm`") && e.contains("dot_dimension_numbers") && e.contains("plain product"),
        "{e}"
    );
}

#[test]
fn fusions_take_the_class_of_their_work() {
    let (g, report) = import(
        r#"HloModule m

%fused_add (p0: f32[1024], p1: f32[1024]) -> f32[1024] {
  %p0 = f32[1024]{0} parameter(0)
  %p1 = f32[1024]{0} parameter(1)
  %s = f32[1024]{0} add(%p0, %p1)
  ROOT %m = f32[1024]{0} multiply(%s, %s)
}

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %z = f32[] add(%x, %y)
}

%fused_reduce (p0: f32[8,1024]) -> f32[8] {
  %p0 = f32[8,1024]{1,0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[8]{0} reduce(%p0, %zero), dimensions={1}, to_apply=%sum
}

%gemm_dot (p0: bf16[64,128], p1: bf16[128,256]) -> f32[64,256] {
  %p0 = bf16[64,128]{1,0} parameter(0)
  %p1 = bf16[128,256]{1,0} parameter(1)
  ROOT %d = f32[64,256]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %main (a: f32[1024], b: f32[8,1024], c: bf16[64,128], d: bf16[128,256]) -> (f32[1024], f32[8], f32[64,256]) {
  %a = f32[1024]{0} parameter(0)
  %b = f32[8,1024]{1,0} parameter(1)
  %c = bf16[64,128]{1,0} parameter(2)
  %d = bf16[128,256]{1,0} parameter(3)
  %loop_add_fusion = f32[1024]{0} fusion(%a, %a), kind=kLoop, calls=%fused_add
  %input_reduce_fusion = f32[8]{0} fusion(%b), kind=kInput, calls=%fused_reduce
  %gemm_fusion_dot = f32[64,256]{1,0} fusion(%c, %d), kind=kCustom, calls=%gemm_dot, backend_config={"fusion_backend_config":{"kind":"__triton_gemm"}}
  ROOT %t = (f32[1024]{0}, f32[8]{0}, f32[64,256]{1,0}) tuple(%loop_add_fusion, %input_reduce_fusion, %gemm_fusion_dot)
}
"#,
    );
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let class = |name: &str| match op(&g, name).1.kind {
        OpKind::Compute { class, .. } => class,
        _ => panic!("{name} is no compute op"),
    };
    assert_eq!(class("loop_add_fusion"), ComputeClass::Elementwise);
    assert_eq!(class("input_reduce_fusion"), ComputeClass::Reduction);
    assert_eq!(class("gemm_fusion_dot"), ComputeClass::Gemm);
    // Bytes read and written once: the fusion's operands and result, not its inner ops'.
    let OpKind::Compute { bytes, .. } = op(&g, "loop_add_fusion").1.kind else {
        unreachable!()
    };
    assert_eq!(bytes, 3 * 1024 * 4);
    let (_, gemm) = op(&g, "gemm_fusion_dot");
    assert_eq!(gemm.operand_dtype, Some(DType::Bf16));
    assert_eq!(op(&g, "loop_add_fusion").1.operand_dtype, None);
}

#[test]
fn cudnn_attention_is_attention() {
    let (g, report) = import(
        r#"HloModule m

ENTRY %main (q: bf16[2,512,16,64], k: bf16[2,512,16,64], v: bf16[2,512,16,64]) -> bf16[2,512,16,64] {
  %q = bf16[2,512,16,64]{3,2,1,0} parameter(0)
  %k = bf16[2,512,16,64]{3,2,1,0} parameter(1)
  %v = bf16[2,512,16,64]{3,2,1,0} parameter(2)
  %fmha = (bf16[2,512,16,64]{3,2,1,0}, u8[0]{0}) custom-call(%q, %k, %v), custom_call_target="__cudnn$fmhaSoftmax"
  ROOT %o = bf16[2,512,16,64]{3,2,1,0} get-tuple-element(%fmha), index=0
}
"#,
    );
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let OpKind::Compute { class, flops, .. } = op(&g, "fmha").1.kind else {
        panic!()
    };
    assert_eq!(class, ComputeClass::Attention);
    assert_eq!(flops, 4 * 2 * 512 * 512 * 16 * 64);
}

/// A scheduled module as XLA's GPU compiler writes one: an all-reduce started early and a
/// reduce-scatter and an all-to-all wrapped in `async-start`.
const SCHEDULED: &str = r#"HloModule m, is_scheduled=true

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %z = f32[] add(%x, %y)
}

%rs_wrapped (p: f32[4096]) -> f32[512] {
  %p = f32[4096]{0} parameter(0)
  ROOT %rs = f32[512]{0} reduce-scatter(%p), channel_id=2, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, to_apply=%add
}

%a2a_wrapped (p: f32[4096]) -> f32[4096] {
  %p = f32[4096]{0} parameter(0)
  ROOT %a2a = f32[4096]{0} all-to-all(%p), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}
}

ENTRY %main (p: f32[4096]) -> (f32[4096], f32[512], f32[4096], f32[4096]) {
  %p = f32[4096]{0} parameter(0)
  %a = f32[4096]{0} negate(%p)
  %b = f32[4096]{0} exponential(%p)
  %ars = f32[4096]{0} all-reduce-start(%a), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add, backend_config={"collective_backend_config":{"is_sync":false}}
  %c = f32[4096]{0} sine(%b)
  %d = f32[4096]{0} cosine(%c)
  %ard = f32[4096]{0} all-reduce-done(%ars)
  %e = f32[4096]{0} tanh(%d)
  %rss = ((f32[4096]{0}), f32[512]{0}) async-start(%e), calls=%rs_wrapped
  %rsd = f32[512]{0} async-done(%rss)
  %a2as = ((f32[4096]{0}), f32[4096]{0}) async-start(%d), calls=%a2a_wrapped
  %f = f32[4096]{0} sqrt(%ard)
  %a2ad = f32[4096]{0} async-done(%a2as)
  ROOT %t = (f32[4096]{0}, f32[512]{0}, f32[4096]{0}, f32[4096]{0}) tuple(%f, %rsd, %a2ad, %e)
}
"#;

#[test]
fn collectives_wrapped_in_async_start_are_collectives() {
    let (g, report) = import(SCHEDULED);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let (rs, rs_op) = op(&g, "rss");
    assert!(
        matches!(
            rs_op.kind,
            OpKind::Collective {
                kind: CollectiveKind::ReduceScatter,
                bytes: 2048,
                group: 8,
                ..
            }
        ),
        "{rs_op:?}"
    );
    let (a2a, a2a_op) = op(&g, "a2as");
    assert!(
        matches!(
            a2a_op.kind,
            OpKind::Collective {
                kind: CollectiveKind::AllToAll,
                bytes: 16384,
                group: 4,
                ..
            }
        ),
        "{a2a_op:?}"
    );
    assert_eq!(g.predecessors(rs), vec![op(&g, "e").0]);
    assert_eq!(g.predecessors(a2a), vec![op(&g, "d").0]);
    // The step outputs reach the root through the dones.
    assert!(rs_op.live_out && a2a_op.live_out);
}

#[test]
fn the_modules_own_schedule_runs_as_xla_runs_it() {
    let (g, report) = import(SCHEDULED);
    let events = report
        .sequence
        .as_ref()
        .expect("a scheduled module has a sequence");
    let plan = sequence_plan(&g, events).unwrap();
    let id = |n: &str| op(&g, n).0;
    let order = |s: Stream| {
        plan.streams
            .iter()
            .find(|(t, _)| *t == s)
            .map(|(_, v)| v.iter().map(|&o| g.op(o).name.clone()).collect::<Vec<_>>())
            .unwrap()
    };
    assert_eq!(order(Stream::Compute), ["a", "b", "c", "d", "e", "f"]);
    let comm: Vec<String> = plan
        .streams
        .iter()
        .filter(|(s, _)| *s != Stream::Compute)
        .flat_map(|(_, v)| v.iter().map(|&o| g.op(o).name.clone()))
        .collect();
    assert_eq!(comm, ["ars", "rss", "a2as"]);
    // The start waits for the last kernel before it (`b`), not only for its operand `a`.
    assert!(
        plan.waits.contains(&(id("b"), id("ars"))),
        "{:?}",
        plan.waits
    );
    // `e` comes after the done: it waits for the all-reduce although it does not read it.
    assert!(
        plan.waits.contains(&(id("ars"), id("e"))),
        "{:?}",
        plan.waits
    );
    // The all-to-all starts after `e`, the last kernel before it in the sequence.
    assert!(
        plan.waits.contains(&(id("e"), id("a2as"))),
        "{:?}",
        plan.waits
    );
    // Simulated: the all-reduce overlaps c and d, and e starts after it ends.
    let hw = concerto_graph::Hardware::h100();
    let durations = hw.durations(&g);
    let t = simulate(&g, &plan, &durations, 1.0).unwrap();
    let (ars, e) = (id("ars").0, id("e").0);
    assert!(t.start[ars] >= t.start[id("b").0] + durations[id("b").0]);
    assert!(t.start[e] >= t.start[ars] + durations[ars]);
}

#[test]
fn an_unscheduled_module_has_no_sequence() {
    let text = SCHEDULED.replace(", is_scheduled=true", "");
    assert!(import(&text).1.sequence.is_none());
}

#[test]
fn a_sequence_that_does_not_cover_the_graph_is_an_error() {
    let (g, report) = import(SCHEDULED);
    let mut events = report.sequence.unwrap();
    events.retain(|e| *e != SeqEvent::Launch(OpId(0)));
    let e = sequence_plan(&g, &events).unwrap_err().to_string();
    assert!(e.contains("not in the sequence"), "{e}");
    let twice = [SeqEvent::Launch(OpId(0)), SeqEvent::Launch(OpId(0))];
    assert!(sequence_plan(&g, &twice)
        .unwrap_err()
        .to_string()
        .contains("twice"));
}

/// The compiled modules of `fixtures/hlo_gpu` (XLA's H100 compiler, deviceless): every GEMM,
/// attention and collective is costed as what it is, the collectives are those the meta
/// counts (its `*-start` keys, `async-start` wrappers named by their collective), and XLA's
/// own schedule is a valid plan that simulates.
#[test]
fn compiled_fixtures_import_with_their_kernels_collectives_and_schedule() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/hlo_gpu");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".gpu.hlo") else {
            continue;
        };
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let (g, report) = import(&text);
        for w in &report.warnings {
            let lower = w.to_ascii_lowercase();
            assert!(
                ![
                    "cublas",
                    "cudnn",
                    "attention",
                    "fmha",
                    "all-",
                    "reduce-scatter",
                    "collective"
                ]
                .iter()
                .any(|k| lower.contains(k)),
                "{stem}: {w}"
            );
        }
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{stem}.json"))).unwrap(),
        )
        .unwrap();
        let mut expected: BTreeMap<String, u64> = BTreeMap::new();
        for (k, v) in meta["collectives"].as_object().unwrap() {
            if let Some(kind) = k.strip_suffix("-start") {
                expected.insert(kind.to_string(), v.as_u64().unwrap());
            }
        }
        let mut found: BTreeMap<String, u64> = BTreeMap::new();
        for o in g.ops() {
            if let OpKind::Collective { kind, .. } = o.kind {
                *found.entry(kind.as_str().to_string()).or_default() += 1;
            }
        }
        assert_eq!(found, expected, "{stem}");
        let plan = sequence_plan(&g, report.sequence.as_ref().unwrap()).unwrap();
        let hw = concerto_graph::Hardware::h100();
        let t = simulate(&g, &plan, &hw.durations(&g), hw.contention).unwrap();
        assert!(t.makespan > 0, "{stem}");
    }
    assert_eq!(seen, 3, "the three compiled fixtures");
}

#[test]
fn an_in_place_update_fusion_moves_its_slice_not_its_buffer() {
    let (g, _) = import(
        r#"HloModule m

%fused_dus (p0: bf16[16,1024,1024], p1: bf16[1,1024,1024], p2: s32[]) -> bf16[16,1024,1024] {
  %p0 = bf16[16,1024,1024]{2,1,0} parameter(0)
  %p1 = bf16[1,1024,1024]{2,1,0} parameter(1)
  %p2 = s32[] parameter(2)
  %z = s32[] constant(0)
  ROOT %d = bf16[16,1024,1024]{2,1,0} dynamic-update-slice(%p0, %p1, %p2, %z, %z)
}

ENTRY %main (a: bf16[16,1024,1024], b: bf16[1,1024,1024], i: s32[]) -> bf16[16,1024,1024] {
  %a = bf16[16,1024,1024]{2,1,0} parameter(0)
  %b = bf16[1,1024,1024]{2,1,0} parameter(1)
  %i = s32[] parameter(2)
  ROOT %loop_dynamic_update_slice_fusion = bf16[16,1024,1024]{2,1,0} fusion(%a, %b, %i), kind=kLoop, calls=%fused_dus
}
"#,
    );
    let OpKind::Compute { bytes, .. } = op(&g, "loop_dynamic_update_slice_fusion").1.kind else {
        panic!()
    };
    // The update read and written, the index; not the 32 MiB buffer.
    assert_eq!(bytes, 2 * (1024 * 1024 * 2) + 4);
}
