//! Stream plans: the FIFO order of ops on each stream and the cross-stream waits.
//!
//! This is what a framework hands to a GPU: one CUDA stream for compute, one per
//! communication channel (one channel per link class present, see [`Stream`]), ops launched in
//! FIFO order on their stream, and an event wait wherever an op needs a result from another
//! stream. Same-stream dependencies need no wait: FIFO order implies them.
//!
//! [`StreamPlan::new`] computes the waits a set of FIFO orders needs and no more: for a
//! consumer `c` on stream `S` and its producers on stream `T`, one wait on the producer that
//! comes last in `T`'s order, and none at all when an earlier op of `S` already waited for an
//! op at or after it in `T` (FIFO on both streams then implies the dependency). Cost:
//! O((ops + dependencies) * streams).
//!
//! [`StreamPlan::validate`] checks a plan (for example one read from a file): every op once,
//! on its stream; every dependency implied by FIFO order and the waits; and no cycle among FIFO
//! edges and waits, which would hang a GPU ([`GraphError::Deadlock`] names the cycle).
//!
//! # The plan file
//!
//! [`StreamPlan::to_json`] writes ops by name, and names the graph the plan was made for by
//! its name and its [`Graph::fingerprint`] (16 hex digits):
//!
//! ```json
//! {"format": "concerto-plan", "version": 1, "graph": "gpt", "graph_fingerprint": "31beaf3a84610b86",
//!  "streams": [{"stream": "compute", "ops": ["fc", "add"]}, {"stream": "comm.intra-node", "ops": ["ar"]}],
//!  "waits": [["fc", "ar"], ["ar", "add"]]}
//! ```
//!
//! [`StreamPlan::from_json`] refuses a plan whose fingerprint is not the graph's, naming both
//! graphs and both fingerprints: a plan made for another graph may name the same ops and
//! still be wrong for this one. A plan file without `graph_fingerprint` (written before it
//! existed) is still read: the check is skipped, and only the validation against the graph
//! remains.
//!
//! With the `serde` feature, [`Stream`] serialises as its name (`compute`,
//! `comm.intra-node`) and [`StreamPlan`] as its fields (ops by id): a form for embedding a
//! plan in other serde data next to its graph; the plan file above is the one that names ops.

use serde::{Deserialize, Serialize};

use crate::error::GraphError;
use crate::ir::{Graph, LinkClass, Op, OpId};

/// A GPU stream of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(into = "String", try_from = "String")
)]
pub enum Stream {
    /// The compute stream.
    Compute,
    /// The communication channel of a link class.
    Comm(LinkClass),
    /// A further compute stream (lane `n >= 1`, [`crate::Op::lane`]): graphs from profiler
    /// traces whose program used side streams.
    ComputeLane(u16),
    /// A further channel of a link class (lane `n >= 1`): a second NCCL communicator.
    CommLane(LinkClass, u16),
}

impl Stream {
    /// The stream an op runs on: its kind's stream, on its lane.
    pub fn of(op: &Op) -> Stream {
        match (op.link(), op.lane) {
            (None, 0) => Stream::Compute,
            (None, n) => Stream::ComputeLane(n),
            (Some(l), 0) => Stream::Comm(l),
            (Some(l), n) => Stream::CommLane(l, n),
        }
    }

    /// Whether it is a communication channel (collectives run on it, and compute is slowed
    /// while it runs one).
    pub fn is_comm(self) -> bool {
        matches!(self, Stream::Comm(_) | Stream::CommLane(..))
    }

    /// `compute`, `comm.intra-node` or `comm.inter-node`; a further lane adds `.n`
    /// (`compute.1`, `comm.intra-node.2`).
    pub fn name(self) -> String {
        match self {
            Stream::Compute => "compute".to_string(),
            Stream::Comm(l) => format!("comm.{}", l.as_str()),
            Stream::ComputeLane(n) => format!("compute.{n}"),
            Stream::CommLane(l, n) => format!("comm.{}.{n}", l.as_str()),
        }
    }

