//! The communication nodes of a block program: Megatron's tensor-parallel `f` and `g`,
//! sequence-parallel gathers and scatters, all-to-alls, each with the collective its backward
//! runs.

use super::{collective, named, BwdOp, Node, Pb, Src, V};
use concerto_graph::ir::{CollectiveKind, LinkClass, Tensor};

impl Pb {
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
