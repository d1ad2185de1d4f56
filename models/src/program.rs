//! Block programs: the forward computation of one block (a transformer layer, a residual
//! block, an Evoformer block) written once, symbolically, with the backward of every node
//! attached, so that the step driver can emit the block for any microbatch and derive its
//! backward the way an autograd engine does (reverse order, gradients of values read twice
//! summed, input gradients of data skipped).
//!
//! Every node carries ready-made ops (costs and output tensors computed from the per-device
//! shapes); the driver only names them, wires their inputs and adds the ZeRO-3 parameter
//! gather and the gradient-accumulation dependencies.

mod comm;
mod layers;
#[cfg(test)]
mod tests;

use std::cell::Cell;

use concerto_graph::ir::{
    CollectiveKind, ComputeClass, DType, GemmShape, LinkClass, Op, OpKind, Tensor,
};

thread_local! {
    /// The dtype of activations, parameters and gradients while a graph is built
    /// ([`Parallel::precision`](super::Parallel), set by [`Precision::set`]).
    static PRECISION: Cell<DType> = const { Cell::new(DType::Bf16) };
}

/// The dtype of activations, parameters and gradients of the graph being built.
pub(crate) fn act_dtype() -> DType {
    PRECISION.with(Cell::get)
}

/// Sets the precision of the graphs built on this thread until dropped (then restores the one
/// before, also when unwinding).
pub(crate) struct Precision(DType);

impl Precision {
    pub(crate) fn set(dtype: DType) -> Precision {
        Precision(PRECISION.with(|p| p.replace(dtype)))
    }
}

impl Drop for Precision {
    fn drop(&mut self) {
        PRECISION.with(|p| p.set(self.0));
    }
}

/// A value (a tensor) of a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct V(pub(crate) usize);

/// A value's description.
#[derive(Clone, Debug)]
pub(crate) struct Value {
    /// Its name in gradient-sum op names.
    pub(crate) name: String,
    /// Shape and type.
    pub(crate) tensor: Tensor,
    /// Whether a gradient flows back into it.
    pub(crate) grad: bool,
}

/// What a backward op reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Src {
    /// A forward value (saved activation).
    Val(V),
    /// The gradient of the node's `i`-th output (skipped when none flows).
    Grad(usize),
}

/// One op of a node's backward.
#[derive(Clone, Debug)]
pub(crate) struct BwdOp {
    /// The op; its name is the local name (`attn.qkv.dgrad`).
    pub(crate) op: Op,
    /// What it reads.
    pub(crate) reads: Vec<Src>,
    /// Whether it reads the parameters (ZeRO-3's gathered parameters).
    pub(crate) uses_w: bool,
    /// Gradients it produces: `(input value, output index)`.
    pub(crate) grads: Vec<(V, usize)>,
    /// Output indices that are the node's parameter gradient (empty: none).
    pub(crate) param_grad: Vec<usize>,
}

/// One node of a program.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// Local name (`attn.qkv`).
    pub(crate) name: String,
    /// The forward op (None for an identity whose output aliases `alias`).
    pub(crate) fwd: Option<Op>,
    /// Values the forward op reads.
    pub(crate) reads: Vec<V>,
    /// Whether the forward op reads the parameters.
    pub(crate) uses_w: bool,
    /// Output values, one per output tensor of `fwd` (or the alias).
    pub(crate) outputs: Vec<V>,
    /// The input an identity node forwards.
    pub(crate) alias: Option<V>,
    /// The parameter group (local index) it owns or uses.
    pub(crate) group: Option<usize>,
    /// Backward ops in issue order.
    pub(crate) bwd: Vec<BwdOp>,
    /// Gradients passed through without an op: `(input value, output index)`.
    pub(crate) pass: Vec<(V, usize)>,
    /// A loss: its backward runs without an incoming gradient.
    pub(crate) seed: bool,
}

/// A parameter group: the parameters of one module (a linear's weight and bias, a norm's
/// scale and shift), reduced and updated together.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// Local name (`attn.qkv`).
    pub(crate) name: String,
    /// Parameters per device (0 for a tied group: counted where it is owned).
    pub(crate) params: u64,
    /// A group owned by another block: `(block index, local group index)`.
    pub(crate) tied: Option<(usize, usize)>,
}

