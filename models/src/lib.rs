//! # concerto-models
//!
//! Model builders: one training step (forward, backward, optimizer) of a model under a
//! parallel plan, as a [`Graph`] of `concerto-graph` in program order. This crate holds the
//! models ([`Model`]), their parallel plans ([`Parallel`]), the step driver and optimizer
//! that [`build`] runs, and [`parameters`]; the IR, cost models, simulator and schedulers are
//! `concerto-graph`'s.
//!
//! Program order is the order an eager framework (PyTorch with Megatron-LM, DDP or DeepSpeed)
//! issues the ops on one GPU: it is the baseline a scheduler improves on. The graph is the
//! view of rank 0 (pipeline stage 0) with every shape per device (after tensor, pipeline and
//! DAP partitioning). Ops carry flops, bytes moved, GEMM shapes and output tensors (bf16
//! activations, parameters and gradients unless [`Parallel::precision`] says f16 or f32; f32
//! softmax statistics and losses), so that a cost
//! model can time them and tensor lifetimes give the peak memory: a forward activation is read
//! by the backward ops that need it, a gradient by its reduction and its optimizer update.
//!
//! # Models
//! - [`GptConfig`]: GPT decoder with Megatron-LM tensor parallelism (`tp`).
//! - [`VitConfig`]: vision transformer, the same layers.
//! - [`WideResNetConfig`]: bottleneck wide ResNet (WRN-50-2), data parallelism only.
//! - [`EvoformerConfig`]: AlphaFold 2's Evoformer stack, `tp` being FastFold's dynamic axial
//!   parallelism (DAP) degree.
//!
//! # Parallel plans ([`Parallel`])
//! - Ranks are placed tensor-parallel innermost, then data-parallel, then pipeline stages; a
//!   group whose ranks share a node uses [`LinkClass::IntraNode`](concerto_graph::ir::LinkClass),
//!   otherwise `InterNode` (TP intra-node iff `tp <= gpus_per_node`, DP iff
//!   `tp * dp <= gpus_per_node`, stage 0 to stage 1 iff `2 * tp * dp <= gpus_per_node`, for
//!   node sizes that are multiples of the groups). Groups of one rank have no collective.
//! - Tensor parallelism: column-parallel QKV and MLP fc1 (all-reduce of the input gradient in
//!   backward), row-parallel attention output and fc2 (all-reduce of the output in forward);
//!   vocab-parallel embedding, LM head and cross-entropy.
//! - Data parallelism: gradients all-reduced in buckets of `bucket_bytes` in the order they
//!   become final, each bucket issued when full, in the last microbatch; then one Adam update
//!   per bucket.
//! - ZeRO-2 / ZeRO-3 (DeepSpeed): see [`Zero`]; supported with `dp >= 2`, also with `tp > 1`,
//!   not with `pp > 1`.
//! - Pipeline: stage 0's 1F1B schedule with a send per microbatch forward and a receive per
//!   microbatch backward; with a tied word embedding, its gradient is all-reduced with the
//!   last stage before the optimizer.
//!
//! # Memory
//! Besides the tensors of its ops, each graph says what [`concerto_graph::memory`] needs:
//! - **Resident bytes** ([`Graph::resident_bytes`]), rank 0's for the whole step: the
//!   parameters it holds in the graph's precision (its stage's, after tensor parallelism, as
//!   [`parameters`] counts them; with ZeRO-3 only its `1/dp` share), plus Adam's state of the
//!   parameters it updates: two f32 moments and, in mixed precision (bf16, f16), an f32 master
//!   weight, 12 bytes per parameter (8 in f32). ZeRO-2 and ZeRO-3 shard that state: the rank
//!   updates the `1/dp` share of each bucket (of each block with ZeRO-3), rounded up. So
//!   with bf16 and no ZeRO it is 14 bytes per parameter; ZeRO-2 makes it `2 + 12 / dp`,
//!   ZeRO-3 `14 / dp` (up to the rounding). Gradients are tensors of the graph (their
//!   producers, reductions and updates), not resident; activations likewise. Not counted: a
//!   pipeline's other stages, the last stage's copy of a tied embedding, BatchNorm running
//!   statistics (the wide ResNet), the input batch, and framework buffers (DDP's flat gradient
//!   buckets, DeepSpeed's partition buffers).
//! - **Step outputs** ([`Op::live_out`](concerto_graph::Op::live_out)): the updated parameters, kept
//!   to the end of the step: each Adam op's output (`grad_bucket<k>.adam`, `<block>.adam`),
//!   and with ZeRO-2 each bucket's all-gather of them (`grad_bucket<k>.allgather`) instead of
//!   its Adam op (whose shard is part of the gathered buffer). The loss is not one: its op also
//!   writes the statistics the backward reads. The memory model does not know that an update
//!   is in place, so the updated parameters count on top of the resident ones.
//!
//! Every model (GPT, ViT, wide ResNet, Evoformer) goes through the same step driver and
//! optimizer, so all four carry these.
//!
//! # Names
//! `[mb<i>.]<block>.fwd.<node>` and `[mb<i>.]<block>.bwd.<node>[.dgrad|.wgrad]` for the
//! model's ops (`layer3.fwd.attn.qkv`, `layer3.fwd.tp_allreduce.attn`,
//! `layer3.bwd.mlp.fc1.dgrad`, `layer3.bwd.attn.residual.grad_sum`), `mb<i>.fwd.send` and
//! `mb<i>.bwd.recv` for the pipeline, `[mb<i>.]<block>.zero3.allgather.fwd|bwd` and
//! `<block>.zero3.reducescatter` for ZeRO-3, `grad_bucket<k>.allreduce|reducescatter|adam|
//! allgather` for gradient buckets, `<block>.adam` for ZeRO-3 updates. The `mb<i>.` prefix
//! appears when there are several microbatches.

