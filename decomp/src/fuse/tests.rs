//! Tests of fusion: the rewrite, its check and the searches.

use concerto_graph::{ComputeClass, DType, GraphBuilder, Hardware, Tensor};

use super::*;
use crate::error::DecompError;
use crate::select::evaluate;

const KIB8: u64 = 8 << 10;

fn t() -> Tensor {
    Tensor::new(vec![4096], DType::Bf16)
}

fn ar(name: &str) -> Op {
    Op::collective(
        name,
        CollectiveKind::AllReduce,
        KIB8,
        8,
        LinkClass::IntraNode,
    )
    .with_output(t())
}

fn comp(name: &str) -> Op {
    Op::compute(name, ComputeClass::Elementwise, 1 << 20, 1 << 20).with_output(t())
}

/// `c0 ar0 u0 c1 ar1 u1 c2 ar2 u2 c3 ar3 u3 ag ar4g`: each `ci` reads `c(i-1)`, `ari` its
/// own `ci`, `ui` reads `ari` (`u0` reads output 1 of `ar0`, which has two); `ag` is an
/// all-gather and `ar4g` an all-reduce over 4 ranks, both reading `c3`.
fn four() -> Graph {
    let mut b = GraphBuilder::new("four");
    let mut prev: Option<OpId> = None;
    for i in 0..4 {
        let ins: Vec<OpId> = prev.into_iter().collect();
        let c = b.add(comp(&format!("c{i}")), &ins);
        let mut a = ar(&format!("ar{i}"));
        if i == 0 {
            a = a.with_output(t());
        }
        let a = b.add(a, &[c]);
        let tensor = usize::from(i == 0);
        b.try_add(comp(&format!("u{i}")), &[(a, tensor)]).unwrap();
        prev = Some(c);
    }
    let c3 = b.op(OpId(9)).name.clone();
    assert_eq!(c3, "c3");
    b.add(
        Op::collective(
            "ag",
            CollectiveKind::AllGather,
            KIB8,
            8,
            LinkClass::IntraNode,
        )
        .with_output(t()),
        &[OpId(9)],
    );
    b.add(
        Op::collective(
            "ar4g",
            CollectiveKind::AllReduce,
            KIB8,
            4,
            LinkClass::IntraNode,
        )
        .with_output(t()),
        &[OpId(9)],
    );
    b.finish()
}

fn id(g: &Graph, name: &str) -> OpId {
    g.find(name).unwrap_or_else(|| panic!("no op {name}"))
}

/// A copy of `g` with each op and its inputs passed through `edit`.
fn rebuild(g: &Graph, edit: impl Fn(OpId, &mut Op, &mut Vec<(OpId, usize)>)) -> Graph {
    let mut b = GraphBuilder::new(g.name());
    for x in g.ids() {
        let mut op = g.op(x).clone();
        let mut ins = g.inputs(x);
        edit(x, &mut op, &mut ins);
        b.try_add(op, &ins).unwrap();
    }
    b.finish()
}

fn invalid(g: &Graph, groups: &[Vec<OpId>]) -> String {
    match fuse_ops(g, groups) {
        Err(e @ DecompError::InvalidContext { .. }) => e.to_string(),
        other => panic!("expected an invalid group, got {other:?}"),
    }
}

fn failure(original: &Graph, fused: &Graph, origin: &[Vec<OpId>]) -> String {
    match check_fusion(original, fused, origin) {
        Err(e @ DecompError::CheckFailed { .. }) => e.to_string(),
        other => panic!("expected a check failure, got {other:?}"),
    }
}

fn fused01() -> (Graph, Graph, Vec<Vec<OpId>>) {
    let g = four();
    let (f, origin) = fuse_ops(&g, &[vec![id(&g, "ar1"), id(&g, "ar0")]]).unwrap();
    (g, f, origin)
}

