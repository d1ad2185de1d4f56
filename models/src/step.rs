//! The step driver: emits one training step of pipeline stage 0 from its block programs, in
//! the order an eager framework issues the ops.
//!
//! - Microbatches in 1F1B order (Narayanan et al., "Efficient Large-Scale Language Model
//!   Training on GPU Clusters Using Megatron-LM", SC 2021): stage 0 runs `pp - 1` warm-up
//!   forwards, then alternates one forward and one backward, then cools down; each
//!   microbatch forward ends with a send of the activations to stage 1 and each backward
//!   starts with a receive of the output gradient (which depends on that send). With `pp = 1`
//!   it is plain gradient accumulation, `F0 B0 F1 B1 ...`.
//! - Backward of a block: its nodes in reverse, as an autograd engine runs them.
//! - Weight gradients accumulate across microbatches (each gradient op reads the previous one
//!   of its parameter group) and within one (tied weights).
//! - Data parallelism (PyTorch DDP): gradients are synchronised in the last microbatch only
//!   (`no_sync` before); a parameter group joins the current bucket when its gradient is
//!   final, and a bucket is all-reduced as soon as it holds `bucket_bytes`.
//! - ZeRO-2: the same buckets are reduce-scattered, in every microbatch (DeepSpeed reduces
//!   at each micro-step); the optimizer updates the `1/dp` shard of each bucket, then the
//!   updated parameters are all-gathered per bucket.
//! - ZeRO-3: each block all-gathers its parameters right before its forward and again right
//!   before its backward (per microbatch; not when its backward reads no parameter, as an
//!   embedding's), and reduce-scatters its gradients after its backward; the optimizer
//!   updates each block's shard.
//! - The optimizer (Adam) runs after the last backward, one op per bucket (per block with
//!   ZeRO-3), each reading only its own gradients: the step's program order, which leaves a
//!   scheduler free to start updates early.
//! - Memory ([`concerto_graph::memory`]): the graph's resident bytes are the parameters the rank holds
//!   and its optimizer state ([`resident_bytes`]); the step's outputs ([`Op::live_out`]) are
//!   the updated parameters: each Adam op's output, or with ZeRO-2 each bucket's all-gather of
//!   them.

use std::collections::BTreeMap;

use super::parallel::{Parallel, Placement, Zero};
use super::program::{act, act_dtype, collective, compute, named, Program, Src, V};
use concerto_graph::ir::{
    CollectiveKind, ComputeClass, DType, Graph, GraphBuilder, Op, OpId, Tensor,
};
use concerto_graph::GraphError;

/// A tensor of the graph: `(producer, output index)`.
type Tref = (OpId, usize);

/// Adam: flops per parameter (moments, bias correction, update, weight decay).
pub(crate) const ADAM_FLOPS_PER_PARAM: u64 = 14;
/// Adam with bf16 parameters and gradients and f32 master weights and moments: bytes moved
/// per parameter (read the bf16 gradient; read and write the f32 master weight and both f32
/// moments; write the bf16 parameter).
pub(crate) const ADAM_BYTES_PER_PARAM: u64 = 2 + 3 * 2 * 4 + 2;

/// A named block of the stage.
#[derive(Clone, Debug)]
pub(crate) struct Block {
    /// Name prefix of its ops (`layer3`).
    pub(crate) name: String,
    /// Its forward program.
    pub(crate) prog: Program,
    /// Local groups tied to a copy on the last pipeline stage (the word embedding): their
    /// gradients are all-reduced with it before the optimizer.
    pub(crate) tied_to_last_stage: Vec<usize>,
}

impl Block {
    /// A block without weights tied to the last stage.
    pub(crate) fn new(name: impl Into<String>, prog: Program) -> Self {
        Self {
            name: name.into(),
            prog,
            tied_to_last_stage: Vec::new(),
        }
    }
}

/// Forward or backward of a microbatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    Fwd(u32),
    Bwd(u32),
}

