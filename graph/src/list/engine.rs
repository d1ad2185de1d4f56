//! The list schedulers' machinery: the graph as flat arrays ([`Net`]), the event loop that
//! runs list schedules and times plans exactly as [`simulate`] does ([`run`], [`replay`]), and
//! forward-backward improvement ([`improve`]).

use std::cmp::Reverse;
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
/// op of each free stream chosen by `pick`. Each turn releases the ready ops whose release
/// time has come, starts an op on every free stream that can start one
/// ([`Engine::launch_free_streams`]), and moves the clock to the next end or release
/// ([`Engine::advance`]).
fn engine(
    net: &Net,
    d: &[u64],
    pick: Pick<'_>,
    backward: bool,
    slowed: u64,
    key: &dyn Fn(usize, u64) -> (u64, u64, usize),
) -> Result<Schedule, GraphError> {
    let mut e = Engine::new(net, d, pick, backward, slowed, key);
    loop {
        e.release_due();
        e.launch_free_streams();
        if e.finished == net.len() {
            break;
        }
        let dt = e.next_event()?;
        e.advance(dt);
    }
    Ok(e.into_schedule())
}

/// The state of one run of [`engine`].
///
/// Live-tensor bytes are tracked in forward time as `memory::profile` counts them: an op
/// allocates when it starts; a tensor is freed when its last reader ends (its producer's end
/// when nothing reads it), unless it is kept to the end. Ends are handled before the next
/// launches, so frees come before allocations at equal times.
///
/// A forward list schedule under a budget (`gated`) starts an op only if its buffers fit;
/// when no stream runs and nothing fits, the best ready op starts anyway (the plan is then
/// over budget, which its peak says).
struct Engine<'a> {
    net: &'a Net,
    d: &'a [u64],
    pick: Pick<'a>,
    backward: bool,
    slowed: u64,
    key: &'a dyn Fn(usize, u64) -> (u64, u64, usize),
    /// Successors in the direction of time, as (offsets, targets).
    outs: (&'a [usize], &'a [usize]),
    /// Per op: its predecessors (in the direction of time) not ended yet.
    missing: Vec<usize>,
    /// Per op: when its last predecessor ended.
    ready_at: Vec<u64>,
    /// Ready ops of a list schedule not released yet, by release time.
    pending: BinaryHeap<Reverse<(u64, usize)>>,
    /// Per stream, the ops started, in order.
    orders: Vec<Vec<usize>>,
    /// Per op: when it ended.
    end: Vec<u64>,
    /// Per stream: the op it runs and the work (units) left of it.
    running: Vec<Option<(usize, u64)>>,
    now: u64,
    finished: usize,
    /// Per op: readers of its outputs not ended yet.
    readers: Vec<usize>,
    /// Live-tensor bytes now, and their peak.
    live: u64,
    peak: u64,
    gated: bool,
    /// Per stream: idling for memory with ready ops.
    starved: Vec<bool>,
    /// The last op whose end freed memory (at the current time).
    freed_by: Option<usize>,
    /// Ops that ended at the current time (a wait for one of them pins a launch to it).
    ended_now: Vec<usize>,
    /// Per op (when gated): started yet; and the earliest op (program order) not started
    /// yet, for the window.
    started: Vec<bool>,
    frontier: usize,
    window: usize,
    /// The memory waits recorded (see [`Schedule::waits`]).
    waits: Vec<(usize, usize)>,
}

/// The op of a heap key (see [`run`]).
fn op_of(k: (u64, u64, usize), backward: bool) -> usize {
    if backward {
        k.2
    } else {
        usize::MAX - k.2
    }
}

/// `v`'s release time: respected in forward time only; a backward pass (a priority source
/// whose orders are re-timed forward) ignores it.
fn release_of(net: &Net, backward: bool, v: usize) -> u64 {
    if backward {
        0
    } else {
        net.release[v]
    }
}

/// How many bytes starting `v` frees beyond what it allocates: its own outputs when nothing
/// reads them, and the outputs of the predecessors whose last reader it is (none kept to
/// the end), less its own buffers.
fn relief(net: &Net, readers: &[usize], v: usize) -> i128 {
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
                && readers[p] == preds.iter().filter(|&&q| q == p).count()
        })
        .map(|(_, &p)| net.alloc[p])
        .sum();
    (own + freed) as i128 - net.alloc[v] as i128
}