/// The forward computation of a block and its backward recipe.
#[derive(Clone, Debug, Default)]
pub(crate) struct Program {
    pub(crate) values: Vec<Value>,
    pub(crate) nodes: Vec<Node>,
    /// Values bound to the previous block's outputs, in order.
    pub(crate) inputs: Vec<V>,
    /// Values handed to the next block, in order.
    pub(crate) outputs: Vec<V>,
    /// Values that are host data (token ids, images): read by nothing in the graph.
    pub(crate) data: Vec<V>,
    pub(crate) groups: Vec<Group>,
}

/// Which parameters a linear layer has.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Weights {
    /// Its own weight, with or without a bias.
    Own {
        /// Whether it has a bias.
        bias: bool,
    },
    /// The weight of another block's group `(block, group)` (tied embeddings).
    Tied(usize, usize),
}

/// Normalisation kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NormKind {
    /// Over the last dimension.
    Layer,
    /// Over every dimension but the channel dimension 1 (NCHW).
    Batch,
}

/// An element-wise (or small reduction) node: classes and flops per element of the largest
/// tensor involved.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pointwise {
    pub(crate) class: ComputeClass,
    pub(crate) fwd_flops: u64,
    pub(crate) bwd_class: ComputeClass,
    pub(crate) bwd_flops: u64,
}

impl Pointwise {
    /// Element-wise forward and backward with these flops per element.
    pub(crate) fn elementwise(fwd_flops: u64, bwd_flops: u64) -> Self {
        Self {
            class: ComputeClass::Elementwise,
            fwd_flops,
            bwd_class: ComputeClass::Elementwise,
            bwd_flops,
        }
    }
}

/// Flops per element of a normalisation (mean, variance, normalise, scale and shift).
const NORM_FWD_FLOPS: u64 = 8;
/// Flops per element of its backward.
const NORM_BWD_FLOPS: u64 = 16;

/// A compute op with explicit costs and outputs.
pub(crate) fn compute(
    class: ComputeClass,
    flops: u64,
    bytes: u64,
    gemm: Option<GemmShape>,
    outputs: Vec<Tensor>,
) -> Op {
    Op {
        name: String::new(),
        kind: OpKind::Compute {
            class,
            flops,
            bytes,
            gemm,
        },
        outputs,
        duration_ns: None,
        operand_dtype: None,
        live_out: false,
        release_ns: 0,
        lane: 0,
    }
}

/// A GEMM reading `a`, `b` and writing `out` (bytes of those tensors).
pub(crate) fn gemm(shape: GemmShape, bytes: u64, out: Vec<Tensor>) -> Op {
    compute(ComputeClass::Gemm, shape.flops(), bytes, Some(shape), out)
}

/// A collective with one output tensor (or none).
pub(crate) fn collective(
    kind: CollectiveKind,
    bytes: u64,
    group: u32,
    link: LinkClass,
    out: Option<Tensor>,
) -> Op {
    Op {
        name: String::new(),
        kind: OpKind::Collective {
            kind,
            bytes,
            group,
            link,
        },
        outputs: out.into_iter().collect(),
        duration_ns: None,
        operand_dtype: None,
        live_out: false,
        release_ns: 0,
        lane: 0,
    }
}

/// `t` with its last dimension replaced by `n`.
pub(crate) fn with_last(t: &Tensor, n: u64) -> Tensor {
    let mut shape = t.shape.clone();
    match shape.last_mut() {
        Some(l) => *l = n,
        None => shape.push(n),
    }
    Tensor::new(shape, t.dtype)
}

/// A tensor of the activation dtype (bf16 unless the plan's precision says otherwise).
pub(crate) fn act(shape: impl Into<Vec<u64>>) -> Tensor {
    Tensor::new(shape, act_dtype())
}

/// Builds a [`Program`]; the tensor-parallel degree and link make `tp_copy` / `tp_reduce`
/// no-ops at `tp == 1`.
#[derive(Debug)]
pub(crate) struct Pb {
    pub(crate) prog: Program,
    tp: u32,
    tp_link: LinkClass,
}

