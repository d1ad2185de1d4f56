//! Tests of the HLO lowering: free ops, collectives, unrolled loops and costs.

use super::*;
use crate::hlo::parse;
use concerto_graph::{CollectiveKind, ComputeClass, LinkClass, OpKind};

fn import(text: &str) -> (Graph, ImportReport) {
    let m = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    lower(&m, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn find(g: &Graph, name: &str) -> OpId {
    g.find(name).unwrap_or_else(|| {
        panic!(
            "no op `{name}` in {:?}",
            g.ops().map(|o| o.name.clone()).collect::<Vec<_>>()
        )
    })
}

#[test]
fn async_pairs_are_one_collective_and_free_ops_carry_dependencies() {
    let (g, _) = import(
        r#"HloModule m

ENTRY %main (p: bf16[2,4]) -> bf16[16,4] {
  %p = bf16[2,4]{1,0} parameter(0)
  %t = (bf16[2,4]{1,0}, s32[]) tuple(%p, %p)
  %x = bf16[2,4]{1,0} get-tuple-element(%t), index=0
  %ags = (bf16[2,4]{1,0}, bf16[16,4]{1,0}) all-gather-start(%x), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}
  %e = bf16[2,4]{1,0} negate(%x)
  %agd = bf16[16,4]{1,0} all-gather-done(%ags)
  ROOT %y = bf16[16,4]{1,0} multiply(%agd, %agd)
}
"#,
    );
    assert_eq!(
        g.len(),
        3,
        "{:?}",
        g.ops().map(|o| &o.name).collect::<Vec<_>>()
    );
    let ag = find(&g, "ags");
    assert!(matches!(
        g.op(ag).kind,
        OpKind::Collective {
            kind: CollectiveKind::AllGather,
            bytes: 128,
            group: 8,
            link: LinkClass::IntraNode
        }
    ));
    assert_eq!(g.predecessors(find(&g, "y")), vec![ag]);
    assert!(g.predecessors(find(&g, "e")).is_empty());
}

#[test]
fn while_with_a_known_trip_count_is_unrolled() {
    let text = r#"HloModule m

%body (s: (s32[], f32[8])) -> (s32[], f32[8]) {
  %s = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %n = s32[] add(%i, %one)
  %v = f32[8]{0} get-tuple-element(%s), index=1
  %ar = f32[8]{0} all-reduce(%v), replica_groups={{0,1,2,3}}, to_apply=%sum
  %w = f32[8]{0} exponential(%ar)
  ROOT %r = (s32[], f32[8]{0}) tuple(%n, %w)
}

%cond (s: (s32[], f32[8])) -> pred[] {
  %s = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %k = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %k), direction=LT
}

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}

ENTRY %main (p: f32[8]) -> (s32[], f32[8]) {
  %p = f32[8]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{0}) tuple(%zero, %p)
  ROOT %loop = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body, BACKEND_CONFIG
}
"#;
    let known = text.replace(
        "BACKEND_CONFIG",
        r#"backend_config={"known_trip_count":{"n":"3"}}"#,
    );
    let (g, _) = import(&known);
    // Per iteration: add, all-reduce, exponential.
    assert_eq!(g.len(), 9);
    assert_eq!(g.collective_count(), 3);
    let ar2 = find(&g, "loop.it2.ar");
    // Iteration 2's all-reduce waits for iteration 1's results (the state tuple).
    assert!(g.predecessors(ar2).contains(&find(&g, "loop.it1.w")));
    assert!(matches!(
        g.op(ar2).kind,
        OpKind::Collective { group: 4, .. }
    ));
    // The same loop without the config: the `i < 3` counter pattern gives the count.
    let pattern = text.replace(", BACKEND_CONFIG", "");
    let (g2, _) = import(&pattern);
    assert_eq!(g2.len(), 9);
    // A loop whose bound is not a constant is an error that says why.
    let unknown = pattern.replace(
        "%k = s32[] constant(3)",
        "%k = s32[] get-tuple-element(%s), index=0",
    );
    let m = parse(&unknown).unwrap();
    let e = lower(&m, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("known trip count"), "{e}");
    assert!(e.to_string().contains("`loop`"), "{e}");
}

