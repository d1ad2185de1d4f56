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

mod gpt;
#[cfg(test)]
mod tests;
mod vit;

pub use gpt::GptConfig;
pub use vit::VitConfig;

use super::parallel::{invalid, Parallel};
use super::program::{act, NormKind, Pb, Pointwise, Weights, V};
use super::step::Block;
use concerto_graph::GraphError;

/// GeLU (tanh approximation): flops per element forward and backward.
const GELU: (u64, u64) = (8, 16);

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