    /// The inverse of [`Stream::name`].
    pub fn parse(name: &str) -> Option<Stream> {
        let base = |b: &str| match b {
            "compute" => Some(Stream::Compute),
            "comm.intra-node" => Some(Stream::Comm(LinkClass::IntraNode)),
            "comm.inter-node" => Some(Stream::Comm(LinkClass::InterNode)),
            _ => None,
        };
        if let Some(s) = base(name) {
            return Some(s);
        }
        let (b, n) = name.rsplit_once('.')?;
        let n: u16 = n.parse().ok().filter(|&n| n > 0)?;
        if n.to_string() != name[b.len() + 1..] {
            return None;
        }
        match base(b)? {
            Stream::Compute => Some(Stream::ComputeLane(n)),
            Stream::Comm(l) => Some(Stream::CommLane(l, n)),
            _ => None,
        }
    }

    /// The streams a graph uses: compute, its further lanes, then one channel per link class
    /// present and their further lanes.
    pub fn of_graph(graph: &Graph) -> Vec<Stream> {
        let mut v = vec![Stream::Compute];
        let mut rest: Vec<Stream> = graph
            .ops()
            .filter(|op| op.lane != 0)
            .map(Stream::of)
            .collect();
        rest.sort_unstable_by_key(|s| (s.is_comm(), *s));
        rest.dedup();
        let (lanes, comm_lanes): (Vec<Stream>, Vec<Stream>) =
            rest.into_iter().partition(|s| !s.is_comm());
        v.extend(lanes);
        v.extend(graph.link_classes().into_iter().map(Stream::Comm));
        v.extend(comm_lanes);
        v
    }
}

impl From<Stream> for String {
    /// [`Stream::name`].
    fn from(s: Stream) -> String {
        s.name()
    }
}

impl TryFrom<String> for Stream {
    type Error = GraphError;

    /// [`Stream::parse`]; [`GraphError::InvalidPlan`] names an unknown stream.
    fn try_from(name: String) -> Result<Stream, GraphError> {
        Stream::parse(&name).ok_or_else(|| GraphError::InvalidPlan {
            reason: format!("unknown stream `{name}`"),
        })
    }
}

/// FIFO orders per stream and the cross-stream waits (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct StreamPlan {
    /// Each stream with its ops in launch order.
    pub streams: Vec<(Stream, Vec<OpId>)>,
    /// `(producer, consumer)`: the consumer's stream waits for the producer's event before
    /// launching the consumer.
    pub waits: Vec<(OpId, OpId)>,
}

/// Position of every op in its stream.
struct Positions {
    stream: Vec<usize>,
    index: Vec<usize>,
}

impl StreamPlan {
    /// The plan with the given FIFO orders and the waits they need (see the module docs).
    /// Errors when an op is missing, repeated or on the wrong stream, or when the orders
    /// deadlock.
    pub fn new(graph: &Graph, streams: Vec<(Stream, Vec<OpId>)>) -> Result<StreamPlan, GraphError> {
        let pos = positions(graph, &streams)?;
        let mut waits = Vec::new();
        for (s, (_, order)) in streams.iter().enumerate() {
            // synced[t]: the latest position of stream t some earlier op of s waited for.
            let mut synced: Vec<Option<usize>> = vec![None; streams.len()];
            for &c in order {
                let mut need: Vec<Option<OpId>> = vec![None; streams.len()];
                for &p in graph.predecessors(c) {
                    let t = pos.stream[p.0];
                    if t == s {
                        continue;
                    }
                    if need[t].is_none_or(|q| pos.index[q.0] < pos.index[p.0]) {
                        need[t] = Some(p);
                    }
                }
                for (t, p) in need.into_iter().enumerate() {
                    if let Some(p) = p {
                        if synced[t].is_none_or(|i| i < pos.index[p.0]) {
                            synced[t] = Some(pos.index[p.0]);
                            waits.push((p, c));
                        }
                    }
                }
            }
        }
        let plan = StreamPlan { streams, waits };
        plan.validate(graph)?;
        Ok(plan)
    }