#[test]
fn a_bucket_has_the_members_bytes_outputs_and_edges() {
    let (g, f, origin) = fused01();
    let names: Vec<&str> = f.ops().map(|o| o.name.as_str()).collect();
    // `u0` read `ar0`, so it moves after the bucket, which sits at `ar1`'s position.
    assert_eq!(
        names,
        [
            "c0",
            "c1",
            "bucket(ar0..ar1)",
            "u0",
            "u1",
            "c2",
            "ar2",
            "u2",
            "c3",
            "ar3",
            "u3",
            "ag",
            "ar4g"
        ]
    );
    assert_eq!(f.len(), g.len() - 1);
    let o = |n: &str| id(&g, n);
    assert_eq!(origin[2], vec![o("ar0"), o("ar1")]);
    assert_eq!(origin[3], vec![o("u0")]);
    assert_eq!(origin[0], vec![o("c0")]);
    let bucket = f.op(OpId(2));
    assert_eq!(
        bucket.kind,
        OpKind::Collective {
            kind: CollectiveKind::AllReduce,
            bytes: 2 * KIB8,
            group: 8,
            link: LinkClass::IntraNode
        }
    );
    // ar0's two outputs, then ar1's.
    assert_eq!(bucket.outputs, vec![t(), t(), t()]);
    assert_eq!(bucket.duration_ns, None);
    // The bucket reads both producers; u0 reads output 1 of ar0 (offset 0), u1 output 0
    // of ar1 (offset 2).
    let x = |n: &str| id(&f, n);
    assert_eq!(
        f.inputs(x("bucket(ar0..ar1)")),
        vec![(x("c0"), 0), (x("c1"), 0)]
    );
    assert_eq!(f.inputs(x("u0")), vec![(x("bucket(ar0..ar1)"), 1)]);
    assert_eq!(f.inputs(x("u1")), vec![(x("bucket(ar0..ar1)"), 2)]);
    assert_eq!(f.inputs(x("ar2")), vec![(x("c2"), 0)]);
    assert_eq!(f.inputs(x("c2")), vec![(x("c1"), 0)]);

    // Two buckets at once.
    let (f, origin) = fuse_ops(&g, &[vec![o("ar0"), o("ar1")], vec![o("ar2"), o("ar3")]]).unwrap();
    assert_eq!(f.len(), g.len() - 2);
    assert_eq!(origin.iter().filter(|e| e.len() == 2).count(), 2);
    assert!(f.find("bucket(ar2..ar3)").is_some());
}

#[test]
fn a_taken_bucket_name_gets_a_suffix() {
    let mut b = GraphBuilder::new("taken");
    let a = b.add(ar("a"), &[]);
    let c = b.add(ar("c"), &[]);
    b.add(comp("bucket(a..c)"), &[a, c]);
    let g = b.finish();
    let (f, _) = fuse_ops(&g, &[vec![a, c]]).unwrap();
    assert!(f.find("bucket(a..c)#2").is_some());
    assert!(f.find("bucket(a..c)").is_some());
}

#[test]
fn groups_mixing_kinds_or_groups_or_compute_are_rejected() {
    let g = four();
    let o = |n: &str| id(&g, n);
    let s = invalid(&g, &[vec![o("ar3"), o("ag")]]);
    assert!(
        s.contains("`ar3`") && s.contains("`ag`") && s.contains("mixes"),
        "{s}"
    );
    let s = invalid(&g, &[vec![o("ar3"), o("ar4g")]]);
    assert!(s.contains("`ar4g`") && s.contains("4 ranks"), "{s}");
    let s = invalid(&g, &[vec![o("ar0"), o("c1")]]);
    assert!(s.contains("`c1`") && s.contains("not a collective"), "{s}");
    let s = invalid(&g, &[vec![o("ar0")]]);
    assert!(s.contains("at least 2"), "{s}");
    let s = invalid(&g, &[vec![o("ar0"), o("ar0")]]);
    assert!(s.contains("`ar0`") && s.contains("twice"), "{s}");
    let s = invalid(&g, &[vec![o("ar0"), o("ar1")], vec![o("ar1"), o("ar2")]]);
    assert!(s.contains("`ar1`") && s.contains("buckets 0 and 1"), "{s}");
    let s = invalid(&g, &[vec![o("ar0"), OpId(99)]]);
    assert!(s.contains("#99"), "{s}");
}

