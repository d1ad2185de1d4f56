//! Choosing decompositions by evaluating schedules.
//!
//! Greedy over the critical collectives of the current graph's best baseline schedule, most
//! exposed first: for each, every axis and chunk count `N` that its context allows, and the
//! collective-matmul ring when its shapes allow one ([`crate::ring`], with
//! [`SelectConfig::rings`]), is rewritten ([`rewrite`], checked) and evaluated by scheduling
//! the rewritten graph with the
//! baselines (the best of program order, the LHS-like list scheduler and the Inductor-like
//! pass, simulated with contention); the best candidate is kept when it shortens the
//! makespan, at most one per collective. Cost: O(critical * axes * Ns * (rewrite +
//! baselines)).
//!
//! [`select_exact`] is the paper's selection: an exact model solved by any
//! [`concerto_rcpsp::Selector`] (a MILP backend of `concerto-backends`, or enumeration) over candidates whose gains are measured one by one; [`select`] is
//! the greedy variant that re-evaluates after each choice, so it sees interactions between
//! collectives that the exact model's additive gains leave out.

use concerto_graph::{baselines, simulate, Graph, Hardware, OpId, StreamPlan, Timeline};

use concerto_rcpsp::{Selection, Selector};

use crate::context::context;
use crate::critical::critical;
use crate::error::DecompError;
use crate::rewrite::rewrite;
use crate::ring;
use crate::rules::chunk;
use crate::split::{Axis, Context, Family};

/// Default time limit of the selection solve of [`select_exact`] ([`SelectConfig::time_limit`];
/// the selection has tens of items, which the MILP selectors prove in seconds).
pub const SELECTION_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Options of [`select`].
#[derive(Clone, Debug)]
pub struct SelectConfig {
    /// Exposed fraction of the makespan from which a collective is critical.
    pub threshold: f64,
    /// Chunk counts tried.
    pub ns: Vec<u32>,
    /// Axes tried.
    pub axes: Vec<Axis>,
    /// Ops added on each side of the collective, at most.
    pub depth: usize,
    /// A fixed split slowdown (chunk duration = op duration x slowdown / N) instead of the
    /// measured tables; for sensitivity sweeps.
    pub slowdown: Option<f64>,
    /// Critical collectives tried, at most.
    pub max_collectives: usize,
    /// Also try collective-matmul rings ([`crate::ring`]) around all-gathers and
    /// reduce-scatters.
    pub rings: bool,
    /// Wall-clock limit of the selection solve of [`select_exact`] and [`select_among`]:
    /// default [`SELECTION_TIME_LIMIT`]; `None` for none, which a deterministic run needs (a
    /// selection cut short by the clock chooses by load: measured with `microlp` on the quick
    /// start's step, which takes 2-3 s idle, a different set under 9 competing processes).
    pub time_limit: Option<std::time::Duration>,
}

impl Default for SelectConfig {
    fn default() -> Self {
        Self {
            threshold: 0.002,
            ns: vec![2, 4, 8],
            axes: vec![Axis::Rows, Axis::Batch, Axis::Cols],
            depth: 4,
            slowdown: None,
            max_collectives: 64,
            rings: true,
            time_limit: Some(SELECTION_TIME_LIMIT),
        }
    }
}

/// One decomposition applied.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug, PartialEq)]
pub struct Decomposition {
    /// The collective's name in the graph it was chosen in.
    pub collective: String,
    /// The family: a split into chunks, or a collective-matmul ring.
    pub family: Family,
    /// The axis (a ring's: the GEMM's rows).
    pub axis: Axis,
    /// Chunks (a ring's: its ranks).
    pub n: u32,
    /// Ops in the context (the collective included).
    pub context_ops: usize,
    /// Makespan before and after (ns), as evaluated.
    pub before_ns: u64,
    /// Makespan after (ns).
    pub after_ns: u64,
}

impl Decomposition {
    /// The decomposition of `ctx` around the collective named `collective`, evaluated from
    /// `before_ns` to `after_ns`.
    fn of(collective: &str, ctx: &Context, before_ns: u64, after_ns: u64) -> Self {
        Decomposition {
            collective: collective.to_string(),
            family: ctx.family,
            axis: ctx.axis,
            n: ctx.n,
            context_ops: ctx.ops.len(),
            before_ns,
            after_ns,
        }
    }

    /// A label for tables: `rows/4` for a split, `ring/8` for a collective matmul.
    pub fn label(&self) -> String {
        crate::split::label(self.family, self.axis, self.n)
    }
}

