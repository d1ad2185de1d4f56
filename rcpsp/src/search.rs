//! The schedule-generation heuristic solver (`sgs`): priority rules, regret-biased sampling
//! and a genetic algorithm over activity lists, every schedule justified (forward-backward
//! improvement).
//!
//! 1. **Rules.** Every priority rule of [`crate::priority::Rule`] (but random keys) through the
//!    serial and the parallel SGS, each justified. The best is the first incumbent.
//! 2. **Population.** Activity lists drawn by regret-based biased random sampling on LFT
//!    priorities, decoded by the serial SGS and justified; each list is replaced by the start
//!    order of its justified schedule (Lamarckian), so the population stores improved lists.
//! 3. **Generations.** Parents are paired at random; the two-point crossover of Hartmann
//!    (Naval Research Logistics 45, 1998) gives two children (it keeps lists
//!    precedence-feasible); each child gets an adjacent-swap mutation; children are decoded and
//!    justified; the best individuals of parents and children survive, without duplicates
//!    (ranking selection). After many generations without a new best, all but the elite are
//!    drawn afresh.
//!
//! It stops when the makespan meets the lower bound (status `Optimal`), at the time limit, at
//! the configured number of generated schedules or at [`Limits::work_limit`] (the smaller of
//! the two), when cancelled, or when it stalls ([`StallStop`], status `Feasible(Exhausted)`):
//! by default, a run without a schedule budget stops once it has gone `max(1 000, 50 n, S)`
//! schedules without a better one, `S` being the schedules it took to find the current best
//! (it has then waited as long as its whole history of progress). A small problem that the
//! bound cannot close thus ends in milliseconds instead of spending its whole time limit, and
//! a long run that keeps improving keeps going. Every justification pass
//! counts as a generated schedule, as is usual when comparing on PSPLIB ("schedules" in
//! Kolisch & Hartmann, EJOR 174, 2006). With no time limit and no schedule budget the budget is
//! 50 000 schedules, the largest budget of that comparison.
//!
//! Deterministic: same problem, seed and budget, same schedule (and [`Outcome::work`], the
//! schedules generated). Under a time limit alone the result is the one the search reached
//! when the clock stopped it, and the population is sized from the rate measured on the
//! priority rules; with a schedule budget or a work limit, the clock decides nothing.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::bounds::lower_bound;
use crate::justify::Justifier;
use crate::priority::{list_from_priorities, priorities, Rule, Sampler};
use crate::problem::{ActivityId, Problem, Time};
use crate::schedule::Schedule;
use crate::sgs::Decoder;
use crate::solver::{verified, Clock, Limits, Outcome, SolveError, Solver, Status, StopReason};

/// Configuration of the heuristic solver.
#[derive(Clone, Debug, PartialEq)]
pub struct HeuristicConfig {
    /// Number of activity lists kept by the genetic algorithm. `None`: sized from the budget,
    /// one list per [`SCHEDULES_PER_LIST`] schedules the run is expected to generate (a
    /// schedule budget, or the rate measured on the priority rules times the time left),
    /// within [`AUTO_POPULATION`]. Larger populations keep more diversity; on j60 at 1 s
    /// (about 200 000 schedules), 500 lists gave 48.2 % above the critical path on the 83
    /// hardest instances, against 49.7 % with the 40 of Hartmann (1998). Always capped so that
    /// the lists hold at most [`MAX_LIST_ENTRIES`] activities.
    pub population: Option<usize>,
    /// Probability that a list position swaps with the next one (if they are not related by
    /// a precedence).
    pub mutation: f64,
    /// Exponent of the regret-based sampling weights.
    pub alpha: f64,
    /// Generations without a new best before the population is drawn afresh.
    pub restart_after: usize,
    /// Individuals kept at a restart.
    pub elite: usize,
    /// Budget of generated schedules. `None`: [`Limits::work_limit`], else until the time
    /// limit, else 50 000. With both, the smaller.
    pub max_schedules: Option<u64>,
    /// Justification rounds per schedule (0 turns it off).
    pub justify_rounds: usize,
    /// When the search stops for lack of progress (default [`StallStop::Auto`]).
    pub stall: StallStop,
}