/// Stage 0's 1F1B order.
fn one_f_one_b(pp: u32, m: u32) -> Vec<Pass> {
    let warm = pp.saturating_sub(1).min(m);
    let mut v: Vec<Pass> = (0..warm).map(Pass::Fwd).collect();
    for i in 0..m - warm {
        v.push(Pass::Fwd(warm + i));
        v.push(Pass::Bwd(i));
    }
    v.extend((m - warm..m).map(Pass::Bwd));
    v
}

/// Bytes per parameter of Adam's state besides the parameter itself: two f32 moments, and an
/// f32 master weight in mixed precision (none when the parameters are f32: they are the
/// master weights).
fn optimizer_bytes_per_param() -> u64 {
    let master = if act_dtype() == DType::F32 { 0 } else { 4 };
    master + 2 * 4
}

/// The bytes resident for the whole step on rank 0 ([`Graph::resident_bytes`]): the
/// parameters it holds, in the graph's precision, and the optimizer state of the parameters it
/// updates. `params` are the stage's parameters (each group once, tied ones where owned) and
/// `updated` the parameters its Adam ops update (all of them; with ZeRO-2 and ZeRO-3 the `1/dp`
/// share of each bucket or block, rounded up). With ZeRO-3 the rank holds only the parameters it
/// updates. Gradients are tensors of the graph, not resident.
fn resident_bytes(zero: Zero, params: u64, updated: u64) -> u64 {
    let held = if zero == Zero::Stage3 {
        updated
    } else {
        params
    };
    held.saturating_mul(act([1]).bytes())
        .saturating_add(updated.saturating_mul(optimizer_bytes_per_param()))
}

/// The parameters of the whole stage (per device, before ZeRO sharding).
pub(crate) fn stage_parameters(blocks: &[Block]) -> u64 {
    blocks
        .iter()
        .flat_map(|b| b.prog.groups.iter())
        .map(|g| g.params)
        .sum()
}

/// A gradient bucket.
#[derive(Clone, Debug, Default)]
struct Bucket {
    /// Global groups in it.
    groups: Vec<usize>,
    /// Parameters in it.
    params: u64,
    /// What its optimizer reads (collective outputs, or gradients when `dp == 1`).
    reads: Vec<Tref>,
}

struct Driver<'a> {
    b: GraphBuilder,
    par: &'a Parallel,
    pl: Placement,
    blocks: &'a [Block],
    /// `[block][local group]` -> global group.
    gid: Vec<Vec<usize>>,
    /// Parameters of each global group.
    params: Vec<u64>,
    /// Parameter-gradient ops per global group per backward pass.
    contributors: Vec<u32>,
    /// Still to come in the current backward pass.
    remaining: Vec<u32>,
    /// Latest gradient of each group (read by the next one: accumulation).
    last_grad: Vec<Vec<Tref>>,
    /// Whether the current backward pass synchronises gradients.
    sync: bool,
    /// Microbatch of the current backward pass.
    mb: u32,
    /// Open bucket: groups and their gradients.
    open: Vec<(usize, Vec<Tref>)>,
    open_bytes: u64,
    /// Index of the next bucket in this pass.
    next_bucket: usize,
    buckets: Vec<Bucket>,
    /// ZeRO-3: groups finalised in the block being differentiated.
    z3_pending: Vec<(usize, Vec<Tref>)>,
    /// ZeRO-3: per block, reduce-scatter outputs and shard size, in order of first reduction.
    z3: Vec<(usize, u64, Vec<Tref>)>,
    /// Tied-weight all-reduces to read before the optimizer, per bucket.
    extra: BTreeMap<usize, Vec<Tref>>,
    /// Parameters the Adam ops update (the rank's share under ZeRO).
    updated: u64,
}

