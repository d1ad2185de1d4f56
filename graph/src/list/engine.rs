//! The list schedulers' machinery: the graph as flat arrays ([`Net`]), the event loop that
//! runs list schedules and times plans exactly as [`simulate`] does ([`run`], [`replay`]), and
//! forward-backward improvement ([`improve`]).

use std::collections::BinaryHeap;

use super::{Direction, JUSTIFY_ROUNDS};
use crate::error::GraphError;
use crate::ir::{Graph, OpId};
use crate::plan::{Stream, StreamPlan};
#[cfg(doc)]
use crate::simulate::simulate;

/// Work units per ns at full speed (as in [`simulate`]).
pub(super) const UNITS: u64 = 1000;

/// The graph as flat adjacency arrays, with each op's stream.
pub(super) struct Net {
    pub(super) streams: Vec<Stream>,
    /// Per stream: a communication channel.
    pub(super) comm: Vec<bool>,
    /// Per op: its stream's index.
    pub(super) stream: Vec<usize>,
    /// Per op: its release time ([`crate::Op::release_ns`]), respected in forward time; all
    /// zero for most graphs.
    release: Vec<u64>,
    succ_at: Vec<usize>,
    succ: Vec<usize>,
    pred_at: Vec<usize>,
    pred: Vec<usize>,
    /// Per op: the bytes it allocates when it starts ([`crate::Op::buffer_bytes`]).
    alloc: Vec<u64>,
    /// Per op: its outputs are kept to the end of the step ([`crate::Op::live_out`]).
    keep: Vec<bool>,
    /// Most bytes of live tensors a forward list schedule may hold (a memory budget less the
    /// resident bytes); `u64::MAX` when there is no budget.
    pub(super) limit: u64,
    /// The live bytes up to which a forward schedule under a budget starts ops freely (at most
    /// [`Net::limit`]); above it, only an op whose end frees more than it allocates starts,
    /// as long as it fits the limit (XLA's memory-pressure rule). Default: the limit.
    pub(super) soft: std::cell::Cell<u64>,
    /// Under a budget, how far (in program positions) past the earliest op not yet started a
    /// forward schedule may start an op; `usize::MAX`: no limit (default).
    pub(super) window: std::cell::Cell<usize>,
}