impl<'a> Engine<'a> {
    fn new(
        net: &'a Net,
        d: &'a [u64],
        pick: Pick<'a>,
        backward: bool,
        slowed: u64,
        key: &'a dyn Fn(usize, u64) -> (u64, u64, usize),
    ) -> Self {
        let n = net.len();
        let ns = net.streams.len();
        let (ins, outs): (&[usize], _) = if backward {
            (&net.succ_at, (&net.pred_at[..], &net.pred[..]))
        } else {
            (&net.pred_at, (&net.succ_at[..], &net.succ[..]))
        };
        let gated = !backward && net.limit != u64::MAX && matches!(pick, Pick::List(_));
        let mut e = Engine {
            net,
            d,
            pick,
            backward,
            slowed,
            key,
            outs,
            missing: (0..n).map(|v| ins[v + 1] - ins[v]).collect(),
            ready_at: vec![0u64; n],
            pending: BinaryHeap::new(),
            orders: vec![Vec::new(); ns],
            end: vec![0u64; n],
            running: vec![None; ns],
            now: 0,
            finished: 0,
            readers: (0..n)
                .map(|v| net.succ_at[v + 1] - net.succ_at[v])
                .collect(),
            live: 0,
            peak: 0,
            gated,
            starved: vec![false; ns],
            freed_by: None,
            ended_now: Vec::new(),
            started: vec![false; if gated { n } else { 0 }],
            frontier: 0,
            window: net.window.get(),
            waits: Vec::new(),
        };
        for v in 0..n {
            if e.missing[v] == 0 {
                e.on_ready(v);
            }
        }
        e
    }

    /// `v` has no predecessor left to end: a list schedule queues it on its stream, or holds
    /// it until its release time. (A replay takes ops from its fixed orders.)
    fn on_ready(&mut self, v: usize) {
        let release = release_of(self.net, self.backward, v);
        if let Pick::List(heaps) = &mut self.pick {
            if release > self.now {
                self.pending.push(Reverse((release, v)));
            } else {
                heaps[self.net.stream[v]].push((self.key)(v, self.ready_at[v]));
            }
        }
    }

    /// Queues the held ops of a list schedule whose release time has come.
    fn release_due(&mut self) {
        if let Pick::List(heaps) = &mut self.pick {
            while let Some(&Reverse((r, v))) = self.pending.peek() {
                if r > self.now {
                    break;
                }
                self.pending.pop();
                heaps[self.net.stream[v]].push((self.key)(v, self.ready_at[v].max(r)));
            }
        }
    }

    /// Starts the next op of every free stream that has one. The second sweep runs only
    /// when, under a budget, nothing runs and nothing fitted: its first launch is forced.
    fn launch_free_streams(&mut self) {
        for sweep in 0..2 {
            let mut forced = sweep == 1;
            if forced
                && !(self.gated
                    && self.finished < self.net.len()
                    && self.running.iter().all(Option::is_none))
            {
                break;
            }
            for s in 0..self.net.streams.len() {
                if self.running[s].is_some() {
                    continue;
                }
                let next = if self.gated {
                    self.pick_gated(s, forced)
                } else {
                    self.pick_next(s)
                };
                if let Some(v) = next {
                    forced = false;
                    self.launch(s, v);
                }
            }
        }
    }

    /// The next op of free stream `s` without a memory budget: the ready op of highest key,
    /// or the next op of the fixed order once it is ready and released.
    fn pick_next(&mut self, s: usize) -> Option<usize> {
        let (net, backward) = (self.net, self.backward);
        match &mut self.pick {
            Pick::List(heaps) => heaps[s].pop().map(|k| op_of(k, backward)),
            Pick::Fixed(order, at) => match order[s].get(at[s]) {
                Some(&v) if self.missing[v] == 0 && release_of(net, backward, v) <= self.now => {
                    at[s] += 1;
                    Some(v)
                }
                _ => None,
            },
        }
    }

    /// The next op of free stream `s` of a list schedule under a memory budget: of its
    /// [`GATE_LOOKAHEAD`] best ready ops, the first whose buffers fit under the soft limit
    /// and within the window (any, when `forced`); over the soft limit, the one that frees
    /// the most more than it allocates ([`relief`]), if it fits the limit. When none starts,
    /// the stream starves (its next launch records a memory wait).
    fn pick_gated(&mut self, s: usize, forced: bool) -> Option<usize> {
        let (net, backward, live) = (self.net, self.backward, self.live);
        let within_window = self.frontier.saturating_add(self.window);
        let Pick::List(heaps) = &mut self.pick else {
            unreachable!("only list schedules are gated")
        };
        let mut held = Vec::new();
        let mut chosen = None;
        let soft = net.soft.get().min(net.limit);
        while let Some(k) = heaps[s].pop() {
            let v = op_of(k, backward);
            if forced || (live.saturating_add(net.alloc[v]) <= soft && v <= within_window) {
                chosen = Some(v);
                break;
            }
            held.push(k);
            if held.len() >= GATE_LOOKAHEAD {
                break;
            }
        }
        if chosen.is_none() && soft < net.limit {
            let readers = &self.readers;
            if let Some(i) = held
                .iter()
                .enumerate()
                .filter(|(_, &k)| {
                    let v = op_of(k, backward);
                    live.saturating_add(net.alloc[v]) <= net.limit && v <= within_window
                })
                .map(|(i, &k)| (relief(net, readers, op_of(k, backward)), Reverse(i)))
                .filter(|(r, _)| *r > 0)
                .max()
                .map(|(_, Reverse(i))| i)
            {
                chosen = Some(op_of(held.swap_remove(i), backward));
            }
        }
        // Set here, cleared only by the launch that records the wait.
        if chosen.is_none() && !held.is_empty() {
            self.starved[s] = true;
        }
        heaps[s].extend(held);
        chosen
    }

