//! The compute nodes of a block program (linear and convolution layers, norms, pointwise ops,
//! attention, batched matmuls, embeddings, losses), each with its forward op, its backward ops
//! and their costs.

use super::{
    act, act_dtype, compute, dims4, gemm, named, with_last, BwdOp, NormKind, Pb, Pointwise, Src,
    Weights, NORM_BWD_FLOPS, NORM_FWD_FLOPS, V,
};
use concerto_graph::ir::{ComputeClass, DType, GemmShape, Op, Tensor};

impl Pb {
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