    /// The plan whose FIFO orders follow `order` (a permutation of the graph's ops): each
    /// stream gets the ops of `order` that run on it, in that order.
    pub fn from_order(graph: &Graph, order: &[OpId]) -> Result<StreamPlan, GraphError> {
        let mut streams: Vec<(Stream, Vec<OpId>)> = Stream::of_graph(graph)
            .into_iter()
            .map(|s| (s, Vec::new()))
            .collect();
        for &o in order {
            if o.0 >= graph.len() {
                return Err(GraphError::InvalidPlan {
                    reason: format!("op #{} is not in the graph ({} ops)", o.0, graph.len()),
                });
            }
            let s = Stream::of(graph.op(o));
            let slot = streams
                .iter_mut()
                .find(|(t, _)| *t == s)
                .expect("stream of the graph");
            slot.1.push(o);
        }
        StreamPlan::new(graph, streams)
    }

    /// The plan that launches the ops of each stream by start time (ties by program order),
    /// e.g. from a solver's schedule.
    pub fn from_starts(graph: &Graph, starts: &[u64]) -> Result<StreamPlan, GraphError> {
        if starts.len() != graph.len() {
            return Err(GraphError::InvalidPlan {
                reason: format!("{} start times for {} ops", starts.len(), graph.len()),
            });
        }
        let mut order: Vec<OpId> = graph.ids().collect();
        order.sort_by_key(|o| (starts[o.0], o.0));
        StreamPlan::from_order(graph, &order)
    }

    /// The plan that runs a timed schedule (start and end per op, e.g. an exact contended
    /// model's) as timed: each stream launches its ops by start time (ties by program order)
    /// with the waits of [`StreamPlan::new`], and an op that neither its stream's previous op
    /// nor a dependency releases at its start also waits for an op of another stream that
    /// ends exactly then (the first by id), so the simulator does not launch it earlier (a
    /// collective held back to run beside less compute). When every start is 0, a release or
    /// some op's end, the simulated timeline is the schedule itself. O(ops log ops + ops *
    /// streams).
    ///
    /// Errors: a length other than the graph's, an end before its start, or the errors of
    /// [`StreamPlan::new`].
    pub fn from_timed(
        graph: &Graph,
        starts: &[u64],
        ends: &[u64],
    ) -> Result<StreamPlan, GraphError> {
        if ends.len() != graph.len() {
            return Err(GraphError::InvalidPlan {
                reason: format!("{} end times for {} ops", ends.len(), graph.len()),
            });
        }
        if let Some(o) = graph
            .ids()
            .find(|o| ends[o.0] < starts.get(o.0).copied().unwrap_or(0))
        {
            return Err(GraphError::InvalidPlan {
                reason: format!("op `{}` ends before it starts", graph.op(o).name),
            });
        }
        let mut plan = StreamPlan::from_starts(graph, starts)?;
        // The first op (by id) ending at each time, with its stream.
        let stream_of = |o: OpId| Stream::of(graph.op(o));
        let mut ending: std::collections::BTreeMap<u64, Vec<OpId>> = Default::default();
        for o in graph.ids().filter(|o| ends[o.0] > starts[o.0]) {
            ending.entry(ends[o.0]).or_default().push(o);
        }
        let mut extra = Vec::new();
        for (_, order) in &plan.streams {
            for (i, &o) in order.iter().enumerate() {
                let s = starts[o.0];
                let released = s == 0
                    || s <= graph.op(o).release_ns
                    || (i > 0 && ends[order[i - 1].0] == s)
                    || graph.predecessors(o).iter().any(|p| ends[p.0] == s);
                if released {
                    continue;
                }
                let by = ending
                    .get(&s)
                    .and_then(|ps| ps.iter().find(|&&p| stream_of(p) != stream_of(o)));
                if let Some(&p) = by {
                    extra.push((p, o));
                }
            }
        }
        plan.waits.extend(extra);
        plan.validate(graph)?;
        Ok(plan)
    }

