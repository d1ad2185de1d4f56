//! A portfolio of priority-rule list schedulers: stream plans to start a search from.
//!
//! Every rule here is a *list schedule* (a parallel schedule-generation scheme in RCPSP terms):
//! time advances from event to event, and whenever a stream is free it starts, among its ops
//! whose producers have all finished, the one of highest priority (a *non-delay* schedule:
//! no stream idles while it has a ready op). Time runs exactly as in [`simulate`]: integer
//! nanoseconds, compute `contention` times slower while a collective runs, so the makespan a
//! forward list schedule computes is the simulated makespan of its plan. Ops of a stream are
//! launched in the order the schedule starts them, which is consistent with one topological
//! order of the graph: every plan is accepted by [`StreamPlan::new`] (no deadlock).
//!
//! [`portfolio`] runs every [`Rule`] of a [`ListConfig`] and returns one [`Candidate`] per rule,
//! best first. [`list_schedule`] is one list schedule for any priority, in either
//! [`Direction`]; [`justify`] improves any plan by forward-backward passes.
//!
//! # Rules
//!
//! With `n` ops, `e` dependencies and `s` streams, one list schedule costs
//! O((n + e) log n + n s), and so does timing a plan; building a candidate's plan with
//! [`StreamPlan::new`] (once per distinct plan) costs O((n + e) s). On a 102k-op GPT step
//! (96 layers, tp 8, dp 4, ZeRO-3, 34 microbatches) the default portfolio takes about 1 s in
//! a release build, most of it in `StreamPlan::new`.
//!
//! - [`Rule::CriticalPath`] (`cp-forward`): priority = bottom level (the longest path of
//!   durations from the op's start to the end of the step, collectives included), on every
//!   stream. Critical-path list scheduling (Kelley's critical-path method; Kolisch, "Serial
//!   and parallel resource-constrained project scheduling methods revisited", EJOR 1996, for
//!   the latest-finish-time family of rules). One list schedule.
//! - [`Rule::CommFifo`] (`cp-comm-fifo`): the same for compute; each channel starts its
//!   collectives first come, first served (the policy of XLA's latency-hiding scheduler, as in
//!   [`baselines::lhs`]). One list schedule. Not in [`Rule::DEFAULT`]: starting collectives
//!   by bottom level instead was never worse by more than 0.01 % on the measured graphs, and
//!   up to 2.5 % better (Mixtral), and its plan never led justification to the best plan.
//! - [`Rule::EnergyTail`] (`energy-tail`): priority = the largest lower bound on the time still
//!   needed after the op starts: its bottom level, or for each channel, the shortest path to a
//!   descendant collective on it plus the total duration of its descendant collectives there
//!   (what that channel must still do after the op; the one-machine tail of the precedence
//!   energy bound in [`bounds`](crate::bounds)). Compute that feeds a backlog of gradient
//!   all-reduces runs before compute on a longer path that feeds none. Descendant sums are
//!   exact over the [`ENERGY_COLLECTIVES`] longest collectives (the others count 0): bitsets of
//!   64 collectives propagated in reverse program order, O((n + e) k / 64) for k collectives.
//! - [`Rule::CommWeighted`] (`cp-plus-comm`): priority = bottom level plus the descendant
//!   collective time (as above) on the busiest channel: a weighting, not a bound.
//! - [`Rule::Backward`] (`cp-backward`): a list schedule of the reversed graph (ops placed
//!   from the end of the step, each once all its consumers are placed), priority = top level
//!   (longest path from the start of the step to the op's end); the plan launches each stream
//!   in the reverse of its placement order. Backward list scheduling (Li & Willis, "An
//!   iterative scheduling technique for resource-constrained project scheduling", EJOR 1992).
//!   Two list schedules' cost (the second times the plan).
//! - [`Rule::Justified`] (`justified`): [`justify`] applied to each distinct plan of the rules
//!   before it in the config, best first (to `cp-forward`'s when it comes first), until one
//!   reaches the larger of the critical path and the busiest stream's load; the best result is
//!   kept. Each start gives its own local optimum: on the measured graphs the best
//!   one comes from `cp-backward` most often, but not always. Cost: at most
//!   `3 * JUSTIFY_ROUNDS` list schedules per start.
//! - [`Rule::Sampled`] (`sampled`): biased random sampling: `samples` list schedules whose
//!   priorities are, in turn, the top level (backward: the strongest single rule measured)
//!   and the energy tail (forward: the forward priority least like it), each times a random factor in `[1, 1 + a)`, `a` cycling through
//!   5 %, 10 %, 20 % and 40 % (seeded with [`ListConfig::seed`]: ChaCha8, one stream per
//!   sample); the best [`SAMPLES_JUSTIFIED`] are justified and the best plan of all is kept.
//!   Regret-based biased random sampling draws among the ready ops instead (Drexl,
//!   "Scheduling of project networks by job assignment", Management Science 1991); perturbed
//!   priorities are the random-key form of the same idea (Hartmann & Kolisch, "Experimental
//!   evaluation of state-of-the-art heuristics for the RCPSP", EJOR 2000). Sampling stops early
//!   when a sample reaches the larger of the critical path and the busiest stream's load (no
//!   plan is shorter), and draws a single sample, unjustified, when an earlier rule's plan
//!   reached it. Cost: `samples` list schedules plus the justifications.
//!
//! # Justification
//!
//! [`justify`] alternates a backward list schedule whose priority is each op's end in the
//! current plan (the op that ends last is placed first: right-justification) and a forward
//! one whose priority is each op's start in that backward schedule, earliest first
//! (left-justification), keeping the best plan seen, for at most [`JUSTIFY_ROUNDS`] rounds
//! and while a round strictly improves the makespan (or until the makespan reaches the larger
//! of the critical path and the busiest stream's load, which no plan beats). This is the
//! forward-backward improvement of Tormos & Lova ("A competitive heuristic solution technique
//! for resource-constrained project scheduling", Annals of OR 2001) with parallel
//! schedule-generation passes; with serial passes it is the double justification of Valls,
//! Ballestín & Quintanilla ("Justification and RCPSP: a technique that pays", EJOR 2005).
//! Each backward schedule is also timed forward as a plan and kept when it is the best. Cost:
//! at most `3 * rounds` list schedules.
//!
//! # Measured
//!
//! On XLA's Mixtral 8x7B module (2 x 8 GPUs, `h100`, no contention) `baselines::lhs` takes
//! 1522.6 ms, `cp-forward` 1483.9, `cp-plus-comm` 1470.1, `cp-backward` 1304.5 and
//! `justified` 1280.6 ms, the proven lower bound; on Llama 3.1 70B (32 x 8, dependencies
//! through tuples element-exact) `lhs` takes 28085.1 ms, `cp-plus-comm` 27998.1, `cp-backward`
//! 23898.5 and `sampled` 23871.7 (bound 23822.6). `extract/examples/list_portfolio.rs` prints the
//! table for any graph file (`CONTENTION=1` for these).
//!
//! # Memory
//!
//! Under [`ListConfig::memory_budget`] (bytes, resident included; what is counted:
//! [`crate::memory`]) every forward list schedule tracks the live-tensor bytes in its own event
//! loop (allocate at an op's start, free at its last reader's end, outputs of the step never)
//! and starts an op only when its buffers fit: a free stream takes its best ready op that fits
//! among the best 64; when none fits it waits, and the op it finally starts gets a *memory
//! wait* on the op (of another stream) whose end freed the memory, so that the plan, which
//! otherwise launches each op as soon as it is ready, replays exactly as scheduled. When no
//! stream runs and nothing fits, the best op starts anyway (the plan is then over the budget,
//! which its peak says). A forward schedule that ends over the budget anyway (memory filled
//! with tensors whose readers cannot start) is run again with a soft limit at 0.9 of the room:
//! above it, only an op whose end frees more than it allocates starts, as long as it fits
//! the budget (the memory-pressure rule of XLA's latency-hiding scheduler and its retry at
//! 0.9, inside each rule); the better of the two is kept. [`Rule::Program`] (`program-forward`: program order as the
//! priority) runs first: the budget of 100 % is program order's own peak, and this rule keeps
//! close to it while it starts collectives and independent work early. Backward passes ignore
//! memory (their forward replays are measured). Every choice between schedules (justification
//! rounds, samples, the final order of the candidates) puts those within the budget first,
//! then the shorter. [`repair_memory`] delays, one FIFO position at a time, the op that
//! first breaks a budget. Cost: each op compared with at most 64 others per choice; tracking
//! is O(deps) per schedule.
//!
//! # Determinism
//!
//! Ties between ready ops go to the earlier op in program order (the later one in backward
//! passes); random numbers come from [`ListConfig::seed`] only; the rules run in the config's
//! order, so the same inputs give the same candidates.

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[cfg(doc)]
use crate::baselines;
use crate::error::GraphError;
use crate::ir::Graph;
use crate::plan::StreamPlan;
use crate::simulate::simulate;

