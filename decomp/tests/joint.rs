//! The union graph of joint decomposition: every mode choice gives exactly the graph that
//! applying the chosen rewrites one after the other gives (same ops, same costs, same
//! dependencies, the same resident bytes and step outputs), on a GPT step with many
//! candidates per collective, and on a sequence-parallel GPT step whose regions mix splits and
//! collective-matmul rings.

use std::collections::BTreeSet;

use concerto_decomp::context::context;
use concerto_decomp::joint::{union, Candidate, Union};
use concerto_decomp::rewrite::rewrite;
use concerto_decomp::ring;
use concerto_decomp::rules::chunk;
use concerto_decomp::{Axis, Context, Family};
use concerto_graph::{Graph, Op, OpKind};
use concerto_models::{build, GptConfig, Model, Parallel};

/// A two-layer GPT with 8-way tensor parallelism.
fn gpt_tp8() -> Graph {
    let model = Model::Gpt(GptConfig {
        layers: 2,
        ..GptConfig::default()
    });
    build(
        &model,
        &Parallel {
            tp: 8,
            ..Parallel::default()
        },
    )
    .unwrap()
}

fn split(ctx: &Context, op: &Op, i: u32) -> Op {
    chunk(op, ctx.axis, ctx.n, i, None)
}

/// Every forward TP all-reduce with rows contexts of 2 and 4 chunks, and one of 8 along
/// batch/cols where the rules allow it.
fn candidates(g: &Graph) -> Vec<Candidate> {
    let mut out = Vec::new();
    for o in g.ids() {
        let name = &g.op(o).name;
        if !(name.contains(".fwd.tp_allreduce.")) {
            continue;
        }
        for (axis, n) in [(Axis::Rows, 2), (Axis::Rows, 4), (Axis::Cols, 2)] {
            if let Some(ctx) = context(g, o, axis, n, 4) {
                out.push(Candidate {
                    label: format!("{name} {}/{n}", axis.as_str()),
                    context: ctx,
                });
            }
        }
    }
    out
}

/// The name without the union's `@k` suffix.
fn base(name: &str) -> &str {
    match name.rsplit_once('@') {
        Some((b, k)) if k.chars().all(|c| c.is_ascii_digit()) => b,
        _ => name,
    }
}

/// Ops (name, kind, outputs, duration override, step-output mark) and dependencies by name.
type Canon = (BTreeSet<String>, BTreeSet<(String, String)>);

fn canon(g: &Graph) -> Canon {
    let ops = g
        .ops()
        .map(|o| {
            let kind = match &o.kind {
                OpKind::Compute { flops, bytes, .. } => format!("c{flops}/{bytes}"),
                OpKind::Collective { bytes, group, .. } => format!("x{bytes}/{group}"),
            };
            format!(
                "{} {kind} {:?} {:?} {}",
                base(&o.name),
                o.outputs,
                o.duration_ns,
                o.live_out
            )
        })
        .collect();
    let deps = g
        .dependencies()
        .into_iter()
        .map(|(p, c)| {
            (
                base(&g.op(p).name).to_string(),
                base(&g.op(c).name).to_string(),
            )
        })
        .collect();
    (ops, deps)
}

/// Applies the candidates of `modes` one after the other, contexts found by name.
fn sequential(g: &Graph, u: &Union, cands: &[Candidate], modes: &[usize]) -> Graph {
    let mut current = g.clone();
    for (r, &m) in modes.iter().enumerate() {
        for &i in &u.regions[r].candidates[m] {
            let ctx = &cands[i].context;
            let ops: Vec<_> = ctx
                .ops
                .iter()
                .map(|&o| {
                    current
                        .find(&g.op(o).name)
                        .expect("an op of a disjoint region")
                })
                .collect();
            let moved = Context {
                collective: current.find(&g.op(ctx.collective).name).unwrap(),
                axis: ctx.axis,
                ops,
                n: ctx.n,
                family: ctx.family,
            };
            let f = |op: &Op, k: u32| chunk(op, moved.axis, moved.n, k, None);
            current = rewrite(&current, &moved, &f).unwrap().graph;
        }
    }
    current
}

/// A two-layer GPT with 8-way tensor and sequence parallelism.
fn gpt_sp8() -> Graph {
    let model = Model::Gpt(GptConfig {
        layers: 2,
        ..GptConfig::default()
    });
    build(&model, &Parallel::new(1, 8, 1).with_sequence_parallel(true)).unwrap()
}