#[test]
fn replica_groups_decide_group_size_and_link_class() {
    let text = |groups: &str| {
        format!(
                "HloModule m\n\nENTRY %main (p: f32[4]) -> f32[4] {{\n  %p = f32[4]{{0}} parameter(0)\n  ROOT %ar = f32[4]{{0}} all-reduce(%p), replica_groups={groups}, to_apply=%add\n}}\n\n%add (a: f32[], b: f32[]) -> f32[] {{\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %c = f32[] add(%a, %b)\n}}\n"
            )
    };
    let kind = |groups: &str| import(&text(groups)).0.op(OpId(0)).kind.clone();
    assert!(matches!(
        kind("{{0,1},{2,3}}"),
        OpKind::Collective {
            group: 2,
            link: LinkClass::IntraNode,
            ..
        }
    ));
    assert!(matches!(
        kind("[2,8]<=[16]"),
        OpKind::Collective {
            group: 8,
            link: LinkClass::IntraNode,
            ..
        }
    ));
    assert!(matches!(
        kind("[8,2]<=[2,8]T(1,0)"),
        OpKind::Collective {
            group: 2,
            link: LinkClass::InterNode,
            ..
        }
    ));
    assert!(matches!(
        kind("{{0,8}}"),
        OpKind::Collective {
            group: 2,
            link: LinkClass::InterNode,
            ..
        }
    ));
    // A group of one moves nothing.
    assert_eq!(import(&text("{{0},{1}}")).0.len(), 0);
}

#[test]
fn dots_and_fusions_are_costed_from_shapes() {
    let (g, report) = import(
        r#"HloModule m

%fused (a: bf16[4,64,32], b: bf16[32,16]) -> bf16[4,64,16] {
  %a = bf16[4,64,32]{2,1,0} parameter(0)
  %b = bf16[32,16]{1,0} parameter(1)
  %d = bf16[4,64,16]{2,1,0} dot(%a, %b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT %r = bf16[4,64,16]{2,1,0} tanh(%d)
}

ENTRY %main (a: bf16[4,64,32], b: bf16[32,16]) -> bf16[4,64,16] {
  %a = bf16[4,64,32]{2,1,0} parameter(0)
  %b = bf16[32,16]{1,0} parameter(1)
  %dot = bf16[4,64,64]{2,1,0} dot(%a, %a), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  %f = bf16[4,64,16]{2,1,0} fusion(%a, %b), kind=kOutput, calls=%fused
  ROOT %z = bf16[4,64,16]{2,1,0} frobnicate(%f)
  %z2 = bf16[4,64,16]{2,1,0} frobnicate(%f)
}
"#,
    );
    let OpKind::Compute {
        class, flops, gemm, ..
    } = g.op(find(&g, "dot")).kind.clone()
    else {
        panic!()
    };
    assert_eq!(class, ComputeClass::Gemm);
    assert_eq!(flops, 2 * 4 * 64 * 64 * 32);
    assert_eq!(
        gemm,
        Some(GemmShape {
            b: 4,
            m: 64,
            n: 64,
            k: 32
        })
    );
    let OpKind::Compute {
        class,
        flops,
        bytes,
        ..
    } = g.op(find(&g, "f")).kind.clone()
    else {
        panic!()
    };
    assert_eq!(class, ComputeClass::Gemm);
    // The dot's flops plus one per element of the tanh.
    assert_eq!(flops, 2 * 4 * 64 * 16 * 32 + 4 * 64 * 16);
    // The fusion reads its operands and writes its result; the dot's output stays on chip.
    assert_eq!(bytes, (4 * 64 * 32 + 32 * 16 + 4 * 64 * 16) * 2);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(report.warnings[0].contains("frobnicate"));
}

#[test]
fn a_body_that_calls_itself_is_an_error_not_a_stack_overflow() {
    let text = r#"HloModule m

%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  ROOT %t = pred[] constant(true)
}

%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %x = s32[] negate(%s)
  ROOT %w = s32[] while(%x), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"1"}}
}

ENTRY %main (p: s32[]) -> s32[] {
  %p = s32[] parameter(0)
  ROOT %loop = s32[] while(%p), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"1"}}
}
"#;
    let m = parse(text).unwrap();
    let e = lower(&m, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("more than 64 deep"), "{e}");
}
