//! GPT: the decoder-only language model (Megatron-LM's layout) on the shared layer.

use serde::{Deserialize, Serialize};

use super::{check_layer, head_start, layer_blocks, Layer};
use crate::parallel::{check_fits, check_graph_size, check_positive, invalid, Parallel};
use crate::program::{act, Pb, Weights};
use crate::step::Block;
use concerto_graph::ir::{ComputeClass, DType, Tensor};
use concerto_graph::GraphError;

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

/// Megatron-LM's padded vocabulary: a multiple of `128 * tp`.
pub(crate) fn padded_vocab(vocab: u64, tp: u64) -> u64 {
    let unit = 128 * tp.max(1);
    vocab.div_ceil(unit).saturating_mul(unit)
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