#[test]
fn a_group_that_would_form_a_cycle_is_rejected_naming_both() {
    // ar0 -> x -> ar1.
    let mut b = GraphBuilder::new("cycle");
    let c0 = b.add(comp("c0"), &[]);
    let ar0 = b.add(ar("ar0"), &[c0]);
    let x = b.add(comp("x"), &[ar0]);
    let ar1 = b.add(ar("ar1"), &[x]);
    let ar2 = b.add(ar("ar2"), &[c0]);
    let g = b.finish();
    let s = invalid(&g, &[vec![ar0, ar1]]);
    assert!(
        s.contains("`ar0` (#1)") && s.contains("`ar1` (#3)") && s.contains("cycle"),
        "{s}"
    );
    // With an unrelated third member as well.
    let s = invalid(&g, &[vec![ar0, ar2, ar1]]);
    assert!(s.contains("`ar0`") && s.contains("`ar1`"), "{s}");
    fuse_ops(&g, &[vec![ar0, ar2]]).unwrap();
    fuse_ops(&g, &[vec![ar1, ar2]]).unwrap();
}

#[test]
fn buckets_that_would_depend_on_each_other_are_rejected() {
    // a1 -> x -> b2 and b1 -> y -> a2: each group alone is fine, both form a cycle.
    let mut b = GraphBuilder::new("two");
    let ag = |n: &str| {
        Op::collective(n, CollectiveKind::AllGather, KIB8, 8, LinkClass::IntraNode).with_output(t())
    };
    let a1 = b.add(ar("a1"), &[]);
    let b1 = b.add(ag("b1"), &[]);
    let x = b.add(comp("x"), &[a1]);
    let y = b.add(comp("y"), &[b1]);
    let a2 = b.add(ar("a2"), &[y]);
    let b2 = b.add(ag("b2"), &[x]);
    let g = b.finish();
    fuse_ops(&g, &[vec![a1, a2]]).unwrap();
    fuse_ops(&g, &[vec![b1, b2]]).unwrap();
    let s = invalid(&g, &[vec![a1, a2], vec![b1, b2]]);
    assert!(
        s.contains("`a1`") && s.contains("`b2`") && s.contains("cycle"),
        "{s}"
    );
}

#[test]
fn members_without_outputs_are_read_as_output_zero() {
    let mut b = GraphBuilder::new("bare");
    let s0 = Op::collective("s0", CollectiveKind::SendRecv, 64, 2, LinkClass::InterNode);
    let s0 = b.add(s0, &[]);
    let s1 = b.add(
        Op::collective("s1", CollectiveKind::SendRecv, 64, 2, LinkClass::InterNode)
            .with_output(t()),
        &[],
    );
    let r0 = b.add(comp("r0"), &[s0]);
    let r1 = b.add(comp("r1"), &[s1]);
    let g = b.finish();
    let (f, origin) = fuse_ops(&g, &[vec![s0, s1]]).unwrap();
    assert_eq!(origin[0], vec![s0, s1]);
    assert_eq!(f.op(OpId(0)).outputs, vec![t()]);
    assert_eq!(f.inputs(OpId(1)), vec![(OpId(0), 0)]);
    assert_eq!(f.inputs(OpId(2)), vec![(OpId(0), 0)]);
    assert_eq!(f.op(OpId(1)).name, g.op(r0).name);
    assert_eq!(f.op(OpId(2)).name, g.op(r1).name);
}