/// When the heuristic stops because it no longer finds better schedules (see the module
/// docs). A stall stop is [`StopReason::Exhausted`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StallStop {
    /// Without a schedule budget ([`HeuristicConfig::max_schedules`] and
    /// [`Limits::work_limit`] both unset): after `max(1 000, 50 n, S)` schedules without a
    /// better one, `n` the activities and `S` the schedules generated when the current best
    /// was found, and, under a time limit `T`, once the time without a better one is also at
    /// least `T n / (n + 32)` ([`STALL_TIME_HALF_AT`]): a sixth of `T` at 7 activities, a
    /// half at 32, two thirds at 62, so that a small hopeless instance still ends early while
    /// what the time limit buys on a larger one is kept. With a budget: never (the caller
    /// asked for that many schedules, which keeps the result a function of the budget).
    #[default]
    Auto,
    /// After this many schedules without a better one, budget or not.
    After(u64),
    /// Never: only the bound, the budget, the time limit and the cancel flag stop it.
    Never,
}

/// The fewest schedules without a better one before [`StallStop::Auto`] stops a search.
pub const STALL_FLOOR: u64 = 1_000;
/// [`StallStop::Auto`] waits at least this many schedules per activity.
pub const STALL_PER_ACTIVITY: u64 = 50;
/// Under a time limit `T`, [`StallStop::Auto`] also waits `T n / (n + STALL_TIME_HALF_AT)`
/// without a better schedule (`n` the activities): half the limit at this many activities.
/// Measured with `concerto bench psplib --solver sgs --time-limit 1 --jobs 2`: a wait of
/// `max(1 000, 50 n, S)` schedules alone left j30 at 0.41 % above the best known and j60 at
/// 11.59 % above the critical path; with half the limit at 64 activities j60 was at 10.74 %,
/// at 32 it is at 10.72 % (10.69 % when every run takes its whole second).
pub const STALL_TIME_HALF_AT: u64 = 32;

/// Expected schedules per list of an automatic population.
pub const SCHEDULES_PER_LIST: u64 = 450;
/// Bounds of an automatic population.
pub const AUTO_POPULATION: (usize, usize) = (30, 600);
/// Most activity entries held by the population's lists (about 32 MB of them).
pub const MAX_LIST_ENTRIES: usize = 4_000_000;

impl Default for HeuristicConfig {
    fn default() -> Self {
        Self {
            population: None,
            mutation: 0.05,
            alpha: 1.0,
            restart_after: 60,
            elite: 4,
            max_schedules: None,
            justify_rounds: 3,
            stall: StallStop::Auto,
        }
    }
}

/// The default schedule budget without a time limit.
pub const DEFAULT_SCHEDULE_BUDGET: u64 = 50_000;

/// The heuristic solver, registered as `sgs`. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct Heuristic {
    /// Its configuration.
    pub config: HeuristicConfig,
}

impl Heuristic {
    /// The solver with a configuration.
    pub fn new(config: HeuristicConfig) -> Self {
        Self { config }
    }
}

impl Solver for Heuristic {
    fn name(&self) -> &str {
        "sgs"
    }

    fn solve(&self, problem: &Problem, limits: &Limits) -> Result<Outcome, SolveError> {
        limits.validate(problem)?;
        if let Some(p) = self.config.population.filter(|&p| p < 2) {
            return Err(SolveError::InvalidLimits {
                reason: format!("the population must hold at least 2 lists, got {p}"),
            });
        }
        let clock = limits.clock();
        let bound = lower_bound(problem).value;
        if crate::temporal::window_conflict(problem).is_some() {
            // Some time window cannot be met even without resources.
            return Ok(Outcome {
                status: Status::Infeasible,
                schedule: None,
                makespan: None,
                lower_bound: bound,
                solver: self.name().to_owned(),
                elapsed: clock.elapsed(),
                work: 0,
            });
        }
        let reversed = problem.reversed();
        let mut search = Search::new(problem, &reversed, &self.config, limits, &clock, bound);
        let reason = search.run(limits.initial.as_ref());
        if search.best_starts.is_empty() {
            // Every schedule generated missed a deadline.
            return Ok(Outcome {
                status: Status::Unknown(reason),
                schedule: None,
                makespan: None,
                lower_bound: search.lower_bound,
                solver: self.name().to_owned(),
                elapsed: clock.elapsed(),
                work: search.generated,
            });
        }
        let outcome = Outcome::with_schedule(
            problem,
            Schedule::new(search.best_starts.clone()),
            search.lower_bound,
            reason,
            self.name(),
            clock.elapsed(),
            search.generated,
        );
        verified(problem, outcome)
    }
}

/// What a schedule costs: total lateness past deadlines first, then makespan.
type Cost = (Time, Time);

#[derive(Clone, Debug)]
struct Individual {
    list: Vec<ActivityId>,
    cost: Cost,
    key: u64,
}

