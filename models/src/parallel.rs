//! Parallel plans: data, tensor and pipeline parallelism, ZeRO, and where the ranks sit.

use serde::{Deserialize, Serialize};

use concerto_graph::ir::{DType, LinkClass};
use concerto_graph::GraphError;

/// How far data-parallel training shards its state (Rajbhandari et al., "ZeRO: Memory
/// Optimizations Toward Training Trillion Parameter Models", SC 2020).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Zero {
    /// Plain data parallelism: every rank holds everything; gradients are all-reduced in
    /// buckets (PyTorch DDP).
    #[default]
    None,
    /// Gradients and optimizer states sharded: gradients are reduce-scattered in buckets, the
    /// optimizer updates its `1/dp` shard and the updated parameters are all-gathered.
    Stage2,
    /// Parameters sharded too: each layer's parameters are all-gathered before its forward and
    /// again before its backward, and its gradients reduce-scattered after its backward.
    Stage3,
}

impl Zero {
    /// `none`, `stage2` or `stage3`.
    pub fn as_str(self) -> &'static str {
        match self {
            Zero::None => "none",
            Zero::Stage2 => "stage2",
            Zero::Stage3 => "stage3",
        }
    }
}

/// A parallel plan of one training step.
///
/// Ranks are placed Megatron-style: tensor-parallel ranks innermost, then data-parallel, then
/// pipeline stages; rank `r` sits on node `r / gpus_per_node`. The graphs built are the view
/// of rank 0 (pipeline stage 0), with every shape per device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Parallel {
    /// Data-parallel degree.
    pub dp: u32,
    /// Tensor-parallel degree (Megatron-LM); for the Evoformer, the dynamic-axial-parallelism
    /// (DAP) degree.
    pub tp: u32,
    /// Pipeline-parallel degree (stages).
    pub pp: u32,
    /// ZeRO stage of the data-parallel group.
    pub zero: Zero,
    /// Microbatches per step: the pipeline's microbatches (at least `pp` when `pp > 1`), or
    /// gradient-accumulation steps when `pp == 1`.
    pub microbatches: u32,
    /// GPUs per node: groups within one node use the intra-node link class.
    pub gpus_per_node: u32,
    /// Gradient bucket size in bytes for data-parallel gradient reduction.
    pub bucket_bytes: u64,
    /// The dtype of activations, parameters and gradients: `bf16` (mixed precision, the
    /// default), `f16`, or `f32` (full precision, as in the Concerto paper's fp32 setting).
    /// Softmax statistics and losses stay `f32`.
    pub precision: DType,
    /// Megatron-LM's sequence parallelism (Korthikanti et al., "Reducing Activation
    /// Recomputation in Large Transformer Models", MLSys 2023), GPT only, `tp >= 2`: the
    /// norms, dropouts and residual adds run on `1/tp` of the sequence, and each tensor-parallel
    /// all-reduce becomes a reduce-scatter along the sequence after the row-parallel linear and
    /// an all-gather along the sequence before the next column-parallel linear (backward, the
    /// other way round).
    pub sequence_parallel: bool,
}

impl Default for Parallel {
    fn default() -> Self {
        Self {
            dp: 1,
            tp: 1,
            pp: 1,
            zero: Zero::None,
            microbatches: 1,
            gpus_per_node: 8,
            bucket_bytes: Parallel::DDP_BUCKET_BYTES,
            precision: DType::Bf16,
            sequence_parallel: false,
        }
    }
}

impl Parallel {
    /// PyTorch DDP's default bucket size, 25 MiB.
    pub const DDP_BUCKET_BYTES: u64 = 25 << 20;

    /// A plan with the given degrees, no ZeRO, 8 GPUs per node, 25 MiB buckets and
    /// [`Parallel::default_microbatches`] microbatches.
    pub fn new(dp: u32, tp: u32, pp: u32) -> Self {
        Self {
            dp,
            tp,
            pp,
            microbatches: Self::default_microbatches(pp),
            ..Self::default()
        }
    }

    /// The same plan with another ZeRO stage.
    pub fn with_zero(mut self, zero: Zero) -> Self {
        self.zero = zero;
        self
    }

    /// The same plan with sequence parallelism on or off.
    pub fn with_sequence_parallel(mut self, on: bool) -> Self {
        self.sequence_parallel = on;
        self
    }

    /// The same plan with another microbatch count.
    pub fn with_microbatches(mut self, microbatches: u32) -> Self {
        self.microbatches = microbatches;
        self
    }

