//! Transformers: GPT (decoder-only language model, Megatron-LM layout) and ViT (vision
//! transformer encoder), sharing one pre-LN layer.
//!
//! Tensor parallelism follows Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter
//! Language Models Using Model Parallelism" (2019): the attention QKV projection and the MLP's
//! first linear are column-parallel (Megatron's `f` before them: identity forward, all-reduce
//! of the input gradient backward), the attention output projection and the MLP's second
//! linear are row-parallel (`g` after them: all-reduce forward, identity backward). The GPT
//! embedding is vocab-parallel (an all-reduce of the looked-up rows), the LM head is
//! column-parallel over the vocabulary and tied to the embedding, and the cross-entropy is
//! vocab-parallel (all-reduces of the softmax max and sums).
//!
//! With sequence parallelism ([`Parallel::sequence_parallel`], GPT only; Korthikanti et al.,
//! "Reducing Activation Recomputation in Large Transformer Models", MLSys 2023), the residual
//! stream between the linears is `[b, s / tp, h]`: `f` becomes an all-gather along the
//! sequence (`<layer>.fwd.attn.sp.allgather`; backward a reduce-scatter) and `g` a
//! reduce-scatter along the sequence (`attn.sp.reducescatter`; backward an all-gather), so the
//! LayerNorms and residual adds work on `1/tp` of the tokens. The embedding's all-reduce is a
//! reduce-scatter too, and the LM head all-gathers the final LayerNorm's output.

use serde::{Deserialize, Serialize};

use super::parallel::{check_fits, check_graph_size, check_positive, invalid, Parallel};
use super::program::{act, compute, NormKind, Pb, Pointwise, Weights, V};
use super::step::Block;
use crate::error::GraphError;
use crate::ir::{ComputeClass, DType, Tensor};

/// A GPT-style decoder (Megatron-LM's GPT): token and position embeddings, pre-LN layers
/// (attention, 4x GeLU MLP), a final LayerNorm and an LM head tied to the token embedding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GptConfig {
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u64,
    /// Attention heads.
    pub heads: u64,
    /// Sequence length.
    pub seq: u64,
    /// Sequences per microbatch.
    pub micro_batch: u64,
    /// Vocabulary size (padded to a multiple of `128 * tp`, as Megatron-LM does).
    pub vocab: u64,
}

impl Default for GptConfig {
    /// 8 layers of a GPT-3 6.7B-sized layer (hidden 4096, 32 heads), sequence 2048,
    /// microbatch 1, GPT-2's vocabulary.
    fn default() -> Self {
        Self {
            layers: 8,
            hidden: 4096,
            heads: 32,
            seq: 2048,
            micro_batch: 1,
            vocab: 50257,
        }
    }
}

/// A vision transformer (Dosovitskiy et al., 2021): patch embedding, class token and position
/// embeddings, pre-LN encoder layers, a final LayerNorm and a linear classifier on the class
/// token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct VitConfig {
    /// Encoder layers.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u64,
    /// Attention heads.
    pub heads: u64,
    /// Image side in pixels.
    pub image: u64,
    /// Patch side in pixels.
    pub patch: u64,
    /// Images per microbatch.
    pub micro_batch: u64,
    /// Classes.
    pub classes: u64,
}

impl Default for VitConfig {
    /// ViT-H/14's width (hidden 1280, 16 heads, 14-pixel patches of 224-pixel images) with 8
    /// layers, 32 images per microbatch, 1000 classes.
    fn default() -> Self {
        Self {
            layers: 8,
            hidden: 1280,
            heads: 16,
            image: 224,
            patch: 14,
            micro_batch: 32,
            classes: 1000,
        }
    }
}

/// GeLU (tanh approximation): flops per element forward and backward.
const GELU: (u64, u64) = (8, 16);

/// Megatron-LM's padded vocabulary: a multiple of `128 * tp`.
pub(crate) fn padded_vocab(vocab: u64, tp: u64) -> u64 {
    let unit = 128 * tp.max(1);
    vocab.div_ceil(unit).saturating_mul(unit)
}