struct Search<'p> {
    problem: &'p Problem,
    config: &'p HeuristicConfig,
    clock: &'p Clock,
    forward: Decoder<'p>,
    justifier: Justifier<'p>,
    rng: ChaCha8Rng,
    lower_bound: Time,
    budget: u64,
    generated: u64,
    /// Schedules generated when the current best was found.
    improved_at: u64,
    /// The clock when the current best was found.
    improved_time: std::time::Duration,
    /// Under a time limit, the least time without a better schedule before the automatic
    /// stall stop (see [`StallStop::Auto`]); zero otherwise.
    stall_time: std::time::Duration,
    /// The stall rule in force: `None` (never), or the floor of stale schedules and whether
    /// it grows with `improved_at` (see [`StallStop`]).
    stall: Option<(u64, bool)>,
    best: Time,
    best_starts: Vec<Time>,
    /// Whether the problem has release dates or deadlines: no justification then, and
    /// schedules that miss a deadline never count as found.
    windows: bool,
    sampler: Sampler,
    lft: Vec<i64>,
    /// Position of each activity in the list being mutated, and a mark for crossover.
    taken: Vec<bool>,
    /// The clock when the search began (after the bounds), for the rate of schedules.
    began: std::time::Duration,
}

/// Why the search must stop.
enum Stop {
    Proven,
    Reason(StopReason),
}

