//! Tests of the loop decomposition and of its check.

use super::*;
use crate::split::Axis;
use concerto_graph::{CollectiveKind, DType, GemmShape, LinkClass, Tensor};

/// `embed` (two outputs) -> `fc` (GEMM) -> `ar` (all-reduce) -> `add` (also reads output
/// 1 of `embed`) -> `loss`, which also reads `fc`.
fn five() -> Graph {
    let t = Tensor::new(vec![64, 64], DType::Bf16);
    let mut b = GraphBuilder::new("five");
    let embed = b.add(
        Op::compute("embed", ComputeClass::Elementwise, 4096, 16384)
            .with_output(t.clone())
            .with_output(t.clone()),
        &[],
    );
    let shape = GemmShape {
        b: 1,
        m: 64,
        n: 64,
        k: 64,
    };
    let fc = b.add(Op::gemm("fc", shape, DType::Bf16), &[embed]);
    let ar = b.add(
        Op::collective(
            "ar",
            CollectiveKind::AllReduce,
            8192,
            8,
            LinkClass::IntraNode,
        )
        .with_output(t.clone()),
        &[fc],
    );
    let add = b
        .try_add(
            Op::compute("add", ComputeClass::Elementwise, 4097, 24577).with_output(t),
            &[(ar, 0), (embed, 1)],
        )
        .unwrap();
    b.try_add(
        Op::compute("loss", ComputeClass::Reduction, 4096, 8192),
        &[(add, 0), (fc, 0)],
    )
    .unwrap();
    b.finish()
}

/// Divides flops and bytes by `n`, the remainder on chunk 0.
fn split(n: u32) -> impl Fn(&Op, u32) -> Op {
    move |op, i| {
        let div = |x: u64| x / u64::from(n) + if i == 0 { x % u64::from(n) } else { 0 };
        let mut c = op.clone();
        match &mut c.kind {
            OpKind::Compute { flops, bytes, .. } => {
                *flops = div(*flops);
                *bytes = div(*bytes);
            }
            OpKind::Collective { bytes, .. } => *bytes = div(*bytes),
        }
        c
    }
}

fn ctx(ops: &[usize], n: u32) -> Context {
    Context {
        collective: OpId(2),
        axis: Axis::Rows,
        ops: ops.iter().map(|&i| OpId(i)).collect(),
        n,
        family: Family::Split,
    }
}

fn rewritten() -> (Graph, Rewritten) {
    let g = five();
    let r = rewrite(&g, &ctx(&[1, 2, 3], 2), &split(2)).unwrap();
    (g, r)
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

fn failure(original: &Graph, r: &Rewritten) -> String {
    match check(original, r) {
        Err(e @ DecompError::CheckFailed { .. }) => e.to_string(),
        other => panic!("expected a check failure, got {other:?}"),
    }
}

#[test]
fn names_origins_edges_and_joins() {
    let (_, r) = rewritten();
    let g = &r.graph;
    let names: Vec<&str> = g.ops().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "embed",
            "fc/chunk0of2",
            "fc/chunk1of2",
            "fc/join",
            "ar/chunk0of2",
            "ar/chunk1of2",
            "add/chunk0of2",
            "add/chunk1of2",
            "add/join",
            "loss",
        ]
    );
    use Origin::*;
    let chunk = |op, index| Chunk {
        op: OpId(op),
        index,
        n: 2,
    };
    assert_eq!(
        r.origin,
        [
            Copy(OpId(0)),
            chunk(1, 0),
            chunk(1, 1),
            Join(OpId(1)),
            chunk(2, 0),
            chunk(2, 1),
            chunk(3, 0),
            chunk(3, 1),
            Join(OpId(3)),
            Copy(OpId(4)),
        ]
    );
    let ins = |i: usize| g.inputs(OpId(i));
    let e = |v: &[(usize, usize)]| v.iter().map(|&(p, t)| (OpId(p), t)).collect::<Vec<_>>();
    assert_eq!(ins(1), e(&[(0, 0)]));
    assert_eq!(ins(2), e(&[(0, 0)]));
    assert_eq!(ins(3), e(&[(1, 0), (2, 0)]));
    assert_eq!(ins(4), e(&[(1, 0)]));
    assert_eq!(ins(5), e(&[(2, 0)]));
    // Chunk i of `add` reads chunk i of `ar` and output 1 of the copy of `embed`.
    assert_eq!(ins(6), e(&[(0, 1), (4, 0)]));
    assert_eq!(ins(7), e(&[(0, 1), (5, 0)]));
    assert_eq!(ins(8), e(&[(6, 0), (7, 0)]));
    // The outside consumer reads the joins.
    assert_eq!(ins(9), e(&[(3, 0), (8, 0)]));
    let OpKind::Compute {
        class,
        flops,
        bytes,
        gemm,
    } = g.op(OpId(3)).kind
    else {
        panic!("a join is a compute op")
    };
    // Along rows the join is a view; along cols it is a copy of twice the bytes.
    assert_eq!(
        (class, flops, bytes, gemm),
        (ComputeClass::Other, 0, 0, None)
    );
    assert_eq!(g.op(OpId(3)).duration_ns, Some(1));
    let cols = rewrite(
        &five(),
        &Context {
            axis: Axis::Cols,
            ..ctx(&[1, 2, 3], 2)
        },
        &split(2),
    )
    .unwrap();
    let OpKind::Compute { bytes, .. } = cols.graph.op(OpId(3)).kind else {
        panic!("a join is a compute op")
    };
    assert_eq!(bytes, 2 * 8192);
    assert_eq!(g.op(OpId(3)).outputs, five().op(OpId(1)).outputs);
    // Remainders on chunk 0.
    let flops = |i: usize| match g.op(OpId(i)).kind {
        OpKind::Compute { flops, .. } => flops,
        OpKind::Collective { .. } => unreachable!(),
    };
    assert_eq!((flops(6), flops(7)), (2049, 2048));
}