mod evoformer;
mod parallel;
mod program;
mod resnet;
mod step;
mod transformer;

use serde::{Deserialize, Serialize};

pub use evoformer::EvoformerConfig;
pub use parallel::{Parallel, Zero};
pub use resnet::WideResNetConfig;
pub use transformer::{GptConfig, VitConfig};

use concerto_graph::ir::{DType, Graph};
use concerto_graph::GraphError;
use step::Block;

/// A model and its sizes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Model {
    /// GPT decoder.
    Gpt(GptConfig),
    /// Vision transformer.
    Vit(VitConfig),
    /// Bottleneck wide ResNet.
    #[serde(rename = "wide-resnet")]
    WideResNet(WideResNetConfig),
    /// AlphaFold 2 Evoformer stack.
    Evoformer(EvoformerConfig),
}

impl Model {
    /// `gpt`, `vit`, `wide-resnet` or `evoformer`.
    pub fn name(&self) -> &'static str {
        match self {
            Model::Gpt(_) => "gpt",
            Model::Vit(_) => "vit",
            Model::WideResNet(_) => "wide-resnet",
            Model::Evoformer(_) => "evoformer",
        }
    }

    /// Every model with its default sizes.
    pub fn defaults() -> Vec<Model> {
        vec![
            Model::Gpt(GptConfig::default()),
            Model::Vit(VitConfig::default()),
            Model::WideResNet(WideResNetConfig::default()),
            Model::Evoformer(EvoformerConfig::default()),
        ]
    }

    /// Checks the model's sizes against the plan (after [`Parallel::validate`]).
    pub fn validate(&self, parallel: &Parallel) -> Result<(), GraphError> {
        parallel.validate()?;
        if parallel.sequence_parallel && !matches!(self, Model::Gpt(_)) {
            return Err(GraphError::InvalidModel {
                reason: format!(
                    "{}: sequence parallelism is built for gpt only",
                    self.name()
                ),
            });
        }
        match self {
            Model::Gpt(c) => c.validate(parallel),
            Model::Vit(c) => c.validate(parallel),
            Model::WideResNet(c) => c.validate(parallel),
            Model::Evoformer(c) => c.validate(parallel),
        }
    }

    fn blocks(&self, parallel: &Parallel) -> Result<Vec<Block>, GraphError> {
        self.validate(parallel)?;
        Ok(match self {
            Model::Gpt(c) => c.blocks(parallel),
            Model::Vit(c) => c.blocks(parallel),
            Model::WideResNet(c) => c.blocks(parallel),
            Model::Evoformer(c) => c.blocks(parallel),
        })
    }
}