/// Builds the step graph named `name` of the stage made of `blocks`; with `pp > 1` the last
/// block's outputs are sent to stage 1.
pub(crate) fn assemble(
    name: String,
    blocks: &[Block],
    par: &Parallel,
) -> Result<Graph, GraphError> {
    let mut gid: Vec<Vec<usize>> = Vec::with_capacity(blocks.len());
    let mut params = Vec::new();
    for (bi, blk) in blocks.iter().enumerate() {
        let mut ids = Vec::with_capacity(blk.prog.groups.len());
        for g in &blk.prog.groups {
            match g.tied {
                Some((ob, og)) if ob < bi && og < gid[ob].len() => ids.push(gid[ob][og]),
                Some(_) => {
                    return Err(GraphError::InvalidModel {
                        reason: format!(
                            "group `{}` of `{}` is tied to no earlier group",
                            g.name, blk.name
                        ),
                    })
                }
                None => {
                    ids.push(params.len());
                    params.push(g.params);
                }
            }
        }
        gid.push(ids);
    }
    let mut contributors = vec![0u32; params.len()];
    for (bi, blk) in blocks.iter().enumerate() {
        for node in &blk.prog.nodes {
            if let Some(g) = node.group {
                let n = node.bwd.iter().filter(|o| !o.param_grad.is_empty()).count();
                contributors[gid[bi][g]] += n as u32;
            }
        }
    }
    let ngroups = params.len();
    let mut d = Driver {
        b: GraphBuilder::new(name),
        par,
        pl: par.placement(),
        blocks,
        gid,
        params,
        contributors,
        remaining: vec![0; ngroups],
        last_grad: vec![Vec::new(); ngroups],
        sync: false,
        mb: 0,
        open: Vec::new(),
        open_bytes: 0,
        next_bucket: 0,
        buckets: Vec::new(),
        z3_pending: Vec::new(),
        z3: Vec::new(),
        extra: BTreeMap::new(),
        updated: 0,
    };
    d.run()?;
    let resident = resident_bytes(par.zero, d.params.iter().sum(), d.updated);
    d.b.set_resident_bytes(resident);
    Ok(d.b.finish())
}