/// Sizes of one transformer layer on one device.
#[derive(Clone, Copy, Debug)]
struct Layer {
    b: u64,
    s: u64,
    h: u64,
    heads: u64,
    tp: u64,
    /// Sequence parallelism: the residual stream is `[b, s / tp, h]`.
    sp: bool,
}

impl Layer {
    /// The residual stream's sequence length on one device.
    fn stream_seq(&self) -> u64 {
        if self.sp {
            self.s / self.tp
        } else {
            self.s
        }
    }
}

/// Megatron's `f` before a column-parallel linear: the identity forward (an all-reduce of the
/// input gradient backward) or, with sequence parallelism, an all-gather along the sequence.
fn enter_tp(pb: &mut Pb, d: Layer, name: &str, x: V) -> V {
    if d.sp {
        pb.sp_gather(&format!("{name}.sp"), x)
    } else {
        pb.tp_copy(&format!("tp_allreduce.{name}"), x)
    }
}

/// Megatron's `g` after a row-parallel linear: an all-reduce forward or, with sequence
/// parallelism, a reduce-scatter along the sequence.
fn leave_tp(pb: &mut Pb, d: Layer, name: &str, x: V) -> V {
    if d.sp {
        pb.sp_scatter(&format!("{name}.sp"), x)
    } else {
        pb.tp_reduce(&format!("tp_allreduce.{name}"), x)
    }
}

/// One pre-LN transformer layer; `x` is `[b, s, h]` (`[b, s / tp, h]` with sequence
/// parallelism).
fn layer(pb: &mut Pb, x: V, d: Layer) -> V {
    let Layer {
        b, s, h, heads, tp, ..
    } = d;
    let hl = h / tp;
    let heads_l = heads / tp;
    let ln1 = pb.norm("attn.ln", x, NormKind::Layer);
    let ln1 = enter_tp(pb, d, "attn", ln1);
    let qkv = pb.linear("attn.qkv", ln1, 3 * hl, Weights::Own { bias: true });
    let o = pb.attention("attn.core", qkv, None, b * heads_l, s, s, h / heads);
    let p = pb.linear("attn.proj", o, h, Weights::Own { bias: true });
    let p = leave_tp(pb, d, "attn", p);
    let r1 = pb.add("attn.residual", x, p);
    let ln2 = pb.norm("mlp.ln", r1, NormKind::Layer);
    let ln2 = enter_tp(pb, d, "mlp", ln2);
    let f1 = pb.linear("mlp.fc1", ln2, 4 * hl, Weights::Own { bias: true });
    let g = pb.unary("mlp.gelu", &[f1], Pointwise::elementwise(GELU.0, GELU.1));
    let f2 = pb.linear("mlp.fc2", g, h, Weights::Own { bias: true });
    let f2 = leave_tp(pb, d, "mlp", f2);
    pb.add("mlp.residual", r1, f2)
}

/// Stage 0's `layers / pp` layer blocks `layer0..`, each one [`layer`] on the residual stream.
fn layer_blocks(layers: u32, par: &Parallel, d: Layer) -> Vec<Block> {
    let link = par.placement().tp;
    (0..layers / par.pp)
        .map(|l| {
            let mut pb = Pb::new(par.tp, link);
            let x = pb.input("input", act([d.b, d.stream_seq(), d.h]));
            let y = layer(&mut pb, x, d);
            pb.output(y);
            Block::new(format!("layer{l}"), pb.finish())
        })
        .collect()
}

/// The start of the head block: its input `[b, s, h]` and the final LayerNorm `ln` of it.
fn head_start(par: &Parallel, d: Layer) -> (Pb, V) {
    let mut pb = Pb::new(par.tp, par.placement().tp);
    let x = pb.input("input", act([d.b, d.stream_seq(), d.h]));
    let ln = pb.norm("ln", x, NormKind::Layer);
    (pb, ln)
}