    /// Microbatches by default: `2 * pp` with a pipeline (enough for 1F1B's steady state),
    /// else 1.
    pub fn default_microbatches(pp: u32) -> u32 {
        if pp > 1 {
            pp.saturating_mul(2)
        } else {
            1
        }
    }

    /// Total GPUs, `dp * tp * pp`.
    pub fn gpus(&self) -> u64 {
        u64::from(self.dp) * u64::from(self.tp) * u64::from(self.pp)
    }

    /// Checks what does not depend on the model: positive degrees and sizes, enough
    /// microbatches for the pipeline, and the ZeRO combinations supported (ZeRO-2/3 need
    /// `dp >= 2`; they combine with tensor parallelism but not with pipelining, as in
    /// DeepSpeed).
    pub fn validate(&self) -> Result<(), GraphError> {
        for (what, v) in [
            ("dp", self.dp),
            ("tp", self.tp),
            ("pp", self.pp),
            ("microbatches", self.microbatches),
            ("gpus_per_node", self.gpus_per_node),
        ] {
            if v == 0 {
                return Err(invalid(format!("{what} must be at least 1, not 0")));
            }
        }
        if self.gpus() > MAX_GPUS {
            return Err(invalid(format!(
                "dp * tp * pp = {} GPUs is more than the {MAX_GPUS} supported",
                self.gpus()
            )));
        }
        if !matches!(self.precision, DType::Bf16 | DType::F16 | DType::F32) {
            return Err(invalid(format!(
                "precision must be bf16, f16 or f32, not {:?}",
                self.precision
            )));
        }
        if self.bucket_bytes == 0 {
            return Err(invalid("bucket_bytes must be positive, not 0".into()));
        }
        if self.pp > 1 && self.microbatches < self.pp {
            return Err(invalid(format!(
                "a pipeline of pp = {} stages needs microbatches >= pp, not {}",
                self.pp, self.microbatches
            )));
        }
        if self.sequence_parallel && self.tp < 2 {
            return Err(invalid(format!(
                "sequence parallelism splits the sequence over the tensor-parallel group and \
                 needs tp >= 2, not tp = {}",
                self.tp
            )));
        }
        if self.zero != Zero::None {
            let z = self.zero.as_str();
            if self.dp < 2 {
                return Err(invalid(format!(
                    "ZeRO {z} shards over the data-parallel group and needs dp >= 2, not dp = {}",
                    self.dp
                )));
            }
            if self.pp > 1 {
                return Err(invalid(format!(
                    "ZeRO {z} with pipeline parallelism (pp = {}) is not supported (DeepSpeed \
                     pipelines only with ZeRO-1)",
                    self.pp
                )));
            }
        }
        Ok(())
    }

    /// The link classes of rank 0's groups.
    pub(crate) fn placement(&self) -> Placement {
        let tp = u64::from(self.tp);
        let dp = u64::from(self.dp);
        let pp = u64::from(self.pp);
        let gpn = u64::from(self.gpus_per_node.max(1));
        let stage = tp * dp;
        let node = |r: u64| r / gpn;
        let class = |intra: bool| {
            if intra {
                LinkClass::IntraNode
            } else {
                LinkClass::InterNode
            }
        };
        // Every TP group of stage 0: ranks base..base+tp.
        let tp_intra = (0..dp).all(|g| node(g * tp) == node(g * tp + tp - 1));
        // Every DP group of stage 0: ranks j, j+tp, ..., j+(dp-1)tp.
        let dp_intra = (0..tp).all(|j| node(j) == node(j + (dp - 1) * tp));
        // Every stage-0 rank and its peer on stage 1 / on the last stage.
        let next_intra = (0..stage).all(|r| node(r) == node(r + stage));
        let last_intra = (0..stage).all(|r| node(r) == node(r + (pp.max(1) - 1) * stage));
        Placement {
            tp: class(tp_intra),
            dp: class(dp_intra),
            pp_next: class(next_intra),
            pp_last: class(last_intra),
        }
    }
}

/// Link classes of rank 0's groups (see [`Parallel::placement`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The tensor-parallel (or DAP) group.
    pub(crate) tp: LinkClass,
    /// The data-parallel (and ZeRO) group.
    pub(crate) dp: LinkClass,
    /// Stage 0 to stage 1 (pipeline send/recv).
    pub(crate) pp_next: LinkClass,
    /// Stage 0 to the last stage (tied embedding gradients).
    pub(crate) pp_last: LinkClass,
}

/// An [`GraphError::InvalidModel`].
pub(crate) fn invalid(reason: String) -> GraphError {
    GraphError::InvalidModel { reason }
}

