//! Contention inside the exact model: the time-indexed MILP of a [`ContendedProblem`]
//! (compute slowed beside collectives), and its solve on any good_lp backend.
//!
//! # Formulation
//! For a horizon `H`, with `ES_j` and `LS_j` the contention-free earliest and latest starts
//! (valid under contention, which only lengthens durations) and `LF_j = LS_j + d_j`:
//! - `Z_j(t)` "`j` has started by `t`", step binaries as in the time-indexed RCPSP model
//!   (module `time_indexed`), for `t` in `[ES_j, LS_j)`;
//! - for a slowed activity, `F_j(t)` "`j` has finished by `t`", step binaries for `t` in
//!   `[ES_j + d_j, LF_j)`, with `F_j(t) <= Z_j(t - d_j)` (it lasts at least its work); for the
//!   others `F_j(t) = Z_j(t - d_j)`;
//! - running in unit `[t, t + 1)`: `r_j(t) = Z_j(t) - F_j(t)`; precedence `i -> j` with lag
//!   `l`: `Z_j(t) <= F_i(t - l)`; resource `k` at `t`: `sum_j q_jk r_j(t) <= C_k`;
//! - `y(t)` in `[0, 1]`, some slowing activity runs at `t`: `y(t) >= r_x(t)` for each slowing
//!   `x`; the overlap `u_j(t) >= r_j(t) + y(t) - 1`, `u >= 0`, for a slowed `j`;
//! - the work of a slowed `j`: `sum_t r_j(t) - (1 - rate / 1000) u_j(t) >= d_j`: every unit it
//!   holds counts in full, less what a slowing activity beside it takes;
//! - the makespan `M >= ES_j + d_j + sum (1 - F_j(t))` (the finish), minimised;
//! - when activities start only at events ([`ContendedProblem::launched_at_events`], the
//!   simulator's launches): `Z_j(t) - Z_j(t - 1) <= sum_{i != j, d_i > 0} F_i(t) - F_i(t - 1)`
//!   for `t` not 0 nor `j`'s release (`j` starts at `t` only if something ends then), and the
//!   ends made exact: `y(t) <= sum_x r_x(t)`, `u <= r_j(t)`, `u <= y(t)`, and the work before
//!   the last unit `l_j(t) = F_j(t + 1) - F_j(t)` below `d_j` (less `1 / 1000`), with the
//!   product `l_j(t) y(t)` linearised the same way.
//!
//! A contended schedule with its ends satisfies every row, and a solution's starts make a
//! contended schedule whose ends are no later than the model's `F` (the work rows count no
//! more than is done; with the event rows, exactly the model's `F`): the model's optimum is the
//! contended optimum, exactly, at the problem's time unit. The independent
//! [`check_contended`] recomputes every end from the starts. Tested against the enumeration of
//! every start vector ([`concerto_rcpsp::contended::exhaustive`], 3,000 random problems with
//! and without the event rule once, 128 in the suite) and, in the tests crate, against the
//! graph simulator's plans.
//! Size: `sum (LS_j - ES_j)` start binaries plus as many finish binaries per slowed activity,
//! `H` continuous `y` and an overlap per slowed activity and unit: for windows with short
//! horizons (the time unit must be coarse), like the time-indexed RCPSP model.
//!
//! # Solve
//! The `sgs` heuristic schedules the problem with every slowed activity slowed throughout
//! ([`ContendedProblem::worst_case`], each of whose schedules is a contended one; with the
//! event rule it may start an activity between the realised ends, and then the activities
//! one at a time are the start), or the caller's [`Limits::initial`] if better; the model
//! then asks for a strictly better schedule (`H` = incumbent - 1), on every backend, where
//! "infeasible" proves the incumbent optimal. The lower bound is the contention-free
//! problem's ([`lower_bound`]), raised by the backend's dual bound.
//!
//! Sources: the step form and its strength are the time-indexed model's (Christofides,
//! Alvarez-Valdes & Tamarit 1987; Artigues 2017); the slowdown is the graph simulator's, after
//! the overlap of NCCL kernels with compute (the contention factor of `concerto-graph`'s
//! hardware model).

use concerto_rcpsp::temporal::{earliest_starts, latest_starts};
use concerto_rcpsp::{
    check_contended, lower_bound, verified_contended, Clock, ContendedProblem, Heuristic,
    HeuristicConfig, Limits, Outcome, Role, Schedule, SolveError, Solver, Status, Time, RATE_UNITS,
};
use good_lp::{variable, Expression, Variable};