#[test]
fn the_check_catches_a_removed_edge() {
    let (g, f, origin) = fused01();
    let u1 = id(&f, "u1");
    let broken = rebuild(&f, |x, _, ins| {
        if x == u1 {
            ins.clear();
        }
    });
    let s = failure(&g, &broken, &origin);
    assert!(
        s.contains("`ar1` (#4) -> `u1` (#5) is lost")
            && s.contains("no edge `bucket(ar0..ar1)` (#2) -> `u1` (#4) (output 2)"),
        "{s}"
    );
    // The wrong output index.
    let broken = rebuild(&f, |x, _, ins| {
        if x == u1 {
            ins[0].1 = 0;
        }
    });
    assert!(failure(&g, &broken, &origin).contains("(output 2)"));
    // A producer of a member the bucket no longer reads.
    let bucket = id(&f, "bucket(ar0..ar1)");
    let broken = rebuild(&f, |x, _, ins| {
        if x == bucket {
            ins.retain(|e| e.0 != OpId(1));
        }
    });
    let s = failure(&g, &broken, &origin);
    assert!(s.contains("`c1` (#3) -> `ar1` (#4) is lost"), "{s}");
    // An invented dependency.
    let ar2 = id(&f, "ar2");
    let broken = rebuild(&f, |x, _, ins| {
        if x == ar2 {
            ins.push((OpId(0), 0));
        }
    });
    let s = failure(&g, &broken, &origin);
    assert!(
        s.contains("`c0` (#0) -> `ar2` (#6)") && s.contains("no original"),
        "{s}"
    );
}

#[test]
fn the_check_catches_wrong_bytes_outputs_and_copies() {
    let (g, f, origin) = fused01();
    let bucket = id(&f, "bucket(ar0..ar1)");
    let broken = rebuild(&f, |x, op, _| {
        if x == bucket {
            if let OpKind::Collective { bytes, .. } = &mut op.kind {
                *bytes += 1;
            }
        }
    });
    let s = failure(&g, &broken, &origin);
    assert!(
        s.contains("`bucket(ar0..ar1)` (#2) moves 16385 bytes"),
        "{s}"
    );
    let broken = rebuild(&f, |x, op, _| {
        if x == bucket {
            op.duration_ns = Some(10);
        }
    });
    assert!(failure(&g, &broken, &origin).contains("duration override"));
    let broken = rebuild(&f, |x, op, _| {
        if x == OpId(0) {
            op.name = "c0'".into();
        }
    });
    let s = failure(&g, &broken, &origin);
    assert!(
        s.contains("`c0'`") && s.contains("`c0` (#0)") && s.contains("name"),
        "{s}"
    );
    // A member of another kind.
    let ar1 = id(&g, "ar1");
    let other = rebuild(&g, |x, op, _| {
        if x == ar1 {
            if let OpKind::Collective { kind, .. } = &mut op.kind {
                *kind = CollectiveKind::AllGather;
            }
        }
    });
    let s = failure(&other, &f, &origin);
    assert!(
        s.contains("`ar1` (#4) in the bucket `bucket(ar0..ar1)`"),
        "{s}"
    );
}

#[test]
fn the_check_catches_a_duplicated_or_missing_member() {
    let (g, f, origin) = fused01();
    // ar1 listed in the bucket and as the origin of u1 as well.
    let mut o = origin.clone();
    o[4] = vec![id(&g, "ar1")];
    let s = failure(&g, &f, &o);
    assert!(s.contains("`ar1` (#4) appears twice"), "{s}");
    let mut o = origin.clone();
    o[2] = vec![id(&g, "ar0"), id(&g, "ar0")];
    let s = failure(&g, &f, &o);
    assert!(s.contains("`ar0` (#1) appears twice"), "{s}");
    let mut o = origin.clone();
    o[2] = vec![id(&g, "ar0")];
    let s = failure(&g, &f, &o);
    assert!(s.contains("`ar1` (#4) is in no origin entry"), "{s}");
    let mut o = origin.clone();
    o[2].reverse();
    assert!(failure(&g, &f, &o).contains("not in program order"));
    let mut o = origin;
    o.pop();
    assert!(failure(&g, &f, &o).contains("12 origin entries"));
}