/// Most GPUs a plan may have (keeps placement checks and counters small).
pub(crate) const MAX_GPUS: u64 = 1 << 20;
/// Most block instances (blocks times microbatches) a step graph may have.
pub(crate) const MAX_BLOCK_INSTANCES: u64 = 1 << 20;

/// Errors naming the first size that is zero.
pub(crate) fn check_positive(model: &str, sizes: &[(&str, u64)]) -> Result<(), GraphError> {
    for &(what, v) in sizes {
        if v == 0 {
            return Err(invalid(format!("{model}: {what} must be positive, not 0")));
        }
    }
    Ok(())
}

/// Errors when the product of `factors` (a flop or byte count the builder forms, e.g.
/// `b s h V` for an LM head) leaves less than 10 bits of headroom in a `u64`.
pub(crate) fn check_fits(model: &str, what: &str, factors: &[u64]) -> Result<(), GraphError> {
    let p = factors.iter().try_fold(1u64, |acc, &f| acc.checked_mul(f));
    match p {
        Some(p) if p <= u64::MAX >> 10 => Ok(()),
        _ => Err(invalid(format!(
            "{model}: sizes too large: {what} overflows the 64-bit flop and byte counters"
        ))),
    }
}

/// Errors when `blocks` blocks over the plan's microbatches make too large a graph.
pub(crate) fn check_graph_size(model: &str, blocks: u64, par: &Parallel) -> Result<(), GraphError> {
    let n = blocks.saturating_mul(u64::from(par.microbatches));
    if n > MAX_BLOCK_INSTANCES {
        return Err(invalid(format!(
            "{model}: {blocks} blocks per stage x {} microbatches = {n} block instances, more \
             than the {MAX_BLOCK_INSTANCES} a step graph may hold",
            par.microbatches
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_ddp_and_megatron() {
        let p = Parallel::default();
        assert_eq!((p.dp, p.tp, p.pp, p.microbatches), (1, 1, 1, 1));
        assert_eq!(p.bucket_bytes, 25 * 1024 * 1024);
        assert_eq!(p.gpus_per_node, 8);
        assert_eq!(Parallel::new(2, 4, 2).microbatches, 4);
        assert_eq!(Parallel::new(2, 4, 2).gpus(), 16);
        p.validate().unwrap();
    }

    #[test]
    fn placement_matches_the_megatron_rules() {
        let link = |dp, tp, pp| Parallel::new(dp, tp, pp).placement();
        use LinkClass::*;
        // (pp, tp, dp) = (1, 16, 1): the TP group spans two nodes.
        assert_eq!(link(1, 16, 1).tp, InterNode);
        // (1, 8, 2): TP in a node, DP across nodes.
        let p = link(2, 8, 1);
        assert_eq!((p.tp, p.dp), (IntraNode, InterNode));
        // (2, 4, 2): TP and DP in a node, the pipeline across nodes.
        let p = link(2, 4, 2);
        assert_eq!((p.tp, p.dp, p.pp_next), (IntraNode, IntraNode, InterNode));
        // Two stages of 2 x 2 ranks fit in one node.
        let p = link(2, 2, 2);
        assert_eq!((p.pp_next, p.pp_last), (IntraNode, IntraNode));
        // Four stages of four ranks: stage 0 -> 1 stays in the node, stage 0 -> 3 does not.
        let p = link(1, 4, 4);
        assert_eq!((p.pp_next, p.pp_last), (IntraNode, InterNode));
        assert_eq!(link(8, 1, 1).dp, IntraNode);
        assert_eq!(link(16, 1, 1).dp, InterNode);
    }

    #[test]
    fn invalid_plans_say_why() {
        let msg = |p: Parallel| p.validate().unwrap_err().to_string();
        assert!(msg(Parallel::new(0, 1, 1)).contains("dp"));
        assert!(msg(Parallel::new(1, 0, 1)).contains("tp"));
        assert!(msg(Parallel::new(1, 1, 4).with_microbatches(2)).contains("microbatches >= pp"));
        assert!(msg(Parallel::new(1, 1, 1).with_zero(Zero::Stage3)).contains("dp >= 2"));
        assert!(msg(Parallel::new(2, 1, 2).with_zero(Zero::Stage2)).contains("pipeline"));
        let p = Parallel {
            bucket_bytes: 0,
            ..Parallel::default()
        };
        assert!(msg(p).contains("bucket_bytes"));
        let p = Parallel {
            gpus_per_node: 0,
            ..Parallel::default()
        };
        assert!(msg(p).contains("gpus_per_node"));
        assert!(msg(Parallel::new(1 << 16, 1 << 16, 1)).contains("GPUs"));
    }
}