use super::time_indexed::{add, Step, Steps};
use super::{verdict, Milp, Model, RawResult, RawStatus, RunOptions, StartsFrom, Verdict};

/// The step variables of a model: starts of every activity, finishes of the slowed ones.
struct Vars {
    z: Vec<Steps>,
    f: Vec<Option<Steps>>,
    durations: Vec<Time>,
}

impl Vars {
    /// `F_j(t)`.
    fn finished(&self, j: usize, t: Time) -> Step {
        match &self.f[j] {
            Some(f) => f.at(t),
            None => self.z[j].at(t - self.durations[j]),
        }
    }

    /// Adds `coefficient * r_j(t)` to `row`.
    fn running(&self, row: &mut Expression, coefficient: f64, j: usize, t: Time) {
        add(row, coefficient, self.z[j].at(t));
        add(row, -coefficient, self.finished(j, t));
    }
}

/// The model's windows for horizon `horizon`: `(ES, LS, LF)` per activity.
fn windows(problem: &ContendedProblem, horizon: Time) -> Vec<(Time, Time, Time)> {
    let p = problem.problem();
    let es = earliest_starts(p);
    let ls = latest_starts(p, horizon);
    p.ids()
        .map(|j| {
            let k = j.index();
            (es[k], ls[k], ls[k] + p.duration(j))
        })
        .collect()
}

/// Binaries of the model for `horizon`.
pub(crate) fn binaries(problem: &ContendedProblem, horizon: Time) -> usize {
    let p = problem.problem();
    windows(problem, horizon)
        .iter()
        .zip(problem.roles())
        .zip(p.activities())
        .map(|(((es, ls, lf), role), a)| {
            let starts = usize::try_from(ls - es).unwrap_or(0);
            let finishes = match role {
                Role::Slowed if a.duration > 0 => {
                    usize::try_from(lf - es - a.duration).unwrap_or(0)
                }
                _ => 0,
            };
            starts + finishes
        })
        .sum()
}

/// Step binaries for `t` in `[from, to)`, in order, with their positions.
fn steps(model: &mut Model, from: Time, to: Time) -> (Steps, Vec<(Time, usize)>) {
    let mut vars: Vec<Variable> = Vec::new();
    let mut at = Vec::new();
    for t in from..to {
        let v = model.var(variable().binary(), None);
        if let Some(&previous) = vars.last() {
            model.add(Model::sum([(1.0, previous), (-1.0, v)]).leq(0.0));
        }
        vars.push(v);
        at.push((t, model.last()));
    }
    (
        Steps {
            es: from,
            ls: to,
            vars,
        },
        at,
    )
}

/// The model of the module docs for horizon `horizon`, its makespan at least `lower`.
fn build(problem: &ContendedProblem, lower: Time, horizon: Time) -> (Model, StartsFrom) {
    let p = problem.problem();
    let win = windows(problem, horizon);
    let mut model = Model::new(lower.min(horizon), horizon, None);
    let mut vars = Vars {
        z: Vec::with_capacity(p.len()),
        f: Vec::with_capacity(p.len()),
        durations: p.activities().iter().map(|a| a.duration).collect(),
    };
    let mut positions = Vec::with_capacity(p.len());
    for (k, &(es, ls, lf)) in win.iter().enumerate() {
        let (z, at) = steps(&mut model, es, ls);
        positions.push((es, ls, at));
        vars.z.push(z);
        let d = vars.durations[k];
        vars.f.push(match problem.roles()[k] {
            Role::Slowed if d > 0 => Some(steps(&mut model, es + d, lf).0),
            _ => None,
        });
    }
    for (k, &(es, _, lf)) in win.iter().enumerate() {
        if vars.f[k].is_some() {
            // It lasts at least its work: F_j(t) <= Z_j(t - d_j).
            for t in es + vars.durations[k]..lf {
                let mut row = Expression::with_capacity(2);
                add(&mut row, 1.0, vars.finished(k, t));
                add(&mut row, -1.0, vars.z[k].at(t - vars.durations[k]));
                model.add(row.leq(0.0));
            }
        }
    }
    if problem.at_events() {
        add_events(&mut model, problem, &win, &vars);
    }
    add_precedences(&mut model, problem, &win, &vars);
    add_resources(&mut model, problem, &win, &vars, horizon);
    add_contention(&mut model, problem, &win, &vars, horizon);
    for (k, &(es, _, lf)) in win.iter().enumerate() {
        // M >= ES + d + sum_{t in [ES + d, LF)} (1 - F(t)), i.e. M + sum F(t) >= LF.
        let d = vars.durations[k];
        let mut row = Expression::from(model.objective);
        for t in es + d..lf {
            add(&mut row, 1.0, vars.finished(k, t));
        }
        model.add(row.geq(lf as f64));
    }
    (model, StartsFrom::Steps(positions))
}