impl<'p> Search<'p> {
    fn new(
        problem: &'p Problem,
        reversed: &'p Problem,
        config: &'p HeuristicConfig,
        limits: &Limits,
        clock: &'p Clock,
        lower_bound: Time,
    ) -> Self {
        // A work budget caps the configured one; alone, it is the budget.
        let budget = match (config.max_schedules, limits.work_limit) {
            (Some(m), Some(w)) => m.min(w),
            (Some(m), None) => m,
            (None, Some(w)) => w,
            (None, None) if limits.time_limit.is_some() => u64::MAX,
            (None, None) => DEFAULT_SCHEDULE_BUDGET,
        };
        let stall = match config.stall {
            StallStop::Auto if config.max_schedules.is_none() && limits.work_limit.is_none() => {
                let n = problem.len() as u64;
                Some((STALL_FLOOR.max(STALL_PER_ACTIVITY.saturating_mul(n)), true))
            }
            StallStop::Auto | StallStop::Never => None,
            StallStop::After(k) => Some((k, false)),
        };
        let stall_time = match (stall, clock.limit()) {
            (Some((_, true)), Some(t)) => {
                let n = problem.len() as u64;
                t.mul_f64(n as f64 / (n + STALL_TIME_HALF_AT) as f64)
            }
            _ => std::time::Duration::ZERO,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(limits.seed);
        let lft = priorities(problem, Rule::Lft, &mut rng);
        Self {
            problem,
            config,
            clock,
            forward: Decoder::new(problem),
            justifier: Justifier::new(problem, reversed),
            rng,
            lower_bound,
            budget,
            generated: 0,
            improved_at: 0,
            improved_time: clock.elapsed(),
            stall_time,
            stall,
            best: Time::MAX,
            best_starts: Vec::new(),
            windows: problem.has_time_windows(),
            sampler: Sampler::default(),
            lft,
            taken: vec![false; problem.len()],
            began: clock.elapsed(),
        }
    }

    fn should_stop(&self) -> Option<Stop> {
        if self.best <= self.lower_bound {
            return Some(Stop::Proven);
        }
        if self.generated >= self.budget {
            return Some(Stop::Reason(StopReason::WorkLimit));
        }
        if let Some((floor, grows)) = self.stall {
            let limit = if grows {
                floor.max(self.improved_at)
            } else {
                floor
            };
            if self.generated - self.improved_at >= limit
                && (self.stall_time.is_zero()
                    || self.clock.elapsed() - self.improved_time >= self.stall_time)
            {
                return Some(Stop::Reason(StopReason::Exhausted));
            }
        }
        self.clock.should_stop().map(Stop::Reason)
    }

    /// Justifies the schedule in `forward` (without time windows), records it if it is the
    /// best on-time schedule, and returns its cost: (lateness, makespan).
    fn finish_schedule(&mut self) -> Cost {
        self.generated += 1;
        let rounds = if self.windows {
            0
        } else {
            self.config.justify_rounds
        };
        let (m, generated) = self.justifier.justify(&mut self.forward, rounds);
        self.generated += generated;
        let late = if self.windows {
            self.forward.lateness()
        } else {
            0
        };
        if late == 0 && m < self.best {
            self.improved_at = self.generated;
            self.improved_time = self.clock.elapsed();
            self.best = m;
            self.best_starts.clear();
            self.best_starts.extend_from_slice(self.forward.starts());
        }
        (late, m)
    }

    /// Decodes `list` with the serial SGS, justifies it, and rewrites `list` as the start
    /// order of the result.
    fn evaluate(&mut self, list: &mut [ActivityId]) -> (Cost, u64) {
        self.forward.serial(list);
        let m = self.finish_schedule();
        let starts = self.forward.starts();
        let problem = self.problem;
        // Start order; ties by finish, then by the current list position (stable sort), which
        // keeps zero-duration chains in precedence order.
        list.sort_by_key(|a| (starts[a.index()], starts[a.index()] + problem.duration(*a)));
        let mut key: u64 = 0xcbf2_9ce4_8422_2325;
        for a in list.iter() {
            key = (key ^ a.index() as u64).wrapping_mul(0x0100_0000_01b3);
        }
        (m, key)
    }

    fn individual(&mut self, mut list: Vec<ActivityId>) -> Individual {
        let (cost, key) = self.evaluate(&mut list);
        Individual { list, cost, key }
    }

    fn run(&mut self, initial: Option<&Schedule>) -> StopReason {
        let problem = self.problem;
        if let Some(s) = initial {
            let mut list = s.order_by_start(problem);
            self.evaluate(&mut list);
        }
        for rule in Rule::ALL {
            if rule == Rule::RandomKeys {
                continue;
            }
            let values = priorities(problem, rule, &mut self.rng);
            let mut list = list_from_priorities(problem, &values);
            self.evaluate(&mut list);
            self.forward.parallel(&values);
            self.finish_schedule();
            if let Some(stop) = self.should_stop() {
                return self.reason(stop);
            }
        }
        let size = self.population_size();
        let mut population = Vec::with_capacity(2 * size);
        if let Some(stop) = self.fill(&mut population, size) {
            return self.reason(stop);
        }
        let mut stale = 0;
        loop {
            let before = self.best;
            if let Some(stop) = self.generation(&mut population) {
                return self.reason(stop);
            }
            stale = if self.best < before { 0 } else { stale + 1 };
            if stale >= self.config.restart_after {
                stale = 0;
                population.truncate(self.config.elite.max(1));
                if let Some(stop) = self.fill(&mut population, size) {
                    return self.reason(stop);
                }
            }
        }
    }

    /// The population size: configured, or from the expected number of schedules.
    fn population_size(&self) -> usize {
        let memory_cap = (MAX_LIST_ENTRIES / self.problem.len().max(1)).max(2);
        let size = self.config.population.unwrap_or_else(|| {
            let expected = if self.budget < u64::MAX {
                self.budget.saturating_sub(self.generated)
            } else {
                // Rate on the rules phase times the time left. The rate must not count the
                // bounds computed before the search (the energetic bound takes milliseconds,
                // as long as the rules phase itself on j60, and halved the population).
                let elapsed = self
                    .clock
                    .elapsed()
                    .saturating_sub(self.began)
                    .as_secs_f64()
                    .max(1e-6);
                let left = self.clock.remaining().map_or(0.0, |d| d.as_secs_f64());
                (self.generated as f64 / elapsed * left) as u64
            };
            let (lo, hi) = AUTO_POPULATION;
            usize::try_from(expected / SCHEDULES_PER_LIST)
                .unwrap_or(hi)
                .clamp(lo, hi)
        });
        size.min(memory_cap)
    }

    fn reason(&self, stop: Stop) -> StopReason {
        match stop {
            // `Outcome::with_schedule` reports Optimal when the bound is met.
            Stop::Proven => StopReason::Exhausted,
            Stop::Reason(r) => r,
        }
    }

    /// Draws new lists until the population holds `size`.
    fn fill(&mut self, population: &mut Vec<Individual>, size: usize) -> Option<Stop> {
        let mut list = Vec::with_capacity(self.problem.len());
        while population.len() < size {
            self.sampler.sample_list(
                self.problem,
                &self.lft,
                self.config.alpha,
                &mut self.rng,
                &mut list,
            );
            let ind = self.individual(list.clone());
            if !population.iter().any(|p| p.key == ind.key) {
                population.push(ind);
            }
            if let Some(stop) = self.should_stop() {
                return Some(stop);
            }
        }
        population.sort_by_key(|i| i.cost);
        None
    }

    fn generation(&mut self, population: &mut Vec<Individual>) -> Option<Stop> {
        let size = population.len();
        let mut order: Vec<usize> = (0..size).collect();
        order.shuffle(&mut self.rng);
        let mut children = Vec::with_capacity(size);
        for pair in order.chunks_exact(2) {
            let (m, f) = (&population[pair[0]].list, &population[pair[1]].list);
            let n = m.len();
            let q1 = self.rng.random_range(0..=n);
            let q2 = self.rng.random_range(q1..=n);
            let mut daughter = crossover(m, f, q1, q2, &mut self.taken);
            let mut son = crossover(f, m, q1, q2, &mut self.taken);
            self.mutate(&mut daughter);
            self.mutate(&mut son);
            children.push(self.individual(daughter));
            if let Some(stop) = self.should_stop() {
                return Some(stop);
            }
            children.push(self.individual(son));
            if let Some(stop) = self.should_stop() {
                return Some(stop);
            }
        }
        // Children first so that, on equal costs, new lists replace old ones.
        children.append(population);
        children.sort_by_key(|i| i.cost);
        for ind in children {
            if population.len() == size {
                break;
            }
            if !population.iter().any(|p| p.key == ind.key) {
                population.push(ind);
            }
        }
        None
    }

    fn mutate(&mut self, list: &mut [ActivityId]) {
        if list.len() < 2 {
            return;
        }
        for k in 0..list.len() - 1 {
            if self.rng.random_bool(self.config.mutation) {
                let (a, b) = (list[k], list[k + 1]);
                if !self
                    .problem
                    .successors(a)
                    .iter()
                    .any(|arc| arc.activity == b)
                {
                    list.swap(k, k + 1);
                }
            }
        }
    }
}

/// Two-point crossover (Hartmann 1998): positions `[0, q1)` from `first`, `[q1, q2)` the
/// activities of `second` not yet taken in its order, the rest those of `first` not yet taken.
/// Precedence-feasible when both parents are.
fn crossover(
    first: &[ActivityId],
    second: &[ActivityId],
    q1: usize,
    q2: usize,
    taken: &mut [bool],
) -> Vec<ActivityId> {
    let n = first.len();
    taken.iter_mut().for_each(|t| *t = false);
    let mut child = Vec::with_capacity(n);
    for &a in &first[..q1] {
        child.push(a);
        taken[a.index()] = true;
    }
    let mut from_second = second.iter();
    while child.len() < q2 {
        let a = *from_second
            .next()
            .expect("second parent holds every activity");
        if !taken[a.index()] {
            child.push(a);
            taken[a.index()] = true;
        }
    }
    for &a in first {
        if !taken[a.index()] {
            child.push(a);
            taken[a.index()] = true;
        }
    }
    child
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::problem::ProblemBuilder;
    use crate::sgs::ActivityList;

    fn instance() -> Problem {
        // A small instance where the serial SGS with a bad list is far from optimal.
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 3);
        let s = b.resource("s", 2);
        let ids: Vec<_> = (0..12)
            .map(|k| b.activity(format!("a{k}"), 1 + (k * 7 % 5) as Time))
            .collect();
        for (k, &a) in ids.iter().enumerate() {
            b.demand(a, r, 1 + (k % 3) as u32);
            b.demand(a, s, (k % 2) as u32 + 1);
        }
        for k in 0..12 {
            if k + 3 < 12 {
                b.precedence(ids[k], ids[k + 3]);
            }
        }
        b.build().unwrap()
    }

