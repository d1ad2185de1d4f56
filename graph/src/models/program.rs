//! Block programs: the forward computation of one block (a transformer layer, a residual
//! block, an Evoformer block) written once, symbolically, with the backward of every node
//! attached, so that the step driver can emit the block for any microbatch and derive its
//! backward the way an autograd engine does (reverse order, gradients of values read twice
//! summed, input gradients of data skipped).
//!
//! Every node carries ready-made ops (costs and output tensors computed from the per-device
//! shapes); the driver only names them, wires their inputs and adds the ZeRO-3 parameter
//! gather and the gradient-accumulation dependencies.

use std::cell::Cell;

use crate::ir::{CollectiveKind, ComputeClass, DType, GemmShape, LinkClass, Op, OpKind, Tensor};

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

    /// A linear layer `y = x W (+ b)` over the last dimension of `x`: forward GEMM
    /// `(1, m, n, k)`; backward dgrad `dX = dY W^T` `(1, m, k, n)` (skipped when `x` needs no
    /// gradient) then wgrad `dW = X^T dY` `(1, k, n, m)`, which also yields the bias gradient.
    pub(crate) fn linear(&mut self, name: &str, x: V, n: u64, w: Weights) -> V {
        let xt = self.tensor(x).clone();
        let k = xt.shape.last().copied().unwrap_or(1).max(1);
        let m = xt.elements() / k;
        let bias = matches!(w, Weights::Own { bias: true });
        let group = self.weights(name, k * n + if bias { n } else { 0 }, w);
        let out = with_last(&xt, n);
        let s = act_dtype().size();
        let bytes = (m * k + k * n + m * n) * s;
        let mut wout = vec![act([k, n])];
        let mut wbytes = (m * k + m * n + k * n) * s;
        if bias {
            wout.push(act([n]));
            wbytes += n * s;
        }
        let shape = GemmShape { b: 1, m, n, k };
        self.gemm_layer(name, x, group, shape, bytes, out, wbytes, wout)
    }

    /// A 2-D convolution without bias over NCHW `x`, as an implicit GEMM: forward
    /// `(1, N Ho Wo, Cout, Cin kh kw)`, dgrad `(1, N Ho Wo, Cin kh kw, Cout)` (col2im
    /// implicit), wgrad `(1, Cin kh kw, Cout, N Ho Wo)`; bytes are the real tensors (input,
    /// weight, output), not the im2col matrix.
    pub(crate) fn conv(
        &mut self,
        name: &str,
        x: V,
        cout: u64,
        kernel: u64,
        stride: u64,
        pad: u64,
    ) -> V {
        let xt = self.tensor(x).clone();
        let [n, cin, h, w] = dims4(&xt);
        let ho = (h + 2 * pad).saturating_sub(kernel) / stride + 1;
        let wo = (w + 2 * pad).saturating_sub(kernel) / stride + 1;
        let out = act([n, cout, ho, wo]);
        let k = cin * kernel * kernel;
        let m = n * ho * wo;
        let group = self.group(name, k * cout);
        let bytes = xt.bytes() + k * cout * act_dtype().size() + out.bytes();
        let shape = GemmShape {
            b: 1,
            m,
            n: cout,
            k,
        };
        let wout = vec![act([k, cout])];
        self.gemm_layer(name, x, group, shape, bytes, out, bytes, wout)
    }

    /// A node of a layer with weights in `group` that is one GEMM of `x` (`m x k` as a matrix)
    /// and the weight: forward `shape` = `(1, m, n, k)` moving `bytes` and writing `out`;
    /// backward dgrad `(1, m, k, n)` (`bytes`, named `.dgrad`, reads the weights) writing `x`'s
    /// gradient, then wgrad `(1, k, n, m)` (`wbytes`, named `.wgrad`) writing the parameter
    /// gradients `wout`.
    #[allow(clippy::too_many_arguments)] // private: both callers name each part
    fn gemm_layer(
        &mut self,
        name: &str,
        x: V,
        group: usize,
        shape: GemmShape,
        bytes: u64,
        out: Tensor,
        wbytes: u64,
        wout: Vec<Tensor>,
    ) -> V {
        let GemmShape { b, m, n, k } = shape;
        let xt = self.tensor(x).clone();
        let fwd = gemm(shape, bytes, vec![out]);
        let dgrad = BwdOp {
            op: named(
                gemm(GemmShape { b, m, n: k, k: n }, bytes, vec![xt]),
                format!("{name}.dgrad"),
            ),
            reads: vec![Src::Grad(0)],
            uses_w: true,
            grads: vec![(x, 0)],
            param_grad: vec![],
        };
        let param_grad = (0..wout.len()).collect();
        let wgrad = BwdOp {
            op: named(
                gemm(GemmShape { b, m: k, n, k: m }, wbytes, wout),
                format!("{name}.wgrad"),
            ),
            reads: vec![Src::Val(x), Src::Grad(0)],
            uses_w: false,
            grads: vec![],
            param_grad,
        };
        self.node(
            name,
            fwd,
            &[x],
            Some(group),
            &[true],
            vec![dgrad, wgrad],
            vec![],
            false,
        )[0]
    }

    /// Layer or batch normalisation with a scale and a shift per channel. Backward: one op
    /// giving the input gradient and the parameter gradients.
    pub(crate) fn norm(&mut self, name: &str, x: V, kind: NormKind) -> V {
        let xt = self.tensor(x).clone();
        let c = match kind {
            NormKind::Layer => xt.shape.last().copied().unwrap_or(1),
            NormKind::Batch => xt.shape.get(1).copied().unwrap_or(1),
        };
        let e = xt.elements();
        let group = self.group(name, 2 * c);
        let pbytes = 2 * c * act_dtype().size();
        let fwd = compute(
            ComputeClass::Norm,
            NORM_FWD_FLOPS * e,
            2 * xt.bytes() + pbytes,
            None,
            vec![xt.clone()],
        );
        let bwd = BwdOp {
            op: named(
                compute(
                    ComputeClass::Norm,
                    NORM_BWD_FLOPS * e,
                    3 * xt.bytes() + 2 * pbytes,
                    None,
                    vec![xt, act([2, c])],
                ),
                name.to_string(),
            ),
            reads: vec![Src::Val(x), Src::Grad(0)],
            uses_w: true,
            grads: vec![(x, 0)],
            param_grad: vec![1],
        };
        self.node(
            name,
            fwd,
            &[x],
            Some(group),
            &[true],
            vec![bwd],
            vec![],
            false,
        )[0]
    }

    /// An element-wise node over `inputs` with outputs `outs`; its backward is one op reading
    /// the inputs and the output gradients and writing a gradient per differentiable input.
    pub(crate) fn pointwise(
        &mut self,
        name: &str,
        inputs: &[V],
        outs: Vec<Tensor>,
        cost: Pointwise,
    ) -> Vec<V> {
        let ins: Vec<Tensor> = inputs.iter().map(|&v| self.tensor(v).clone()).collect();
        let elems = ins
            .iter()
            .chain(outs.iter())
            .map(Tensor::elements)
            .max()
            .unwrap_or(0);
        let in_bytes: u64 = ins.iter().map(Tensor::bytes).sum();
        let out_bytes: u64 = outs.iter().map(Tensor::bytes).sum();
        let fwd = compute(
            cost.class,
            cost.fwd_flops * elems,
            in_bytes + out_bytes,
            None,
            outs.clone(),
        );
        let grad_inputs: Vec<(usize, V)> = inputs
            .iter()
            .copied()
            .filter(|&v| self.grad(v))
            .enumerate()
            .collect();
        let mut reads: Vec<Src> = inputs.iter().map(|&v| Src::Val(v)).collect();
        reads.extend((0..outs.len()).map(Src::Grad));
        let gbytes: u64 = grad_inputs
            .iter()
            .map(|&(_, v)| self.tensor(v).bytes())
            .sum();
        let bwd = BwdOp {
            op: named(
                compute(
                    cost.bwd_class,
                    cost.bwd_flops * elems,
                    in_bytes + out_bytes + gbytes,
                    None,
                    grad_inputs
                        .iter()
                        .map(|&(_, v)| self.tensor(v).clone())
                        .collect(),
                ),
                name.to_string(),
            ),
            reads,
            uses_w: false,
            grads: grad_inputs.iter().map(|&(i, v)| (v, i)).collect(),
            param_grad: vec![],
        };
        let n = outs.len();
        let bwd = if bwd.grads.is_empty() {
            vec![]
        } else {
            vec![bwd]
        };
        self.node(name, fwd, inputs, None, &vec![true; n], bwd, vec![], false)
    }

    /// A one-output element-wise node shaped like its first input.
    pub(crate) fn unary(&mut self, name: &str, inputs: &[V], cost: Pointwise) -> V {
        let t = self.tensor(inputs[0]).clone();
        self.pointwise(name, inputs, vec![t], cost)[0]
    }

    /// A residual add `a + b`: backward passes the gradient to both without an op.
    pub(crate) fn add(&mut self, name: &str, a: V, b: V) -> V {
        let t = self.tensor(a).clone();
        let fwd = compute(
            ComputeClass::Elementwise,
            t.elements(),
            3 * t.bytes(),
            None,
            vec![t],
        );
        self.node(
            name,
            fwd,
            &[a, b],
            None,
            &[true],
            vec![],
            vec![(a, 0), (b, 0)],
            false,
        )[0]
    }

    /// Fused attention `softmax(Q K^T (+ bias)) V` over `qkv` (Q, K and V concatenated on the
    /// last dimension) for `bh` independent (batch x head) problems of `sq` queries, `skv`
    /// keys and head dimension `d`: forward flops `4 bh sq skv d` with GEMM shape
    /// `(bh, sq, skv, d)`; backward (recomputing the probabilities, as FlashAttention does)
    /// 2.5 times that. Outputs the attention output and the f32 log-sum-exp it saves.
    #[allow(clippy::too_many_arguments)] // the four problem sizes read best unbundled
    pub(crate) fn attention(
        &mut self,
        name: &str,
        qkv: V,
        bias: Option<V>,
        bh: u64,
        sq: u64,
        skv: u64,
        d: u64,
    ) -> V {
        let qt = self.tensor(qkv).clone();
        let width = qt.shape.last().copied().unwrap_or(3) / 3;
        let out = with_last(&qt, width);
        let lse = Tensor::new(vec![bh, sq], DType::F32);
        let shape = GemmShape {
            b: bh,
            m: sq,
            n: skv,
            k: d,
        };
        let flops = 4 * bh * sq * skv * d;
        let bias_t = bias.map(|b| self.tensor(b).clone());
        let bias_bytes = bias_t.as_ref().map_or(0, Tensor::bytes);
        let fwd = compute(
            ComputeClass::Attention,
            flops,
            qt.bytes() + bias_bytes + out.bytes() + lse.bytes(),
            Some(shape),
            vec![out.clone(), lse.clone()],
        );
        let o = V(self.prog.values.len());
        let l = V(o.0 + 1);
        let mut reads = vec![Src::Val(qkv)];
        reads.extend(bias.map(Src::Val));
        reads.extend([Src::Val(o), Src::Val(l), Src::Grad(0)]);
        let mut outs = vec![qt.clone()];
        let mut grads = vec![(qkv, 0)];
        if let (Some(b), Some(bt)) = (bias, bias_t) {
            outs.push(bt);
            grads.push((b, 1));
        }
        let bwd = BwdOp {
            op: named(
                compute(
                    ComputeClass::Attention,
                    flops * 5 / 2,
                    2 * qt.bytes() + 2 * bias_bytes + 2 * out.bytes() + lse.bytes(),
                    Some(shape),
                    outs,
                ),
                name.to_string(),
            ),
            reads,
            uses_w: false,
            grads,
            param_grad: vec![],
        };
        let mut ins = vec![qkv];
        ins.extend(bias);
        let outs = self.node(
            name,
            fwd,
            &ins,
            None,
            &[true, false],
            vec![bwd],
            vec![],
            false,
        );
        debug_assert_eq!(outs, vec![o, l]);
        o
    }

    /// A GEMM between two activations, `out = a b` in the given shape: backward
    /// `da = dOut b^T` `(B, m, k, n)` and `db = a^T dOut` `(B, k, n, m)`.
    pub(crate) fn matmul(&mut self, name: &str, a: V, b: V, shape: GemmShape, out: Tensor) -> V {
        let (at, bt) = (self.tensor(a).clone(), self.tensor(b).clone());
        let bytes = at.bytes() + bt.bytes() + out.bytes();
        let fwd = gemm(shape, bytes, vec![out]);
        let GemmShape { b: bb, m, n, k } = shape;
        let mut bwd = Vec::new();
        if self.grad(a) {
            bwd.push(BwdOp {
                op: named(
                    gemm(
                        GemmShape {
                            b: bb,
                            m,
                            n: k,
                            k: n,
                        },
                        bytes,
                        vec![at],
                    ),
                    format!("{name}.grad_a"),
                ),
                reads: vec![Src::Grad(0), Src::Val(b)],
                uses_w: false,
                grads: vec![(a, 0)],
                param_grad: vec![],
            });
        }
        if self.grad(b) {
            bwd.push(BwdOp {
                op: named(
                    gemm(
                        GemmShape {
                            b: bb,
                            m: k,
                            n,
                            k: m,
                        },
                        bytes,
                        vec![bt],
                    ),
                    format!("{name}.grad_b"),
                ),
                reads: vec![Src::Val(a), Src::Grad(0)],
                uses_w: false,
                grads: vec![(b, 0)],
                param_grad: vec![],
            });
        }
        self.node(name, fwd, &[a, b], None, &[true], bwd, vec![], false)[0]
    }

    /// Megatron's `f`: identity forward, all-reduce of the input gradient over the TP group
    /// backward (before a column-parallel linear). A no-op at `tp == 1`.
    pub(crate) fn tp_copy(&mut self, name: &str, x: V) -> V {
        if self.tp < 2 {
            return x;
        }
        let t = self.tensor(x).clone();
        let bwd = collective_grad(
            x,
            CollectiveKind::AllReduce,
            t.clone(),
            self.tp,
            self.tp_link,
            name.to_string(),
        );
        let g = self.grad(x);
        let out = self.value(name.to_string(), t, g);
        self.prog.nodes.push(Node {
            name: name.to_string(),
            fwd: None,
            reads: vec![x],
            uses_w: false,
            outputs: vec![out],
            alias: Some(x),
            group: None,
            bwd: vec![bwd],
            pass: vec![],
            seed: false,
        });
        out
    }

    /// Megatron's `g`: all-reduce over the TP group forward (after a row-parallel linear),
    /// identity backward. A no-op at `tp == 1`.
    pub(crate) fn tp_reduce(&mut self, name: &str, x: V) -> V {
        if self.tp < 2 {
            return x;
        }
        self.tp_all_reduce(name, x, CommGrad::Pass)
    }

    /// An all-reduce of a statistic that carries no gradient (vocab-parallel softmax).
    pub(crate) fn tp_reduce_stat(&mut self, name: &str, x: V) -> V {
        self.tp_all_reduce(name, x, CommGrad::Stop)
    }

    /// An all-reduce of `x` over the TP group, backward as `grad` says.
    fn tp_all_reduce(&mut self, name: &str, x: V, grad: CommGrad) -> V {
        let t = self.tensor(x).clone();
        let (tp, link) = (self.tp, self.tp_link);
        self.comm(name, x, CollectiveKind::AllReduce, t, tp, link, grad)
    }

    /// An all-gather of `x` into `out` over `group` ranks; backward, a reduce-scatter of the
    /// gradient back to `x`'s shard (named `.reducescatter` for `.allgather`). A no-op for a
    /// group of one.
    pub(crate) fn all_gather(
        &mut self,
        name: &str,
        x: V,
        out: Tensor,
        group: u32,
        link: LinkClass,
    ) -> V {
        if group < 2 {
            return x;
        }
        let bname = name.strip_suffix(".allgather").map_or_else(
            || format!("{name}.reducescatter"),
            |b| format!("{b}.reducescatter"),
        );
        let bwd = CommGrad::Op(CollectiveKind::ReduceScatter, bname);
        self.comm(name, x, CollectiveKind::AllGather, out, group, link, bwd)
    }

    /// Sequence parallelism's all-gather along the sequence over the TP group, before a
    /// column-parallel linear: `x` is `[.., s / tp, h]`, the result `[.., s, h]`; backward, a
    /// reduce-scatter of the gradient along the sequence. Named `<name>.allgather` (backward
    /// `<name>.reducescatter`). A no-op at `tp == 1`.
    pub(crate) fn sp_gather(&mut self, name: &str, x: V) -> V {
        let out = self.seq_resized(x, |s| s * u64::from(self.tp));
        let (tp, link) = (self.tp, self.tp_link);
        self.all_gather(&format!("{name}.allgather"), x, out, tp, link)
    }

    /// Sequence parallelism's reduce-scatter along the sequence over the TP group, after a
    /// row-parallel linear: `x` (partial sums) is `[.., s, h]`, the result the reduced
    /// `[.., s / tp, h]`; backward, an all-gather of the gradient. Named
    /// `<name>.reducescatter` (backward `<name>.allgather`). A no-op at `tp == 1`.
    pub(crate) fn sp_scatter(&mut self, name: &str, x: V) -> V {
        if self.tp < 2 {
            return x;
        }
        let out = self.seq_resized(x, |s| s / u64::from(self.tp));
        let (tp, link) = (self.tp, self.tp_link);
        let bwd = CommGrad::Op(CollectiveKind::AllGather, format!("{name}.allgather"));
        self.comm(
            &format!("{name}.reducescatter"),
            x,
            CollectiveKind::ReduceScatter,
            out,
            tp,
            link,
            bwd,
        )
    }

    /// `x`'s tensor with its sequence dimension (the one before the features) resized.
    fn seq_resized(&self, x: V, f: impl Fn(u64) -> u64) -> Tensor {
        let mut t = self.tensor(x).clone();
        let k = t.shape.len().saturating_sub(2);
        if let Some(d) = t.shape.get_mut(k) {
            *d = f(*d);
        }
        t
    }

    /// An all-to-all re-sharding `x` into `out`; backward, the inverse all-to-all. A no-op for
    /// a group of one.
    pub(crate) fn all_to_all(
        &mut self,
        name: &str,
        x: V,
        out: Tensor,
        group: u32,
        link: LinkClass,
    ) -> V {
        if group < 2 {
            return x;
        }
        let bwd = CommGrad::Op(CollectiveKind::AllToAll, name.to_string());
        self.comm(name, x, CollectiveKind::AllToAll, out, group, link, bwd)
    }

    /// A collective node: forward, a `kind` collective of `out` over `group` ranks on `link`
    /// reading `x`; backward as `grad` says.
    #[allow(clippy::too_many_arguments)] // private: the collective's parts, read best unbundled
    fn comm(
        &mut self,
        name: &str,
        x: V,
        kind: CollectiveKind,
        out: Tensor,
        group: u32,
        link: LinkClass,
        grad: CommGrad,
    ) -> V {
        let fwd = collective(kind, out.bytes(), group, link, Some(out));
        let (differentiable, bwd, pass) = match grad {
            CommGrad::Stop => (false, vec![], vec![]),
            CommGrad::Pass => (true, vec![], vec![(x, 0)]),
            CommGrad::Op(bkind, bname) => {
                let xt = self.tensor(x).clone();
                let bwd = collective_grad(x, bkind, xt, group, link, bname);
                (true, vec![bwd], vec![])
            }
        };
        self.node(name, fwd, &[x], None, &[differentiable], bwd, pass, false)[0]
    }

    /// An embedding lookup of `tokens` rows out of a `rows x width` table (a gather, class
    /// Other); backward writes the dense table gradient (zero fill plus scatter-add).
    pub(crate) fn embedding(&mut self, name: &str, rows: u64, out: Tensor) -> V {
        let width = out.shape.last().copied().unwrap_or(1);
        let group = self.group(name, rows * width);
        let table = act([rows, width]);
        let fwd = compute(
            ComputeClass::Other,
            0,
            2 * out.bytes(),
            None,
            vec![out.clone()],
        );
        let bwd = compute(
            ComputeClass::Other,
            out.elements(),
            table.bytes() + 2 * out.bytes(),
            None,
            vec![table],
        );
        self.param_node(name, fwd, &[], group, bwd, vec![])
    }

    /// Adds learned parameters of shape `param` broadcast over `x` (position embeddings, a
    /// class token), writing `out`: backward passes the gradient through and reduces it over
    /// the batch into the parameter gradient.
    pub(crate) fn param_add(&mut self, name: &str, x: V, param: Tensor, out: Tensor) -> V {
        let group = self.group(name, param.elements());
        let xt = self.tensor(x).clone();
        let fwd = compute(
            ComputeClass::Elementwise,
            out.elements(),
            xt.bytes() + param.bytes() + out.bytes(),
            None,
            vec![out.clone()],
        );
        let bwd = compute(
            ComputeClass::Reduction,
            out.elements(),
            out.bytes() + param.bytes(),
            None,
            vec![param],
        );
        self.param_node(name, fwd, &[x], group, bwd, vec![(x, 0)])
    }

    /// A node owning parameter group `group` whose one backward op `bwd` (named `name`) reads
    /// the output gradient and writes the parameter gradient (its output 0); input gradients
    /// pass through as `pass` says, without an op.
    fn param_node(
        &mut self,
        name: &str,
        fwd: Op,
        reads: &[V],
        group: usize,
        bwd: Op,
        pass: Vec<(V, usize)>,
    ) -> V {
        let bwd = BwdOp {
            op: named(bwd, name.to_string()),
            reads: vec![Src::Grad(0)],
            uses_w: false,
            grads: vec![],
            param_grad: vec![0],
        };
        self.node(
            name,
            fwd,
            reads,
            Some(group),
            &[true],
            vec![bwd],
            pass,
            false,
        )[0]
    }

    /// A loss node: forward (class `class`, `flops`) reads `logits` and `stats`, writes the f32
    /// loss and `extra` saved tensors; backward (element-wise, `bwd_flops`) starts the
    /// backward pass without an incoming gradient and writes the logits' gradient.
    #[allow(clippy::too_many_arguments)] // costs of both directions, read best unbundled
    pub(crate) fn loss(
        &mut self,
        name: &str,
        logits: V,
        stats: &[V],
        class: ComputeClass,
        flops: u64,
        extra: Vec<Tensor>,
        bwd_flops: u64,
    ) -> V {
        let lt = self.tensor(logits).clone();
        let stat_bytes: u64 = stats.iter().map(|&v| self.tensor(v).bytes()).sum();
        let mut outs = vec![Tensor::new(vec![1], DType::F32)];
        outs.extend(extra);
        let out_bytes: u64 = outs.iter().map(Tensor::bytes).sum();
        let fwd = compute(
            class,
            flops,
            lt.bytes() + stat_bytes + out_bytes,
            None,
            outs.clone(),
        );
        let first = self.prog.values.len();
        let mut reads = vec![Src::Val(logits)];
        reads.extend(stats.iter().map(|&v| Src::Val(v)));
        reads.extend((1..outs.len()).map(|j| Src::Val(V(first + j))));
        let bwd = BwdOp {
            op: named(
                compute(
                    ComputeClass::Elementwise,
                    bwd_flops,
                    2 * lt.bytes() + out_bytes + stat_bytes,
                    None,
                    vec![lt],
                ),
                name.to_string(),
            ),
            reads,
            uses_w: false,
            grads: vec![(logits, 0)],
            param_grad: vec![],
        };
        let mut ins = vec![logits];
        ins.extend_from_slice(stats);
        let n = outs.len();
        self.node(
            name,
            fwd,
            &ins,
            None,
            &vec![false; n],
            vec![bwd],
            vec![],
            true,
        )[0]
    }

    /// A local softmax cross-entropy over the last dimension of `logits` (a [`Pb::loss`]):
    /// forward, a reduction of 4 flops per logit that also saves the f32 log-sum-exp `lse`;
    /// backward, 3 flops per logit.
    pub(crate) fn cross_entropy(&mut self, name: &str, logits: V, lse: Tensor) -> V {
        let n = self.tensor(logits).elements();
        self.loss(
            name,
            logits,
            &[],
            ComputeClass::Reduction,
            4 * n,
            vec![lse],
            3 * n,
        )
    }

    /// A node with arbitrary forward and a backward op writing the gradient of `x` (slicing,
    /// pooling): `bwd` reads the listed forward values and the output gradient.
    pub(crate) fn custom(&mut self, name: &str, x: V, fwd: Op, bwd: Op, bwd_reads: &[V]) -> V {
        let mut reads: Vec<Src> = bwd_reads.iter().map(|&v| Src::Val(v)).collect();
        reads.push(Src::Grad(0));
        let b = BwdOp {
            op: named(bwd, name.to_string()),
            reads,
            uses_w: false,
            grads: vec![(x, 0)],
            param_grad: vec![],
        };
        let bwd = if self.grad(x) { vec![b] } else { vec![] };
        self.node(name, fwd, &[x], None, &[true], bwd, vec![], false)[0]
    }

    /// A no-gradient reduction (softmax statistics).
    pub(crate) fn stat(&mut self, name: &str, inputs: &[V], flops: u64, out: Tensor) -> V {
        let bytes: u64 = inputs.iter().map(|&v| self.tensor(v).bytes()).sum::<u64>() + out.bytes();
        let fwd = compute(ComputeClass::Reduction, flops, bytes, None, vec![out]);
        self.node(name, fwd, inputs, None, &[false], vec![], vec![], false)[0]
    }
}