/// `Z_j(t) <= F_i(t - l)` for every precedence `i -> j` with lag `l`, unless trivially true.
fn add_precedences(
    model: &mut Model,
    problem: &ContendedProblem,
    win: &[(Time, Time, Time)],
    vars: &Vars,
) {
    for pr in problem.problem().precedences() {
        let (i, j) = (pr.from.index(), pr.to.index());
        for t in win[j].0..win[j].1 {
            let fi = vars.finished(i, t - pr.lag);
            if matches!(fi, Step::Const(c) if c == 1.0) {
                continue;
            }
            let mut row = Expression::with_capacity(2);
            add(&mut row, 1.0, vars.z[j].at(t));
            add(&mut row, -1.0, fi);
            model.add(row.leq(0.0));
        }
    }
}

/// Starts only at events ([`ContendedProblem::launched_at_events`]): `j` starting at `t`
/// (`Z_j(t) - Z_j(t - 1)`) needs an activity `i` of positive duration ending at `t`
/// (`F_i(t) - F_i(t - 1)`), unless `t` is 0 or `j`'s release.
fn add_events(
    model: &mut Model,
    problem: &ContendedProblem,
    win: &[(Time, Time, Time)],
    vars: &Vars,
) {
    let p = problem.problem();
    for (j, &(es, ls, _)) in win.iter().enumerate() {
        let release = p.activities()[j].release;
        for t in es.max(1)..=ls {
            if t == release {
                continue;
            }
            let mut row = Expression::with_capacity(2 * p.len());
            add(&mut row, 1.0, vars.z[j].at(t));
            add(&mut row, -1.0, vars.z[j].at(t - 1));
            for (i, &(ies, _, ilf)) in win.iter().enumerate() {
                let d = vars.durations[i];
                if i != j && d > 0 && ies + d <= t && t <= ilf {
                    add(&mut row, -1.0, vars.finished(i, t));
                    add(&mut row, 1.0, vars.finished(i, t - 1));
                }
            }
            model.add(row.leq(0.0));
        }
    }
}

/// Whether activity `k` of positive duration can run in unit `t`.
fn can_run(win: &[(Time, Time, Time)], durations: &[Time], k: usize, t: Time) -> bool {
    durations[k] > 0 && win[k].0 <= t && t < win[k].2
}

/// The resource rows, where the activities that can run at `t` can overload the resource.
fn add_resources(
    model: &mut Model,
    problem: &ContendedProblem,
    win: &[(Time, Time, Time)],
    vars: &Vars,
    horizon: Time,
) {
    let p = problem.problem();
    for (r, resource) in p.resources().iter().enumerate() {
        let users: Vec<usize> = (0..p.len())
            .filter(|&k| p.activities()[k].demands[r] > 0)
            .collect();
        for t in 0..horizon {
            let present: Vec<usize> = users
                .iter()
                .copied()
                .filter(|&k| can_run(win, &vars.durations, k, t))
                .collect();
            let demand = |k: usize| p.activities()[k].demands[r];
            let possible: u64 = present.iter().map(|&k| u64::from(demand(k))).sum();
            if possible <= u64::from(resource.capacity) {
                continue;
            }
            let mut row = Expression::with_capacity(2 * present.len());
            for &k in &present {
                vars.running(&mut row, f64::from(demand(k)), k, t);
            }
            model.add(row.leq(f64::from(resource.capacity)));
        }
    }
}