impl Driver<'_> {
    fn add(&mut self, op: Op, reads: &[Tref]) -> Result<OpId, GraphError> {
        let mut r = reads.to_vec();
        r.sort_unstable();
        r.dedup();
        self.b.try_add(op, &r)
    }

    /// `mb3.` when there are several microbatches.
    fn mbp(&self, mb: u32) -> String {
        if self.par.microbatches > 1 {
            format!("mb{mb}.")
        } else {
            String::new()
        }
    }

    fn dp(&self) -> u32 {
        self.par.dp
    }

    /// A `kind` collective named `name` over the data-parallel group writing `out`.
    fn dp_collective(&self, kind: CollectiveKind, out: Tensor, name: String) -> Op {
        named(
            collective(kind, out.bytes(), self.dp(), self.pl.dp, Some(out)),
            name,
        )
    }

    fn shard(&self, n: u64) -> u64 {
        match self.par.zero {
            Zero::None => n,
            _ => n.div_ceil(u64::from(self.dp())),
        }
    }

    /// Parameters a block reads (its own and tied ones), each group once.
    fn block_params(&self, bi: usize) -> u64 {
        let mut gs: Vec<usize> = self.gid[bi].clone();
        gs.sort_unstable();
        gs.dedup();
        gs.iter().map(|&g| self.params[g]).sum()
    }

    /// ZeRO-3's gather of a block's parameters.
    fn gather(&mut self, mb: u32, bi: usize, dir: &str) -> Result<Option<OpId>, GraphError> {
        if self.par.zero != Zero::Stage3 {
            return Ok(None);
        }
        let n = self.block_params(bi);
        if n == 0 {
            return Ok(None);
        }
        let op = self.dp_collective(
            CollectiveKind::AllGather,
            act([n]),
            format!(
                "{}{}.zero3.allgather.{dir}",
                self.mbp(mb),
                self.blocks[bi].name
            ),
        );
        self.add(op, &[]).map(Some)
    }

    fn run(&mut self) -> Result<(), GraphError> {
        let m = self.par.microbatches;
        let nb = self.blocks.len();
        let mut saved: BTreeMap<u32, Vec<Vec<Option<Tref>>>> = BTreeMap::new();
        let mut sends: BTreeMap<u32, (OpId, Vec<Tensor>)> = BTreeMap::new();
        for pass in one_f_one_b(self.par.pp, m) {
            match pass {
                Pass::Fwd(mb) => {
                    let mut x: Vec<Tref> = Vec::new();
                    let mut vals = Vec::with_capacity(nb);
                    for bi in 0..nb {
                        let (out, v) = self.forward(mb, bi, &x)?;
                        x = out;
                        vals.push(v);
                    }
                    saved.insert(mb, vals);
                    if self.par.pp > 1 {
                        let last = &self.blocks[nb - 1].prog;
                        let ts: Vec<Tensor> = last
                            .outputs
                            .iter()
                            .map(|v| last.values[v.0].tensor.clone())
                            .collect();
                        let bytes = ts.iter().map(Tensor::bytes).sum();
                        let op = named(
                            collective(CollectiveKind::SendRecv, bytes, 2, self.pl.pp_next, None),
                            format!("{}fwd.send", self.mbp(mb)),
                        );
                        let id = self.add(op, &x)?;
                        sends.insert(mb, (id, ts));
                    }
                }
                Pass::Bwd(mb) => {
                    let vals = saved.remove(&mb).unwrap_or_default();
                    let mut dy: Vec<Option<Tref>> = Vec::new();
                    if let Some((send, ts)) = sends.remove(&mb) {
                        let bytes = ts.iter().map(Tensor::bytes).sum();
                        let mut op =
                            collective(CollectiveKind::SendRecv, bytes, 2, self.pl.pp_next, None);
                        op.outputs = ts;
                        let n = op.outputs.len();
                        let id =
                            self.add(named(op, format!("{}bwd.recv", self.mbp(mb))), &[(send, 0)])?;
                        dy = (0..n).map(|j| Some((id, j))).collect();
                    }
                    self.begin_backward(mb);
                    for bi in (0..nb).rev() {
                        let v = vals.get(bi).cloned().unwrap_or_default();
                        dy = self.backward(mb, bi, &v, &dy)?;
                        if self.sync && self.par.zero == Zero::Stage3 {
                            self.zero3_reduce(mb, bi)?;
                        }
                    }
                    self.end_backward()?;
                }
            }
        }
        self.step_end()
    }

    fn forward(
        &mut self,
        mb: u32,
        bi: usize,
        inputs: &[Tref],
    ) -> Result<(Vec<Tref>, Vec<Option<Tref>>), GraphError> {
        let blocks = self.blocks;
        let blk = &blocks[bi];
        let prog = &blk.prog;
        let w = self.gather(mb, bi, "fwd")?;
        let mut vals: Vec<Option<Tref>> = vec![None; prog.values.len()];
        for (v, t) in prog.inputs.iter().zip(inputs) {
            vals[v.0] = Some(*t);
        }
        let prefix = format!("{}{}.fwd.", self.mbp(mb), blk.name);
        for node in &prog.nodes {
            if let Some(a) = node.alias {
                vals[node.outputs[0].0] = vals[a.0];
                continue;
            }
            let Some(op) = &node.fwd else { continue };
            let mut reads: Vec<Tref> = node.reads.iter().filter_map(|v| vals[v.0]).collect();
            if node.uses_w {
                reads.extend(w.map(|w| (w, 0)));
            }
            let id = self.add(named(op.clone(), format!("{prefix}{}", node.name)), &reads)?;
            for (j, v) in node.outputs.iter().enumerate() {
                vals[v.0] = Some((id, j));
            }
        }
        let out = prog.outputs.iter().filter_map(|v| vals[v.0]).collect();
        Ok((out, vals))
    }

    fn begin_backward(&mut self, mb: u32) {
        self.mb = mb;
        self.remaining = self.contributors.clone();
        self.sync = self.par.zero != Zero::None || mb + 1 == self.par.microbatches;
        if self.par.zero != Zero::None {
            // ZeRO accumulates into the reduced shards, not into full gradients.
            self.last_grad.iter_mut().for_each(Vec::clear);
        }
        self.next_bucket = 0;
    }

    /// Sums the gradient contributions of `v`, emitting an add when there are several.
    fn total(
        &mut self,
        prefix: &str,
        prog: &Program,
        v: V,
        contrib: &mut [Vec<Tref>],
    ) -> Result<Option<Tref>, GraphError> {
        let c = std::mem::take(&mut contrib[v.0]);
        match c.len() {
            0 => Ok(None),
            1 => Ok(Some(c[0])),
            n => {
                let val = &prog.values[v.0];
                let t = val.tensor.clone();
                let op = compute(
                    ComputeClass::Elementwise,
                    (n as u64 - 1) * t.elements(),
                    (n as u64 + 1) * t.bytes(),
                    None,
                    vec![t],
                );
                let id = self.add(named(op, format!("{prefix}{}.grad_sum", val.name)), &c)?;
                let r = (id, 0);
                contrib[v.0] = vec![r];
                Ok(Some(r))
            }
        }
    }

    fn backward(
        &mut self,
        mb: u32,
        bi: usize,
        vals: &[Option<Tref>],
        dy: &[Option<Tref>],
    ) -> Result<Vec<Option<Tref>>, GraphError> {
        let blocks = self.blocks;
        let blk = &blocks[bi];
        let prog = &blk.prog;
        let val = |v: V| vals.get(v.0).copied().flatten();
        let prefix = format!("{}{}.bwd.", self.mbp(mb), blk.name);
        let mut contrib: Vec<Vec<Tref>> = vec![Vec::new(); prog.values.len()];
        for (v, d) in prog.outputs.iter().zip(dy) {
            contrib[v.0].extend(*d);
        }
        let mut w: Option<OpId> = None;
        let mut gathered = false;
        for node in prog.nodes.iter().rev() {
            let mut grads = Vec::with_capacity(node.outputs.len());
            for &o in &node.outputs {
                grads.push(self.total(&prefix, prog, o, &mut contrib)?);
            }
            if !node.seed && grads.iter().all(Option::is_none) {
                continue;
            }
            for &(v, j) in &node.pass {
                if prog.values[v.0].grad {
                    contrib[v.0].extend(grads.get(j).copied().flatten());
                }
            }
            for bop in &node.bwd {
                let needed = !bop.param_grad.is_empty()
                    || bop.grads.iter().any(|(v, _)| prog.values[v.0].grad);
                if !needed {
                    continue;
                }
                let mut reads: Vec<Tref> = Vec::new();
                for s in &bop.reads {
                    match *s {
                        Src::Val(v) => reads.extend(val(v)),
                        Src::Grad(j) => reads.extend(grads.get(j).copied().flatten()),
                    }
                }
                if bop.uses_w {
                    if !gathered {
                        w = self.gather(mb, bi, "bwd")?;
                        gathered = true;
                    }
                    reads.extend(w.map(|w| (w, 0)));
                }
                let group = if bop.param_grad.is_empty() {
                    None
                } else {
                    node.group.map(|g| self.gid[bi][g])
                };
                if let Some(g) = group {
                    reads.extend(self.last_grad[g].iter().copied());
                }
                let id = self.add(
                    named(bop.op.clone(), format!("{prefix}{}", bop.op.name)),
                    &reads,
                )?;
                for &(v, o) in &bop.grads {
                    if prog.values[v.0].grad {
                        contrib[v.0].push((id, o));
                    }
                }
                if let Some(g) = group {
                    let trefs: Vec<Tref> = bop.param_grad.iter().map(|&o| (id, o)).collect();
                    self.param_grad(g, trefs)?;
                }
            }
        }
        let mut out = Vec::with_capacity(prog.inputs.len());
        for &v in &prog.inputs {
            out.push(self.total(&prefix, prog, v, &mut contrib)?);
        }
        Ok(out)
    }

    /// A gradient op of global group `g` was emitted.
    fn param_grad(&mut self, g: usize, trefs: Vec<Tref>) -> Result<(), GraphError> {
        self.last_grad[g] = trefs.clone();
        self.remaining[g] = self.remaining[g].saturating_sub(1);
        if self.remaining[g] == 0 && self.sync {
            self.finalised(g, trefs)?;
        }
        Ok(())
    }

    /// The gradient of `g` is complete for this pass.
    fn finalised(&mut self, g: usize, trefs: Vec<Tref>) -> Result<(), GraphError> {
        if self.par.zero == Zero::Stage3 {
            self.z3_pending.push((g, trefs));
            return Ok(());
        }
        self.open.push((g, trefs));
        self.open_bytes += self.params[g] * act([1]).bytes();
        if self.open_bytes >= self.par.bucket_bytes {
            self.close_bucket()?;
        }
        Ok(())
    }

    fn close_bucket(&mut self) -> Result<(), GraphError> {
        if self.open.is_empty() {
            return Ok(());
        }
        let open = std::mem::take(&mut self.open);
        self.open_bytes = 0;
        let idx = self.next_bucket;
        self.next_bucket += 1;
        let groups: Vec<usize> = open.iter().map(|(g, _)| *g).collect();
        let n: u64 = groups.iter().map(|&g| self.params[g]).sum();
        let grads: Vec<Tref> = open.iter().flat_map(|(_, t)| t.iter().copied()).collect();
        let reads = if self.dp() > 1 {
            let (kind, what, out) = match self.par.zero {
                Zero::Stage2 => (
                    CollectiveKind::ReduceScatter,
                    "reducescatter",
                    act([self.shard(n)]),
                ),
                _ => (CollectiveKind::AllReduce, "allreduce", act([n])),
            };
            let prefix = if self.par.zero == Zero::Stage2 {
                self.mbp(self.mb)
            } else {
                String::new()
            };
            let op = self.dp_collective(kind, out, format!("{prefix}grad_bucket{idx}.{what}"));
            vec![(self.add(op, &grads)?, 0)]
        } else {
            grads
        };
        if idx == self.buckets.len() {
            self.buckets.push(Bucket {
                groups,
                params: n,
                reads,
            });
        } else {
            debug_assert_eq!(
                self.buckets[idx].groups, groups,
                "buckets differ across microbatches"
            );
            self.buckets[idx].reads.extend(reads);
        }
        Ok(())
    }

    fn zero3_reduce(&mut self, mb: u32, bi: usize) -> Result<(), GraphError> {
        let pending = std::mem::take(&mut self.z3_pending);
        if pending.is_empty() {
            return Ok(());
        }
        let n: u64 = pending.iter().map(|(g, _)| self.params[*g]).sum();
        let grads: Vec<Tref> = pending
            .iter()
            .flat_map(|(_, t)| t.iter().copied())
            .collect();
        let op = self.dp_collective(
            CollectiveKind::ReduceScatter,
            act([self.shard(n)]),
            format!(
                "{}{}.zero3.reducescatter",
                self.mbp(mb),
                self.blocks[bi].name
            ),
        );
        let id = self.add(op, &grads)?;
        match self.z3.iter_mut().find(|(b, _, _)| *b == bi) {
            Some(e) => e.2.push((id, 0)),
            None => self.z3.push((bi, self.shard(n), vec![(id, 0)])),
        }
        Ok(())
    }

    fn end_backward(&mut self) -> Result<(), GraphError> {
        if self.sync {
            // Groups whose gradient ops were all skipped (nothing flowed into them) still
            // take part in the reduction with what they have.
            for g in 0..self.params.len() {
                if self.remaining[g] > 0 && !self.last_grad[g].is_empty() {
                    self.remaining[g] = 0;
                    let t = self.last_grad[g].clone();
                    self.finalised(g, t)?;
                }
            }
            self.close_bucket()?;
            if self.par.zero == Zero::Stage3 {
                self.zero3_reduce(self.mb, 0)?;
            }
        }
        Ok(())
    }

    /// An Adam update of `params` parameters writing the updated parameters: a step output
    /// unless ZeRO-2 all-gathers them afterwards (then the gathered ones are).
    fn adam(&mut self, name: String, params: u64, reads: &[Tref]) -> Result<OpId, GraphError> {
        let mut op = compute(
            ComputeClass::Elementwise,
            ADAM_FLOPS_PER_PARAM * params,
            ADAM_BYTES_PER_PARAM * params,
            None,
            vec![act([params])],
        );
        op.live_out = self.par.zero != Zero::Stage2;
        self.updated += params;
        self.add(named(op, name), reads)
    }

    fn step_end(&mut self) -> Result<(), GraphError> {
        // Tied weights: all-reduce their (data-parallel reduced) gradient with the last stage.
        if self.par.pp > 1 {
            let blocks = self.blocks;
            for (bi, blk) in blocks.iter().enumerate() {
                for &lg in &blk.tied_to_last_stage {
                    let g = self.gid[bi][lg];
                    let Some(k) = self.buckets.iter().position(|b| b.groups.contains(&g)) else {
                        continue;
                    };
                    let reads = if self.dp() > 1 {
                        self.buckets[k].reads.clone()
                    } else {
                        self.last_grad[g].clone()
                    };
                    let t = act([self.params[g]]);
                    let op = named(
                        collective(
                            CollectiveKind::AllReduce,
                            t.bytes(),
                            2,
                            self.pl.pp_last,
                            Some(t),
                        ),
                        format!(
                            "{}.{}.tied_grad.allreduce",
                            blk.name, blk.prog.groups[lg].name
                        ),
                    );
                    let id = self.add(op, &reads)?;
                    self.extra.entry(k).or_default().push((id, 0));
                }
            }
        }
        if self.par.zero == Zero::Stage3 {
            let z3 = std::mem::take(&mut self.z3);
            for (bi, n, reads) in z3 {
                self.adam(format!("{}.adam", self.blocks[bi].name), n, &reads)?;
            }
            return Ok(());
        }
        let buckets = std::mem::take(&mut self.buckets);
        let mut updated = Vec::with_capacity(buckets.len());
        for (i, b) in buckets.iter().enumerate() {
            let mut reads = b.reads.clone();
            reads.extend(self.extra.get(&i).into_iter().flatten().copied());
            updated.push(self.adam(
                format!("grad_bucket{i}.adam"),
                self.shard(b.params),
                &reads,
            )?);
        }
        if self.par.zero == Zero::Stage2 {
            for (i, (b, id)) in buckets.iter().zip(updated).enumerate() {
                // The updated parameters, whole again: the step's output (the Adam op's
                // shard is part of it).
                let op = self
                    .dp_collective(
                        CollectiveKind::AllGather,
                        act([b.params]),
                        format!("grad_bucket{i}.allgather"),
                    )
                    .kept_to_end();
                self.add(op, &[(id, 0)])?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_f_one_b_on_stage_zero() {
        use Pass::*;
        assert_eq!(one_f_one_b(1, 2), vec![Fwd(0), Bwd(0), Fwd(1), Bwd(1)]);
        assert_eq!(
            one_f_one_b(3, 4),
            vec![
                Fwd(0),
                Fwd(1),
                Fwd(2),
                Bwd(0),
                Fwd(3),
                Bwd(1),
                Bwd(2),
                Bwd(3)
            ]
        );
        assert_eq!(one_f_one_b(2, 2), vec![Fwd(0), Fwd(1), Bwd(0), Bwd(1)]);
    }
}
