//! The event simulator: a stream plan and op durations in, a timeline out.
//!
//! Semantics (what a GPU does with a plan): each stream launches its ops in FIFO order; an op
//! starts when the previous op of its stream has finished, every op it waits for (the
//! plan's cross-stream waits) has finished, and its release time has come ([`Op::release_ns`]:
//! a kernel of a profiler trace starts no earlier than its CPU launch). While at least one collective runs, compute ops
//! progress `contention` times slower (NCCL kernels take SMs and memory bandwidth; see
//! [`Hardware::contention`](crate::hardware::Hardware)); collectives are not slowed.
//!
//! Time is integer nanoseconds. Work is tracked in units of 1/1000 ns at full speed, so a
//! slowed compute op progresses `round(1000 / contention)` units per ns, and an op's end is
//! rounded up to the next ns. The simulation is exact for that discretisation and
//! deterministic. Cost: O(ops * streams) events, each O(streams).
//!
//! [`Op::release_ns`]: crate::ir::Op::release_ns

use crate::error::GraphError;
use crate::ir::{Graph, OpId};
use crate::plan::StreamPlan;

/// Work units per ns at full speed.
const UNITS: u64 = 1000;

/// When each op of a simulated plan ran.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Timeline {
    /// Start of each op (ns), indexed by [`OpId`].
    pub start: Vec<u64>,
    /// End of each op (ns), indexed by [`OpId`].
    pub end: Vec<u64>,
    /// The stream each op ran on: an index into [`Timeline::streams`].
    pub stream: Vec<usize>,
    /// Stream names (`compute`, `comm.intra-node`, `comm.inter-node`), in plan order.
    pub streams: Vec<String>,
    /// Latest end (ns).
    pub makespan: u64,
}

impl Timeline {
    /// The op's duration in this timeline (it includes any contention slowdown).
    pub fn duration(&self, op: OpId) -> u64 {
        self.end[op.0] - self.start[op.0]
    }

    /// Ops of stream `s`, by start time.
    pub fn ops_on(&self, s: usize) -> Vec<OpId> {
        let mut v: Vec<OpId> = (0..self.start.len())
            .filter(|&i| self.stream[i] == s)
            .map(OpId)
            .collect();
        v.sort_by_key(|o| (self.start[o.0], o.0));
        v
    }

    /// Exposed communication: total time during which some collective runs and no compute op
    /// does (the communication the schedule failed to hide). O(ops log ops).
    pub fn exposed_comm_ns(&self, graph: &Graph) -> u64 {
        self.exposed_comm(graph).iter().map(|(a, b)| b - a).sum()
    }

    /// The sorted, disjoint intervals during which some collective runs and no compute op
    /// does: what [`Timeline::exposed_comm_ns`] sums. O(ops log ops).
    pub fn exposed_comm(&self, graph: &Graph) -> Vec<(u64, u64)> {
        let comm = union(graph.ids().filter(|o| graph.op(*o).is_collective()), self);
        let compute = self.compute_busy(graph);
        let mut out = Vec::new();
        for (a, b) in comm {
            // The gaps of `compute` inside [a, b).
            let mut at = a;
            let first = compute.partition_point(|iv| iv.1 <= a);
            for &(c, d) in compute[first..].iter().take_while(|iv| iv.0 < b) {
                if c > at {
                    out.push((at, c));
                }
                at = at.max(d);
            }
            if at < b {
                out.push((at, b));
            }
        }
        out
    }

    /// The sorted, merged intervals during which some compute op runs. O(ops log ops).
    pub fn compute_busy(&self, graph: &Graph) -> Vec<(u64, u64)> {
        union(graph.ids().filter(|o| !graph.op(*o).is_collective()), self)
    }

    /// Nanoseconds of the collective `op`'s run with no compute op beside it, given
    /// [`Timeline::compute_busy`]. O(log ops + overlapping intervals).
    pub fn exposed_ns(&self, op: OpId, compute_busy: &[(u64, u64)]) -> u64 {
        let (a, b) = (self.start[op.0], self.end[op.0]);
        (b - a) - covered(compute_busy, a, b)
    }

