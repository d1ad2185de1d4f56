//! Tests of collective matmul: finding the loops, rewriting them, and the check.

use concerto_graph::{DType, GemmShape, LinkClass};

use concerto_graph::{ComputeClass, GraphBuilder};

use super::*;
use crate::error::DecompError;
use crate::rewritten::{Origin, Rewritten};
use crate::rules::chunk as rules_chunk;

fn act(shape: &[u64]) -> Tensor {
    Tensor::new(shape.to_vec(), DType::Bf16)
}

fn rows(op: &Op, j: u32, n: u32) -> Op {
    rules_chunk(op, Axis::Rows, n, j, None)
}

/// `ln` `[1, 16, 32]` -> all-gather over 4 -> `[1, 64, 32]` -> `qkv` (64 x 32 -> 48) ->
/// `out`; with `wgrad`, a GEMM contracting over the tokens also reads the gathered tensor.
fn gather(wgrad: bool) -> Graph {
    let mut b = GraphBuilder::new("ag");
    let ln = b.add(
        Op::compute("ln", ComputeClass::Norm, 1024, 2048).with_output(act(&[1, 16, 32])),
        &[],
    );
    let w = b.add(
        Op::compute("w", ComputeClass::Other, 0, 64).with_output(act(&[32, 48])),
        &[],
    );
    let ag = b.add(
        Op::collective(
            "ag",
            CollectiveKind::AllGather,
            64 * 32 * 2,
            4,
            LinkClass::IntraNode,
        )
        .with_output(act(&[1, 64, 32])),
        &[ln],
    );
    let g = GemmShape {
        b: 1,
        m: 64,
        n: 48,
        k: 32,
    };
    let qkv = b.add(Op::gemm("qkv", g, DType::Bf16), &[ag, w]);
    if wgrad {
        let wg = GemmShape {
            b: 1,
            m: 32,
            n: 48,
            k: 64,
        };
        b.add(Op::gemm("wgrad", wg, DType::Bf16), &[ag, qkv]);
    }
    b.add(
        Op::compute("out", ComputeClass::Elementwise, 64 * 48, 64 * 48 * 4),
        &[qkv],
    );
    b.finish()
}

/// `x` -> `proj` (64 x 48 -> 32, output `[1, 64, 32]`) -> reduce-scatter over 4 ->
/// `[1, 16, 32]` -> `residual`.
fn scatter() -> Graph {
    let mut b = GraphBuilder::new("rs");
    let x = b.add(
        Op::compute("x", ComputeClass::Elementwise, 64, 64).with_output(act(&[1, 64, 48])),
        &[],
    );
    let g = GemmShape {
        b: 1,
        m: 64,
        n: 32,
        k: 48,
    };
    let proj = b.add(Op::gemm("proj", g, DType::Bf16), &[x]);
    let rs = b.add(
        Op::collective(
            "rs",
            CollectiveKind::ReduceScatter,
            16 * 32 * 2,
            4,
            LinkClass::IntraNode,
        )
        .with_output(act(&[1, 16, 32])),
        &[proj],
    );
    b.add(
        Op::compute("residual", ComputeClass::Elementwise, 512, 3072)
            .with_output(act(&[1, 16, 32])),
        &[rs, x],
    );
    b.finish()
}