    /// Starts `v` on stream `s`: records the memory wait of a starved stream, allocates its
    /// buffers and moves the window's frontier.
    fn launch(&mut self, s: usize, v: usize) {
        let net = self.net;
        if self.gated && std::mem::take(&mut self.starved[s]) {
            // The op whose end freed the memory, else (a forced launch) one that ended now
            // on another stream; at time 0 nothing is needed.
            let on_other = |u: &usize| net.stream[*u] != s;
            if let Some(u) = self
                .freed_by
                .filter(on_other)
                .or_else(|| self.ended_now.iter().copied().find(on_other))
            {
                self.waits.push((u, v));
            }
        }
        self.orders[s].push(v);
        self.running[s] = Some((v, self.d[v].saturating_mul(UNITS)));
        self.live += net.alloc[v];
        self.peak = self.peak.max(self.live);
        if self.gated {
            self.started[v] = true;
            while self.frontier < net.len() && self.started[self.frontier] {
                self.frontier += 1;
            }
        }
    }

    /// Whether some communication channel runs now (compute then runs slowed).
    fn comm_active(&self) -> bool {
        (0..self.net.streams.len()).any(|s| self.net.comm[s] && self.running[s].is_some())
    }

    /// Work units stream `s` does per ns.
    fn rate(&self, s: usize, comm_active: bool) -> u64 {
        if !self.net.comm[s] && comm_active {
            self.slowed
        } else {
            UNITS
        }
    }

    /// Time to the next event: the first end of a running op, or the next release of a ready
    /// op (a free stream's next op, when timing a plan). An error when there is none: no
    /// stream can start an op.
    fn next_event(&self) -> Result<u64, GraphError> {
        let ns = self.net.streams.len();
        let comm_active = self.comm_active();
        let completion = (0..ns).filter_map(|s| {
            self.running[s].map(|(_, rem)| rem.div_ceil(self.rate(s, comm_active)))
        });
        let (net, backward, now) = (self.net, self.backward, self.now);
        let released = match &self.pick {
            Pick::List(_) => self.pending.peek().map(|r| r.0 .0.saturating_sub(now)),
            Pick::Fixed(order, at) => (0..ns)
                .filter(|&s| self.running[s].is_none())
                .filter_map(|s| order[s].get(at[s]))
                .filter(|&&v| self.missing[v] == 0 && release_of(net, backward, v) > now)
                .map(|&v| release_of(net, backward, v) - now)
                .min(),
        };
        completion
            .chain(released)
            .min()
            .ok_or_else(|| GraphError::Deadlock {
                cycle: "list scheduling: no stream can start an op (a launch order that is \
                        not topological)"
                    .into(),
            })
    }

    /// Moves the clock by `dt`: every running op does `dt` of work at its stream's rate, and
    /// those done end ([`Engine::finish`]), in stream order.
    fn advance(&mut self, dt: u64) {
        let comm_active = self.comm_active();
        self.now = self.now.saturating_add(dt);
        self.freed_by = None;
        self.ended_now.clear();
        for s in 0..self.running.len() {
            let Some((v, rem)) = self.running[s] else {
                continue;
            };
            let left = rem.saturating_sub(dt.saturating_mul(self.rate(s, comm_active)));
            if left > 0 {
                self.running[s] = Some((v, left));
                continue;
            }
            self.running[s] = None;
            self.finish(v);
        }
    }

    /// `v` ends now: in forward time, the tensors whose last reader it is are freed; its
    /// successors whose predecessors have all ended become ready.
    fn finish(&mut self, v: usize) {
        let net = self.net;
        self.end[v] = self.now;
        self.finished += 1;
        self.ended_now.push(v);
        if !self.backward {
            let before = self.live;
            if self.readers[v] == 0 && !net.keep[v] {
                self.live -= net.alloc[v];
            }
            for &p in net.preds(v) {
                self.readers[p] -= 1;
                if self.readers[p] == 0 && !net.keep[p] {
                    self.live -= net.alloc[p];
                }
            }
            if self.live < before {
                self.freed_by = Some(v);
            }
        }
        let (at, succ) = self.outs;
        for &w in &succ[at[v]..at[v + 1]] {
            self.ready_at[w] = self.ready_at[w].max(self.now);
            self.missing[w] -= 1;
            if self.missing[w] == 0 {
                self.on_ready(w);
            }
        }
    }

    fn into_schedule(self) -> Schedule {
        Schedule {
            makespan: self.end.iter().copied().max().unwrap_or(0),
            end: self.end,
            orders: self.orders,
            peak: self.peak,
            waits: self.waits,
        }
    }
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
        // A round is three list schedules (about 0.2 s each on 100k ops): the stop is
        // checked between them.
        let b = run(net, d, &current.end, Direction::Backward, false, slowed)?;
        if stop() {
            break;
        }
        let right = replay(
            net,
            d,
            forward_orders(b.orders.clone(), Direction::Backward),
            slowed,
        )?;
        if stop() {
            if net.key(&right) < net.key(&best) {
                best = right;
            }
            break;
        }
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