    #[test]
    fn crossover_keeps_lists_feasible() {
        let p = instance();
        let a: Vec<_> = p.topological_order().to_vec();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let values = priorities(&p, Rule::RandomKeys, &mut rng);
        let b = list_from_priorities(&p, &values);
        let mut taken = vec![false; p.len()];
        for q1 in 0..=p.len() {
            for q2 in q1..=p.len() {
                ActivityList::new(&p, crossover(&a, &b, q1, q2, &mut taken)).unwrap();
            }
        }
    }

    #[test]
    fn deterministic_for_a_seed_and_budget() {
        let p = instance();
        let solver = Heuristic::new(HeuristicConfig {
            max_schedules: Some(3000),
            ..HeuristicConfig::default()
        });
        let limits = Limits::default().seed(11);
        let a = solver.solve(&p, &limits).unwrap();
        let b = solver.solve(&p, &limits).unwrap();
        assert_eq!(a.schedule, b.schedule);
        let m = check(&p, a.schedule.as_ref().unwrap()).unwrap();
        assert_eq!(Some(m), a.makespan);
        assert!(a.lower_bound <= m);
        if a.status != Status::Optimal {
            assert_eq!(a.status, Status::Feasible(StopReason::WorkLimit));
        }
    }

    #[test]
    fn a_work_limit_gives_the_same_outcome_under_load() {
        use crate::generate::{project, Project};
        use crate::test_support::{assert_same, under_load};
        let p = project(&Project::with_size(90, 1));
        // The time limit is a safety net: the population is sized from the budget, not from
        // the rate of the machine.
        let limits = Limits::with_time_limit(std::time::Duration::from_secs(60))
            .work_limit(4_000)
            .seed(3);
        let solver = Heuristic::default();
        let a = solver.solve(&p, &limits).unwrap();
        let b = solver.solve(&p, &limits).unwrap();
        let c = under_load(|| solver.solve(&p, &limits).unwrap());
        assert_eq!(a.status, Status::Feasible(StopReason::WorkLimit));
        assert!(a.work >= 4_000, "{}", a.work);
        assert_same(&a, &b);
        assert_same(&a, &c);
    }