/// `y(t)`, the overlaps and the work rows of the slowed activities; with starts at events,
/// also the rows that make them exact (see [`add_exact_ends`]).
fn add_contention(
    model: &mut Model,
    problem: &ContendedProblem,
    win: &[(Time, Time, Time)],
    vars: &Vars,
    horizon: Time,
) {
    let roles = problem.roles();
    let of = |role: Role| -> Vec<usize> {
        (0..roles.len())
            .filter(|&k| roles[k] == role && vars.durations[k] > 0)
            .collect()
    };
    let (slowed, slowing) = (of(Role::Slowed), of(Role::Slowing));
    let lost = (RATE_UNITS - problem.rate()) as f64 / RATE_UNITS as f64;
    let exact = problem.at_events();
    // y(t), where a slowing and a slowed activity can both run.
    let mut y: Vec<Option<Variable>> = vec![None; usize::try_from(horizon.max(0)).unwrap_or(0)];
    for (t, slot) in y.iter_mut().enumerate() {
        let t = t as Time;
        let runs = |k: &usize| can_run(win, &vars.durations, *k, t);
        let xs: Vec<usize> = slowing.iter().copied().filter(runs).collect();
        if lost == 0.0 || xs.is_empty() || !slowed.iter().any(runs) {
            continue;
        }
        let v = model.var(variable().min(0.0).max(1.0), None);
        let mut some = Expression::from(v);
        for &x in &xs {
            // y(t) - r_x(t) >= 0.
            let mut row = Expression::from(v);
            vars.running(&mut row, -1.0, x, t);
            model.add(row.geq(0.0));
            vars.running(&mut some, -1.0, x, t);
        }
        if exact {
            // y(t) <= sum_x r_x(t): 0 when no slowing activity runs.
            model.add(some.leq(0.0));
        }
        *slot = Some(v);
    }
    for &j in &slowed {
        let (es, _, lf) = win[j];
        // sum_t r_j(t) - lost u_j(t) >= d_j over the units j can run.
        let mut work = Expression::with_capacity(3 * usize::try_from(lf - es).unwrap_or(0));
        for t in es.max(0)..lf.min(horizon) {
            vars.running(&mut work, 1.0, j, t);
            if let Some(v) = y[t as usize] {
                let u = product(model, vars, j, t, v, exact);
                work.add_mul(-lost, u);
            }
        }
        if exact {
            add_exact_ends(model, win, vars, &y, lost, j, work.clone());
        }
        model.add(work.geq(vars.durations[j] as f64));
    }
}

/// `u = r_j(t) y(t)`: `u >= r_j(t) + y(t) - 1`, and when `exact` also `u <= r_j(t)` and
/// `u <= y(t)`.
fn product(
    model: &mut Model,
    vars: &Vars,
    j: usize,
    t: Time,
    y: Variable,
    exact: bool,
) -> Variable {
    let u = model.var(variable().min(0.0).max(1.0), None);
    // u - r_j(t) - y(t) >= -1.
    let mut row = Expression::from(u) - y;
    vars.running(&mut row, -1.0, j, t);
    model.add(row.geq(-1.0));
    if exact {
        let mut row = Expression::from(u);
        vars.running(&mut row, -1.0, j, t);
        model.add(row.leq(0.0));
        model.add((Expression::from(u) - y).leq(0.0));
    }
    u
}

/// The slowed activity `j` ends when its work is done, not later: the work over its units
/// but the last (`work`, exact with `y` and the overlaps exact, less the last unit's work) is
/// below `d_j`. Without it the model may hold `j` past its end, and with starts at events an
/// activity could start at an end that did not happen. The last unit is `l_j(t) = F_j(t + 1) -
/// F_j(t)`, its work `l_j(t) - lost v_j(t)` with `v_j(t) = l_j(t) y(t)`.
fn add_exact_ends(
    model: &mut Model,
    win: &[(Time, Time, Time)],
    vars: &Vars,
    y: &[Option<Variable>],
    lost: f64,
    j: usize,
    mut work: Expression,
) {
    let (es, _, lf) = win[j];
    let d = vars.durations[j];
    for t in (es + d - 1).max(0)..lf {
        // l_j(t): ends at t + 1.
        let mut last = Expression::with_capacity(2);
        add(&mut last, 1.0, vars.finished(j, t + 1));
        add(&mut last, -1.0, vars.finished(j, t));
        work -= last.clone();
        if let Some(Some(yt)) = usize::try_from(t).ok().and_then(|k| y.get(k)) {
            let v = model.var(variable().min(0.0).max(1.0), None);
            model.add((Expression::from(v) - last.clone()).leq(0.0));
            model.add((Expression::from(v) - *yt).leq(0.0));
            model.add((Expression::from(v) - last - *yt).geq(-1.0));
            work.add_mul(lost, v);
        }
    }
    model.add(work.leq(d as f64 - 1.0 / RATE_UNITS as f64));
}