/// `f32`, `f16`, ... as in files.
fn dtype_name(d: DType) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{d:?}"))
}

/// The graph's name: the model and the plan, e.g. `gpt-dp2-tp4-pp2-mb4`,
/// `gpt-dp8-tp1-pp1-zero3` or `gpt-dp1-tp8-pp1-sp`.
fn graph_name(model: &Model, p: &Parallel) -> String {
    let mut name = format!("{}-dp{}-tp{}-pp{}", model.name(), p.dp, p.tp, p.pp);
    if p.sequence_parallel {
        name.push_str("-sp");
    }
    match p.zero {
        Zero::None => {}
        Zero::Stage2 => name.push_str("-zero2"),
        Zero::Stage3 => name.push_str("-zero3"),
    }
    if p.microbatches > 1 {
        name.push_str(&format!("-mb{}", p.microbatches));
    }
    if p.precision != DType::Bf16 {
        name.push_str(&format!("-{}", dtype_name(p.precision)));
    }
    name
}

/// One training step of `model` under `parallel`, as seen by rank 0, in program order.
///
/// Errors with [`GraphError::InvalidModel`] (naming the problem) for zero sizes, degrees that
/// do not divide what they split (`tp` and heads, hidden, the MLP width; the DAP degree and the
/// MSA and residue counts; `pp` and the layers or blocks), too few microbatches for the
/// pipeline, unsupported combinations (ZeRO with `dp < 2` or with `pp > 1`; tensor or pipeline
/// parallelism for the wide ResNet).
pub fn build(model: &Model, parallel: &Parallel) -> Result<Graph, GraphError> {
    let _precision = program::Precision::set(parallel.precision);
    let blocks = model.blocks(parallel)?;
    step::assemble(graph_name(model, parallel), &blocks, parallel)
}

