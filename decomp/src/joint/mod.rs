//! Joint decomposition and scheduling: one graph that holds every candidate decomposition as
//! an alternative, for a solver that chooses the decompositions and the order together.
//!
//! The sequential mode (Concerto §4) chooses decompositions on measured gains, then schedules
//! the rewritten graph; a choice that looks good alone can be bad next to the order the
//! scheduler picks, and the other way round. [`union`] builds the *union graph* of a graph and
//! a set of candidate contexts:
//!
//! - **Regions.** Candidates whose contexts share an op are alternatives of one region (the
//!   contexts of one collective always share it). A region's ops are the union of its
//!   candidates' contexts.
//! - **Modes.** Mode 0 of a region is its ops unchanged; mode `k` applies a set of compatible
//!   candidates (disjoint contexts, one per collective): the chunks and joins of the ops in
//!   their contexts, or a collective-matmul ring's steps, chunks, accumulates and joins
//!   ([`crate::ring`]) (named `<name>@<k>`), and the region's other ops, which it *shares* with
//!   mode 0 (one instance, present in every mode that leaves it unchanged, so the union does
//!   not grow with copies). Ops outside every region are mandatory.
//! - **Dependencies.** Within a mode, those of its rewrite. Between a region's op and an op
//!   outside the region, every instance pair: a producer is read through its instance in each
//!   mode (the op itself, its copy, or what its rewrite lets outside ops read: its join, a
//!   reduce-scatter ring's last accumulate), a consumer reads through its instance in each
//!   mode (the op, its copy, or the new ops its rewrite makes read the producer: every chunk,
//!   since a chunk reads the whole tensor of a producer outside its context; an all-gather
//!   ring's first step, join and GEMM chunk 0). A dependency binds only when both ends are present, as
//!   in [`concerto_rcpsp::ModalProblem`], so each choice of one mode per region gives exactly
//!   the graph that applying the chosen rewrites one after the other gives
//!   ([`Union::graph_of`] builds it; the tests compare the two).
//!
//! Lowered with [`concerto_graph::lower::lower`] and wrapped with [`Union::regions`], the
//! union graph is the modal RCPSP that a [`concerto_rcpsp::ModalSolver`] solves: modes and
//! start times together.
//!
//! Memory ([`concerto_graph::memory`]): the union graph and every [`Union::graph_of`] keep the
//! source's resident bytes, and each op its rewrite's step-output mark ([`Op::live_out`]), so
//! a mode choice's graph has the memory information that applying its rewrites gives.
//!
//! Cost: O(candidates x (rewrite + ops + deps)) to build; the union has the original ops plus
//! every candidate's chunks, joins and copies of its region's other ops.

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{Graph, GraphBuilder, Op, OpId};

use crate::error::DecompError;
use crate::rewrite::Origin;
use crate::split::Context;

mod regions;

use regions::{find_regions, region_mode_sets, rewrite_modes, Modes, Regions};

/// One candidate of [`union`]: a context and its chunk function's result, the rewrite.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// A label for reports (`<collective> rows/4`).
    pub label: String,
    /// The context in the original graph.
    pub context: Context,
}

/// A region of the union graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnionRegion {
    /// The region's name: its first candidate's collective.
    pub name: String,
    /// The original ops of the region (the union of its candidates' contexts).
    pub ops: Vec<OpId>,
    /// Union-graph ops of each mode; mode 0 is the region unchanged. An op that a mode leaves
    /// unchanged is shared: it is in mode 0 and in that mode.
    pub modes: Vec<Vec<OpId>>,
    /// The candidates (indices into [`union`]'s list) each mode applies; empty for mode 0.
    pub candidates: Vec<Vec<usize>>,
}

/// The union graph (see the module docs).
#[derive(Clone, Debug)]
pub struct Union {
    /// Every op of every mode, with every dependency.
    pub graph: Graph,
    /// The regions.
    pub regions: Vec<UnionRegion>,
    /// For each union op, `(region, modes)` with one bit per mode it is present in, or `None`
    /// when it is mandatory.
    pub membership: Vec<Option<(usize, u128)>>,
    /// For each union op, the original op it comes from and how.
    pub origin: Vec<Origin>,
}