    /// Program order: every stream follows the graph's op order.
    pub fn program_order(graph: &Graph) -> Result<StreamPlan, GraphError> {
        let order: Vec<OpId> = graph.ids().collect();
        StreamPlan::from_order(graph, &order)
    }

    /// Checks the plan against its graph (see the module docs).
    pub fn validate(&self, graph: &Graph) -> Result<(), GraphError> {
        let pos = positions(graph, &self.streams)?;
        let n = graph.len();
        let streams = self.streams.len();
        // The latest position of stream t that op c or an earlier op of c's stream waited for.
        // Flat: `waited[c * streams + t]`.
        let mut waited: Vec<Option<usize>> = vec![None; n * streams];
        for &(p, c) in &self.waits {
            for o in [p, c] {
                if o.0 >= n {
                    return Err(GraphError::InvalidPlan {
                        reason: format!("a wait names op #{}, not in the graph", o.0),
                    });
                }
            }
            let t = pos.stream[p.0];
            if t == pos.stream[c.0] {
                return Err(GraphError::InvalidPlan {
                    reason: format!(
                        "`{}` waits for `{}` on its own stream",
                        graph.op(c).name,
                        graph.op(p).name
                    ),
                });
            }
            let w = &mut waited[c.0 * streams + t];
            if w.is_none_or(|i| i < pos.index[p.0]) {
                *w = Some(pos.index[p.0]);
            }
        }
        for (_, order) in &self.streams {
            for k in 1..order.len() {
                let (a, b) = (order[k - 1].0 * streams, order[k].0 * streams);
                for t in 0..streams {
                    let p = waited[a + t];
                    if p > waited[b + t] {
                        waited[b + t] = p;
                    }
                }
            }
        }
        for (c, preds) in graph.ids().map(|c| (c, graph.predecessors(c))) {
            for &p in preds {
                let (t, s) = (pos.stream[p.0], pos.stream[c.0]);
                let ok = if t == s {
                    pos.index[p.0] < pos.index[c.0]
                } else {
                    waited[c.0 * streams + t].is_some_and(|i| i >= pos.index[p.0])
                };
                if !ok {
                    let why = if t == s {
                        "comes after it on their stream"
                    } else {
                        "has no wait that covers it"
                    };
                    // A same-stream inversion or an uncovered dependency: report a cycle when the
                    // orders and waits have one, as that is what a GPU would do with it.
                    self.find_cycle(graph)?;
                    return Err(GraphError::InvalidPlan {
                        reason: format!(
                            "`{}` reads `{}`, which {why}",
                            graph.op(c).name,
                            graph.op(p).name
                        ),
                    });
                }
            }
        }
        self.find_cycle(graph)
    }

    /// Kahn's algorithm over FIFO edges and waits; on a cycle, names it.
    fn find_cycle(&self, graph: &Graph) -> Result<(), GraphError> {
        let n = graph.len();
        // The edges as flat adjacency arrays (one allocation, not one per op: this runs on
        // every simulation).
        let edges = || {
            self.streams
                .iter()
                .flat_map(|(_, order)| order.windows(2).map(|w| (w[0].0, w[1].0)))
                .chain(self.waits.iter().map(|&(p, c)| (p.0, c.0)))
        };
        let mut at = vec![0usize; n + 1];
        for (p, _) in edges() {
            at[p + 1] += 1;
        }
        for v in 0..n {
            at[v + 1] += at[v];
        }
        let mut fill = at.clone();
        let mut to = vec![0usize; at[n]];
        for (p, c) in edges() {
            to[fill[p]] = c;
            fill[p] += 1;
        }
        let out = |v: usize| &to[at[v]..at[v + 1]];
        let mut indeg = vec![0usize; n];
        for &v in &to {
            indeg[v] += 1;
        }
        let mut stack: Vec<usize> = (0..n).filter(|&v| indeg[v] == 0).collect();
        let mut seen = 0;
        while let Some(v) = stack.pop() {
            seen += 1;
            for &w in out(v) {
                indeg[w] -= 1;
                if indeg[w] == 0 {
                    stack.push(w);
                }
            }
        }
        if seen == n {
            return Ok(());
        }
        // Walk backwards inside the remaining (cyclic) part until a node repeats.
        let mut pred: Vec<Option<usize>> = vec![None; n];
        for v in 0..n {
            for &w in out(v) {
                if indeg[w] > 0 && indeg[v] > 0 {
                    pred[w] = Some(v);
                }
            }
        }
        let start = (0..n)
            .find(|&v| indeg[v] > 0)
            .expect("a node left on a cycle");
        let mut visited = vec![false; n];
        let mut v = start;
        while !visited[v] {
            visited[v] = true;
            v = pred[v].expect("every node on a cycle has a predecessor on it");
        }
        let mut cycle = vec![v];
        let mut u = pred[v].expect("cycle");
        while u != v {
            cycle.push(u);
            u = pred[u].expect("cycle");
        }
        cycle.push(v);
        cycle.reverse();
        Err(GraphError::Deadlock {
            cycle: cycle
                .iter()
                .map(|&o| format!("`{}`", graph.op(OpId(o)).name))
                .collect::<Vec<_>>()
                .join(" -> "),
        })
    }