#[test]
fn fuse_merges_small_all_reduces_and_never_lengthens() {
    let g = four();
    let hw = Hardware::h100();
    let f = fuse(&g, &hw, &FuseConfig::default()).unwrap();
    assert!(f.after_ns <= f.before_ns);
    check_fusion(&g, &f.graph, &f.origin).unwrap();
    assert_eq!(evaluate(&f.graph, &hw).unwrap().0, f.after_ns);
    assert!(!f.buckets.is_empty(), "{f:?}");
    assert!(f.after_ns < f.before_ns);
    for b in &f.buckets {
        assert!(b.members.len() >= 2);
        assert_eq!(b.bytes, KIB8 * b.members.len() as u64);
    }
    // No evaluation budget: nothing changes.
    let none = fuse(
        &g,
        &hw,
        &FuseConfig {
            max_candidates: 0,
            ..FuseConfig::default()
        },
    )
    .unwrap();
    assert_eq!((none.after_ns, none.evaluations), (none.before_ns, 0));
    assert!(none.buckets.is_empty());
    assert_eq!(none.graph.len(), g.len());
}

/// Fusion keeps the resident bytes and the step outputs: a bucket holding a step output is
/// one (its buffer holds every member), copies keep their marks; the check names the bucket
/// or the copy when a mark is dropped or invented, and reports lost resident bytes.
#[test]
fn fusion_keeps_resident_bytes_and_step_outputs() {
    let g = crate::rewritten::with_memory(&four(), 4242, &["ar1", "ar3"]);
    let o = |n: &str| id(&g, n);
    let (f, origin) = fuse_ops(&g, &[vec![o("ar0"), o("ar1")]]).unwrap();
    assert_eq!(f.resident_bytes(), 4242);
    let live: Vec<&str> = f
        .ops()
        .filter(|o| o.live_out)
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(live, ["bucket(ar0..ar1)", "ar3"]);
    // `rebuild` keeps no resident bytes; `kept` does.
    let kept = |edit: &dyn Fn(&mut Op)| {
        let mut b = GraphBuilder::new(f.name());
        b.set_resident_bytes(4242);
        for x in f.ids() {
            let mut op = f.op(x).clone();
            edit(&mut op);
            b.try_add(op, &f.inputs(x)).unwrap();
        }
        b.finish()
    };
    check_fusion(&g, &kept(&|_| {}), &origin).unwrap();
    let s = failure(&g, &rebuild(&f, |_, _, _| {}), &origin);
    assert!(s.contains("resident bytes from 4242 to 0"), "{s}");
    let s = failure(
        &g,
        &kept(&|op| op.live_out &= !op.name.starts_with("bucket")),
        &origin,
    );
    assert!(
        s.contains("`ar1` (#4) is an output of the step (live_out), but `bucket(ar0..ar1)` (#2)"),
        "{s}"
    );
    let s = failure(&g, &kept(&|op| op.live_out |= op.name == "u3"), &origin);
    assert!(
        s.contains("the copy `u3`") && s.contains("step-output mark"),
        "{s}"
    );
    // A bucket of unmarked members is no step output.
    let (f2, origin2) = fuse_ops(&g, &[vec![o("ar0"), o("ar2")]]).unwrap();
    let bucket = id(&f2, "bucket(ar0..ar2)");
    assert!(!f2.op(bucket).live_out);
    let marked = crate::rewritten::with_memory(&f2, 4242, &["ar1", "ar3", "bucket(ar0..ar2)"]);
    let s = failure(&g, &marked, &origin2);
    assert!(
        s.contains("`bucket(ar0..ar2)` (#") && s.contains("is marked live_out, but `ar0` (#1)"),
        "{s}"
    );
}