/// Every context tried around `collective`: each axis and chunk count of `config` the split
/// rules allow, then the collective-matmul ring when its shapes allow one and `config.rings`.
fn contexts(graph: &Graph, collective: OpId, config: &SelectConfig) -> Vec<Context> {
    let mut out = Vec::new();
    for &axis in &config.axes {
        for &n in &config.ns {
            out.extend(context(graph, collective, axis, n, config.depth));
        }
    }
    if config.rings {
        out.extend(ring::find(graph, collective).map(|r| r.context()));
    }
    out
}

/// What [`select`] returns.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug)]
pub struct Selected {
    /// The rewritten graph (the input when nothing helped).
    pub graph: Graph,
    /// The decompositions applied, in order.
    pub decompositions: Vec<Decomposition>,
    /// Evaluated makespan of the input (ns).
    pub before_ns: u64,
    /// Evaluated makespan of the result (ns).
    pub after_ns: u64,
}

/// `graph` with `ctx` split into chunks costed as `config` says (the measured tables, or
/// the fixed slowdown), checked.
fn apply(
    graph: &Graph,
    ctx: &Context,
    hardware: &Hardware,
    config: &SelectConfig,
) -> Result<Graph, DecompError> {
    Ok(rewrite(graph, ctx, &chunker(ctx, hardware, config))?.graph)
}

/// The best baseline schedule of `graph` (makespan and timeline).
pub fn evaluate(graph: &Graph, hardware: &Hardware) -> Result<(u64, Timeline), DecompError> {
    let d = hardware.durations(graph);
    let plans: [StreamPlan; 3] = [
        baselines::program_order(graph)?,
        baselines::lhs(graph, &d)?,
        baselines::inductor(graph, baselines::INDUCTOR_DISTANCE)?,
    ];
    let mut best: Option<Timeline> = None;
    for p in &plans {
        let t = simulate(graph, p, &d, hardware.contention)?;
        if best.as_ref().is_none_or(|b| t.makespan < b.makespan) {
            best = Some(t);
        }
    }
    let t = best.expect("three plans");
    Ok((t.makespan, t))
}

/// Chooses decompositions for `graph` (see the module docs).
pub fn select(
    graph: &Graph,
    hardware: &Hardware,
    config: &SelectConfig,
) -> Result<Selected, DecompError> {
    let (before, timeline) = evaluate(graph, hardware)?;
    let names: Vec<String> = critical(graph, &timeline, config.threshold)
        .into_iter()
        .take(config.max_collectives)
        .map(|c| graph.op(c.op).name.clone())
        .collect();
    let mut current = graph.clone();
    let mut makespan = before;
    let mut applied = Vec::new();
    for name in names {
        let Some(c) = current.find(&name) else {
            continue; // split by an earlier decomposition's context
        };
        let mut best: Option<(u64, Graph, Decomposition)> = None;
        for ctx in contexts(&current, c, config) {
            let rewritten = apply(&current, &ctx, hardware, config)?;
            let (m, _) = evaluate(&rewritten, hardware)?;
            if m < best.as_ref().map_or(makespan, |b| b.0) {
                let d = Decomposition::of(&name, &ctx, makespan, m);
                best = Some((m, rewritten, d));
            }
        }
        if let Some((m, g, d)) = best {
            current = g;
            makespan = m;
            applied.push(d);
        }
    }
    Ok(Selected {
        graph: current,
        decompositions: applied,
        before_ns: before,
        after_ns: makespan,
    })
}

/// A decomposition candidate measured alone on the input graph.
#[derive(Clone, Debug)]
struct Candidate {
    decomposition: Decomposition,
    /// Names of the context's ops (stable across rewrites of other, disjoint contexts).
    ops: Vec<String>,
    gain: i64,
}

/// A candidate decomposition with a measured gain (see [`candidates`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    /// What it is, with its evaluated makespan.
    pub decomposition: Decomposition,
    /// Its context in the input graph.
    pub context: Context,
}

/// Every candidate that shortens the evaluated makespan when applied alone: for each
/// critical collective of the best baseline schedule (most exposed first), each axis and
/// chunk count the context allows and its collective-matmul ring (when it has one and
/// [`SelectConfig::rings`]), rewritten (checked) and evaluated. Returns the input's evaluated
/// makespan and the candidates, grouped by collective in that order. Cost:
/// O(critical x (axes x Ns + 1) x (rewrite + evaluate)).
pub fn candidates(
    graph: &Graph,
    hardware: &Hardware,
    config: &SelectConfig,
) -> Result<(u64, Vec<Scored>), DecompError> {
    let (before, mut all) = tried(graph, hardware, config)?;
    all.retain(|s| s.decomposition.after_ns < before);
    Ok((before, all))
}