mod engine;
mod polish;
mod priority;
mod repair;

pub use polish::{polish, Polished};

use engine::{forward_orders, improve, replay, run, Net, Schedule, UNITS};
use priority::Priorities;

/// The windows (program positions) [`Rule::Program`] tries, in turn, while its schedule is
/// over the memory budget.
pub const PROGRAM_WINDOWS: [usize; 3] = [256, 64, 16];

/// Most forward-backward rounds of [`justify`].
pub const JUSTIFY_ROUNDS: usize = 8;

/// Most collectives (the longest) whose descendant sums the energy tail counts.
pub const ENERGY_COLLECTIVES: usize = 4096;

/// How many of the best samples [`Rule::Sampled`] justifies.
pub const SAMPLES_JUSTIFIED: usize = 3;

/// A priority rule (and direction) of the portfolio; see the module docs for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rule {
    /// Forward, bottom level on every stream.
    CriticalPath,
    /// Forward, bottom level for compute, collectives first come, first served.
    CommFifo,
    /// Forward, the largest lower bound on what must follow the op (bottom level or a
    /// channel's descendant collectives).
    EnergyTail,
    /// Forward, bottom level plus the descendant collective time on the busiest channel.
    CommWeighted,
    /// Backward, top level.
    Backward,
    /// Forward-backward improvement of each plan of the rules before it.
    Justified,
    /// Biased random sampling, the best samples justified.
    Sampled,
    /// Forward, program order as the priority (the earliest op first): under a memory budget,
    /// program order with every op started as early as its buffers fit.
    Program,
}