/// Checks the shared transformer sizes.
fn check_layer(
    model: &str,
    layers: u32,
    hidden: u64,
    heads: u64,
    par: &Parallel,
) -> Result<(), GraphError> {
    let tp = u64::from(par.tp);
    if hidden % heads != 0 {
        return Err(invalid(format!(
            "{model}: hidden = {hidden} must be a multiple of heads = {heads}"
        )));
    }
    if heads % tp != 0 {
        return Err(invalid(format!(
            "{model}: tp = {tp} must divide heads = {heads}"
        )));
    }
    if hidden % tp != 0 || (4 * hidden) % tp != 0 {
        return Err(invalid(format!(
            "{model}: tp = {tp} must divide hidden = {hidden} and the MLP width 4 * hidden"
        )));
    }
    if layers % par.pp != 0 {
        return Err(invalid(format!(
            "{model}: pp = {} must divide layers = {layers}",
            par.pp
        )));
    }
    Ok(())
}

impl GptConfig {
    pub(crate) fn validate(&self, par: &Parallel) -> Result<(), GraphError> {
        check_positive(
            "gpt",
            &[
                ("layers", u64::from(self.layers)),
                ("hidden", self.hidden),
                ("heads", self.heads),
                ("seq", self.seq),
                ("micro_batch", self.micro_batch),
                ("vocab", self.vocab),
            ],
        )?;
        check_layer("gpt", self.layers, self.hidden, self.heads, par)?;
        if par.sequence_parallel && self.seq % u64::from(par.tp) != 0 {
            return Err(invalid(format!(
                "gpt: sequence parallelism needs tp = {} to divide seq = {}",
                par.tp, self.seq
            )));
        }
        let (b, s, h) = (self.micro_batch, self.seq, self.hidden);
        let v = padded_vocab(self.vocab, u64::from(par.tp));
        check_fits("gpt", "the LM head (b s h vocab)", &[b, s, h, v])?;
        check_fits("gpt", "attention (b s^2 h)", &[b, s, s, h])?;
        check_fits("gpt", "the MLP (4 b s h^2)", &[4, b, s, h, h])?;
        check_graph_size("gpt", u64::from(self.layers / par.pp) + 2, par)
    }

    /// Stage 0's blocks: `embed`, `layer0..`, and `head` when there is no pipeline.
    pub(crate) fn blocks(&self, par: &Parallel) -> Vec<Block> {
        let pl = par.placement();
        let tp = u64::from(par.tp);
        let (b, s, h) = (self.micro_batch, self.seq, self.hidden);
        let tokens = b * s;
        let vl = padded_vocab(self.vocab, tp) / tp;
        let d = Layer {
            b,
            s,
            h,
            heads: self.heads,
            tp,
            sp: par.sequence_parallel,
        };
        let mut blocks = Vec::new();

        let mut pb = Pb::new(par.tp, pl.tp);
        let x = pb.embedding("word", vl, act([b, s, h]));
        let x = if d.sp {
            pb.sp_scatter("sp", x)
        } else {
            pb.tp_reduce("tp_allreduce", x)
        };
        let ss = d.stream_seq();
        // The position table stays whole (and its gradient is reduced whole); the add covers
        // this rank's part of the sequence.
        let x = pb.param_add("position", x, act([s, h]), act([b, ss, h]));
        pb.output(x);
        let mut embed = Block::new("embed", pb.finish());
        if par.pp > 1 {
            embed.tied_to_last_stage = vec![0];
        }
        blocks.push(embed);
        blocks.extend(layer_blocks(self.layers, par, d));

        if par.pp == 1 {
            let (mut pb, ln) = head_start(par, d);
            let ln = if d.sp {
                pb.sp_gather("sp", ln)
            } else {
                pb.tp_copy("tp_allreduce", ln)
            };
            let logits = pb.linear("logits", ln, vl, Weights::Tied(0, 0));
            let n = tokens * vl;
            if tp > 1 {
                let mx = pb.stat(
                    "loss.max",
                    &[logits],
                    n,
                    Tensor::new(vec![b, s], DType::F32),
                );
                let mx = pb.tp_reduce_stat("tp_allreduce.loss_max", mx);
                let se = pb.stat(
                    "loss.sum_exp",
                    &[logits, mx],
                    3 * n,
                    Tensor::new(vec![2, b, s], DType::F32),
                );
                let se = pb.tp_reduce_stat("tp_allreduce.loss_sum", se);
                pb.loss(
                    "loss",
                    logits,
                    &[se],
                    ComputeClass::Elementwise,
                    4 * tokens,
                    vec![],
                    3 * n,
                );
            } else {
                pb.cross_entropy("loss", logits, Tensor::new(vec![b, s], DType::F32));
            }
            blocks.push(Block::new("head", pb.finish()));
        }
        blocks
    }
}