impl Union {
    /// Whether union op `o` is present when region `r` runs in mode `modes[r]`.
    pub fn present(&self, o: OpId, modes: &[usize]) -> bool {
        self.membership[o.0].is_none_or(|(r, set)| modes[r] < 128 && set >> modes[r] & 1 == 1)
    }

    /// The graph of one mode choice: the present ops in union order, with the dependencies
    /// between them, and each op's union id. Errors when `modes` does not give one valid mode
    /// per region.
    pub fn graph_of(&self, modes: &[usize]) -> Result<(Graph, Vec<OpId>), DecompError> {
        if modes.len() != self.regions.len()
            || modes
                .iter()
                .zip(&self.regions)
                .any(|(&m, r)| m >= r.modes.len())
        {
            return Err(DecompError::InvalidContext {
                reason: format!(
                    "mode choice {modes:?} for {} regions of {:?} modes",
                    self.regions.len(),
                    self.regions
                        .iter()
                        .map(|r| r.modes.len())
                        .collect::<Vec<_>>()
                ),
            });
        }
        let mut b = GraphBuilder::new(self.graph.name());
        b.set_resident_bytes(self.graph.resident_bytes());
        let mut new_id = vec![None; self.graph.len()];
        let mut kept = Vec::new();
        for o in self.graph.ids() {
            if !self.present(o, modes) {
                continue;
            }
            let inputs: Vec<(OpId, usize)> = self
                .graph
                .inputs(o)
                .into_iter()
                .filter_map(|(p, t)| new_id[p.0].map(|q| (q, t)))
                .collect();
            let id = b.try_add(self.graph.op(o).clone(), &inputs)?;
            new_id[o.0] = Some(id);
            kept.push(o);
        }
        Ok((b.finish(), kept))
    }
}

/// Most modes of one region: past it, a region keeps its single candidates, the starting
/// choice and the greedy largest compatible set.
pub const MAX_MODES: usize = 64;

/// Builds the union graph of `graph` and `candidates`, each rewritten with `chunk` (see the
/// module docs). Candidates whose contexts share an op form one region; its modes are the
/// sets of candidates with pairwise disjoint contexts (at most one per collective), each
/// applied one after the other: all of them while there are at most [`MAX_MODES`], else the
/// single candidates, the set `start` chooses in the region and the greedy largest set. So
/// `start` (a set of candidates with disjoint contexts, e.g. the sequential selection) is
/// always one mode choice.
///
/// Errors: those of [`rewrite`](crate::rewrite::rewrite) for a candidate; [`DecompError::CheckFailed`] when a rewrite
/// lacks the join a consumer outside its context needs (a bug).
pub fn union(
    graph: &Graph,
    candidates: &[Candidate],
    chunk: &dyn Fn(&Context, &Op, u32) -> Op,
    start: &[usize],
) -> Result<Union, DecompError> {
    let regions = find_regions(graph, candidates);
    let sets: Vec<Vec<Vec<usize>>> = regions
        .cands
        .iter()
        .map(|cands| region_mode_sets(candidates, cands, start))
        .collect();
    let modes = rewrite_modes(graph, candidates, chunk, sets)?;
    let mut entries = original_entries(graph, candidates, &regions, &modes);
    let sources = push_new_op_entries(&mut entries, graph, candidates, &regions, &modes)?;
    entries.sort_by_key(|e| e.key);
    let ids = union_ids(graph, &entries, &sources, &modes);
    let edges = union_edges(graph, &regions, &modes, &ids);
    let (graph_u, membership, origin) = assemble_graph(graph, entries, &edges)?;
    let regions = union_regions(graph, candidates, &regions, &modes, &membership);
    Ok(Union {
        graph: graph_u,
        regions,
        membership,
        origin,
    })
}

