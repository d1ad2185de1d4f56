//! `concerto model`: build a training-step graph of a model under a parallel plan.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use concerto_graph::summary::Summary;
use concerto_graph::DType;
use concerto_models::{
    EvoformerConfig, GptConfig, Model, Parallel, VitConfig, WideResNetConfig, Zero,
};

use crate::io::write_graph;
use crate::Failure;

/// Arguments of `concerto model`.
#[derive(Args, Debug)]
pub(crate) struct ModelArgs {
    #[command(subcommand)]
    pub(crate) model: ModelKind,
    /// Write the graph (native JSON) to this file.
    #[arg(long, short = 'o', global = true, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

/// The parallel plan (ranks: tensor parallel innermost, then data, then pipeline).
#[derive(Args, Debug, Clone)]
pub(crate) struct ParallelArgs {
    /// Data-parallel degree.
    #[arg(long, default_value_t = 1)]
    pub(crate) dp: u32,
    /// Tensor-parallel degree (Megatron-style; the DAP degree for Evoformer).
    #[arg(long, default_value_t = 1)]
    pub(crate) tp: u32,
    /// Pipeline-parallel degree (the graph is stage 0's view, 1F1B).
    #[arg(long, default_value_t = 1)]
    pub(crate) pp: u32,
    /// ZeRO stage over the data-parallel group: 0, 2 or 3.
    #[arg(long, default_value_t = 0)]
    pub(crate) zero: u32,
    /// Microbatches per step (default: 1, or 2 * pp with pipeline parallelism).
    #[arg(long)]
    pub(crate) microbatches: Option<u32>,
    /// GPUs per node (decides which groups cross nodes).
    #[arg(long, default_value_t = 8)]
    pub(crate) gpus_per_node: u32,
    /// Gradient bucket size in MiB (data parallel and ZeRO).
    #[arg(long, default_value_t = 25)]
    pub(crate) bucket_mib: u64,
    /// dtype of activations, parameters and gradients: bf16 (mixed precision), f16 or f32.
    #[arg(long, default_value = "bf16", value_parser = ["bf16", "f16", "f32"])]
    pub(crate) precision: String,
    /// Megatron-LM sequence parallelism (gpt, tp >= 2): reduce-scatters and all-gathers along
    /// the sequence instead of the tensor-parallel all-reduces.
    #[arg(long)]
    pub(crate) sp: bool,
}

impl ParallelArgs {
    pub(crate) fn parallel(&self) -> anyhow::Result<Parallel> {
        let zero = match self.zero {
            0 => Zero::None,
            2 => Zero::Stage2,
            3 => Zero::Stage3,
            z => anyhow::bail!("--zero must be 0, 2 or 3, got {z}"),
        };
        Ok(Parallel {
            dp: self.dp,
            tp: self.tp,
            pp: self.pp,
            zero,
            microbatches: self
                .microbatches
                .unwrap_or(if self.pp > 1 { 2 * self.pp } else { 1 }),
            gpus_per_node: self.gpus_per_node,
            bucket_bytes: self.bucket_mib.saturating_mul(1 << 20),
            precision: match self.precision.as_str() {
                "f32" => DType::F32,
                "f16" => DType::F16,
                _ => DType::Bf16,
            },
            sequence_parallel: self.sp,
        })
    }
}

/// The models.
#[derive(Subcommand, Debug)]
pub(crate) enum ModelKind {
    /// GPT (decoder-only transformer), Megatron-style tensor parallelism.
    Gpt {
        /// Transformer layers.
        #[arg(long, default_value_t = GptConfig::default().layers)]
        layers: u32,
        /// Hidden size.
        #[arg(long, default_value_t = GptConfig::default().hidden)]
        hidden: u64,
        /// Attention heads.
        #[arg(long, default_value_t = GptConfig::default().heads)]
        heads: u64,
        /// Sequence length.
        #[arg(long, default_value_t = GptConfig::default().seq)]
        seq: u64,
        /// Sequences per microbatch.
        #[arg(long, default_value_t = GptConfig::default().micro_batch)]
        micro_batch: u64,
        /// Vocabulary size.
        #[arg(long, default_value_t = GptConfig::default().vocab)]
        vocab: u64,
        #[command(flatten)]
        parallel: ParallelArgs,
    },
    /// Vision transformer.
    Vit {
        /// Encoder layers.
        #[arg(long, default_value_t = VitConfig::default().layers)]
        layers: u32,
        /// Hidden size.
        #[arg(long, default_value_t = VitConfig::default().hidden)]
        hidden: u64,
        /// Attention heads.
        #[arg(long, default_value_t = VitConfig::default().heads)]
        heads: u64,
        /// Image side in pixels.
        #[arg(long, default_value_t = VitConfig::default().image)]
        image: u64,
        /// Patch side in pixels.
        #[arg(long, default_value_t = VitConfig::default().patch)]
        patch: u64,
        /// Images per microbatch.
        #[arg(long, default_value_t = VitConfig::default().micro_batch)]
        micro_batch: u64,
        #[command(flatten)]
        parallel: ParallelArgs,
    },
    /// Wide ResNet (bottleneck blocks), data parallel.
    WideResnet {
        /// Depth (50 or 101).
        #[arg(long, default_value_t = WideResNetConfig::default().depth)]
        depth: u32,
        /// Widening factor.
        #[arg(long, default_value_t = WideResNetConfig::default().width)]
        width: u64,
        /// Images per microbatch.
        #[arg(long, default_value_t = WideResNetConfig::default().micro_batch)]
        micro_batch: u64,
        #[command(flatten)]
        parallel: ParallelArgs,
    },
    /// AlphaFold 2's Evoformer with dynamic axial parallelism (`--tp` is the DAP degree).
    Evoformer {
        /// Evoformer blocks.
        #[arg(long, default_value_t = EvoformerConfig::default().blocks)]
        blocks: u32,
        /// MSA sequences.
        #[arg(long, default_value_t = EvoformerConfig::default().msa_seqs)]
        msa_seqs: u64,
        /// Residues.
        #[arg(long, default_value_t = EvoformerConfig::default().residues)]
        residues: u64,
        #[command(flatten)]
        parallel: ParallelArgs,
    },
}

impl ModelKind {
    /// The model and the parallel plan.
    pub(crate) fn spec(&self) -> anyhow::Result<(Model, Parallel)> {
        Ok(match self {
            ModelKind::Gpt {
                layers,
                hidden,
                heads,
                seq,
                micro_batch,
                vocab,
                parallel,
            } => (
                Model::Gpt(GptConfig {
                    layers: *layers,
                    hidden: *hidden,
                    heads: *heads,
                    seq: *seq,
                    micro_batch: *micro_batch,
                    vocab: *vocab,
                }),
                parallel.parallel()?,
            ),
            ModelKind::Vit {
                layers,
                hidden,
                heads,
                image,
                patch,
                micro_batch,
                parallel,
            } => (
                Model::Vit(VitConfig {
                    layers: *layers,
                    hidden: *hidden,
                    heads: *heads,
                    image: *image,
                    patch: *patch,
                    micro_batch: *micro_batch,
                    ..VitConfig::default()
                }),
                parallel.parallel()?,
            ),
            ModelKind::WideResnet {
                depth,
                width,
                micro_batch,
                parallel,
            } => (
                Model::WideResNet(WideResNetConfig {
                    depth: *depth,
                    width: *width,
                    micro_batch: *micro_batch,
                    ..WideResNetConfig::default()
                }),
                parallel.parallel()?,
            ),
            ModelKind::Evoformer {
                blocks,
                msa_seqs,
                residues,
                parallel,
            } => (
                Model::Evoformer(EvoformerConfig {
                    blocks: *blocks,
                    msa_seqs: *msa_seqs,
                    residues: *residues,
                    ..EvoformerConfig::default()
                }),
                parallel.parallel()?,
            ),
        })
    }
}

pub(crate) fn run(args: &ModelArgs) -> Result<(), Failure> {
    let (model, parallel) = args.model.spec()?;
    let graph = concerto_models::build(&model, &parallel)?;
    if let Some(path) = &args.output {
        write_graph(path, &graph)?;
    }
    let summary = Summary::of(&graph);
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        print!("{summary}");
        if let Some(path) = &args.output {
            println!("written      {}", path.display());
        }
    }
    Ok(())
}