fn id(g: &Graph, name: &str) -> OpId {
    g.find(name).unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn an_all_gather_becomes_a_ring_of_permutes_and_row_chunks() {
    for wgrad in [false, true] {
        let g = gather(wgrad);
        let ring = find(&g, id(&g, "ag")).expect("a loop");
        assert_eq!(ring.pattern, RingPattern::AllGatherMatmul);
        assert_eq!((ring.gemm, ring.ranks), (id(&g, "qkv"), 4));
        let r = rewrite(&g, &ring, &|op, j| rows(op, j, 4)).unwrap();
        let h = &r.graph;
        // 3 steps of one 512-byte shard each, 4 chunks of 16 rows, the GEMM's join, and
        // the gathered tensor's join only when the weight gradient reads it.
        for j in 1..=3 {
            let s = id(h, &format!("ag/step{j}of3"));
            let OpKind::Collective { kind, bytes, .. } = h.op(s).kind else {
                panic!()
            };
            assert_eq!((kind, bytes), (CollectiveKind::SendRecv, 1024));
            let c = id(h, &format!("qkv/chunk{j}of4"));
            assert!(h.predecessors(c).contains(&s), "chunk {j} reads step {j}");
        }
        let c0 = id(h, "qkv/chunk0of4");
        assert!(
            h.predecessors(c0).contains(&id(h, "ln")),
            "chunk 0 reads the local shard"
        );
        assert!(!h.predecessors(c0).iter().any(|&p| h.op(p).is_collective()));
        assert_eq!(gemm_of(h.op(c0)).unwrap().m, 16);
        assert_eq!(h.find("ag/join").is_some(), wgrad);
        if wgrad {
            assert!(h.predecessors(id(h, "wgrad")).contains(&id(h, "ag/join")));
        }
        assert!(h.predecessors(id(h, "out")).contains(&id(h, "qkv/join")));
        assert_eq!(h.find("ag"), None);
    }
}

#[test]
fn a_reduce_scatter_becomes_a_ring_of_permutes_and_accumulates() {
    let g = scatter();
    let ring = find(&g, id(&g, "rs")).expect("a loop");
    assert_eq!(ring.pattern, RingPattern::MatmulReduceScatter);
    assert_eq!(ring.gemm, id(&g, "proj"));
    let r = rewrite(&g, &ring, &|op, j| rows(op, j, 4)).unwrap();
    let h = &r.graph;
    assert!(h
        .predecessors(id(h, "rs/step1of3"))
        .contains(&id(h, "proj/chunk0of4")));
    for j in 1..=3 {
        let acc = id(h, &format!("rs/acc{j}of3"));
        let preds = h.predecessors(acc);
        assert!(preds.contains(&id(h, &format!("rs/step{j}of3"))));
        assert!(preds.contains(&id(h, &format!("proj/chunk{j}of4"))));
        assert_eq!(h.op(acc).outputs, g.op(id(&g, "rs")).outputs);
    }
    assert!(h
        .predecessors(id(h, "rs/step2of3"))
        .contains(&id(h, "rs/acc1of3")));
    assert!(h
        .predecessors(id(h, "residual"))
        .contains(&id(h, "rs/acc3of3")));
    // The GEMM's join exists (nothing else reads it here, but it stands for the output).
    assert!(h.find("proj/join").is_some());
}

/// A GEMM of `m x k -> n`.
fn mm(m: u64, n: u64, k: u64) -> Op {
    Op::gemm("mm", GemmShape { b: 1, m, n, k }, DType::Bf16)
}

/// `x` (output `input`) -> a `kind` collective over 4 ranks (output `output`) -> `next`
/// (omitted when `None`).
fn around(input: &[u64], kind: CollectiveKind, output: &[u64], next: Option<Op>) -> Graph {
    let mut b = GraphBuilder::new("around");
    let x = b.add(
        Op::compute("x", ComputeClass::Norm, 1, 1).with_output(act(input)),
        &[],
    );
    let out = act(output);
    let c = b.add(
        Op::collective("c", kind, out.bytes(), 4, LinkClass::IntraNode).with_output(out),
        &[x],
    );
    if let Some(op) = next {
        b.add(op, &[c]);
    }
    b.finish()
}

#[test]
fn shapes_that_do_not_loop_are_not_found() {
    let ag = CollectiveKind::AllGather;
    let c = |g: &Graph| find(g, id(g, "c"));
    // The loop itself, for contrast.
    assert!(c(&around(
        &[1, 16, 32],
        ag,
        &[1, 64, 32],
        Some(mm(64, 16, 32))
    ))
    .is_some());
    // Gathered along the features: the GEMM would contract over the gathered dimension.
    assert_eq!(
        c(&around(&[1, 64, 8], ag, &[1, 64, 32], Some(mm(64, 16, 32)))),
        None
    );
    // A GEMM reading the gathered tensor as its right operand (k is not the features).
    assert_eq!(
        c(&around(&[1, 16, 32], ag, &[1, 64, 32], Some(mm(32, 8, 64)))),
        None
    );
    // No GEMM reads it.
    assert_eq!(c(&around(&[1, 16, 32], ag, &[1, 64, 32], None)), None);
    // A reduce-scatter of something that is not a GEMM; and a compute op.
    let g = around(
        &[1, 64, 32],
        CollectiveKind::ReduceScatter,
        &[1, 16, 32],
        None,
    );
    assert_eq!(c(&g), None);
    assert_eq!(find(&g, id(&g, "x")), None);
    // A ring that does not match the graph is refused.
    let g = scatter();
    let mut ring = find(&g, id(&g, "rs")).unwrap();
    ring.ranks = 8;
    let e = rewrite(&g, &ring, &|op, j| rows(op, j, 8)).unwrap_err();
    assert!(matches!(e, DecompError::InvalidContext { .. }), "{e}");
}

/// `rw` rebuilt with `edit` applied to each op and its inputs.
fn rebuilt(rw: &Rewritten, edit: impl Fn(OpId, &mut Op, &mut Vec<(OpId, usize)>)) -> Rewritten {
    let mut b = GraphBuilder::new("edited");
    for x in rw.graph.ids() {
        let mut op = rw.graph.op(x).clone();
        let mut ins = rw.graph.inputs(x);
        edit(x, &mut op, &mut ins);
        b.try_add(op, &ins).unwrap();
    }
    Rewritten {
        graph: b.finish(),
        origin: rw.origin.clone(),
    }
}

#[test]
fn the_check_catches_broken_rings() {
    let g = gather(true);
    let ring = find(&g, id(&g, "ag")).unwrap();
    let good = rewrite(&g, &ring, &|op, j| rows(op, j, 4)).unwrap();
    check(&g, &ring, &good).unwrap();
    let step2 = id(&good.graph, "ag/step2of3");
    let chunk2 = id(&good.graph, "qkv/chunk2of4");
    let fails = |rw: &Rewritten, what: &str| {
        let e = check(&g, &ring, rw).unwrap_err().to_string();
        assert!(e.contains(what), "expected `{what}` in: {e}");
    };
    // A chunk that no longer waits for its shard.
    fails(
        &rebuilt(&good, |x, _, ins| {
            if x == chunk2 {
                ins.retain(|&(p, _)| p != step2);
            }
        }),
        "no edge",
    );
    // A step that moves the whole tensor instead of one shard.
    fails(
        &rebuilt(&good, |x, op, _| {
            if x == step2 {
                if let OpKind::Collective { bytes, .. } = &mut op.kind {
                    *bytes *= 4;
                }
            }
        }),
        "send-recv of 1024 bytes",
    );
    // A chunk with too many rows.
    fails(
        &rebuilt(&good, |x, op, _| {
            if x == chunk2 {
                *op = rows(g.op(ring.gemm), 0, 2);
                op.name = "qkv/chunk2of4".into();
            }
        }),
        "rows",
    );
    // A copy that changed.
    let out = id(&good.graph, "out");
    fails(
        &rebuilt(&good, |x, op, _| {
            if x == out {
                op.duration_ns = Some(7);
            }
        }),
        "differs",
    );
    // A missing step (its origin claims another index twice).
    let mut twice = good.clone();
    let k = twice
        .origin
        .iter()
        .position(|o| matches!(o, Origin::Step { index: 1, .. }))
        .unwrap();
    twice.origin[k] = Origin::Step {
        op: ring.collective,
        index: 0,
        n: 3,
    };
    fails(&twice, "twice");
    // An origin a ring never makes.
    let mut alien = good.clone();
    alien.origin[k] = Origin::Chunk {
        op: ring.collective,
        index: 0,
        n: 3,
    };
    fails(&alien, "does not make");
}

/// Both rings keep the resident bytes, and the op standing for each original's result carries
/// its step-output mark: an all-gather that is a step output gets its join even when only the
/// GEMM reads it; a reduce-scatter's last accumulate is its result; chunks, steps and the
/// other accumulates are never marked. The check names the op when a mark or the resident
/// bytes are lost.
#[test]
fn rings_keep_resident_bytes_and_step_outputs() {
    use crate::rewritten::with_memory;
    let g = with_memory(&gather(false), 777, &["ag", "qkv"]);
    let ring = find(&g, id(&g, "ag")).unwrap();
    let r = rewrite(&g, &ring, &|op, j| rows(op, j, 4)).unwrap();
    let h = &r.graph;
    assert_eq!(h.resident_bytes(), 777);
    let live = |h: &Graph| -> Vec<String> {
        let mut v: Vec<String> = h
            .ops()
            .filter(|o| o.live_out)
            .map(|o| o.name.clone())
            .collect();
        v.sort_unstable();
        v
    };
    assert_eq!(live(h), ["ag/join", "qkv/join"]);
    // Unmarked, the same all-gather needs no join (only the GEMM reads it).
    let plain = gather(false);
    let r0 = rewrite(
        &plain,
        &find(&plain, id(&plain, "ag")).unwrap(),
        &|op, j| rows(op, j, 4),
    )
    .unwrap();
    assert!(r0.graph.find("ag/join").is_none());
    assert!(live(&r0.graph).is_empty());

    let s = with_memory(&scatter(), 99, &["rs"]);
    let sring = find(&s, id(&s, "rs")).unwrap();
    let rs = rewrite(&s, &sring, &|op, j| rows(op, j, 4)).unwrap();
    assert_eq!(rs.graph.resident_bytes(), 99);
    assert_eq!(live(&rs.graph), ["rs/acc3of3"]);

    // `rw` with `f` applied to each op, its resident bytes kept.
    let edit = |rw: &Rewritten, f: &dyn Fn(&mut Op)| {
        let mut b = GraphBuilder::new("edited");
        b.set_resident_bytes(rw.graph.resident_bytes());
        for x in rw.graph.ids() {
            let mut op = rw.graph.op(x).clone();
            f(&mut op);
            b.try_add(op, &rw.graph.inputs(x)).unwrap();
        }
        Rewritten {
            graph: b.finish(),
            origin: rw.origin.clone(),
        }
    };
    let fails = |g: &Graph, ring: &Ring, rw: &Rewritten, what: &str| {
        let e = check(g, ring, rw).unwrap_err().to_string();
        assert!(e.contains(what), "expected `{what}` in: {e}");
    };
    check(&g, &ring, &edit(&r, &|_| {})).unwrap();
    fails(
        &g,
        &ring,
        &rebuilt(&r, |_, _, _| {}),
        "resident bytes from 777 to 0",
    );
    fails(
        &g,
        &ring,
        &edit(&r, &|op| op.live_out &= op.name != "ag/join"),
        "`ag` (#2) is an output of the step (live_out), but `ag/join`",
    );
    fails(
        &g,
        &ring,
        &edit(&r, &|op| op.live_out |= op.name == "ag/step2of3"),
        "`ag/step2of3`",
    );
    fails(
        &g,
        &ring,
        &edit(&r, &|op| op.live_out |= op.name == "qkv/chunk0of4"),
        "`qkv/chunk0of4`",
    );
    fails(
        &s,
        &sring,
        &edit(&rs, &|op| op.live_out = op.name == "rs/acc2of3"),
        "`rs` (#2) is an output of the step (live_out), but `rs/acc3of3`",
    );
}