impl Rule {
    /// The rules [`ListConfig::default`] runs, in its order: every rule that gave the best
    /// plan of some measured graph (see the module docs).
    pub const DEFAULT: [Rule; 6] = [
        Rule::CriticalPath,
        Rule::EnergyTail,
        Rule::CommWeighted,
        Rule::Backward,
        Rule::Justified,
        Rule::Sampled,
    ];

    /// Every rule.
    pub const ALL: [Rule; 8] = [
        Rule::CriticalPath,
        Rule::CommFifo,
        Rule::EnergyTail,
        Rule::CommWeighted,
        Rule::Backward,
        Rule::Justified,
        Rule::Sampled,
        Rule::Program,
    ];

    /// `cp-forward`, `cp-comm-fifo`, `energy-tail`, `cp-plus-comm`, `cp-backward`,
    /// `justified`, `sampled` or `program-forward`.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::CriticalPath => "cp-forward",
            Rule::CommFifo => "cp-comm-fifo",
            Rule::EnergyTail => "energy-tail",
            Rule::CommWeighted => "cp-plus-comm",
            Rule::Backward => "cp-backward",
            Rule::Justified => "justified",
            Rule::Sampled => "sampled",
            Rule::Program => "program-forward",
        }
    }

    /// The inverse of [`Rule::as_str`].
    pub fn parse(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`portfolio`] runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ListConfig {
    /// Compute slowdown while a collective runs (>= 1; 1 = none), for the list schedules'
    /// clock and the candidates' simulation.
    pub contention: f64,
    /// Seed of [`Rule::Sampled`].
    pub seed: u64,
    /// List schedules [`Rule::Sampled`] draws.
    pub samples: usize,
    /// The rules, in the order they run (the first always runs).
    pub rules: Vec<Rule>,
    /// A memory budget (bytes, resident bytes included; see [`crate::memory`]), or `None`.
    /// Under a budget, forward list schedules start an op only when its buffers fit (see
    /// "Memory" in the module docs) and candidates within the budget come before the others.
    pub memory_budget: Option<u64>,
}