/// Every candidate [`candidates`] tries, whether it gains or not, with its evaluated
/// makespan: for comparing the decomposition families on one graph. Same cost.
pub fn tried(
    graph: &Graph,
    hardware: &Hardware,
    config: &SelectConfig,
) -> Result<(u64, Vec<Scored>), DecompError> {
    let (before, timeline) = evaluate(graph, hardware)?;
    let mut out = Vec::new();
    for c in critical(graph, &timeline, config.threshold)
        .into_iter()
        .take(config.max_collectives)
    {
        for ctx in contexts(graph, c.op, config) {
            let (m, _) = evaluate(&apply(graph, &ctx, hardware, config)?, hardware)?;
            out.push(Scored {
                decomposition: Decomposition::of(&graph.op(c.op).name, &ctx, before, m),
                context: ctx,
            });
        }
    }
    Ok((before, out))
}

/// The chunk function of `config` (the measured tables, or the fixed slowdown) for `ctx`.
pub fn chunker<'a>(
    ctx: &'a Context,
    hardware: &'a Hardware,
    config: &'a SelectConfig,
) -> impl Fn(&concerto_graph::Op, u32) -> concerto_graph::Op + 'a {
    move |op: &concerto_graph::Op, i: u32| {
        let slow = config.slowdown.map(|f| (f, hardware.op_ns(op)));
        chunk(op, ctx.axis, ctx.n, i, slow)
    }
}

/// The exact selection (Concerto §4.3, with measured gains): every candidate (critical
/// collective x axis x N) is rewritten and evaluated alone; its gain is the makespan it saves
/// (the paper's `max(uncovered, overhead, 0)`, measured on a whole schedule instead of
/// estimated); `solve` picks at most one per collective and never two whose contexts share an
/// op; the chosen candidates are then applied together and the result evaluated. When their
/// interaction makes the combination longer than the input, the input is returned unchanged.
/// Cost: O(candidates x (rewrite + evaluate)) plus the selection solve.
pub fn select_exact(
    graph: &Graph,
    hardware: &Hardware,
    config: &SelectConfig,
    selector: &dyn Selector,
) -> Result<Selected, DecompError> {
    let (before, scored) = candidates(graph, hardware, config)?;
    select_among(graph, hardware, config, before, scored, selector)
}

/// [`select_exact`] over candidates already measured by [`candidates`] (`before` and `scored`
/// as it returned them for the same graph, hardware and config), for a caller that needs the
/// candidates too (the joint mode builds its union from them). Cost: the selection solve and
/// one rewrite and evaluation of the chosen set.
pub fn select_among(
    graph: &Graph,
    hardware: &Hardware,
    config: &SelectConfig,
    before: u64,
    scored: Vec<Scored>,
    selector: &dyn Selector,
) -> Result<Selected, DecompError> {
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for c in scored {
        if groups
            .last()
            .and_then(|g: &Vec<usize>| g.first())
            .is_none_or(|&i| candidates[i].decomposition.collective != c.decomposition.collective)
        {
            groups.push(Vec::new());
        }
        groups.last_mut().expect("pushed").push(candidates.len());
        candidates.push(Candidate {
            ops: c
                .context
                .ops
                .iter()
                .map(|o| graph.op(*o).name.clone())
                .collect(),
            gain: (before - c.decomposition.after_ns) as i64,
            decomposition: c.decomposition,
        });
    }
    let mut conflicts = Vec::new();
    for a in 0..candidates.len() {
        for b in a + 1..candidates.len() {
            let (ca, cb) = (&candidates[a], &candidates[b]);
            if ca.decomposition.collective != cb.decomposition.collective
                && ca.ops.iter().any(|o| cb.ops.contains(o))
            {
                conflicts.push((a, b));
            }
        }
    }
    let selection = Selection {
        weights: candidates.iter().map(|c| c.gain).collect(),
        groups,
        conflicts,
    };
    let chosen = selector.select(&selection, config.time_limit)?.items;
    // Apply the chosen candidates together (their contexts are disjoint: ops by name).
    let mut current = graph.clone();
    let mut applied = Vec::new();
    for &i in &chosen {
        let c = &candidates[i];
        let ops: Option<Vec<_>> = c.ops.iter().map(|name| current.find(name)).collect();
        let (Some(ops), Some(collective)) = (ops, current.find(&c.decomposition.collective)) else {
            continue;
        };
        let d = &c.decomposition;
        let ctx = Context {
            collective,
            axis: d.axis,
            ops,
            n: d.n,
            family: d.family,
        };
        current = apply(&current, &ctx, hardware, config)?;
        applied.push(d.clone());
    }
    let (after, _) = evaluate(&current, hardware)?;
    if after >= before {
        return Ok(Selected {
            graph: graph.clone(),
            decompositions: Vec::new(),
            before_ns: before,
            after_ns: before,
        });
    }
    Ok(Selected {
        graph: current,
        decompositions: applied,
        before_ns: before,
        after_ns: after,
    })
}