impl Net {
    pub(super) fn new(graph: &Graph) -> Net {
        let n = graph.len();
        let streams = Stream::of_graph(graph);
        let stream = graph
            .ops()
            .map(|op| {
                let s = Stream::of(op);
                streams.iter().position(|t| *t == s).unwrap_or(0)
            })
            .collect();
        // Raw edges, in the DAG's (deterministic) order; a dependency through several tensors
        // appears once per tensor, which every use below tolerates (counts stay consistent).
        let edges = graph.dag().raw_edges();
        let mut succ_at = vec![0usize; n + 1];
        let mut pred_at = vec![0usize; n + 1];
        for e in edges {
            succ_at[e.source().index() + 1] += 1;
            pred_at[e.target().index() + 1] += 1;
        }
        for v in 0..n {
            succ_at[v + 1] += succ_at[v];
            pred_at[v + 1] += pred_at[v];
        }
        let (mut at_s, mut at_p) = (succ_at.clone(), pred_at.clone());
        let mut succ = vec![0usize; edges.len()];
        let mut pred = vec![0usize; edges.len()];
        for e in edges {
            let (p, c) = (e.source().index(), e.target().index());
            succ[at_s[p]] = c;
            at_s[p] += 1;
            pred[at_p[c]] = p;
            at_p[c] += 1;
        }
        Net {
            alloc: graph.ops().map(|o| o.buffer_bytes()).collect(),
            keep: graph.ops().map(|o| o.live_out).collect(),
            limit: u64::MAX,
            soft: std::cell::Cell::new(u64::MAX),
            window: std::cell::Cell::new(usize::MAX),
            comm: streams.iter().map(|s| s.is_comm()).collect(),
            release: graph.ops().map(|o| o.release_ns).collect(),
            streams,
            stream,
            succ_at,
            succ,
            pred_at,
            pred,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.stream.len()
    }

    /// Whether a forward schedule holds more live-tensor bytes than [`Net::limit`].
    pub(super) fn over(&self, s: &Schedule) -> bool {
        s.peak > self.limit
    }

    /// The order of schedules under a budget: within it first, then shorter.
    pub(super) fn key(&self, s: &Schedule) -> (bool, u64) {
        (self.over(s), s.makespan)
    }

    pub(super) fn succs(&self, v: usize) -> &[usize] {
        &self.succ[self.succ_at[v]..self.succ_at[v + 1]]
    }

    pub(super) fn preds(&self, v: usize) -> &[usize] {
        &self.pred[self.pred_at[v]..self.pred_at[v + 1]]
    }

    pub(super) fn plan(
        &self,
        graph: &Graph,
        orders: &[Vec<usize>],
    ) -> Result<StreamPlan, GraphError> {
        let streams = self
            .streams
            .iter()
            .zip(orders)
            .map(|(s, o)| (*s, o.iter().map(|&v| OpId(v)).collect()))
            .collect();
        StreamPlan::new(graph, streams)
    }

    /// The plan of a schedule: its launch orders, and its memory waits (see [`Schedule`]).
    pub(super) fn plan_of(&self, graph: &Graph, s: &Schedule) -> Result<StreamPlan, GraphError> {
        let mut plan = self.plan(graph, &s.orders)?;
        if !s.waits.is_empty() {
            plan.waits
                .extend(s.waits.iter().map(|&(u, v)| (OpId(u), OpId(v))));
            plan.validate(graph)?;
        }
        Ok(plan)
    }
}

/// A schedule in forward time or, from a backward pass, in reverse time.
#[derive(Clone, Debug)]
pub(super) struct Schedule {
    /// End of each op (ns).
    pub(super) end: Vec<u64>,
    /// Per stream, ops in the order the schedule placed them.
    pub(super) orders: Vec<Vec<usize>>,
    /// Latest end (ns).
    pub(super) makespan: u64,
    /// Peak of the live-tensor bytes (resident bytes not included) of a forward schedule, as
    /// [`crate::memory::profile`] counts them; meaningless for a backward one.
    pub(super) peak: u64,
    /// Memory waits of a forward schedule under a budget: `(u, v)` when `v`'s stream idled
    /// for memory until `u` (on another stream) ended and freed it, so that the plan launches
    /// `v` when the schedule did (a plain FIFO order would launch it as soon as it is ready).
    pub(super) waits: Vec<(usize, usize)>,
}

/// The launch orders of a schedule's plan: a backward schedule's placement orders reversed.
pub(super) fn forward_orders(mut orders: Vec<Vec<usize>>, direction: Direction) -> Vec<Vec<usize>> {
    if direction == Direction::Backward {
        orders.iter_mut().for_each(|o| o.reverse());
    }
    orders
}

/// How many ready ops of a stream a forward list schedule under a budget tries, best first,
/// before its stream idles for want of memory.
const GATE_LOOKAHEAD: usize = 64;

/// How the next op of a free stream is chosen.
enum Pick<'a> {
    /// The ready op of highest key (a list schedule).
    List(Vec<BinaryHeap<(u64, u64, usize)>>),
    /// The next op of a fixed order, once ready (timing a plan).
    Fixed(&'a [Vec<usize>], Vec<usize>),
}

/// A list schedule (see [`list_schedule`](super::list_schedule)); with `fifo_comm`, channels take their ready
/// collectives in the order they became ready (ties by priority).
pub(super) fn run(
    net: &Net,
    d: &[u64],
    priority: &[u64],
    direction: Direction,
    fifo_comm: bool,
    slowed: u64,
) -> Result<Schedule, GraphError> {
    let backward = direction == Direction::Backward;
    let key = |v: usize, at: u64| {
        let tie = if backward { v } else { usize::MAX - v };
        if fifo_comm && net.comm[net.stream[v]] {
            (u64::MAX - at, priority[v], tie)
        } else {
            (priority[v], 0, tie)
        }
    };
    let heaps = vec![BinaryHeap::new(); net.streams.len()];
    engine(net, d, Pick::List(heaps), backward, slowed, &key)
}

/// Times fixed launch orders (a plan) forward, as [`simulate`] does.
pub(super) fn replay(
    net: &Net,
    d: &[u64],
    orders: Vec<Vec<usize>>,
    slowed: u64,
) -> Result<Schedule, GraphError> {
    let next = vec![0usize; orders.len()];
    let mut s = engine(
        net,
        d,
        Pick::Fixed(&orders, next),
        false,
        slowed,
        &|_, _| (0, 0, 0),
    )?;
    s.orders = orders;
    Ok(s)
}

/// The event loop shared by list schedules and replays: the simulator's clock, with the next
/// op of each free stream chosen by `pick`.
fn engine(
    net: &Net,
    d: &[u64],
    mut pick: Pick<'_>,
    backward: bool,
    slowed: u64,
    key: &dyn Fn(usize, u64) -> (u64, u64, usize),
) -> Result<Schedule, GraphError> {
    let n = net.len();
    let ns = net.streams.len();
    let (ins, outs) = if backward {
        ((&net.succ_at, &net.succ), (&net.pred_at, &net.pred))
    } else {
        ((&net.pred_at, &net.pred), (&net.succ_at, &net.succ))
    };
    let mut missing: Vec<usize> = (0..n).map(|v| ins.0[v + 1] - ins.0[v]).collect();
    let mut ready_at = vec![0u64; n];
    // Release times hold in forward time only; a backward pass (a priority source whose
    // orders are re-timed forward) ignores them. Ready ops not yet released wait here.
    let release = |v: usize| if backward { 0 } else { net.release[v] };
    let mut pending: BinaryHeap<std::cmp::Reverse<(u64, usize)>> = BinaryHeap::new();
    if let Pick::List(heaps) = &mut pick {
        for v in (0..n).filter(|&v| missing[v] == 0) {
            if release(v) > 0 {
                pending.push(std::cmp::Reverse((release(v), v)));
            } else {
                heaps[net.stream[v]].push(key(v, 0));
            }
        }
    }
    let mut orders: Vec<Vec<usize>> = vec![Vec::new(); ns];
    let mut end = vec![0u64; n];
    let mut running: Vec<Option<(usize, u64)>> = vec![None; ns];
    let (mut now, mut finished) = (0u64, 0usize);
    // Live-tensor bytes, tracked in forward time as `memory::profile` counts them: an op
    // allocates when it starts; a tensor is freed when its last reader ends (its producer's
    // end when nothing reads it), unless it is kept to the end. Ends are handled before the
    // next launches, so frees come before allocations at equal times.
    let mut readers: Vec<usize> = (0..n)
        .map(|v| net.succ_at[v + 1] - net.succ_at[v])
        .collect();
    let (mut live, mut peak) = (0u64, 0u64);
    // A forward list schedule under a budget starts an op only if its buffers fit; when no
    // stream runs and nothing fits, the best ready op starts anyway (the plan is then over
    // budget, which its peak says).
    let gated = !backward && net.limit != u64::MAX && matches!(pick, Pick::List(_));
    let id = |k: (u64, u64, usize)| if backward { k.2 } else { usize::MAX - k.2 };
    // Streams idling for memory with ready ops, the last op whose end freed memory (at the
    // current time), and the memory waits recorded.
    let mut starved = vec![false; ns];
    let mut freed_by: Option<usize> = None;
    // Ops that ended at the current time (a wait for one of them pins a launch to it).
    let mut ended_now: Vec<usize> = Vec::new();
    // The earliest op (program order) not started yet, for the window.
    let mut started = vec![false; if gated { n } else { 0 }];
    let mut frontier = 0usize;
    let window = net.window.get();
    let mut waits: Vec<(usize, usize)> = Vec::new();
    loop {
        if let Pick::List(heaps) = &mut pick {
            while let Some(&std::cmp::Reverse((r, v))) = pending.peek() {
                if r > now {
                    break;
                }
                pending.pop();
                heaps[net.stream[v]].push(key(v, ready_at[v].max(r)));
            }
        }
        // The second sweep runs only when, under a budget, nothing runs and nothing fitted:
        // its first launch is forced.
        for sweep in 0..2 {
            let mut forced = sweep == 1;
            if forced && !(gated && finished < n && running.iter().all(Option::is_none)) {
                break;
            }
            for s in 0..ns {
                if running[s].is_some() {
                    continue;
                }
                let next = match &mut pick {
                    Pick::List(heaps) if gated => {
                        let mut held = Vec::new();
                        let mut chosen = None;
                        let soft = net.soft.get().min(net.limit);
                        while let Some(k) = heaps[s].pop() {
                            let v = id(k);
                            if forced
                                || (live.saturating_add(net.alloc[v]) <= soft
                                    && v <= frontier.saturating_add(window))
                            {
                                chosen = Some(v);
                                break;
                            }
                            held.push(k);
                            if held.len() >= GATE_LOOKAHEAD {
                                break;
                            }
                        }
                        if chosen.is_none() && soft < net.limit {
                            // Over the soft limit: the op that frees the most more than it
                            // allocates, if it fits the limit.
                            let relief = |v: usize| {
                                let own = if readers[v] == 0 && !net.keep[v] {
                                    net.alloc[v]
                                } else {
                                    0
                                };
                                let preds = net.preds(v);
                                let freed: u64 = preds
                                    .iter()
                                    .enumerate()
                                    .filter(|&(i, &p)| {
                                        !preds[..i].contains(&p)
                                            && !net.keep[p]
                                            && readers[p]
                                                == preds.iter().filter(|&&q| q == p).count()
                                    })
                                    .map(|(_, &p)| net.alloc[p])
                                    .sum();
                                (own + freed) as i128 - net.alloc[v] as i128
                            };
                            if let Some(i) = held
                                .iter()
                                .enumerate()
                                .filter(|(_, &k)| {
                                    live.saturating_add(net.alloc[id(k)]) <= net.limit
                                        && id(k) <= frontier.saturating_add(window)
                                })
                                .map(|(i, &k)| (relief(id(k)), std::cmp::Reverse(i)))
                                .filter(|(r, _)| *r > 0)
                                .max()
                                .map(|(_, std::cmp::Reverse(i))| i)
                            {
                                chosen = Some(id(held.swap_remove(i)));
                            }
                        }
                        // Set here, cleared only by the launch that records the wait.
                        if chosen.is_none() && !held.is_empty() {
                            starved[s] = true;
                        }
                        heaps[s].extend(held);
                        if chosen.is_some() {
                            forced = false;
                        }
                        chosen
                    }
                    Pick::List(heaps) => heaps[s].pop().map(id),
                    Pick::Fixed(order, at) => match order[s].get(at[s]) {
                        Some(&v) if missing[v] == 0 && release(v) <= now => {
                            at[s] += 1;
                            Some(v)
                        }
                        _ => None,
                    },
                };
                if let Some(v) = next {
                    if gated && std::mem::take(&mut starved[s]) {
                        // The op whose end freed the memory, else (a forced launch) one that
                        // ended now on another stream; at time 0 nothing is needed.
                        let on_other = |u: &usize| net.stream[*u] != s;
                        if let Some(u) = freed_by
                            .filter(on_other)
                            .or_else(|| ended_now.iter().copied().find(on_other))
                        {
                            waits.push((u, v));
                        }
                    }
                    orders[s].push(v);
                    running[s] = Some((v, d[v].saturating_mul(UNITS)));
                    live += net.alloc[v];
                    peak = peak.max(live);
                    if gated {
                        started[v] = true;
                        while frontier < n && started[frontier] {
                            frontier += 1;
                        }
                    }
                }
            }
        }
        if finished == n {
            break;
        }
        let comm_active = (0..ns).any(|s| net.comm[s] && running[s].is_some());
        let rate = |s: usize| {
            if !net.comm[s] && comm_active {
                slowed
            } else {
                UNITS
            }
        };
        let completion = (0..ns).filter_map(|s| running[s].map(|(_, rem)| rem.div_ceil(rate(s))));
        // The next release of a ready op (a free stream's next op, when timing a plan).
        let released = match &pick {
            Pick::List(_) => pending.peek().map(|r| r.0 .0.saturating_sub(now)),
            Pick::Fixed(order, at) => (0..ns)
                .filter(|&s| running[s].is_none())
                .filter_map(|s| order[s].get(at[s]))
                .filter(|&&v| missing[v] == 0 && release(v) > now)
                .map(|&v| release(v) - now)
                .min(),
        };
        let Some(dt) = completion.chain(released).min() else {
            return Err(GraphError::Deadlock {
                cycle: "list scheduling: no stream can start an op (a launch order that is \
                        not topological)"
                    .into(),
            });
        };
        now = now.saturating_add(dt);
        freed_by = None;
        ended_now.clear();
        for (s, slot) in running.iter_mut().enumerate() {
            let Some((v, rem)) = *slot else { continue };
            let left = rem.saturating_sub(dt.saturating_mul(rate(s)));
            if left > 0 {
                *slot = Some((v, left));
                continue;
            }
            *slot = None;
            end[v] = now;
            finished += 1;
            ended_now.push(v);
            if !backward {
                let before = live;
                if readers[v] == 0 && !net.keep[v] {
                    live -= net.alloc[v];
                }
                for &p in net.preds(v) {
                    readers[p] -= 1;
                    if readers[p] == 0 && !net.keep[p] {
                        live -= net.alloc[p];
                    }
                }
                if live < before {
                    freed_by = Some(v);
                }
            }
            for &w in &outs.1[outs.0[v]..outs.0[v + 1]] {
                ready_at[w] = ready_at[w].max(now);
                missing[w] -= 1;
                if missing[w] == 0 {
                    if let Pick::List(heaps) = &mut pick {
                        if release(w) > now {
                            pending.push(std::cmp::Reverse((release(w), w)));
                        } else {
                            heaps[net.stream[w]].push(key(w, ready_at[w]));
                        }
                    }
                }
            }
        }
    }
    Ok(Schedule {
        makespan: end.iter().copied().max().unwrap_or(0),
        end,
        orders,
        peak,
        waits,
    })
}

/// Forward-backward improvement from a forward `start` (see the module docs): the best
/// forward schedule seen, with its launch orders.
pub(super) fn improve(
    net: &Net,
    d: &[u64],
    start: Schedule,
    floor: u64,
    slowed: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Schedule, GraphError> {
    let mut current = start.clone();
    let mut best = start;
    for _ in 0..JUSTIFY_ROUNDS {
        if (best.makespan <= floor && !net.over(&best)) || stop() {
            break;
        }
        let b = run(net, d, &current.end, Direction::Backward, false, slowed)?;
        let right = replay(
            net,
            d,
            forward_orders(b.orders.clone(), Direction::Backward),
            slowed,
        )?;
        let left = run(net, d, &b.end, Direction::Forward, false, slowed)?;
        let round = if net.key(&left) <= net.key(&right) {
            left
        } else {
            right
        };
        if net.key(&round) >= net.key(&current) {
            break;
        }
        if net.key(&round) < net.key(&best) {
            best = round.clone();
        }
        current = round;
    }
    Ok(best)
}