/// A union op's region and the modes it is present in (one bit each), `None` when mandatory.
type Member = Option<(usize, u128)>;

/// A union op's sort key: (original position, candidate + 1 or 0, role in the rewrite).
type Key = (usize, usize, usize);

/// One union op before numbering.
struct Entry {
    /// Its place in the union's order.
    key: Key,
    /// The op.
    op: Op,
    /// Its region and the modes it is present in; `None` when mandatory.
    member: Option<(usize, u128)>,
    /// The original op it comes from and how.
    origin: Origin,
    /// The mode entry and rewrite op it was first made from; `None` for an original op.
    source: Option<(usize, OpId)>,
}

/// The original ops as union entries, each present in mode 0 and every mode that leaves it
/// unchanged (one shared instance).
fn original_entries(
    graph: &Graph,
    candidates: &[Candidate],
    regions: &Regions,
    modes: &Modes,
) -> Vec<Entry> {
    // The ops each mode rewrites; the others it shares with mode 0 (one instance).
    let touched: Vec<BTreeSet<OpId>> = modes
        .sets
        .iter()
        .flat_map(|sets| {
            sets.iter().map(|set| {
                set.iter()
                    .flat_map(|&c| candidates[c].context.ops.iter().copied())
                    .collect()
            })
        })
        .collect();
    let untouched_set = |w: OpId, r: usize| -> u128 {
        let mut bits = 1u128;
        for &i in &modes.by_region[r] {
            if !touched[i].contains(&w) {
                bits |= 1u128 << modes.mode[i];
            }
        }
        bits
    };
    graph
        .ids()
        .map(|o| Entry {
            key: (o.0, 0, 0),
            op: graph.op(o).clone(),
            member: regions.of[o.0].map(|r| (r, untouched_set(o, r))),
            origin: Origin::Copy(o),
            source: None,
        })
        .collect()
}

/// Adds the modes' new ops (chunks, joins, ring steps and accumulates) to `entries`. They
/// belong to a candidate: one instance, present in every mode whose set holds the candidate
/// (its neighbours' instances differ by mode, and each dependency binds only when both ends
/// are present). Returns every (mode entry, rewrite op, key) in rewrite order.
fn push_new_op_entries(
    entries: &mut Vec<Entry>,
    graph: &Graph,
    candidates: &[Candidate],
    regions: &Regions,
    modes: &Modes,
) -> Result<Vec<(usize, OpId, Key)>, DecompError> {
    let mut shared_entry: BTreeMap<Key, usize> = BTreeMap::new();
    let mut sources: Vec<(usize, OpId, Key)> = Vec::new();
    for (i, rw) in modes.rewritten.iter().enumerate() {
        let r = modes.region[i];
        let set = modes.set(i);
        for x in rw.graph.ids() {
            let w = rw.origin[x.0].op();
            // Copies are the shared original; only chunks and joins are new.
            if regions.of[w.0] != Some(r) || matches!(rw.origin[x.0], Origin::Copy(_)) {
                continue;
            }
            let c = *set
                .iter()
                .find(|&&c| candidates[c].context.ops.contains(&w))
                .ok_or_else(|| DecompError::CheckFailed {
                    reason: format!(
                        "a mode splits `{}` with none of its candidates",
                        graph.op(w).name
                    ),
                })?;
            // One instance per role of the candidate's new ops, in the rewrite's order: chunk
            // `i`; ring step `i` then its accumulate `i`; the join.
            let role = match rw.origin[x.0] {
                Origin::Chunk { index, .. } => index as usize,
                Origin::Step { index, .. } => (1 << 20) + 2 * index as usize,
                Origin::Accumulate { index, .. } => (1 << 20) + 2 * index as usize + 1,
                _ => usize::MAX,
            };
            let key = (w.0, c + 1, role);
            let bit = 1u128 << modes.mode[i];
            match shared_entry.get(&key) {
                Some(&e) => {
                    if let Some((_, set)) = entries[e].member.as_mut() {
                        *set |= bit;
                    }
                }
                None => {
                    let mut op = rw.graph.op(x).clone();
                    op.name = format!("{}@{}", op.name, c + 1);
                    shared_entry.insert(key, entries.len());
                    entries.push(Entry {
                        key,
                        op,
                        member: Some((r, bit)),
                        origin: rw.origin[x.0],
                        source: Some((i, x)),
                    });
                }
            }
            sources.push((i, x, key));
        }
    }
    Ok(sources)
}