    /// The native JSON form: stream names with op names, waits as name pairs, and the graph's
    /// name and fingerprint (see the module docs).
    pub fn to_json(&self, graph: &Graph) -> String {
        let record = PlanRecord {
            format: PLAN_FORMAT.to_string(),
            version: 1,
            graph: graph.name().to_string(),
            graph_fingerprint: Some(format!("{:016x}", graph.fingerprint())),
            streams: self
                .streams
                .iter()
                .map(|(s, ops)| StreamRecord {
                    stream: s.name(),
                    ops: ops.iter().map(|o| graph.op(*o).name.clone()).collect(),
                })
                .collect(),
            waits: self
                .waits
                .iter()
                .map(|(p, c)| (graph.op(*p).name.clone(), graph.op(*c).name.clone()))
                .collect(),
        };
        serde_json::to_string_pretty(&record).expect("a plan always serialises")
    }

    /// Reads [`StreamPlan::to_json`]'s format for `graph` and validates it.
    ///
    /// Errors: [`GraphError::Json`] for malformed JSON; [`GraphError::InvalidPlan`] for
    /// another format or version, a `graph_fingerprint` that is not `graph`'s (naming both
    /// graphs and both fingerprints; a file without one skips this check, see the module
    /// docs), an op or stream the graph does not have, or a plan that fails
    /// [`StreamPlan::validate`].
    pub fn from_json(graph: &Graph, text: &str) -> Result<StreamPlan, GraphError> {
        let r: PlanRecord = serde_json::from_str(text).map_err(|e| GraphError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        if r.format != PLAN_FORMAT || r.version != 1 {
            return Err(GraphError::InvalidPlan {
                reason: format!(
                    "format `{}` version {} (expected `{PLAN_FORMAT}` version 1)",
                    r.format, r.version
                ),
            });
        }
        if let Some(written) = &r.graph_fingerprint {
            let ours = graph.fingerprint();
            let theirs = u64::from_str_radix(written, 16).map_err(|_| GraphError::InvalidPlan {
                reason: format!(
                    "graph_fingerprint `{written}` of the plan for graph `{}` is not 16 hex digits",
                    r.graph
                ),
            })?;
            if theirs != ours {
                return Err(GraphError::InvalidPlan {
                    reason: format!(
                        "the plan was made for graph `{}` (fingerprint {theirs:016x}), not for \
                         graph `{}` (fingerprint {ours:016x})",
                        r.graph,
                        graph.name()
                    ),
                });
            }
        }
        let find = |name: &str| {
            graph.find(name).ok_or_else(|| GraphError::InvalidPlan {
                reason: format!("op `{name}` is not in graph `{}`", graph.name()),
            })
        };
        let mut streams = Vec::new();
        for s in &r.streams {
            let stream = Stream::parse(&s.stream).ok_or_else(|| GraphError::InvalidPlan {
                reason: format!("unknown stream `{}`", s.stream),
            })?;
            let ops = s
                .ops
                .iter()
                .map(|n| find(n))
                .collect::<Result<Vec<_>, _>>()?;
            streams.push((stream, ops));
        }
        let waits = r
            .waits
            .iter()
            .map(|(p, c)| Ok((find(p)?, find(c)?)))
            .collect::<Result<Vec<_>, GraphError>>()?;
        let plan = StreamPlan { streams, waits };
        plan.validate(graph)?;
        Ok(plan)
    }
}

const PLAN_FORMAT: &str = "concerto-plan";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanRecord {
    format: String,
    version: u32,
    graph: String,
    /// [`Graph::fingerprint`] in 16 hex digits; absent in files written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    graph_fingerprint: Option<String>,
    streams: Vec<StreamRecord>,
    waits: Vec<(String, String)>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamRecord {
    stream: String,
    ops: Vec<String>,
}

fn positions(graph: &Graph, streams: &[(Stream, Vec<OpId>)]) -> Result<Positions, GraphError> {
    let n = graph.len();
    let mut stream = vec![usize::MAX; n];
    let mut index = vec![usize::MAX; n];
    for (s, (kind, order)) in streams.iter().enumerate() {
        if streams[..s].iter().any(|(k, _)| k == kind) {
            return Err(GraphError::InvalidPlan {
                reason: format!("stream `{}` appears twice", kind.name()),
            });
        }
        for (i, &o) in order.iter().enumerate() {
            if o.0 >= n {
                return Err(GraphError::InvalidPlan {
                    reason: format!("op #{} is not in the graph ({n} ops)", o.0),
                });
            }
            let op = graph.op(o);
            if stream[o.0] != usize::MAX {
                return Err(GraphError::InvalidPlan {
                    reason: format!("op `{}` is planned twice", op.name),
                });
            }
            if Stream::of(op) != *kind {
                return Err(GraphError::InvalidPlan {
                    reason: format!(
                        "op `{}` runs on `{}`, not `{}`",
                        op.name,
                        Stream::of(op).name(),
                        kind.name()
                    ),
                });
            }
            stream[o.0] = s;
            index[o.0] = i;
        }
    }
    if let Some(o) = stream.iter().position(|&s| s == usize::MAX) {
        return Err(GraphError::InvalidPlan {
            reason: format!("op `{}` is not planned", graph.op(OpId(o)).name),
        });
    }
    Ok(Positions { stream, index })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CollectiveKind, ComputeClass, GraphBuilder, LinkClass};

    /// `a`, `b` (compute) -> `ar` (all-reduce of `a`, or of `b` with `ar_of_b`) -> `add`.
    fn graph(name: &str, ar_of_b: bool) -> Graph {
        let mut g = GraphBuilder::new(name);
        let a = g.add(Op::compute("a", ComputeClass::Gemm, 10, 10), &[]);
        let b = g.add(Op::compute("b", ComputeClass::Gemm, 10, 10), &[]);
        let ar = g.add(
            Op::collective("ar", CollectiveKind::AllReduce, 64, 8, LinkClass::IntraNode),
            &[if ar_of_b { b } else { a }],
        );
        g.add(
            Op::compute("add", ComputeClass::Elementwise, 1, 1),
            &[ar, b],
        );
        g.finish()
    }

    #[test]
    fn a_timed_plan_holds_a_collective_back_to_the_end_that_explains_its_start() {
        // a -> b -> c2 (inter-node, long) -> d; a -> c1 (intra-node, short).
        let mut g = GraphBuilder::new("timed");
        let a = g.add(Op::compute("a", ComputeClass::Gemm, 1, 1), &[]);
        let b = g.add(Op::compute("b", ComputeClass::Gemm, 1, 1), &[a]);
        let all_reduce =
            |name: &str, link| Op::collective(name, CollectiveKind::AllReduce, 64, 8, link);
        let c1 = g.add(all_reduce("c1", LinkClass::IntraNode), &[a]);
        let c2 = g.add(all_reduce("c2", LinkClass::InterNode), &[b]);
        g.add(Op::compute("d", ComputeClass::Gemm, 1, 1), &[c2]);
        let g = g.finish();
        let d = [2, 4, 2, 10, 1];
        // c1 held back until b ends at 6, beside c2 rather than beside b.
        let starts = [0, 2, 6, 6, 16];
        let ends = [2, 6, 8, 16, 17];
        let plan = StreamPlan::from_timed(&g, &starts, &ends).unwrap();
        assert!(plan.waits.contains(&(b, c1)), "{:?}", plan.waits);
        let t = crate::simulate::simulate(&g, &plan, &d, 2.0).unwrap();
        assert_eq!((t.start, t.makespan), (starts.to_vec(), 17));
        // The orders alone launch c1 at 2, beside b, which then ends at 7.
        let early = StreamPlan::from_starts(&g, &starts).unwrap();
        let t = crate::simulate::simulate(&g, &early, &d, 2.0).unwrap();
        assert_eq!((t.start[c1.0], t.end[b.0], t.makespan), (2, 7, 18));
        let e = StreamPlan::from_timed(&g, &starts, &ends[..4]).unwrap_err();
        assert!(e.to_string().contains("4 end times for 5 ops"), "{e}");
        let e = StreamPlan::from_timed(&g, &starts, &[2, 1, 8, 16, 17]).unwrap_err();
        assert!(e.to_string().contains("`b` ends before it starts"), "{e}");
    }

    #[test]
    fn a_plan_file_names_its_graph_and_is_refused_by_another() {
        let g = graph("first", false);
        let plan = StreamPlan::program_order(&g).unwrap();
        let text = plan.to_json(&g);
        let fp = format!("{:016x}", g.fingerprint());
        assert!(text.contains("\"graph\": \"first\""), "{text}");
        assert!(
            text.contains(&format!("\"graph_fingerprint\": \"{fp}\"")),
            "{text}"
        );
        assert_eq!(StreamPlan::from_json(&g, &text).unwrap(), plan);
        // The same ops and names, one dependency moved: the program-order plan would still
        // validate against it, but it was not made for it.
        let other = graph("second", true);
        assert!(StreamPlan::program_order(&other).is_ok());
        let e = StreamPlan::from_json(&other, &text)
            .unwrap_err()
            .to_string();
        let ofp = format!("{:016x}", other.fingerprint());
        assert_ne!(fp, ofp);
        for part in ["`first`", "`second`", fp.as_str(), ofp.as_str()] {
            assert!(e.contains(part), "{part} missing from: {e}");
        }
    }

    #[test]
    fn plans_without_a_fingerprint_are_still_read_and_bad_ones_are_named() {
        let g = graph("first", false);
        let plan = StreamPlan::program_order(&g).unwrap();
        let text = plan.to_json(&g);
        let line = text
            .lines()
            .find(|l| l.contains("graph_fingerprint"))
            .expect("written");
        // An older file: no fingerprint, read against any graph with these ops.
        let old = text.replace(&format!("{line}\n"), "");
        assert!(!old.contains("graph_fingerprint"));
        assert_eq!(StreamPlan::from_json(&g, &old).unwrap(), plan);
        // A malformed one.
        let fp = format!("{:016x}", g.fingerprint());
        let bad = text.replace(&fp, "not-hex");
        let e = StreamPlan::from_json(&g, &bad).unwrap_err().to_string();
        assert!(e.contains("`not-hex`") && e.contains("`first`"), "{e}");
    }

    #[test]
    fn streams_convert_to_and_from_their_names() {
        for s in [
            Stream::Compute,
            Stream::Comm(LinkClass::IntraNode),
            Stream::Comm(LinkClass::InterNode),
        ] {
            assert_eq!(Stream::try_from(String::from(s)).unwrap(), s);
        }
        let e = Stream::try_from("comm.nvlink".to_string()).unwrap_err();
        assert!(e.to_string().contains("`comm.nvlink`"), "{e}");
    }
}