/// Parameters held by rank 0 under `parallel`: its pipeline stage's, after tensor
/// parallelism, before ZeRO sharding (divide by `dp` for ZeRO's share). With Adam in mixed
/// precision they take 16 bytes each (bf16 parameter and gradient, f32 master weight and two
/// moments): the graph's resident bytes count the parameter, master weight and moments, its
/// gradient ops the gradient (see the module docs, "Memory").
pub fn parameters(model: &Model, parallel: &Parallel) -> Result<u64, GraphError> {
    let _precision = program::Precision::set(parallel.precision);
    Ok(step::stage_parameters(&model.blocks(parallel)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use concerto_graph::ir::{DType, OpId, OpKind};

    fn plans() -> Vec<Parallel> {
        vec![
            Parallel::default(),
            Parallel::new(2, 2, 1),
            Parallel::new(1, 2, 2),
            Parallel::new(2, 1, 1).with_zero(Zero::Stage2),
            Parallel::new(4, 1, 1)
                .with_zero(Zero::Stage3)
                .with_microbatches(2),
            Parallel::new(2, 1, 1).with_microbatches(3),
        ]
    }

    fn small_models() -> Vec<Model> {
        vec![
            Model::Gpt(GptConfig {
                layers: 2,
                hidden: 64,
                heads: 4,
                seq: 32,
                micro_batch: 2,
                vocab: 500,
            }),
            Model::Vit(VitConfig {
                layers: 2,
                hidden: 64,
                heads: 4,
                image: 32,
                patch: 8,
                micro_batch: 2,
                classes: 10,
            }),
            Model::WideResNet(WideResNetConfig {
                image: 32,
                micro_batch: 2,
                ..WideResNetConfig::default()
            }),
            Model::Evoformer(EvoformerConfig {
                blocks: 2,
                msa_seqs: 8,
                residues: 16,
                c_m: 32,
                c_z: 16,
                heads: 4,
            }),
        ]
    }

    /// Structural invariants of every step graph.
    fn check(g: &Graph, model: &Model, p: &Parallel) {
        let ctx = g.name().to_string();
        assert!(!g.is_empty(), "{ctx}");
        let params = parameters(model, p).unwrap();
        let mut adam = 0;
        for id in g.ids() {
            let op = g.op(id);
            match op.kind {
                OpKind::Compute {
                    flops, bytes, gemm, ..
                } => {
                    assert!(bytes > 0 || flops > 0, "{ctx}: {} is empty", op.name);
                    if let Some(s) = gemm {
                        assert!(s.b * s.m * s.n * s.k > 0, "{ctx}: {}", op.name);
                    }
                }
                OpKind::Collective { bytes, group, .. } => {
                    assert!(bytes > 0 && group >= 2, "{ctx}: {}", op.name);
                }
            }
            if op.name.ends_with(".adam") {
                let OpKind::Compute { bytes, .. } = op.kind else {
                    panic!()
                };
                adam += bytes / step::ADAM_BYTES_PER_PARAM;
                // Updates come after every backward op.
                assert!(
                    g.ops().skip(id.0).all(|o| !o.name.contains(".bwd.")),
                    "{ctx}"
                );
            }
            // Every compute op but the step's sources reads something.
            let sources = op.name.contains("zero3.allgather")
                || op.name.ends_with("embed.fwd.word")
                || op.name.ends_with("patch_embed.fwd.proj")
                || op.name.ends_with("stem.fwd.conv1")
                || op.name.ends_with("block0.fwd.msa_row.ln")
                || op.name.ends_with("block0.fwd.msa_row.ln_pair");
            assert!(
                sources || !g.predecessors(id).is_empty(),
                "{ctx}: {} reads nothing",
                op.name
            );
        }
        // Every parameter is updated once (ZeRO: its 1/dp share, rounded up per bucket).
        match p.zero {
            Zero::None => assert_eq!(adam, params, "{ctx}"),
            _ => {
                let dp = u64::from(p.dp);
                assert!(
                    adam * dp >= params && adam * dp < params + dp * 1000,
                    "{ctx}"
                );
            }
        }
        // Each forward activation's last reader is not before its producer.
        for (a, b) in g.dependencies() {
            assert!(a < b, "{ctx}");
        }
        // Memory: the parameters held and the optimizer state of those updated are resident;
        // the updated parameters (ZeRO-2: gathered again) are the step's outputs.
        let w = p.precision.size();
        let state = if p.precision == DType::F32 { 8 } else { 12 };
        let held = if p.zero == Zero::Stage3 { adam } else { params };
        assert_eq!(g.resident_bytes(), held * w + adam * state, "{ctx}");
        let outputs: Vec<&str> = g
            .ops()
            .filter(|o| o.live_out)
            .map(|o| o.name.as_str())
            .collect();
        let updates: Vec<&str> = g
            .ops()
            .filter(|o| match p.zero {
                Zero::Stage2 => o.name.ends_with(".allgather") && o.name.starts_with("grad_"),
                _ => o.name.ends_with(".adam"),
            })
            .map(|o| o.name.as_str())
            .collect();
        assert!(!outputs.is_empty(), "{ctx}");
        assert_eq!(outputs, updates, "{ctx}");
        let out_bytes: u64 = g
            .ops()
            .filter(|o| o.live_out)
            .map(|o| o.output_bytes())
            .sum();
        let updated = if p.zero == Zero::Stage2 { params } else { adam };
        assert_eq!(out_bytes, updated * w, "{ctx}");
    }

    /// The memory numbers of a small GPT (P = 117,504 parameters, bf16): 14 bytes per
    /// parameter without ZeRO, 2 + 12 / dp with ZeRO-2, 14 / dp with ZeRO-3; 12 in f32.
    #[test]
    fn resident_bytes_and_step_outputs_of_a_small_gpt() {
        let model = Model::Gpt(GptConfig {
            layers: 2,
            hidden: 64,
            heads: 4,
            seq: 16,
            micro_batch: 1,
            vocab: 256,
        });
        // Per layer 12 h^2 + 13 h; the final LayerNorm 2 h; the word (256 h) and position
        // (16 h) embeddings.
        let p = 2 * (12 * 64 * 64 + 13 * 64) + 2 * 64 + 256 * 64 + 16 * 64;
        assert_eq!(p, 117_504);
        let one_bucket = |par: Parallel| Parallel {
            bucket_bytes: 1 << 30,
            ..par
        };
        let cases = [
            (Parallel::new(2, 1, 1), 14 * p, 2 * p),
            (
                one_bucket(Parallel::new(2, 1, 1).with_zero(Zero::Stage2)),
                2 * p + 12 * p / 2,
                2 * p,
            ),
            (Parallel::new(2, 1, 1).with_zero(Zero::Stage3), 7 * p, p),
            (
                Parallel {
                    precision: DType::F32,
                    ..Parallel::new(2, 1, 1)
                },
                12 * p,
                4 * p,
            ),
        ];
        for (par, resident, outputs) in cases {
            let g = build(&model, &par).unwrap();
            assert_eq!(parameters(&model, &par).unwrap(), p);
            assert_eq!(g.resident_bytes(), resident, "{}", g.name());
            let tl = concerto_graph::simulate(
                &g,
                &concerto_graph::StreamPlan::program_order(&g).unwrap(),
                &vec![1; g.len()],
                1.0,
            )
            .unwrap();
            let m = concerto_graph::memory::profile(&g, &tl).unwrap();
            assert_eq!(m.resident_bytes, resident, "{}", g.name());
            assert_eq!(m.live_out_bytes, outputs, "{}", g.name());
            assert!(m.peak_bytes >= resident + outputs, "{}", g.name());
        }
    }

    #[test]
    fn precision_sets_the_dtype_of_activations_parameters_and_gradients() {
        use concerto_graph::ir::DType;
        let model = &small_models()[0];
        let bf16 = Parallel::new(2, 2, 1);
        let f32 = Parallel {
            precision: DType::F32,
            ..bf16.clone()
        };
        let (a, b) = (build(model, &bf16).unwrap(), build(model, &f32).unwrap());
        assert_eq!(b.name(), format!("{}-f32", a.name()));
        assert_eq!(a.len(), b.len());
        let mut doubled = 0;
        for (x, y) in a.ops().zip(b.ops()) {
            assert_eq!(x.name, y.name);
            // A collective of activations or gradients moves twice the bytes in f32; one of
            // f32 values (softmax statistics, losses) the same.
            if let (OpKind::Collective { bytes: bx, .. }, OpKind::Collective { bytes: by, .. }) =
                (&x.kind, &y.kind)
            {
                if x.outputs.first().is_some_and(|t| t.dtype == DType::Bf16) {
                    assert_eq!(*by, 2 * bx, "{}", x.name);
                    doubled += 1;
                } else {
                    assert_eq!(by, bx, "{}", x.name);
                }
            }
            for (tx, ty) in x.outputs.iter().zip(&y.outputs) {
                match tx.dtype {
                    DType::Bf16 => assert_eq!(ty.dtype, DType::F32, "{}", x.name),
                    d => assert_eq!(ty.dtype, d, "{}", x.name),
                }
            }
        }
        assert!(doubled > 0);
        // The builder leaves the thread's precision as it found it.
        assert_eq!(build(model, &bf16).unwrap().to_json(), a.to_json());
        let bad = Parallel {
            precision: DType::S32,
            ..bf16
        };
        let e = build(model, &bad).unwrap_err().to_string();
        assert!(e.contains("precision must be bf16, f16 or f32"), "{e}");
    }

    #[test]
    fn every_model_builds_under_every_plan() {
        for model in small_models() {
            for p in plans() {
                let p = if matches!(model, Model::WideResNet(_)) && (p.tp > 1 || p.pp > 1) {
                    assert!(build(&model, &p).is_err());
                    continue;
                } else {
                    p
                };
                let g = build(&model, &p).unwrap_or_else(|e| panic!("{} {p:?}: {e}", model.name()));
                check(&g, &model, &p);
            }
        }
    }

    #[test]
    fn graphs_round_trip_through_json() {
        for model in small_models() {
            let p = if matches!(model, Model::WideResNet(_)) {
                Parallel::new(2, 1, 1).with_zero(Zero::Stage3)
            } else {
                Parallel::new(2, 2, 2)
            };
            let g = build(&model, &p).unwrap();
            let text = g.to_json();
            let back = Graph::from_json(&text).unwrap();
            assert_eq!(back.name(), g.name());
            assert_eq!(back.len(), g.len());
            for id in g.ids() {
                assert_eq!(g.op(id), back.op(id));
                assert_eq!(g.inputs(id), back.inputs(id));
            }
            assert_eq!(back.to_json(), text);
        }
    }

    #[test]
    fn names_and_defaults() {
        let names: Vec<&str> = Model::defaults().iter().map(Model::name).collect();
        assert_eq!(names, ["gpt", "vit", "wide-resnet", "evoformer"]);
        let g = build(&Model::Gpt(GptConfig::default()), &Parallel::new(2, 4, 2)).unwrap();
        assert_eq!(g.name(), "gpt-dp2-tp4-pp2-mb4");
        let g = build(
            &Model::Gpt(GptConfig::default()),
            &Parallel::new(8, 1, 1).with_zero(Zero::Stage3),
        )
        .unwrap();
        assert_eq!(g.name(), "gpt-dp8-tp1-pp1-zero3");
        // The default GPT is a few hundred ops.
        let g = build(&Model::Gpt(GptConfig::default()), &Parallel::default()).unwrap();
        assert!((150..600).contains(&g.len()), "{}", g.len());
        assert_eq!(g.op(OpId(0)).name, "embed.fwd.word");
        // Serialised models name their kind.
        let text = serde_json::to_string(&Model::WideResNet(WideResNetConfig::default())).unwrap();
        assert!(text.contains("\"model\":\"wide-resnet\""), "{text}");
        let back: Model = serde_json::from_str(&text).unwrap();
        assert_eq!(back.name(), "wide-resnet");
    }

    #[test]
    fn odd_sizes_give_errors_or_graphs_never_panics() {
        let plans = [
            Parallel::default(),
            Parallel::new(2, 2, 1).with_zero(Zero::Stage2),
            Parallel::new(2, 1, 2).with_microbatches(2),
            Parallel::new(1, 3, 1),
            Parallel::new(2, 1, 1)
                .with_zero(Zero::Stage3)
                .with_microbatches(2),
            Parallel::new(1, 1, 2).with_microbatches(1),
        ];
        let mut ok = 0;
        let mut run = |m: Model| {
            for p in &plans {
                match build(&m, p) {
                    Ok(g) => {
                        check(&g, &m, p);
                        ok += 1;
                    }
                    Err(e) => assert!(matches!(e, GraphError::InvalidModel { .. }), "{e}"),
                }
            }
        };
        for layers in [0, 1, 2] {
            for hidden in [0, 8, 12] {
                for heads in [0, 1, 2, 3] {
                    for seq in [0, 4] {
                        for vocab in [0, 7] {
                            run(Model::Gpt(GptConfig {
                                layers,
                                hidden,
                                heads,
                                seq,
                                micro_batch: 1,
                                vocab,
                            }));
                        }
                        run(Model::Vit(VitConfig {
                            layers,
                            hidden,
                            heads,
                            image: seq * 2,
                            patch: seq.min(3),
                            micro_batch: 1,
                            classes: 3,
                        }));
                        run(Model::Evoformer(EvoformerConfig {
                            blocks: layers,
                            msa_seqs: seq,
                            residues: 6,
                            c_m: hidden,
                            c_z: 4,
                            heads,
                        }));
                    }
                }
            }
        }
        for depth in [0, 26, 50] {
            for image in [0, 1, 7] {
                run(Model::WideResNet(WideResNetConfig {
                    depth,
                    width: 1,
                    image,
                    micro_batch: 1,
                    classes: 2,
                }));
            }
        }
        assert!(ok > 30, "{ok}");
    }

    #[test]
    fn invalid_plans_are_invalid_models() {
        for model in small_models() {
            let e = build(&model, &Parallel::new(1, 1, 1).with_zero(Zero::Stage3)).unwrap_err();
            assert!(matches!(e, GraphError::InvalidModel { .. }), "{e}");
            assert!(e.to_string().contains("dp >= 2"), "{e}");
            let e = build(&model, &Parallel::new(0, 1, 1)).unwrap_err();
            assert!(e.to_string().contains("dp must be at least 1"), "{e}");
        }
    }
}
