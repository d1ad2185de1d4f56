//! Tests of the transformer builders against published layer formulas and parameter counts.

use super::gpt::padded_vocab;
use super::*;
use crate::program::collectives;
use crate::{build, parameters, Model, Zero};
use concerto_graph::ir::{CollectiveKind, ComputeClass, DType, Graph, LinkClass, OpKind};

fn gpt_small() -> GptConfig {
    GptConfig {
        layers: 4,
        hidden: 256,
        heads: 8,
        seq: 128,
        micro_batch: 2,
        vocab: 1000,
    }
}

fn flops(g: &Graph, pred: impl Fn(&str, ComputeClass) -> bool) -> u64 {
    g.ops()
        .filter_map(|o| match o.kind {
            OpKind::Compute { class, flops, .. } if pred(&o.name, class) => Some(flops),
            _ => None,
        })
        .sum()
}

fn count(g: &Graph, kind: CollectiveKind, name: impl Fn(&str) -> bool) -> usize {
    collectives(g, kind).filter(|(o, _)| name(&o.name)).count()
}

fn links(g: &Graph, kind: CollectiveKind, name: impl Fn(&str) -> bool) -> Vec<LinkClass> {
    let mut v: Vec<LinkClass> = collectives(g, kind)
        .filter(|(o, _)| name(&o.name))
        .filter_map(|(o, _)| o.link())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn gpt_layer_flops_are_the_megatron_formulas() {
    let cfg = gpt_small();
    let (b, s, h) = (cfg.micro_batch, cfg.seq, cfg.hidden);
    for tp in [1u32, 2, 4] {
        let g = build(&Model::Gpt(cfg.clone()), &Parallel::new(1, tp, 1)).unwrap();
        let t = u64::from(tp);
        let fwd_gemm = flops(&g, |n, c| {
            n.starts_with("layer1.fwd.") && c == ComputeClass::Gemm
        });
        assert_eq!(fwd_gemm, 24 * b * s * h * h / t, "tp {tp}");
        let bwd_gemm = flops(&g, |n, c| {
            n.starts_with("layer1.bwd.") && c == ComputeClass::Gemm
        });
        assert_eq!(bwd_gemm, 2 * fwd_gemm);
        let attn = flops(&g, |n, c| {
            n.starts_with("layer1.fwd.") && c == ComputeClass::Attention
        });
        assert_eq!(attn, 4 * b * s * s * h / t);
        let attn_bwd = flops(&g, |n, c| {
            n.starts_with("layer1.bwd.") && c == ComputeClass::Attention
        });
        assert_eq!(attn_bwd, 10 * b * s * s * h / t);
        // LM head: [b s, h] x [h, V/tp], V padded to 128 tp.
        let v = padded_vocab(1000, t);
        assert_eq!(
            flops(&g, |n, _| n == "head.fwd.logits"),
            2 * b * s * h * v / t
        );
    }
}

#[test]
fn gpt_parameters_match_gpt2_small() {
    let gpt2 = GptConfig {
        layers: 12,
        hidden: 768,
        heads: 12,
        seq: 1024,
        micro_batch: 1,
        vocab: 50304,
    };
    let m = Model::Gpt(gpt2);
    assert_eq!(parameters(&m, &Parallel::default()).unwrap(), 124_475_904);
}

#[test]
fn vit_b16_matches_torchvision() {
    let vit_b = VitConfig {
        layers: 12,
        hidden: 768,
        heads: 12,
        image: 224,
        patch: 16,
        micro_batch: 1,
        classes: 1000,
    };
    let m = Model::Vit(vit_b);
    assert_eq!(parameters(&m, &Parallel::default()).unwrap(), 86_567_656);
    let g = build(&m, &Parallel::default()).unwrap();
    // torchvision reports 17.56 GFLOPS (multiply-adds) for vit_b_16.
    let macs = flops(&g, |n, c| {
        n.contains(".fwd.") && matches!(c, ComputeClass::Gemm | ComputeClass::Attention)
    }) / 2;
    assert!((macs as f64 / 17.56e9 - 1.0).abs() < 0.005, "{macs}");
}

#[test]
fn gpt_sequence_parallel_trades_all_reduces_for_gathers_and_scatters() {
    let cfg = gpt_small();
    let (b, s, h) = (cfg.micro_batch, cfg.seq, cfg.hidden);
    let tp = 4u32;
    let plain = build(&Model::Gpt(cfg.clone()), &Parallel::new(1, tp, 1)).unwrap();
    let par = Parallel::new(1, tp, 1).with_sequence_parallel(true);
    let g = build(&Model::Gpt(cfg.clone()), &par).unwrap();
    assert_eq!(g.name(), "gpt-dp1-tp4-pp1-sp");
    let gemm = |g: &Graph| flops(g, |_, c| c == ComputeClass::Gemm);
    assert_eq!(gemm(&g), gemm(&plain), "the linears are unchanged");
    // LayerNorms run on 1/tp of the tokens.
    let ln = |g: &Graph| flops(g, |n, c| n.contains("attn.ln") && c == ComputeClass::Norm);
    assert_eq!(ln(&g) * u64::from(tp), ln(&plain));
    let elt = DType::Bf16.size();
    for l in 0..cfg.layers {
        for part in ["attn", "mlp"] {
            let ag = format!("layer{l}.fwd.{part}.sp.allgather");
            let rs = format!("layer{l}.fwd.{part}.sp.reducescatter");
            // Forward: gather [b, s, h] before the column-parallel linear, scatter
            // [b, s / tp, h] after the row-parallel one; backward the other way round.
            let (gathered, shard) = (b * s * h * elt, b * s * h * elt / u64::from(tp));
            for (name, kind, bytes) in [
                (ag.clone(), CollectiveKind::AllGather, gathered),
                (rs.clone(), CollectiveKind::ReduceScatter, shard),
                (
                    ag.replace(".fwd.", ".bwd.")
                        .replace("allgather", "reducescatter"),
                    CollectiveKind::ReduceScatter,
                    shard,
                ),
                (
                    rs.replace(".fwd.", ".bwd.")
                        .replace("reducescatter", "allgather"),
                    CollectiveKind::AllGather,
                    gathered,
                ),
            ] {
                let id = g.find(&name).unwrap_or_else(|| panic!("no {name}"));
                let OpKind::Collective {
                    kind: k,
                    bytes: x,
                    group,
                    ..
                } = g.op(id).kind
                else {
                    panic!("{name} is not a collective")
                };
                assert_eq!((k, x, group), (kind, bytes, tp), "{name}");
            }
            let gemm_in = format!(
                "layer{l}.fwd.{part}.{}",
                if part == "attn" { "qkv" } else { "fc1" }
            );
            let id = g.find(&gemm_in).unwrap();
            assert!(
                g.predecessors(id).contains(&g.find(&ag).unwrap()),
                "{gemm_in} reads {ag}"
            );
        }
    }
    // No tensor-parallel all-reduce is left in the layers; the vocab-parallel softmax
    // statistics stay all-reduces.
    assert_eq!(
        count(&g, CollectiveKind::AllReduce, |n| n.starts_with("layer")),
        0
    );
    assert_eq!(count(&g, CollectiveKind::AllReduce, |_| true), 2);
    assert_eq!(
        count(&g, CollectiveKind::AllGather, |_| true),
        4 * cfg.layers as usize + 2
    );
    assert_eq!(
        count(&g, CollectiveKind::ReduceScatter, |_| true),
        4 * cfg.layers as usize + 2
    );
}

#[test]
fn sequence_parallelism_is_refused_where_it_does_not_apply() {
    let msg = |m: Model, p: Parallel| build(&m, &p).unwrap_err().to_string();
    let sp = |tp| Parallel::new(1, tp, 1).with_sequence_parallel(true);
    assert!(msg(Model::Gpt(gpt_small()), sp(1)).contains("tp >= 2"));
    let odd = GptConfig {
        seq: 130,
        ..gpt_small()
    };
    assert!(msg(Model::Gpt(odd), sp(4)).contains("divide seq = 130"));
    let vit = VitConfig {
        hidden: 256,
        heads: 8,
        ..VitConfig::default()
    };
    assert!(msg(Model::Vit(vit), sp(2)).contains("gpt only"));
}

#[test]
fn gpt_tensor_parallel_collectives() {
    let cfg = GptConfig::default();
    for (tp, link) in [
        (2, LinkClass::IntraNode),
        (8, LinkClass::IntraNode),
        (16, LinkClass::InterNode),
    ] {
        let g = build(&Model::Gpt(cfg.clone()), &Parallel::new(1, tp, 1)).unwrap();
        for l in 0..cfg.layers {
            let fwd = format!("layer{l}.fwd.tp_allreduce.");
            let bwd = format!("layer{l}.bwd.tp_allreduce.");
            assert_eq!(
                count(&g, CollectiveKind::AllReduce, |n| n.starts_with(&fwd)),
                2
            );
            assert_eq!(
                count(&g, CollectiveKind::AllReduce, |n| n.starts_with(&bwd)),
                2
            );
        }
        // Embedding (fwd), LM head input (bwd), two softmax statistics.
        let tp_ars = count(&g, CollectiveKind::AllReduce, |n| {
            n.contains("tp_allreduce")
        });
        assert_eq!(tp_ars, 4 * cfg.layers as usize + 4);
        assert_eq!(g.collective_count(), tp_ars, "no DP collective at dp = 1");
        assert_eq!(g.link_classes(), vec![link]);
        // The all-reduce of the attention output carries b s h bf16 values.
        let id = g.find("layer0.fwd.tp_allreduce.attn").unwrap();
        let OpKind::Collective { bytes, group, .. } = g.op(id).kind else {
            panic!()
        };
        assert_eq!((bytes, group), (2 * cfg.seq * cfg.hidden, tp));
        // Its input is the row-parallel projection; the residual add reads it.
        assert_eq!(
            g.predecessors(id),
            vec![g.find("layer0.fwd.attn.proj").unwrap()]
        );
        // The backward all-reduce of dX reads the dgrad, not the wgrad.
        let id = g.find("layer0.bwd.tp_allreduce.mlp").unwrap();
        assert_eq!(
            g.predecessors(id),
            vec![g.find("layer0.bwd.mlp.fc1.dgrad").unwrap()]
        );
    }
}

#[test]
fn gpt_paper_configurations() {
    let cfg = GptConfig::default();
    let m = Model::Gpt(cfg.clone());
    let layers = cfg.layers as usize;
    // (pp, tp, dp) = (1, 16, 1): TP across two nodes.
    let g = build(&m, &Parallel::new(1, 16, 1)).unwrap();
    assert_eq!(g.link_classes(), vec![LinkClass::InterNode]);
    // (1, 8, 2): TP inside a node, DP buckets across nodes.
    let g = build(&m, &Parallel::new(2, 8, 1)).unwrap();
    assert_eq!(
        links(&g, CollectiveKind::AllReduce, |n| n
            .contains("tp_allreduce")),
        vec![LinkClass::IntraNode]
    );
    assert_eq!(
        links(&g, CollectiveKind::AllReduce, |n| n
            .starts_with("grad_bucket")),
        vec![LinkClass::InterNode]
    );
    let buckets = count(&g, CollectiveKind::AllReduce, |n| {
        n.starts_with("grad_bucket")
    });
    assert!(buckets >= 2, "{buckets}");
    assert_eq!(
        buckets,
        g.ops().filter(|o| o.name.ends_with(".adam")).count()
    );
    // (2, 4, 2): 8 microbatches, TP and DP inside a node, stages across nodes.
    let p = Parallel::new(2, 4, 2);
    let g = build(&m, &p).unwrap();
    let mbs = p.microbatches as usize;
    assert_eq!(mbs, 4);
    assert_eq!(
        count(&g, CollectiveKind::SendRecv, |n| n.ends_with("fwd.send")),
        mbs
    );
    assert_eq!(
        count(&g, CollectiveKind::SendRecv, |n| n.ends_with("bwd.recv")),
        mbs
    );
    assert_eq!(
        links(&g, CollectiveKind::SendRecv, |_| true),
        vec![LinkClass::InterNode]
    );
    assert_eq!(
        links(&g, CollectiveKind::AllReduce, |n| n
            .starts_with("grad_bucket")),
        vec![LinkClass::IntraNode]
    );
    let per_stage = layers / 2;
    assert_eq!(
        count(&g, CollectiveKind::AllReduce, |n| n
            .contains(".fwd.tp_allreduce.")
            && n.contains("layer")),
        2 * per_stage * mbs
    );
    assert!(g.find("head.fwd.logits").is_none() && g.find("mb0.head.fwd.logits").is_none());
    assert!(g.find("embed.word.tied_grad.allreduce").is_some());
    // The backward of a microbatch waits for the gradient it receives, which answers its send.
    let recv = g.find("mb1.bwd.recv").unwrap();
    assert_eq!(g.predecessors(recv), vec![g.find("mb1.fwd.send").unwrap()]);
    let last = format!("mb1.layer{}.bwd.mlp.fc2.dgrad", per_stage - 1);
    assert!(g.predecessors(g.find(&last).unwrap()).contains(&recv));
    // 1F1B on stage 0: mb1's forward comes before mb0's backward, mb2's after it.
    let pos = |n: &str| g.find(n).unwrap();
    assert!(pos("mb1.fwd.send") < pos("mb0.bwd.recv"));
    assert!(pos("mb0.bwd.recv") < pos("mb2.fwd.send"));
    // DP sync in the last microbatch only.
    for o in g
        .ops()
        .filter(|o| o.name.starts_with("grad_bucket") && o.is_collective())
    {
        let preds = g.predecessors(g.find(&o.name).unwrap());
        assert!(
            preds.iter().all(|&p| g.op(p).name.starts_with("mb3.")),
            "{}",
            o.name
        );
    }
}

#[test]
fn data_parallel_buckets_cover_every_parameter() {
    let cfg = gpt_small();
    let m = Model::Gpt(cfg.clone());
    let params = parameters(&m, &Parallel::default()).unwrap();
    for bucket in [1u64, 1 << 16, 1 << 20, 1 << 40] {
        let p = Parallel {
            bucket_bytes: bucket,
            ..Parallel::new(4, 1, 1)
        };
        let g = build(&m, &p).unwrap();
        let ars: Vec<u64> = collectives(&g, CollectiveKind::AllReduce)
            .map(|(_, bytes)| bytes)
            .collect();
        assert_eq!(ars.iter().sum::<u64>(), 2 * params, "bucket {bucket}");
        if bucket == 1 {
            // One bucket per parameter group: word+position, 6 per layer, final LN.
            assert_eq!(ars.len(), 2 + 6 * cfg.layers as usize + 1);
        }
        if bucket == 1 << 40 {
            assert_eq!(ars.len(), 1);
        }
    }
    // The first bucket holds the last layer's MLP and is issued during backward.
    let p = Parallel {
        bucket_bytes: 1,
        ..Parallel::new(4, 1, 1)
    };
    let g = build(&m, &p).unwrap();
    let ar = g.find("grad_bucket0.allreduce").unwrap();
    assert!(ar < g.find("layer0.bwd.attn.qkv.wgrad").unwrap());
    // Tied word embedding: its bucket is last, after the embedding backward.
    let last = g
        .ops()
        .filter(|o| o.name.ends_with(".allreduce"))
        .last()
        .unwrap()
        .name
        .clone();
    assert!(g
        .predecessors(g.find(&last).unwrap())
        .contains(&g.find("embed.bwd.word").unwrap()));
}

#[test]
fn zero_stages_on_gpt() {
    let cfg = gpt_small();
    let m = Model::Gpt(cfg.clone());
    let blocks = cfg.layers as usize + 2;
    for (dp, link) in [
        (8, LinkClass::IntraNode),
        (16, LinkClass::InterNode),
        (32, LinkClass::InterNode),
    ] {
        let g = build(&m, &Parallel::new(dp, 1, 1).with_zero(Zero::Stage3)).unwrap();
        for l in 0..cfg.layers {
            let n = format!("layer{l}.zero3.");
            assert_eq!(
                count(&g, CollectiveKind::AllGather, |x| x.starts_with(&n)),
                2
            );
            assert_eq!(
                count(&g, CollectiveKind::ReduceScatter, |x| x.starts_with(&n)),
                1
            );
        }
        // The embedding's backward reads no parameter: nothing to gather for it.
        assert_eq!(
            count(&g, CollectiveKind::AllGather, |_| true),
            2 * blocks - 1
        );
        assert!(g.find("embed.zero3.allgather.bwd").is_none());
        assert_eq!(count(&g, CollectiveKind::ReduceScatter, |_| true), blocks);
        assert_eq!(count(&g, CollectiveKind::AllReduce, |_| true), 0);
        assert_eq!(g.link_classes(), vec![link]);
        // The layer's GEMMs wait for its gathered parameters.
        let ag = g.find("layer2.zero3.allgather.fwd").unwrap();
        assert!(g
            .predecessors(g.find("layer2.fwd.attn.qkv").unwrap())
            .contains(&ag));
        assert_eq!(
            ag.0 + 1,
            g.find("layer2.fwd.attn.ln").unwrap().0,
            "issued right before the layer"
        );
        let ag = g.find("layer2.zero3.allgather.bwd").unwrap();
        assert!(g
            .predecessors(g.find("layer2.bwd.mlp.fc2.dgrad").unwrap())
            .contains(&ag));
        let adams = g.ops().filter(|o| o.name.ends_with(".adam")).count();
        assert_eq!(adams, blocks);
    }
    let g = build(&m, &Parallel::new(4, 2, 1).with_zero(Zero::Stage2)).unwrap();
    let rs = count(&g, CollectiveKind::ReduceScatter, |n| {
        n.starts_with("grad_bucket")
    });
    let ag = count(&g, CollectiveKind::AllGather, |n| {
        n.starts_with("grad_bucket")
    });
    assert!(rs >= 1 && rs == ag);
    assert_eq!(
        count(&g, CollectiveKind::AllReduce, |n| n
            .starts_with("grad_bucket")),
        0
    );
}

#[test]
fn vit_builds_with_every_plan() {
    let cfg = VitConfig::default();
    assert_eq!(cfg.seq(), 257);
    let m = Model::Vit(cfg.clone());
    for p in [
        Parallel::default(),
        Parallel::new(1, 4, 1),
        Parallel::new(2, 2, 2),
        Parallel::new(4, 1, 1).with_zero(Zero::Stage3),
    ] {
        let g = build(&m, &p).unwrap();
        let mbs = p.microbatches as usize;
        let fwd_tp = count(&g, CollectiveKind::AllReduce, |n| {
            n.contains(".fwd.tp_allreduce")
        });
        let layers = (cfg.layers / p.pp) as usize;
        assert_eq!(fwd_tp, if p.tp > 1 { 2 * layers * mbs } else { 0 });
    }
}

#[test]
fn invalid_transformers_are_named() {
    let err = |m: Model, p: Parallel| build(&m, &p).unwrap_err().to_string();
    let gpt = |f: fn(&mut GptConfig)| {
        let mut c = gpt_small();
        f(&mut c);
        Model::Gpt(c)
    };
    assert!(err(gpt(|c| c.hidden = 0), Parallel::default()).contains("hidden"));
    assert!(err(gpt(|c| c.vocab = 0), Parallel::default()).contains("vocab"));
    assert!(err(gpt(|c| c.heads = 7), Parallel::default()).contains("multiple of heads"));
    assert!(err(gpt(|_| {}), Parallel::new(1, 3, 1)).contains("tp = 3 must divide heads"));
    assert!(
        err(gpt(|c| c.layers = 6), Parallel::new(1, 1, 4)).contains("pp = 4 must divide layers")
    );
    assert!(err(gpt(|_| {}), Parallel::new(1, 1, 2).with_microbatches(1)).contains("microbatches"));
    let vit = Model::Vit(VitConfig {
        patch: 15,
        ..VitConfig::default()
    });
    assert!(err(vit, Parallel::default()).contains("patch"));
    assert!(err(gpt(|c| c.hidden = 1 << 40), Parallel::default()).contains("too large"));
    assert!(err(gpt(|c| c.vocab = u64::MAX), Parallel::default()).contains("too large"));
    assert!(err(gpt(|c| c.layers = 1 << 21), Parallel::default()).contains("block instances"));
    let vit = Model::Vit(VitConfig {
        image: 1 << 40,
        patch: 1,
        ..VitConfig::default()
    });
    assert!(err(vit, Parallel::default()).contains("too large"));
}