impl Default for ListConfig {
    /// No contention, seed 0, 16 samples, [`Rule::DEFAULT`].
    fn default() -> Self {
        ListConfig {
            contention: 1.0,
            seed: 0,
            samples: 16,
            rules: Rule::DEFAULT.to_vec(),
            memory_budget: None,
        }
    }
}

/// One rule's plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The rule.
    pub rule: Rule,
    /// Its plan.
    pub plan: StreamPlan,
    /// The plan's simulated makespan with [`ListConfig::contention`] (ns).
    pub makespan_ns: u64,
    /// The plan's memory peak (bytes, resident included), as [`crate::memory::profile`]
    /// counts it on its simulated timeline.
    pub peak_bytes: u64,
}

/// Which way a list schedule places ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the start of the step: an op is ready once its producers have finished.
    Forward,
    /// From the end, on the reversed graph: an op is ready once its consumers are placed.
    Backward,
}

/// One list schedule of `graph` (see the module docs): each free stream starts its ready op of
/// highest `priority` (larger first; ties to the earlier op in program order, or the later in
/// a backward schedule), time running as in [`simulate`] with `contention`.
///
/// Errors: [`GraphError::InvalidPlan`] when `durations` or `priority` does not have one entry
/// per op, or `contention` is not a finite number >= 1.
pub fn list_schedule(
    graph: &Graph,
    durations: &[u64],
    priority: &[u64],
    direction: Direction,
    contention: f64,
) -> Result<StreamPlan, GraphError> {
    let slowed = check(graph, durations, contention)?;
    if priority.len() != graph.len() {
        return Err(invalid(format!(
            "list_schedule: {} priorities for {} ops",
            priority.len(),
            graph.len()
        )));
    }
    let net = Net::new(graph);
    let s = run(&net, durations, priority, direction, false, slowed)?;
    net.plan(graph, &forward_orders(s.orders, direction))
}

/// Forward-backward improvement of `plan` (see the module docs): the best plan found and its
/// simulated makespan with `contention`, never worse than `plan`'s. `stop` is polled before
/// each round.
///
/// Errors: those of [`simulate`] for `plan` (it must be valid for `graph`), and
/// [`GraphError::InvalidPlan`] for `durations` or `contention` as in [`list_schedule`].
pub fn justify(
    graph: &Graph,
    durations: &[u64],
    plan: &StreamPlan,
    contention: f64,
    stop: &dyn Fn() -> bool,
) -> Result<(StreamPlan, u64), GraphError> {
    let slowed = check(graph, durations, contention)?;
    let timeline = simulate(graph, plan, durations, contention)?;
    let net = Net::new(graph);
    let orders: Vec<Vec<usize>> = net
        .streams
        .iter()
        .map(|s| {
            plan.streams
                .iter()
                .find(|(t, _)| t == s)
                .map(|(_, o)| o.iter().map(|o| o.0).collect())
                .unwrap_or_default()
        })
        .collect();
    let start = Schedule {
        peak: crate::memory::profile(graph, &timeline)?.transient_peak_bytes(),
        waits: Vec::new(),
        end: timeline.end,
        orders,
        makespan: timeline.makespan,
    };
    let floor = Priorities::new(durations).floor(&net);
    let best = improve(&net, durations, start, floor, slowed, stop)?;
    if best.makespan >= timeline.makespan {
        return Ok((plan.clone(), timeline.makespan));
    }
    Ok((net.plan_of(graph, &best)?, best.makespan))
}