impl Pb {
    /// An empty program.
    pub(crate) fn new(tp: u32, tp_link: LinkClass) -> Self {
        Self {
            prog: Program::default(),
            tp,
            tp_link,
        }
    }

    /// The finished program.
    pub(crate) fn finish(self) -> Program {
        self.prog
    }

    fn value(&mut self, name: String, tensor: Tensor, grad: bool) -> V {
        self.prog.values.push(Value { name, tensor, grad });
        V(self.prog.values.len() - 1)
    }

    /// The tensor of `v`.
    pub(crate) fn tensor(&self, v: V) -> &Tensor {
        &self.prog.values[v.0].tensor
    }

    fn grad(&self, v: V) -> bool {
        self.prog.values[v.0].grad
    }

    /// An input bound to the previous block's output.
    pub(crate) fn input(&mut self, name: &str, tensor: Tensor) -> V {
        let v = self.value(name.to_string(), tensor, true);
        self.prog.inputs.push(v);
        v
    }

    /// Host data (no gradient, no producer in the graph).
    pub(crate) fn data(&mut self, name: &str, tensor: Tensor) -> V {
        let v = self.value(name.to_string(), tensor, false);
        self.prog.data.push(v);
        v
    }

    /// Marks `v` as an output handed to the next block.
    pub(crate) fn output(&mut self, v: V) {
        self.prog.outputs.push(v);
    }

    fn group(&mut self, name: &str, params: u64) -> usize {
        self.prog.groups.push(Group {
            name: name.to_string(),
            params,
            tied: None,
        });
        self.prog.groups.len() - 1
    }

    fn weights(&mut self, name: &str, params: u64, w: Weights) -> usize {
        match w {
            Weights::Own { .. } => self.group(name, params),
            Weights::Tied(block, group) => {
                self.prog.groups.push(Group {
                    name: name.to_string(),
                    params: 0,
                    tied: Some((block, group)),
                });
                self.prog.groups.len() - 1
            }
        }
    }

    /// Adds a node whose forward op has `fwd.outputs`; `differentiable[j]` says whether output
    /// `j` can carry a gradient (it does if an input does or the node has parameters).
    #[allow(clippy::too_many_arguments)] // private: every caller names each part
    fn node(
        &mut self,
        name: &str,
        fwd: Op,
        reads: &[V],
        group: Option<usize>,
        differentiable: &[bool],
        bwd: Vec<BwdOp>,
        pass: Vec<(V, usize)>,
        seed: bool,
    ) -> Vec<V> {
        let grad_in = reads.iter().any(|&v| self.grad(v)) || group.is_some();
        let outputs: Vec<V> = fwd
            .outputs
            .clone()
            .into_iter()
            .enumerate()
            .map(|(j, t)| {
                let vname = if j == 0 {
                    name.to_string()
                } else {
                    format!("{name}.out{j}")
                };
                let g = grad_in && differentiable.get(j).copied().unwrap_or(false);
                self.value(vname, t, g)
            })
            .collect();
        self.prog.nodes.push(Node {
            name: name.to_string(),
            fwd: Some(fwd),
            reads: reads.to_vec(),
            uses_w: group.is_some(),
            outputs: outputs.clone(),
            alias: None,
            group,
            bwd,
            pass,
            seed,
        });
        outputs
    }
}

/// `op` renamed.
pub(crate) fn named(mut op: Op, name: String) -> Op {
    op.name = name;
    op
}

/// The four dimensions of an NCHW tensor (missing ones are 1).
pub(crate) fn dims4(t: &Tensor) -> [u64; 4] {
    let mut d = [1u64; 4];
    for (i, &x) in t.shape.iter().take(4).enumerate() {
        d[i] = x;
    }
    d
}

/// The collectives of `kind` in `g`, in graph order, each with its bytes (for tests).
#[cfg(test)]
pub(crate) fn collectives(
    g: &concerto_graph::ir::Graph,
    kind: CollectiveKind,
) -> impl Iterator<Item = (&Op, u64)> {
    g.ops().filter_map(move |o| match o.kind {
        OpKind::Collective { kind: k, bytes, .. } if k == kind => Some((o, bytes)),
        _ => None,
    })
}