/// The union ids of the original ops and of every mode entry's rewrite ops.
struct UnionIds {
    /// Each original op's union id.
    original: Vec<OpId>,
    /// Each mode entry's rewrite op to its union id.
    cand: Vec<BTreeMap<OpId, OpId>>,
}

/// Numbers the sorted `entries` and maps each rewrite op to its union id (a copy to its
/// original's).
fn union_ids(
    graph: &Graph,
    entries: &[Entry],
    sources: &[(usize, OpId, Key)],
    modes: &Modes,
) -> UnionIds {
    let mut original_id = vec![OpId(0); graph.len()];
    let mut cand_id: Vec<BTreeMap<OpId, OpId>> = vec![BTreeMap::new(); modes.rewritten.len()];
    let mut id_of_key: BTreeMap<Key, OpId> = BTreeMap::new();
    for (u, e) in entries.iter().enumerate() {
        match e.source {
            None => original_id[e.key.0] = OpId(u),
            Some(_) => {
                id_of_key.insert(e.key, OpId(u));
            }
        }
    }
    for &(i, x, key) in sources {
        cand_id[i].insert(x, id_of_key[&key]);
    }
    for (i, rw) in modes.rewritten.iter().enumerate() {
        for x in rw.graph.ids() {
            if let Origin::Copy(w) = rw.origin[x.0] {
                cand_id[i].insert(x, original_id[w.0]);
            }
        }
    }
    UnionIds {
        original: original_id,
        cand: cand_id,
    }
}

/// The union's dependencies `(producer, consumer, input slot)`. Within a region, the original
/// edges between its ops (mode 0 and the ops the modes share) and each mode's own edges.
/// Across regions (or to ops in none): every instance that writes a producer (the op itself;
/// in a mode that rewrites it, the new op that its rewrite lets outside ops read: a join, a
/// ring's last accumulate) to every instance that reads it (the op; in each mode of the
/// consumer's region, the new ops its rewrite makes read the producer: chunks, a ring's first
/// step and chunk 0). A dependency binds only when both ends are present.
fn union_edges(
    graph: &Graph,
    regions: &Regions,
    modes: &Modes,
    ids: &UnionIds,
) -> BTreeSet<(OpId, OpId, usize)> {
    let region_of = &regions.of;
    let (original_id, cand_id) = (&ids.original, &ids.cand);
    let mut edges: BTreeSet<(OpId, OpId, usize)> = BTreeSet::new();
    let mut writers: Vec<Vec<OpId>> = graph.ids().map(|p| vec![original_id[p.0]]).collect();
    let mut readers: Vec<Vec<(OpId, usize)>> = vec![Vec::new(); graph.len()];
    for c in graph.ids() {
        for (p, t) in graph.inputs(c) {
            if region_of[p.0].is_some() && region_of[p.0] == region_of[c.0] {
                edges.insert((original_id[p.0], original_id[c.0], t));
            } else {
                readers[p.0].push((original_id[c.0], t));
            }
        }
    }
    for (i, rw) in modes.rewritten.iter().enumerate() {
        let inside = |x: OpId| region_of[rw.origin[x.0].op().0] == Some(modes.region[i]);
        for y in rw.graph.ids() {
            for (x, t) in rw.graph.inputs(y) {
                let w = rw.origin[x.0].op();
                match (inside(x), inside(y)) {
                    (true, true) => {
                        edges.insert((cand_id[i][&x], cand_id[i][&y], t));
                    }
                    (false, true) => readers[w.0].push((cand_id[i][&y], t)),
                    (true, false) => writers[w.0].push(cand_id[i][&x]),
                    (false, false) => {} // copies: original edges, above
                }
            }
        }
    }
    for p in graph.ids() {
        let mut ws = std::mem::take(&mut writers[p.0]);
        ws.sort_unstable();
        ws.dedup();
        for &(v, t) in &readers[p.0] {
            for &u in &ws {
                edges.insert((u, v, t));
            }
        }
    }
    edges
}