/// The activities one at a time in topological order, each at the previous one's end (or
/// its release, or its predecessors' ends plus lags), with its makespan; `None` when that
/// fails [`check_contended`] (a positive lag starts an activity between events).
fn serial(problem: &ContendedProblem) -> Option<(Schedule, Time)> {
    let p = problem.problem();
    let mut starts = vec![0; p.len()];
    let mut ends = vec![0; p.len()];
    let mut at = 0;
    for &a in p.topological_order() {
        let s = p
            .predecessors(a)
            .iter()
            .map(|arc| ends[arc.activity.index()] + arc.lag)
            .fold(at.max(p.release(a)), Time::max);
        starts[a.index()] = s;
        ends[a.index()] = s.checked_add(p.duration(a))?;
        at = ends[a.index()];
    }
    let schedule = Schedule::new(starts);
    let m = check_contended(problem, &schedule).ok()?;
    Some((schedule, m))
}

/// What a contended solve reports with.
struct ContendedRun<'a> {
    problem: &'a ContendedProblem,
    name: &'a str,
    clock: Clock,
}

impl ContendedRun<'_> {
    /// The verified outcome of `schedule`, `bound`, `status` and `work`.
    fn finish(
        &self,
        schedule: Option<(Schedule, Time)>,
        bound: Time,
        status: Status,
        work: u64,
    ) -> Result<Outcome, SolveError> {
        let (schedule, makespan) = match schedule {
            Some((s, m)) => (Some(s), Some(m)),
            None => (None, None),
        };
        verified_contended(
            self.problem,
            Outcome {
                status,
                makespan,
                schedule,
                lower_bound: bound,
                solver: self.name.to_owned(),
                elapsed: self.clock.elapsed(),
                work,
            },
        )
    }
}

impl Milp {
    /// Solves a [`ContendedProblem`] exactly with this backend: the contention-aware
    /// time-indexed model of the module `contended` (the schedule's makespan and bound are
    /// contended ones, checked by [`check_contended`]). [`Limits::initial`] is a starting
    /// schedule of the contended problem; [`Limits::upper_bound`] caps the makespan sought.
    ///
    /// Errors: invalid limits or an initial schedule that fails [`check_contended`]
    /// ([`SolveError::InvalidInitial`]); [`SolveError::Unsupported`] when the model would have
    /// more binaries or time units than
    /// [`MilpConfig::max_time_indexed_binaries`](super::MilpConfig) (use a coarser time
    /// unit), or when no starting schedule is known (the heuristic found none within the
    /// deadlines: pass one); a backend failure.
    pub fn solve_contended(
        &self,
        problem: &ContendedProblem,
        limits: &Limits,
    ) -> Result<Outcome, SolveError> {
        let base = problem.problem();
        Limits {
            initial: None,
            ..limits.clone()
        }
        .validate(base)?;
        self.check_gap()?;
        let run = ContendedRun {
            problem,
            name: self.name(),
            clock: limits.clock(),
        };
        let bound = lower_bound(base).value;
        let Some((incumbent, makespan)) = self.contended_incumbent(problem, limits, &run.clock)?
        else {
            return Err(SolveError::Unsupported {
                solver: run.name.to_owned(),
                reason: "no starting schedule: the heuristic found none within the deadlines; \
                         pass one in Limits::initial"
                    .into(),
            });
        };
        let cap = limits
            .upper_bound
            .map_or(makespan - 1, |ub| ub.min(makespan - 1));
        let best = Some((incumbent, makespan)).filter(|&(_, m)| m <= cap + 1);
        if cap < bound {
            // Nothing below the incumbent (or within the caller's bound) can exist.
            return match best {
                Some(b) => run.finish(Some(b), makespan, Status::Optimal, 0),
                None => run.finish(None, bound, Status::Infeasible, 0),
            };
        }
        // Rows and indicators are per unit of the horizon, binaries per unit of slack.
        let size = binaries(problem, cap).max(usize::try_from(cap).unwrap_or(usize::MAX));
        if size > self.config.max_time_indexed_binaries {
            return Err(SolveError::Unsupported {
                solver: run.name.to_owned(),
                reason: format!(
                    "the contended model for horizon {cap} needs {} binaries and {cap} time \
                     units, more than the configured {}: coarsen the time unit",
                    binaries(problem, cap),
                    self.config.max_time_indexed_binaries
                ),
            });
        }
        if let Some(reason) = run.clock.should_stop() {
            return match best {
                Some(b) => run.finish(Some(b), bound, Status::Feasible(reason), 0),
                None => run.finish(None, bound, Status::Unknown(reason), 0),
            };
        }
        let (model, starts) = build(problem, bound, cap);
        let options = RunOptions::new(&run.clock, limits, self.config.mip_gap);
        let raw = self
            .run(model, &options, &run.clock, limits)
            .map_err(|message| SolveError::Backend {
                solver: run.name.to_owned(),
                message,
            })?;
        self.settle_contended(&run, &raw, &starts, cap, best, bound)
    }