#[test]
fn a_lone_collective_gets_a_join_its_consumer_reads() {
    let g = five();
    let mut c = ctx(&[2], 3);
    c.collective = OpId(2);
    let r = rewrite(&g, &c, &split(3)).unwrap();
    assert_eq!(r.graph.len(), 5 - 1 + 3 + 1);
    let join = r.graph.find("ar/join").unwrap();
    let add = r.graph.find("add").unwrap();
    assert!(r.graph.inputs(add).contains(&(join, 0)));
    assert_eq!(r.graph.predecessors(join).len(), 3);
    // A graph output in the context gets a join as well.
    let r = rewrite(&g, &ctx(&[2, 3, 4], 2), &split(2)).unwrap();
    assert!(r.graph.find("loss/join").is_some());
    assert!(r.graph.find("add/join").is_none());
}

#[test]
fn invalid_contexts_are_rejected_naming_the_op() {
    let g = five();
    let cases = [
        (ctx(&[], 2), "no ops"),
        (ctx(&[3, 2], 2), "sorted"),
        (ctx(&[2, 2], 2), "sorted"),
        (ctx(&[2, 9], 2), "#9"),
        (ctx(&[2], 1), "at least 2"),
        (ctx(&[1, 3], 2), "not among"),
    ];
    for (c, needle) in cases {
        let e = rewrite(&g, &c, &split(2)).unwrap_err();
        assert!(matches!(e, DecompError::InvalidContext { .. }), "{e:?}");
        let s = e.to_string();
        assert!(s.contains(needle) && s.contains("`ar`"), "{s}");
    }
}

#[test]
fn a_removed_edge_fails_the_check() {
    let (g, mut r) = rewritten();
    // `ar/chunk0of2` no longer reads `fc/chunk0of2`.
    r.graph = rebuild(&r.graph, |x, _, ins| {
        if x.0 == 4 {
            ins.clear();
        }
    });
    let s = failure(&g, &r);
    assert!(s.contains("`fc` (#1) -> `ar` (#2) is lost"), "{s}");
    assert!(s.contains("`fc/chunk0of2`"), "{s}");

    // `loss` reads `fc` itself... no: it no longer reads the join of `fc`.
    let (g, mut r) = rewritten();
    r.graph = rebuild(&r.graph, |x, _, ins| {
        if x.0 == 9 {
            ins.retain(|e| e.0 != OpId(3));
        }
    });
    let s = failure(&g, &r);
    assert!(s.contains("no edge `fc/join` (#3) -> `loss` (#9)"), "{s}");

    // A join that misses a chunk.
    let (g, mut r) = rewritten();
    r.graph = rebuild(&r.graph, |x, _, ins| {
        if x.0 == 8 {
            ins.retain(|e| e.0 != OpId(7));
        }
    });
    let s = failure(&g, &r);
    assert!(
        s.contains("join `add/join`") && s.contains("`add/chunk1of2`"),
        "{s}"
    );

    // The output index of an edge from a copy is kept.
    let (g, mut r) = rewritten();
    r.graph = rebuild(&r.graph, |x, _, ins| {
        if x.0 == 6 {
            ins[0].1 = 0;
        }
    });
    let s = failure(&g, &r);
    assert!(s.contains("(output 1)"), "{s}");
}

#[test]
fn a_duplicated_or_missing_chunk_fails_the_check() {
    let (g, mut r) = rewritten();
    r.origin[2] = Origin::Chunk {
        op: OpId(1),
        index: 0,
        n: 2,
    };
    let s = failure(&g, &r);
    assert!(s.contains("`fc` (#1) has chunk 0 twice"), "{s}");

    let (g, mut r) = rewritten();
    r.origin[2] = Origin::Copy(OpId(1));
    assert!(failure(&g, &r).contains("both copied"));

    let (g, mut r) = rewritten();
    r.origin.pop();
    assert!(failure(&g, &r).contains("10 ops"));

    let (g, mut r) = rewritten();
    r.origin[9] = Origin::Copy(OpId(0));
    let s = failure(&g, &r);
    assert!(s.contains("`embed` (#0) is copied twice"), "{s}");
}