/// Builds the union graph from the sorted `entries` and `edges`, with each op's membership
/// and origin. Errors when an op reads a later one (a bug).
fn assemble_graph(
    graph: &Graph,
    entries: Vec<Entry>,
    edges: &BTreeSet<(OpId, OpId, usize)>,
) -> Result<(Graph, Vec<Member>, Vec<Origin>), DecompError> {
    let mut inputs: Vec<Vec<(OpId, usize)>> = vec![Vec::new(); entries.len()];
    for &(u, v, t) in edges {
        inputs[v.0].push((u, t));
    }
    let mut b = GraphBuilder::new(format!("{}+joint", graph.name()));
    b.set_resident_bytes(graph.resident_bytes());
    let mut membership = Vec::with_capacity(entries.len());
    let mut origin = Vec::with_capacity(entries.len());
    for (u, e) in entries.into_iter().enumerate() {
        if inputs[u].iter().any(|(p, _)| p.0 >= u) {
            return Err(DecompError::CheckFailed {
                reason: format!("the union op `{}` reads a later op", e.op.name),
            });
        }
        b.try_add(e.op, &inputs[u])?;
        membership.push(e.member);
        origin.push(e.origin);
    }
    Ok((b.finish(), membership, origin))
}

/// The union's regions: name, original ops, each mode's union ops and candidates.
fn union_regions(
    graph: &Graph,
    candidates: &[Candidate],
    regions: &Regions,
    modes: &Modes,
    membership: &[Option<(usize, u128)>],
) -> Vec<UnionRegion> {
    let mut out: Vec<UnionRegion> = modes
        .sets
        .iter()
        .enumerate()
        .map(|(r, sets)| UnionRegion {
            name: graph
                .op(candidates[sets[0][0]].context.collective)
                .name
                .clone(),
            ops: regions.ops[r].clone(),
            modes: vec![Vec::new(); sets.len() + 1],
            candidates: std::iter::once(Vec::new())
                .chain(sets.iter().cloned())
                .collect(),
        })
        .collect();
    for (u, m) in membership.iter().enumerate() {
        if let Some((r, set)) = *m {
            for (mode, ops) in out[r].modes.iter_mut().enumerate() {
                if set >> mode & 1 == 1 {
                    ops.push(OpId(u));
                }
            }
        }
    }
    out
}

/// Options of [`solve_joint`].
#[derive(Clone, Debug)]
pub struct JointSolveConfig {
    /// The windows of the joint solve.
    pub windows: concerto_rcpsp::joint::JointConfig,
    /// The limits of the joint windows, all of them together: a wall-clock limit, or a work
    /// budget for a deterministic result ([`concerto_rcpsp::Limits::work_limit`]).
    pub limits: concerto_rcpsp::Limits,
}

/// The starting point of [`solve_joint`]: a mode choice of the union, the graph of that
/// choice ([`Union::graph_of`]) and a schedule of that graph's lowering (for example the
/// contention-free timeline of its best plan, [`concerto_graph::lower::schedule_of`]).
#[derive(Clone, Debug)]
pub struct JointStart {
    /// One mode per region.
    pub modes: Vec<usize>,
    /// Start time of each op of the graph of `modes`, in that graph's op order (ns).
    pub starts: Vec<concerto_rcpsp::Time>,
}