impl VitConfig {
    /// Tokens per image: the patches and the class token.
    pub fn seq(&self) -> u64 {
        let side = self.image / self.patch.max(1);
        side * side + 1
    }

    pub(crate) fn validate(&self, par: &Parallel) -> Result<(), GraphError> {
        check_positive(
            "vit",
            &[
                ("layers", u64::from(self.layers)),
                ("hidden", self.hidden),
                ("heads", self.heads),
                ("image", self.image),
                ("patch", self.patch),
                ("micro_batch", self.micro_batch),
                ("classes", self.classes),
            ],
        )?;
        if self.image % self.patch != 0 {
            return Err(invalid(format!(
                "vit: patch = {} must divide image = {}",
                self.patch, self.image
            )));
        }
        check_layer("vit", self.layers, self.hidden, self.heads, par)?;
        let side = self.image / self.patch;
        let (b, h) = (self.micro_batch, self.hidden);
        check_fits("vit", "the patch count", &[side, side, 2])?;
        let s = self.seq();
        check_fits("vit", "attention (b s^2 h)", &[b, s, s, h])?;
        check_fits("vit", "the MLP (4 b s h^2)", &[4, b, s, h, h])?;
        check_fits(
            "vit",
            "the patch embedding (3 b s p^2 h)",
            &[3, b, s, self.patch, self.patch, h],
        )?;
        check_fits("vit", "the classifier (b classes h)", &[b, self.classes, h])?;
        check_graph_size("vit", u64::from(self.layers / par.pp) + 2, par)
    }

    /// Stage 0's blocks: `patch_embed`, `layer0..`, and `head` when there is no pipeline. The
    /// patch embedding and the classifier are replicated over the TP group (as in Megatron's
    /// ViT).
    pub(crate) fn blocks(&self, par: &Parallel) -> Vec<Block> {
        let pl = par.placement();
        let tp = u64::from(par.tp);
        let (b, h, p) = (self.micro_batch, self.hidden, self.patch);
        let s = self.seq();
        let patches = s - 1;
        let d = Layer {
            b,
            s,
            h,
            heads: self.heads,
            tp,
            sp: false,
        };
        let mut blocks = Vec::new();

        let mut pb = Pb::new(par.tp, pl.tp);
        let img = pb.data("image", act([b, patches, 3 * p * p]));
        let x = pb.linear("proj", img, h, Weights::Own { bias: true });
        let x = pb.param_add("cls_pos", x, act([s + 1, h]), act([b, s, h]));
        pb.output(x);
        blocks.push(Block::new("patch_embed", pb.finish()));
        blocks.extend(layer_blocks(self.layers, par, d));

        if par.pp == 1 {
            let (mut pb, ln) = head_start(par, d);
            let full = pb.tensor(ln).clone();
            let cls = act([b, h]);
            let fwd = compute(
                ComputeClass::Other,
                0,
                2 * cls.bytes(),
                None,
                vec![cls.clone()],
            );
            let bwd = compute(
                ComputeClass::Other,
                0,
                full.bytes() + cls.bytes(),
                None,
                vec![full],
            );
            let c = pb.custom("cls", ln, fwd, bwd, &[]);
            let logits = pb.linear("fc", c, self.classes, Weights::Own { bias: true });
            pb.cross_entropy("loss", logits, Tensor::new(vec![b], DType::F32));
            blocks.push(Block::new("head", pb.finish()));
        }
        blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CollectiveKind, Graph, LinkClass, OpKind};
    use crate::models::program::collectives;
    use crate::models::{build, parameters, Model, Zero};

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
        assert!(err(gpt(|c| c.layers = 6), Parallel::new(1, 1, 4))
            .contains("pp = 4 must divide layers"));
        assert!(
            err(gpt(|_| {}), Parallel::new(1, 1, 2).with_microbatches(1)).contains("microbatches")
        );
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
}