/// Runs every rule of `config` (see the module docs) and returns one candidate per rule run,
/// best first (ties in the config's order). Each candidate's makespan is its plan's
/// [`simulate`] makespan with [`ListConfig::contention`] (computed by the event loop that
/// built the plan, which times a plan exactly as the simulator does; the tests check that the
/// two agree), and every plan has passed [`StreamPlan::new`]'s checks. `stop` is polled
/// between rules and between samples and rounds; once it says true, the candidates found so
/// far are returned (the first rule always runs).
///
/// Errors: [`GraphError::InvalidPlan`] for `durations` or `contention` as in
/// [`list_schedule`], or a config without rules.
pub fn portfolio(
    graph: &Graph,
    durations: &[u64],
    config: &ListConfig,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<Candidate>, GraphError> {
    let slowed = check(graph, durations, config.contention)?;
    if config.rules.is_empty() {
        return Err(invalid("list::portfolio: the config names no rule".into()));
    }
    let mut net = Net::new(graph);
    if let Some(budget) = config.memory_budget {
        net.limit = budget.saturating_sub(graph.resident_bytes());
    }
    let mut p = Priorities::new(durations);
    let mut found: Vec<(Rule, Schedule)> = Vec::new();
    // Under a memory budget, program order started as early as memory allows comes first:
    // the plan closest to the one order known to fit (at a budget of 100 %).
    let rules: Vec<Rule> = match config.memory_budget {
        Some(_) if !config.rules.contains(&Rule::Program) => std::iter::once(Rule::Program)
            .chain(config.rules.iter().copied())
            .collect(),
        _ => config.rules.clone(),
    };
    for (i, &rule) in rules.iter().enumerate() {
        if i > 0 && stop() {
            break;
        }
        let s = match rule {
            Rule::CriticalPath => forward(&net, durations, p.bottom(&net), false, slowed)?,
            Rule::Program => program_windowed(&net, durations, slowed)?,
            Rule::CommFifo => forward(&net, durations, p.bottom(&net), true, slowed)?,
            Rule::EnergyTail => forward(&net, durations, p.energy(&net), false, slowed)?,
            Rule::CommWeighted => forward(&net, durations, p.weighted(&net), false, slowed)?,
            Rule::Backward => {
                let b = run(
                    &net,
                    durations,
                    p.top(&net),
                    Direction::Backward,
                    false,
                    slowed,
                )?;
                replay(
                    &net,
                    durations,
                    forward_orders(b.orders, Direction::Backward),
                    slowed,
                )?
            }
            Rule::Justified => justified(&net, durations, &mut p, &found, slowed, stop)?,
            Rule::Sampled => {
                let incumbent = found.iter().map(|(_, s)| net.key(s)).min();
                let settled = incumbent.is_some_and(|(over, m)| !over && m <= p.floor(&net));
                sampled(&net, durations, &mut p, config, settled, slowed, stop)?
            }
        };
        found.push((rule, s));
    }
    candidates(graph, &net, &found, config)
}

/// A forward schedule by priority `prio`. Under a budget, one over it is run again with a soft
/// limit at 0.9 of the budget's room (XLA's retry), and the better of the two kept.
fn forward(
    net: &Net,
    durations: &[u64],
    prio: &[u64],
    fifo: bool,
    slowed: u64,
) -> Result<Schedule, GraphError> {
    let s = run(net, durations, prio, Direction::Forward, fifo, slowed)?;
    if net.limit == u64::MAX || !net.over(&s) {
        return Ok(s);
    }
    net.soft.set(net.limit / 10 * 9);
    let retry = run(net, durations, prio, Direction::Forward, fifo, slowed);
    net.soft.set(u64::MAX);
    let retry = retry?;
    Ok(if net.key(&retry) < net.key(&s) {
        retry
    } else {
        s
    })
}

/// Program order. Over the budget even with the soft limit: ops may start only within a window
/// of program positions past the earliest op not started (as Inductor's passes move ops a
/// bounded distance), narrower each time.
fn program_windowed(net: &Net, durations: &[u64], slowed: u64) -> Result<Schedule, GraphError> {
    let program: Vec<u64> = (0..net.len()).map(|v| (net.len() - v) as u64).collect();
    let mut best = forward(net, durations, &program, false, slowed)?;
    for w in PROGRAM_WINDOWS {
        if !net.over(&best) {
            break;
        }
        net.window.set(w);
        let s = forward(net, durations, &program, false, slowed);
        net.window.set(usize::MAX);
        let s = s?;
        if net.key(&s) < net.key(&best) {
            best = s;
        }
    }
    Ok(best)
}

/// Justification of the schedules `found` so far, best first (of a critical-path schedule when
/// there are none); the best result.
fn justified(
    net: &Net,
    durations: &[u64],
    p: &mut Priorities<'_>,
    found: &[(Rule, Schedule)],
    slowed: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Schedule, GraphError> {
    let mut starts: Vec<&Schedule> = found.iter().map(|(_, s)| s).collect();
    starts.sort_by_key(|s| net.key(s));
    let first;
    if starts.is_empty() {
        first = forward(net, durations, p.bottom(net), false, slowed)?;
        starts.push(&first);
    }
    let floor = p.floor(net);
    let mut best: Option<Schedule> = None;
    for (k, start) in starts.iter().enumerate() {
        // A plan at the floor is optimal: no other start can do better.
        let settled = |b: &Schedule| b.makespan <= floor && !net.over(b);
        if k > 0 && (stop() || best.as_ref().is_some_and(settled)) {
            break;
        }
        if starts[..k].iter().any(|s| s.orders == start.orders) {
            continue;
        }
        let j = improve(net, durations, (*start).clone(), floor, slowed, stop)?;
        if best.as_ref().is_none_or(|b| net.key(&j) < net.key(b)) {
            best = Some(j);
        }
    }
    best.ok_or_else(|| invalid("list::portfolio: nothing to justify".into()))
}

/// One candidate per schedule `found`, best first: in the budget before over it, then by
/// makespan (ties in the order found).
fn candidates(
    graph: &Graph,
    net: &Net,
    found: &[(Rule, Schedule)],
    config: &ListConfig,
) -> Result<Vec<Candidate>, GraphError> {
    let mut out: Vec<Candidate> = Vec::with_capacity(found.len());
    for (i, (rule, s)) in found.iter().enumerate() {
        // Rules often agree: build each distinct plan once.
        let same = found[..i]
            .iter()
            .position(|(_, t)| t.orders == s.orders && t.waits == s.waits);
        let plan = match same {
            Some(j) => out[j].plan.clone(),
            // The event loop that timed the orders is the simulator's (tests check that the
            // two agree); `StreamPlan::new` checks the plan.
            None => net.plan_of(graph, s)?,
        };
        out.push(Candidate {
            rule: *rule,
            plan,
            makespan_ns: s.makespan,
            peak_bytes: graph.resident_bytes().saturating_add(s.peak),
        });
    }
    let budget = config.memory_budget.unwrap_or(u64::MAX);
    out.sort_by_key(|c| (c.peak_bytes > budget, c.makespan_ns));
    Ok(out)
}

/// Memory repair of `plan` under `budget_bytes` (resident included; see
/// [`crate::memory`]): while the plan's simulated timeline goes over the budget, the op whose
/// start first takes it over (the largest, when several start then) is delayed by one
/// position in its stream's FIFO order, past the next op of that stream that does not read
/// it; a move is kept only when it lowers the excess (the peak above the budget, then a later
/// first excess), else the next op starting then is tried. It stops within the budget, when
/// no op can move, after `max_moves` simulations or when `stop` says so. Returns the plan
/// within the budget and its makespan, or `None`. A local search in the spirit of the
/// delay-based repairs of list schedules under memory (the "memory pressure" rules of XLA's
/// latency-hiding scheduler act at choice time instead). Cost: one plan and one simulation
/// per move, O(max_moves (ops + deps) log ops).
///
/// Errors: those of [`simulate`] for `plan` and `durations`.
pub fn repair_memory(
    graph: &Graph,
    plan: &StreamPlan,
    durations: &[u64],
    contention: f64,
    budget_bytes: u64,
    max_moves: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Option<(StreamPlan, u64)>, GraphError> {
    repair::repair(
        graph,
        plan,
        durations,
        contention,
        budget_bytes,
        max_moves,
        stop,
    )
}

fn invalid(reason: String) -> GraphError {
    GraphError::InvalidPlan { reason }
}

/// Checks the durations and the contention factor; returns the slowed rate.
fn check(graph: &Graph, durations: &[u64], contention: f64) -> Result<u64, GraphError> {
    if durations.len() != graph.len() {
        return Err(invalid(format!(
            "list scheduling: {} durations for {} ops",
            durations.len(),
            graph.len()
        )));
    }
    // Times of the event loop, as the simulator's, fit a u64 within the horizon.
    crate::horizon::horizon(graph, durations)?;
    if !(contention.is_finite() && contention >= 1.0) {
        return Err(invalid(format!(
            "list scheduling: the contention factor must be finite and at least 1, not {contention}"
        )));
    }
    Ok(((UNITS as f64 / contention).round() as u64).max(1))
}

/// Biased random sampling (see the module docs); one sample, not justified, when `settled`
/// (an earlier rule's plan is at the floor, so optimal).
fn sampled(
    net: &Net,
    d: &[u64],
    p: &mut Priorities<'_>,
    config: &ListConfig,
    settled: bool,
    slowed: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Schedule, GraphError> {
    const SPREAD: [f64; 4] = [0.05, 0.1, 0.2, 0.4];
    let bases = [
        (p.top(net).to_vec(), Direction::Backward),
        (p.energy(net).to_vec(), Direction::Forward),
    ];
    let floor = p.floor(net);
    let mut kept: Vec<((bool, u64), usize, Schedule)> = Vec::new();
    for i in 0..config.samples.max(1) {
        if i > 0 && (settled || stop() || (!kept[0].0 .0 && kept[0].0 .1 <= floor)) {
            break;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
        rng.set_stream(i as u64);
        let a = SPREAD[(i / bases.len()) % SPREAD.len()];
        let (base, direction) = &bases[i % bases.len()];
        let prio: Vec<u64> = base
            .iter()
            .map(|&b| b.saturating_add((b as f64 * a * rng.random::<f64>()) as u64))
            .collect();
        let s = run(net, d, &prio, *direction, false, slowed)?;
        let s = match direction {
            Direction::Forward => s,
            Direction::Backward => replay(net, d, forward_orders(s.orders, *direction), slowed)?,
        };
        kept.push((net.key(&s), i, s));
        kept.sort_by_key(|k| (k.0, k.1));
        kept.truncate(SAMPLES_JUSTIFIED);
    }
    let mut best: Option<Schedule> = None;
    for (_, _, s) in kept {
        let j = if settled {
            s
        } else {
            improve(net, d, s, floor, slowed, stop)?
        };
        if best.as_ref().is_none_or(|b| net.key(&j) < net.key(b)) {
            best = Some(j);
        }
    }
    best.ok_or_else(|| invalid("list::portfolio: no sample was drawn".into()))
}

#[cfg(test)]
mod tests;