    /// The better of the caller's initial schedule and an `sgs` schedule of the worst case,
    /// with its contended makespan; `None` when neither exists.
    fn contended_incumbent(
        &self,
        problem: &ContendedProblem,
        limits: &Limits,
        clock: &Clock,
    ) -> Result<Option<(Schedule, Time)>, SolveError> {
        let given = match &limits.initial {
            Some(s) => Some((
                s.clone(),
                check_contended(problem, s)
                    .map_err(|violations| SolveError::InvalidInitial { violations })?,
            )),
            None => None,
        };
        let worst = problem.worst_case().map_err(|e| SolveError::Unsupported {
            solver: self.name().to_owned(),
            reason: format!("the problem slowed throughout is not a problem: {e}"),
        })?;
        let heuristic = Heuristic::new(HeuristicConfig {
            max_schedules: Some(self.config.heuristic_schedules),
            ..HeuristicConfig::default()
        });
        let outcome = heuristic.solve(
            &worst,
            &Limits {
                work_limit: None,
                ..limits.helper(clock.share(self.config.heuristic_time_share))
            },
        )?;
        // A schedule of the worst case is a contended one, its ends no later (unless it
        // starts an activity between events).
        let found = outcome
            .schedule
            .and_then(|s| check_contended(problem, &s).ok().map(|m| (s, m)));
        // With starts at events, a worst-case schedule may start an activity between the
        // realised ends: one activity at a time, each from the previous one's end, keeps
        // the rule (and meets no contention).
        let found = found.or_else(|| serial(problem));
        Ok([given, found].into_iter().flatten().min_by_key(|(_, m)| *m))
    }

    /// The outcome of the backend's answer to the model capped at `cap` (below the
    /// incumbent `best`, when the caller's bound allows it).
    fn settle_contended(
        &self,
        run: &ContendedRun<'_>,
        raw: &RawResult,
        starts: &StartsFrom,
        cap: Time,
        best: Option<(Schedule, Time)>,
        mut bound: Time,
    ) -> Result<Outcome, SolveError> {
        let work = raw.nodes;
        if let Some(b) = raw.bound.filter(|b| b.is_finite()) {
            bound = bound.max((b - 1e-6).ceil() as Time);
        }
        // The capped model's bound holds only up to one past its cap.
        bound = bound.min(cap + 1);
        let solution = match raw.values.as_ref().map(|v| starts.read(v)) {
            None => None,
            Some(None) => {
                return Err(SolveError::Backend {
                    solver: run.name.to_owned(),
                    message: "the solution has a fractional or ambiguous start time".into(),
                })
            }
            Some(Some(starts)) => {
                let s = Schedule::new(starts);
                match check_contended(run.problem, &s) {
                    Ok(m) => Some((s, m)),
                    Err(_) if raw.status == RawStatus::TimeLimit && self.garbage_possible() => None,
                    Err(violations) => {
                        return Err(SolveError::InvalidAnswer {
                            solver: run.name.to_owned(),
                            violations,
                        })
                    }
                }
            }
        };
        let best = match (solution, best) {
            (Some(s), Some(i)) => Some(if i.1 < s.1 { i } else { s }),
            (s, i) => s.or(i),
        };
        match verdict(raw.status, true, false, &run.clock, run.name)? {
            Verdict::IncumbentOptimal | Verdict::Infeasible => match best {
                Some(b) => {
                    let m = b.1;
                    run.finish(Some(b), m, Status::Optimal, work)
                }
                None => run.finish(None, cap + 1, Status::Infeasible, work),
            },
            Verdict::Optimal => match best {
                Some(b) => {
                    let m = b.1;
                    run.finish(Some(b), m, Status::Optimal, work)
                }
                None => Err(SolveError::Backend {
                    solver: run.name.to_owned(),
                    message: "reported optimal without a solution".into(),
                }),
            },
            Verdict::Stopped(reason) => match best {
                Some(b) => {
                    let status = if bound >= b.1 {
                        Status::Optimal
                    } else {
                        Status::Feasible(reason)
                    };
                    run.finish(Some(b), bound, status, work)
                }
                None => run.finish(None, bound, Status::Unknown(reason), work),
            },
        }
    }
}

#[cfg(test)]
mod tests;