#[test]
fn a_changed_copy_fails_the_check() {
    let (g, mut r) = rewritten();
    r.graph = rebuild(&r.graph, |x, op, _| {
        if x.0 == 9 {
            op.name = "loss2".into();
        }
    });
    let s = failure(&g, &r);
    assert!(
        s.contains("`loss2`") && s.contains("`loss` (#4)") && s.contains("name"),
        "{s}"
    );

    let (g, mut r) = rewritten();
    r.graph = rebuild(&r.graph, |x, op, _| {
        if x.0 == 0 {
            op.duration_ns = Some(5);
        }
    });
    assert!(failure(&g, &r).contains("duration override"));
}

#[test]
fn chunks_whose_work_does_not_add_up_fail_the_check() {
    let (g, mut r) = rewritten();
    r.graph = rebuild(&r.graph, |x, op, _| {
        if x.0 == 2 {
            if let OpKind::Compute { flops, .. } = &mut op.kind {
                *flops = 0;
            }
        }
    });
    let s = failure(&g, &r);
    assert!(s.contains("`fc` (#1)") && s.contains("flops"), "{s}");

    // Chunks that each do the whole op's work.
    let g = five();
    let whole = |op: &Op, _| op.clone();
    let e = rewrite(&g, &ctx(&[2, 3], 2), &whole).unwrap_err();
    assert!(matches!(e, DecompError::CheckFailed { .. }), "{e}");
    assert!(e.to_string().contains("`ar` (#2)"), "{e}");

    // A chunk of another kind.
    let other = |op: &Op, i| {
        let mut c = split(2)(op, i);
        if let OpKind::Collective { group, .. } = &mut c.kind {
            *group = 4;
        }
        c
    };
    let e = rewrite(&g, &ctx(&[2], 2), &other).unwrap_err();
    assert!(e.to_string().contains("same group"), "{e}");
}

/// The rewrite keeps the resident bytes and the step outputs: `ar`, whose only reader is in
/// the context, gets a join because it is a step output, and the join (not the chunks)
/// carries the mark; `fc`'s join does not. The check names the op when either is lost.
#[test]
fn resident_bytes_and_step_outputs_are_kept() {
    let g = crate::rewritten::with_memory(&five(), 5000, &["ar", "loss"]);
    let r = rewrite(&g, &ctx(&[1, 2, 3], 2), &split(2)).unwrap();
    let h = &r.graph;
    assert_eq!(h.resident_bytes(), 5000);
    let mut live: Vec<&str> = h
        .ops()
        .filter(|o| o.live_out)
        .map(|o| o.name.as_str())
        .collect();
    live.sort_unstable();
    assert_eq!(live, ["ar/join", "loss"]);
    let join = h.find("ar/join").unwrap();
    assert_eq!(h.op(join).outputs, g.op(OpId(2)).outputs);
    // A lost resident count, a dropped mark on the join or on a copy, a marked chunk.
    let mut lost = r.clone();
    lost.graph = rebuild(h, |_, _, _| {});
    assert!(failure(&g, &lost).contains("resident bytes from 5000 to 0"));
    let edited = |edit: &dyn Fn(&mut Op)| {
        let mut e = r.clone();
        let mut b = GraphBuilder::new(h.name());
        b.set_resident_bytes(5000);
        for x in h.ids() {
            let mut op = h.op(x).clone();
            edit(&mut op);
            b.try_add(op, &h.inputs(x)).unwrap();
        }
        e.graph = b.finish();
        e
    };
    let e = failure(&g, &edited(&|op| op.live_out &= op.name != "ar/join"));
    assert!(
        e.contains("`ar` (#2) is an output of the step (live_out), but `ar/join` (#6)"),
        "{e}"
    );
    let e = failure(&g, &edited(&|op| op.live_out &= op.name != "loss"));
    assert!(
        e.contains("the copy `loss` (#10) of `loss` (#4) differs in its step-output mark"),
        "{e}"
    );
    let e = failure(&g, &edited(&|op| op.live_out |= op.name == "ar/chunk1of2"));
    assert!(
        e.contains("`ar/chunk1of2` (#5), a part of `ar` (#2)'s result"),
        "{e}"
    );
    // Without its join, a chunked step output is reported as such.
    let mut no_join = r.clone();
    let mut b = GraphBuilder::new(h.name());
    b.set_resident_bytes(5000);
    let mut origin = Vec::new();
    let mut map = vec![None; h.len()];
    for x in h.ids() {
        if x == join {
            continue;
        }
        let ins: Vec<(OpId, usize)> = h
            .inputs(x)
            .into_iter()
            .filter_map(|(p, t)| map[p.0].map(|q| (q, t)))
            .collect();
        map[x.0] = Some(b.try_add(h.op(x).clone(), &ins).unwrap());
        origin.push(r.origin[x.0]);
    }
    no_join.graph = b.finish();
    no_join.origin = origin;
    let e = failure(&g, &no_join);
    assert!(
        e.contains("`ar` (#2) is an output of the step (live_out), chunked, and has no join"),
        "{e}"
    );
}