    /// Peak memory of the timeline ([`crate::memory::profile`]: resident bytes, live tensors
    /// from their producer's start to their last reader's end, collective buffers, and the
    /// step's outputs kept to its end). O(ops log ops).
    ///
    /// Panics if the timeline is not one of `graph`'s (use [`crate::memory::profile`] for
    /// untrusted input).
    pub fn peak_memory_bytes(&self, graph: &Graph) -> u64 {
        crate::memory::profile(graph, self)
            .expect("a timeline of this graph")
            .peak_bytes
    }
}

/// Length of `[a, b)` covered by sorted, disjoint `intervals`.
fn covered(intervals: &[(u64, u64)], a: u64, b: u64) -> u64 {
    let first = intervals.partition_point(|iv| iv.1 <= a);
    intervals[first..]
        .iter()
        .take_while(|iv| iv.0 < b)
        .map(|iv| iv.1.min(b) - iv.0.max(a))
        .sum()
}

/// Sorted, merged busy intervals of some ops.
fn union(ops: impl Iterator<Item = OpId>, t: &Timeline) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = ops
        .map(|o| (t.start[o.0], t.end[o.0]))
        .filter(|(a, b)| b > a)
        .collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Simulates `plan` (which must be valid for `graph`) with one duration per op (ns, at full
/// speed) and the compute slowdown `contention` (>= 1) while a collective runs. See the
/// module docs.
///
/// Errors: [`GraphError::InvalidPlan`] for a plan not of `graph`, a wrong number of durations
/// or a contention below 1; [`GraphError::Deadlock`]; [`GraphError::Overflow`] naming the op
/// whose duration takes the step past [`crate::horizon::MAX_HORIZON_NS`].
pub fn simulate(
    graph: &Graph,
    plan: &StreamPlan,
    durations: &[u64],
    contention: f64,
) -> Result<Timeline, GraphError> {
    // Every duration times UNITS, and every time reached, fits a u64 within the horizon.
    crate::horizon::horizon(graph, durations)?;
    if !(contention.is_finite() && contention >= 1.0) {
        return Err(GraphError::InvalidPlan {
            reason: format!(
                "the contention factor must be finite and at least 1, not {contention}"
            ),
        });
    }
    plan.validate(graph)?;
    let slowed = ((UNITS as f64 / contention).round() as u64).max(1);
    let n = graph.len();
    let ns = plan.streams.len();
    let mut waits_of: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(p, c) in &plan.waits {
        waits_of[c.0].push(p.0);
    }
    let is_comm: Vec<bool> = plan.streams.iter().map(|(s, _)| s.is_comm()).collect();
    let release: Vec<u64> = graph.ops().map(|op| op.release_ns).collect();
    let mut stream_of = vec![0usize; n];
    for (s, (_, order)) in plan.streams.iter().enumerate() {
        for o in order {
            stream_of[o.0] = s;
        }
    }
    let mut start = vec![0u64; n];
    let mut end = vec![0u64; n];
    let mut done = vec![false; n];
    let mut next = vec![0usize; ns]; // next FIFO index per stream
    let mut running: Vec<Option<(usize, u64)>> = vec![None; ns]; // (op, remaining units)
    let mut now = 0u64;
    let mut finished = 0usize;
    loop {
        // Launch every op whose stream is free and whose waits are satisfied.
        for s in 0..ns {
            if running[s].is_some() {
                continue;
            }
            let order = &plan.streams[s].1;
            if let Some(&o) = order.get(next[s]) {
                if release[o.0] <= now && waits_of[o.0].iter().all(|&p| done[p]) {
                    start[o.0] = now;
                    running[s] = Some((o.0, durations[o.0] * UNITS));
                    next[s] += 1;
                }
            }
        }
        if finished == n {
            break;
        }
        let comm_active = (0..ns).any(|s| is_comm[s] && running[s].is_some());
        let is_comm = &is_comm;
        let rate = move |s: usize| {
            if !is_comm[s] && comm_active {
                slowed
            } else {
                UNITS
            }
        };
        // The next completion, or the next release of a stream's next op whose waits are met.
        let completion = (0..ns).filter_map(|s| running[s].map(|(_, rem)| rem.div_ceil(rate(s))));
        let released = (0..ns)
            .filter(|&s| running[s].is_none())
            .filter_map(|s| plan.streams[s].1.get(next[s]))
            .filter(|o| release[o.0] > now && waits_of[o.0].iter().all(|&p| done[p]))
            .map(|o| release[o.0] - now);
        let Some(dt) = completion.chain(released).min() else {
            return Err(GraphError::Deadlock {
                cycle: "no stream can launch its next op (waits never satisfied)".into(),
            });
        };
        // Within the horizon a slowed op takes at most 1000 times its duration: `now` fits.
        now = now.checked_add(dt).ok_or_else(|| {
            let o = running.iter().flatten().map(|r| r.0).next().unwrap_or(0);
            GraphError::Overflow {
                op: graph.op(OpId(o)).name.clone(),
                what: "its end, slowed by contention,".into(),
                limit_ns: crate::horizon::MAX_HORIZON_NS,
            }
        })?;
        for (s, slot) in running.iter_mut().enumerate() {
            if let Some((o, rem)) = *slot {
                // dt * rate is at most rem + rate - 1 for the op that ends first, less than the
                // remaining work rounded up for the others: it saturates only past the end.
                let left = rem.saturating_sub(dt.saturating_mul(rate(s)));
                if left == 0 {
                    end[o] = now;
                    done[o] = true;
                    finished += 1;
                    *slot = None;
                } else {
                    *slot = Some((o, left));
                }
            }
        }
    }
    let makespan = end.iter().copied().max().unwrap_or(0);
    Ok(Timeline {
        start,
        end,
        stream: stream_of,
        streams: plan.streams.iter().map(|(s, _)| s.name()).collect(),
        makespan,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CollectiveKind, ComputeClass, GraphBuilder, LinkClass, Op};
    use crate::plan::Stream;

    fn compute(name: &str) -> Op {
        Op::compute(name, ComputeClass::Other, 0, 0)
    }

    fn ar(name: &str) -> Op {
        Op::collective(name, CollectiveKind::AllReduce, 1, 8, LinkClass::IntraNode)
    }

    /// bwd1 -> ar1, bwd1 -> bwd0 -> ar0: the all-reduce of layer 1 hides behind bwd0.
    fn two_layers() -> Graph {
        let mut b = GraphBuilder::new("two");
        let bwd1 = b.add(compute("bwd1"), &[]);
        let ar1 = b.add(ar("ar1"), &[bwd1]);
        let bwd0 = b.add(compute("bwd0"), &[bwd1]);
        let _ar0 = b.add(ar("ar0"), &[bwd0]);
        let _opt = b.add(compute("opt1"), &[ar1]);
        b.finish()
    }

    #[test]
    fn known_timeline_without_contention() {
        let g = two_layers();
        let plan = StreamPlan::program_order(&g).unwrap();
        // durations: bwd1 3, ar1 4, bwd0 3, ar0 2, opt1 1
        let t = simulate(&g, &plan, &[3, 4, 3, 2, 1], 1.0).unwrap();
        assert_eq!(t.start, vec![0, 3, 3, 7, 7]);
        assert_eq!(t.end, vec![3, 7, 6, 9, 8]);
        assert_eq!(t.makespan, 9);
        // Comm busy [3,9), compute busy [0,6) and [7,8): exposed [6,7) and [8,9).
        assert_eq!(t.exposed_comm_ns(&g), 2);
        assert_eq!(plan.waits.len(), 3);
    }

    #[test]
    fn contention_slows_compute_while_a_collective_runs() {
        let g = two_layers();
        let plan = StreamPlan::program_order(&g).unwrap();
        // bwd0 (3 ns) runs entirely beside ar1: 3 * 2 = 6 ns at factor 2.
        let t = simulate(&g, &plan, &[3, 4, 3, 2, 1], 2.0).unwrap();
        assert_eq!(t.start[2], 3);
        // ar1 runs [3,7); bwd0 progresses 0.5/ns for 4 ns = 2 units, then 1 left at full speed.
        assert_eq!(t.end[2], 8);
        assert_eq!(t.end[1], 7);
        // opt1 waits for ar1 (7) and bwd0 on its stream (8); ar0 [8,10) slows opt1 to 2 ns.
        assert_eq!((t.start[4], t.end[4]), (8, 10));
        assert_eq!(t.makespan, 10);
    }

    #[test]
    fn release_times_hold_ops_back() {
        // a (released at 10) -> b on compute; c on a second compute lane, released at 4.
        let mut b = GraphBuilder::new("rel");
        let a = b.add(compute("a").released_at(10), &[]);
        let _b = b.add(compute("b").released_at(12), &[a]);
        let _c = b.add(compute("c").released_at(4).on_lane(1), &[]);
        let g = b.finish();
        assert_eq!(
            Stream::of_graph(&g),
            vec![Stream::Compute, Stream::ComputeLane(1)]
        );
        let plan = StreamPlan::program_order(&g).unwrap();
        let t = simulate(&g, &plan, &[3, 2, 5], 1.0).unwrap();
        // a waits for its release (10), b for a's end (13 > 12); c runs beside them from 4.
        assert_eq!(t.start, vec![10, 13, 4]);
        assert_eq!(t.end, vec![13, 15, 9]);
        assert_eq!(t.makespan, 15);
        assert_eq!(t.streams, vec!["compute", "compute.1"]);
        // Every simulated timeline is a schedule of the lowered problem (release dates
        // included) that the independent checker accepts.
        let lowered = crate::lower::lower(&g, &[3, 2, 5]).unwrap();
        concerto_rcpsp::check(&lowered.problem, &crate::lower::schedule_of(&t)).unwrap();
        // ... and the lower bound counts the release times.
        assert_eq!(crate::lower::lower_bound(&g, &[3, 2, 5]), 15);
    }

    #[test]
    fn a_lane_comm_stream_is_a_channel() {
        let mut b = GraphBuilder::new("lanes");
        let x = b.add(compute("x"), &[]);
        let _y = b.add(ar("y").on_lane(2), &[x]);
        let _z = b.add(compute("z"), &[x]);
        let g = b.finish();
        let plan = StreamPlan::program_order(&g).unwrap();
        let names: Vec<String> = plan.streams.iter().map(|(s, _)| s.name()).collect();
        assert!(
            names.contains(&"comm.intra-node.2".to_string()),
            "{names:?}"
        );
        assert_eq!(
            Stream::parse("comm.intra-node.2"),
            Some(Stream::CommLane(LinkClass::IntraNode, 2))
        );
        assert_eq!(Stream::parse("compute.7"), Some(Stream::ComputeLane(7)));
        assert_eq!(Stream::parse("compute.0"), None);
        assert_eq!(Stream::parse("compute.07"), None);
        // z (compute) is slowed while y (on the lane channel) runs.
        let t = simulate(&g, &plan, &[1, 4, 2], 2.0).unwrap();
        assert_eq!((t.start[2], t.end[2]), (1, 5));
        let back = StreamPlan::from_json(&g, &plan.to_json(&g)).unwrap();
        assert_eq!(back, plan);
    }

    #[test]
    fn a_duration_past_the_horizon_is_an_error_naming_its_op() {
        let g = two_layers();
        let plan = StreamPlan::program_order(&g).unwrap();
        let e = simulate(&g, &plan, &[3, u64::MAX / 2, 3, 2, 1], 2.0).unwrap_err();
        assert!(
            matches!(e, GraphError::Overflow { ref op, .. } if op == "ar1"),
            "{e}"
        );
        // At the horizon itself, with the strongest slowdown, the clock still fits.
        let d = crate::horizon::MAX_HORIZON_NS / 5;
        let t = simulate(&g, &plan, &[d; 5], 1e9).unwrap();
        assert!(t.makespan >= 3 * d, "{}", t.makespan);
        // The list scheduler and the lhs baseline check the same horizon.
        let e = crate::baselines::lhs(&g, &[1, 1, u64::MAX / 2, 1, 1]).unwrap_err();
        assert!(e.to_string().contains("op `bwd0`"), "{e}");
        let e = crate::list::list_schedule(
            &g,
            &[1, 1, 1, 1, u64::MAX],
            &[0; 5],
            crate::list::Direction::Forward,
            1.0,
        )
        .unwrap_err();
        assert!(e.to_string().contains("op `opt1`"), "{e}");
        let e = crate::lower::lower(&g, &[u64::MAX; 5]).unwrap_err();
        assert!(e.to_string().contains("op `bwd1`"), "{e}");
    }

    #[test]
    fn plan_order_changes_the_timeline() {
        let g = two_layers();
        // compute: bwd1, bwd0, opt1 is program order; try opt1 before bwd0: legal, longer.
        let plan = StreamPlan::new(
            &g,
            vec![
                (Stream::Compute, vec![OpId(0), OpId(4), OpId(2)]),
                (Stream::Comm(LinkClass::IntraNode), vec![OpId(1), OpId(3)]),
            ],
        )
        .unwrap();
        let t = simulate(&g, &plan, &[3, 4, 3, 2, 1], 1.0).unwrap();
        assert_eq!(t.start[4], 7);
        assert_eq!(t.start[2], 8);
        assert_eq!(t.makespan, 13);
    }

    #[test]
    fn cyclic_waits_are_a_deadlock() {
        let g = two_layers();
        // ar0 before ar1 on the channel: ar0 needs bwd0; opt1 before bwd0 needs ar1, which
        // is behind ar0 on its stream: bwd0 -> ar0 -> ar1 -> opt1 -> bwd0.
        let plan = StreamPlan {
            streams: vec![
                (Stream::Compute, vec![OpId(0), OpId(4), OpId(2)]),
                (Stream::Comm(LinkClass::IntraNode), vec![OpId(3), OpId(1)]),
            ],
            waits: vec![(OpId(0), OpId(1)), (OpId(2), OpId(3)), (OpId(1), OpId(4))],
        };
        let e = simulate(&g, &plan, &[1; 5], 1.0).unwrap_err();
        assert!(matches!(e, GraphError::Deadlock { .. }), "{e}");
        assert!(e.to_string().contains("`opt1`"), "{e}");
        let e = StreamPlan::new(&g, plan.streams.clone()).unwrap_err();
        assert!(matches!(e, GraphError::Deadlock { .. }), "{e}");
    }

    #[test]
    fn missing_waits_and_inversions_are_rejected() {
        let g = two_layers();
        let mut plan = StreamPlan::program_order(&g).unwrap();
        plan.waits.pop();
        assert!(matches!(
            plan.validate(&g).unwrap_err(),
            GraphError::InvalidPlan { .. }
        ));
        let plan = StreamPlan {
            streams: vec![
                (Stream::Compute, vec![OpId(2), OpId(0), OpId(4)]),
                (Stream::Comm(LinkClass::IntraNode), vec![OpId(1), OpId(3)]),
            ],
            waits: vec![],
        };
        let e = plan.validate(&g).unwrap_err();
        assert!(e.to_string().contains("reads `bwd1`"), "{e}");
    }

    #[test]
    fn plan_json_round_trips() {
        let g = two_layers();
        let plan = StreamPlan::program_order(&g).unwrap();
        let back = StreamPlan::from_json(&g, &plan.to_json(&g)).unwrap();
        assert_eq!(back, plan);
        let bad = plan.to_json(&g).replace("\"bwd0\"", "\"nope\"");
        assert!(StreamPlan::from_json(&g, &bad)
            .unwrap_err()
            .to_string()
            .contains("`nope`"));
    }

    #[test]
    fn peak_memory_follows_lifetimes() {
        use crate::ir::{DType, Tensor};
        let mut b = GraphBuilder::new("mem");
        let a = b.add(
            compute("a").with_output(Tensor::new(vec![100], DType::S8)),
            &[],
        );
        let c = b.add(
            compute("c").with_output(Tensor::new(vec![10], DType::S8)),
            &[a],
        );
        let _d = b.add(
            compute("d").with_output(Tensor::new(vec![1], DType::S8)),
            &[c],
        );
        let g = b.finish();
        let plan = StreamPlan::program_order(&g).unwrap();
        let t = simulate(&g, &plan, &[1, 1, 1], 1.0).unwrap();
        // a lives [0,2), c [1,3), d [2,3): peak 110 during [1,2).
        assert_eq!(t.peak_memory_bytes(&g), 110);
    }
}