/// Every forward all-gather and reduce-scatter: its collective-matmul ring and its split
/// along cols into 2 where the rules allow it.
fn sp_candidates(g: &Graph) -> Vec<Candidate> {
    let mut out = Vec::new();
    for o in g.ids() {
        let name = &g.op(o).name;
        if !name.contains(".fwd.") || !name.contains(".sp.") {
            continue;
        }
        if let Some(r) = ring::find(g, o) {
            out.push(Candidate {
                label: format!("{name} ring"),
                context: r.context(),
            });
        }
        if let Some(ctx) = context(g, o, Axis::Cols, 2, 4) {
            out.push(Candidate {
                label: format!("{name} cols/2"),
                context: ctx,
            });
        }
    }
    out
}

#[test]
fn every_mode_choice_is_the_sequential_rewrite() {
    let g = gpt_tp8();
    let cands = candidates(&g);
    assert!(cands.len() >= 6, "{} candidates", cands.len());
    every_mode_choice(&g, &cands);
}

#[test]
fn rings_and_splits_share_regions() {
    let g = gpt_sp8();
    let cands = sp_candidates(&g);
    let rings = cands
        .iter()
        .filter(|c| c.context.family == Family::Ring)
        .count();
    // Two gathers and two scatters per layer, the head's gather; the embedding's scatter
    // reads no GEMM.
    assert_eq!(rings, 9, "{cands:?}");
    assert!(cands.len() > rings);
    every_mode_choice(&g, &cands);
}

fn every_mode_choice(g: &Graph, cands: &[Candidate]) {
    let g = g.clone();
    let u = union(&g, cands, &split, &[]).unwrap();
    // One region per forward all-reduce (its candidates share it).
    assert!(u.regions.len() >= 3);
    for r in &u.regions {
        assert_eq!(r.modes.len(), r.candidates.len());
        assert!(r.modes.len() >= 2);
        assert!(r.candidates[0].is_empty());
        assert!(r.candidates[1..].iter().all(|c| !c.is_empty()));
        assert!(r.modes.iter().all(|m| !m.is_empty()));
    }
    // Mode 0 everywhere is the original graph.
    let none = vec![0; u.regions.len()];
    let (g0, _) = u.graph_of(&none).unwrap();
    assert_eq!(canon(&g0), canon(&g));
    // The memory information goes through: the step's resident bytes, its outputs (the
    // optimizer updates) marked in every mode choice.
    assert!(g.resident_bytes() > 0 && g.ops().any(|o| o.live_out));
    assert_eq!(u.graph.resident_bytes(), g.resident_bytes());
    // Each region alone in each mode, and every region in its last mode together.
    let mut choices = Vec::new();
    for r in 0..u.regions.len() {
        for m in 1..u.regions[r].modes.len() {
            let mut modes = none.clone();
            modes[r] = m;
            choices.push(modes);
        }
    }
    choices.push(u.regions.iter().map(|r| r.modes.len() - 1).collect());
    choices.push(u.regions.iter().map(|_| 1).collect());
    for modes in &choices {
        let (got, kept) = u.graph_of(modes).unwrap();
        let want = sequential(&g, &u, cands, modes);
        assert_eq!(got.len(), want.len(), "{modes:?}");
        assert_eq!(got.resident_bytes(), g.resident_bytes(), "{modes:?}");
        assert_eq!(want.resident_bytes(), g.resident_bytes(), "{modes:?}");
        assert_eq!(kept.len(), got.len());
        let (a, b) = (canon(&got), canon(&want));
        assert_eq!(a.0, b.0, "ops differ for {modes:?}");
        let missing: Vec<_> = b.1.difference(&a.1).take(5).collect();
        let extra: Vec<_> = a.1.difference(&b.1).take(5).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{modes:?}: missing {missing:?}, extra {extra:?}"
        );
    }
}

#[test]
fn bad_mode_choices_are_errors() {
    let g = gpt_tp8();
    let cands = candidates(&g);
    let u = union(&g, &cands, &split, &[]).unwrap();
    assert!(u.graph_of(&[]).is_err());
    let too_far: Vec<usize> = u.regions.iter().map(|r| r.modes.len()).collect();
    let e = u.graph_of(&too_far).unwrap_err().to_string();
    assert!(e.contains("mode choice"), "{e}");
}