/// What [`solve_joint`] found.
#[derive(Clone, Debug)]
pub struct JointSolved {
    /// The mode chosen in each region (0: not split).
    pub modes: Vec<usize>,
    /// The graph of that choice (passed the union's construction, equal to applying the
    /// chosen rewrites one after the other).
    pub graph: Graph,
    /// The joint solution's plan of [`JointSolved::graph`] (from its start times): a plan
    /// for the scheduler to start from or keep.
    pub plan: concerto_graph::StreamPlan,
    /// The windows' report (contention-free makespans of the lowered problem).
    pub report: concerto_rcpsp::joint::JointReport,
    /// Candidates applied: (region name, candidate label).
    pub chosen: Vec<(String, String)>,
}

impl Union {
    /// The mode of each region that applies exactly the candidates of `start` (indices into
    /// [`union`]'s list) found in it; 0 (unchanged) where none of them is, or where the
    /// region has no mode with exactly that set.
    pub fn modes_of(&self, start: &[usize]) -> Vec<usize> {
        self.regions
            .iter()
            .map(|region| {
                let mut mine: Vec<usize> = start
                    .iter()
                    .copied()
                    .filter(|c| region.candidates.iter().flatten().any(|x| x == c))
                    .collect();
                mine.sort_unstable();
                region
                    .candidates
                    .iter()
                    .position(|set| *set == mine)
                    .unwrap_or(0)
            })
            .collect()
    }
}

/// Joint decomposition and scheduling of a union graph (see the module docs): the union
/// lowered to a modal RCPSP with `hardware`'s durations, started from `start`, improved
/// window by window with `solver` deciding each region's mode together with the order around
/// it ([`concerto_rcpsp::joint::improve`]). Returns the modes, their graph and the joint
/// solution's plan; scheduling that graph (with the plan as a hint) is the caller's, so this
/// function takes no scheduler.
///
/// Cost: lowering the union, then the windows within `config.limits`.
pub fn solve_joint(
    u: &Union,
    candidates: &[Candidate],
    hardware: &concerto_graph::Hardware,
    start: &JointStart,
    solver: &dyn concerto_rcpsp::ModalSolver,
    config: &JointSolveConfig,
) -> Result<JointSolved, DecompError> {
    use concerto_graph::lower::lower;
    use concerto_rcpsp::{ActivityId, ModalProblem, ModalSolution, Region};
    let durations = hardware.durations(&u.graph);
    let lowered = lower(&u.graph, &durations)?;
    let regions: Vec<Region> = u
        .regions
        .iter()
        .map(|r| Region {
            name: r.name.clone(),
            modes: r
                .modes
                .iter()
                .map(|m| m.iter().map(|o| ActivityId(o.0)).collect())
                .collect(),
        })
        .collect();
    let modal = ModalProblem::new(lowered.problem, regions)?;
    let (g0, kept0) = u.graph_of(&start.modes)?;
    if start.starts.len() != g0.len() {
        return Err(DecompError::InvalidContext {
            reason: format!(
                "the joint start has {} start times for a graph of {} ops",
                start.starts.len(),
                g0.len()
            ),
        });
    }
    let mut starts = vec![0; u.graph.len()];
    for (i, o) in kept0.iter().enumerate() {
        starts[o.0] = start.starts[i];
    }
    let start_solution = ModalSolution {
        modes: start.modes.clone(),
        starts,
    };
    let report = concerto_rcpsp::joint::improve(
        &modal,
        &start_solution,
        solver,
        &config.windows,
        &config.limits,
    )?;
    let modes = report.solution.modes.clone();
    let (g1, kept1) = u.graph_of(&modes)?;
    let starts1: Vec<u64> = kept1
        .iter()
        .map(|o| report.solution.starts[o.0].max(0) as u64)
        .collect();
    let plan = concerto_graph::StreamPlan::from_starts(&g1, &starts1)?;
    let chosen = modes
        .iter()
        .enumerate()
        .flat_map(|(r, &m)| u.regions[r].candidates[m].iter().map(move |&c| (r, c)))
        .map(|(r, c)| (u.regions[r].name.clone(), candidates[c].label.clone()))
        .collect();
    Ok(JointSolved {
        modes,
        graph: g1,
        plan,
        report,
        chosen,
    })
}