    /// Seven activities: three (demand 2 of 3) pairwise exclude each other, which the bounds
    /// do not see, beside a chain of four on another resource. The bounds say at most 4 and
    /// the optimum is 6, so no run can prove it.
    fn unprovable() -> Problem {
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 3);
        let s = b.resource("s", 1);
        for k in 0..3 {
            let a = b.activity(format!("wide{k}"), 2);
            b.demand(a, r, 2);
        }
        let mut previous = None;
        for k in 0..4 {
            let a = b.activity(format!("thin{k}"), 1);
            b.demand(a, s, 1);
            if let Some(p) = previous {
                b.precedence(p, a);
            }
            previous = Some(a);
        }
        b.build().unwrap()
    }

    #[test]
    fn a_stalled_search_stops_long_before_its_time_limit() {
        let p = unprovable();
        let limit = std::time::Duration::from_secs(4);
        let began = std::time::Instant::now();
        let outcome = Heuristic::default()
            .solve(&p, &Limits::with_time_limit(limit))
            .unwrap();
        assert!(began.elapsed() < limit);
        assert_eq!(outcome.status, Status::Feasible(StopReason::Exhausted));
        assert_eq!(outcome.makespan, Some(6));
        assert!(outcome.lower_bound < 6);
        // Under a time limit it waits a share of it that grows with the size: 7 / (7 + 32)
        // here, measured from the best found among the first schedules.
        let wait = limit.mul_f64(7.0 / (7 + STALL_TIME_HALF_AT) as f64);
        assert!(outcome.elapsed >= wait, "{:?}", outcome.elapsed);
        assert!(outcome.work >= STALL_FLOOR, "{}", outcome.work);
        // Without a time limit or a budget: the floor (1 000 stale schedules) alone.
        let outcome = Heuristic::default().solve(&p, &Limits::default()).unwrap();
        assert_eq!(outcome.status, Status::Feasible(StopReason::Exhausted));
        assert!(
            (STALL_FLOOR..2 * STALL_FLOOR).contains(&outcome.work),
            "{}",
            outcome.work
        );
        // A budget is spent whole, and `Never` waits for the budget too.
        for (stall, max_schedules) in [
            (StallStop::Auto, Some(3_000)),
            (StallStop::Never, Some(3_000)),
        ] {
            let solver = Heuristic::new(HeuristicConfig {
                stall,
                max_schedules,
                ..HeuristicConfig::default()
            });
            let outcome = solver.solve(&p, &Limits::default()).unwrap();
            assert_eq!(outcome.status, Status::Feasible(StopReason::WorkLimit));
            assert!(outcome.work >= 3_000);
        }
        let solver = Heuristic::new(HeuristicConfig {
            stall: StallStop::After(200),
            max_schedules: Some(3_000),
            ..HeuristicConfig::default()
        });
        let outcome = solver.solve(&p, &Limits::default()).unwrap();
        assert_eq!(outcome.status, Status::Feasible(StopReason::Exhausted));
        assert!(outcome.work < 1_000, "{}", outcome.work);
    }

    #[test]
    fn small_population_is_an_error() {
        let solver = Heuristic::new(HeuristicConfig {
            population: Some(1),
            ..HeuristicConfig::default()
        });
        assert!(matches!(
            solver.solve(&instance(), &Limits::default()),
            Err(SolveError::InvalidLimits { .. })
        ));
    }
}