/// What flows back through a collective node ([`Pb::comm`]).
enum CommGrad {
    /// Nothing: the output carries no gradient (a statistic).
    Stop,
    /// The output gradient passes to the input unchanged.
    Pass,
    /// A collective of this kind, with this op name, writes the input gradient.
    Op(CollectiveKind, String),
}

/// The backward op of a collective node: a `kind` collective named `name` over `group` ranks
/// on `link` that reads the output gradient and writes `x`'s gradient `xt`.
fn collective_grad(
    x: V,
    kind: CollectiveKind,
    xt: Tensor,
    group: u32,
    link: LinkClass,
    name: String,
) -> BwdOp {
    BwdOp {
        op: named(collective(kind, xt.bytes(), group, link, Some(xt)), name),
        reads: vec![Src::Grad(0)],
        uses_w: false,
        grads: vec![(x, 0)],
        param_grad: vec![],
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
    g: &crate::ir::Graph,
    kind: CollectiveKind,
) -> impl Iterator<Item = (&Op, u64)> {
    g.ops().filter_map(move |o| match o.kind {
        OpKind::Collective { kind: k, bytes, .. } if k == kind => Some((o, bytes)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_costs_are_the_gemm_formulas() {
        let mut pb = Pb::new(1, LinkClass::IntraNode);
        let x = pb.input("x", act([2, 8, 16]));
        let y = pb.linear("fc", x, 32, Weights::Own { bias: true });
        let p = pb.finish();
        assert_eq!(p.values[y.0].tensor.shape, vec![2, 8, 32]);
        let node = &p.nodes[0];
        let OpKind::Compute { flops, gemm, .. } = &node.fwd.as_ref().unwrap().kind else {
            panic!()
        };
        assert_eq!(*flops, 2 * 16 * 32 * 16);
        assert_eq!(
            *gemm,
            Some(GemmShape {
                b: 1,
                m: 16,
                n: 32,
                k: 16
            })
        );
        assert_eq!(p.groups[0].params, 16 * 32 + 32);
        assert_eq!(node.bwd.len(), 2);
        assert_eq!(node.bwd[1].op.outputs[0].shape, vec![16, 32]);
    }

    #[test]
    fn conv_output_geometry() {
        let mut pb = Pb::new(1, LinkClass::IntraNode);
        let x = pb.data("img", act([4, 3, 224, 224]));
        let y = pb.conv("conv1", x, 64, 7, 2, 3);
        let p = pb.finish();
        assert_eq!(p.values[y.0].tensor.shape, vec![4, 64, 112, 112]);
        // No gradient flows into the image: its dgrad is never emitted (the driver skips
        // ops that produce no needed gradient), and the output still needs one.
        assert!(p.values[y.0].grad);
    }
}
