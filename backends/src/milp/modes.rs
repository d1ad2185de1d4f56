//! Modal RCPSP (joint decomposition and scheduling) as a time-indexed MILP with mode
//! binaries, on any good_lp backend.
//!
//! # Formulation
//! For the horizon `H` (the initial solution's makespan, or the problem's horizon):
//! - `z[r][k]` binary per region `r` and mode `k`, `sum_k z[r][k] = 1`; the presence `p_a` of
//!   an activity is 1 when it is mandatory and `sum_{k in K_a} z[r][k]` for an activity of the
//!   modes `K_a` of region `r`.
//! - `x[a][t]` binary "starts at `t`" for `t` in `[ES_a, LS_a]`
//!   ([`ModalProblem::earliest_starts`], [`ModalProblem::latest_starts`]`(H)`, valid for every
//!   mode choice), with `sum_t x[a][t] = p_a`: an absent activity has no start, hence no
//!   resource use. `S_a = sum_t t x[a][t]` (0 when absent).
//! - Resources: for each resource and time `tau < H`, the demand of the activities running at
//!   `tau` (`x[a][t]` with `tau - d_a < t <= tau`) at most the capacity (Pritsker, Watters and
//!   Wolfe 1969; multi-mode: Talbot 1982).
//! - A precedence `a -> b` with lag `l`: when `a` and `b` are present together exactly (both
//!   mandatory, or in the same modes, `p_a = p_b = p`), `S_b - S_a >= (d_a + l) p`; otherwise
//!   `S_b >= S_a + d_a + l - M (2 - p_a - p_b)` with `M = max(LS_a, 0) + d_a + l`, which is
//!   void as soon as one end is absent (`S = 0` for an absent end).
//! - Makespan `C >= S_a + d_a p_a` for every activity; minimise `C`.
//!
//! Size: `sum (LS_a - ES_a + 1)` binaries plus one per mode, `H` rows per resource: for short
//! horizons, such as the coarse windows of [`concerto_rcpsp::joint`].
//!
//! # Solve
//! Without an initial solution, mode 0 everywhere scheduled by the serial SGS gives one (and
//! the horizon). The initial solution is a complete warm start for HiGHS; CBC and microlp (see
//! the module docs of [`super`]) search for `C <= H - 1` instead, where infeasibility proves the
//! initial solution optimal. Statuses map as in the RCPSP MILP: optimal, time limit
//! with or without a solution, infeasible; the backend's dual bound is the lower bound.

use concerto_rcpsp::{
    check_modal, verified_modal, ActivityId, Clock, Limits, Membership, ModalOutcome, ModalProblem,
    ModalSolution, ModalSolver, SolveError, Status, Time,
};
use good_lp::Expression;

use super::{verdict, Backend, Milp, Model, RawResult, RunOptions, Verdict};

/// A solution with mode 0 in every region: the serial SGS of its reduced problem in
/// topological order; `None` when that problem has time windows the SGS may miss.
fn default_start(problem: &ModalProblem) -> Option<ModalSolution> {
    let modes = vec![0; problem.regions().len()];
    let reduced = problem.reduce(&modes).ok()?;
    let rp = &reduced.problem;
    let list = concerto_rcpsp::ActivityList::new(rp, rp.topological_order().to_vec()).ok()?;
    let schedule = concerto_rcpsp::sgs::serial(rp, &list);
    concerto_rcpsp::check(rp, &schedule).ok()?;
    Some(ModalSolution {
        starts: reduced.expand(&schedule, problem.problem().len()),
        modes,
    })
}

/// Most start binaries a modal model may have.
pub const MAX_MODAL_BINARIES: usize = 200_000;

/// The modal MILP solver of a backend (see the module docs).
#[derive(Clone, Debug)]
pub struct MilpModal {
    milp: Milp,
}

impl MilpModal {
    /// The modal solver running on `backend`.
    pub fn new(backend: Backend) -> Self {
        Self {
            milp: Milp::new(backend),
        }
    }
}

impl ModalSolver for MilpModal {
    fn name(&self) -> &str {
        self.milp.backend.name()
    }

    fn solve_modal(
        &self,
        problem: &ModalProblem,
        limits: &Limits,
        initial: Option<&ModalSolution>,
    ) -> Result<ModalOutcome, SolveError> {
        let p = problem.problem();
        let name = self.name().to_string();
        let clean = Limits {
            initial: None,
            upper_bound: None,
            ..limits.clone()
        };
        clean.validate(p)?;
        let run = ModalRun {
            problem,
            name,
            clock: limits.clock(),
        };
        // Without a start, the serial SGS of the default modes (0 everywhere) in topological
        // order gives one: its makespan is the horizon, far below the problem's sum of
        // durations, which keeps the time-indexed model small.
        let own_start = match initial {
            Some(_) => None,
            None => default_start(problem),
        };
        let initial = initial.or(own_start.as_ref());
        let window = Window::new(problem, initial)?;
        if let Some(outcome) = run.settled_without_model(&window, initial) {
            return outcome;
        }
        window.check_size(&run.name)?;
        let horizon = window.horizon;
        let improve_only = initial.is_some() && self.milp.backend.searches_below_incumbent();
        let cap = if improve_only { horizon - 1 } else { horizon };
        if cap < window.mandatory_bound {
            return match initial {
                Some(s) => run.finish(Some(s.clone()), horizon, Status::Optimal),
                None => run.finish(None, window.mandatory_bound, Status::Infeasible),
            };
        }
        let warm = initial.filter(|_| !improve_only);
        let (model, vars) = build_model(problem, &window, cap, warm);
        if let Some(reason) = run.clock.should_stop() {
            return match initial {
                Some(s) => run.finish(
                    Some(s.clone()),
                    window.mandatory_bound,
                    Status::Feasible(reason),
                ),
                None => run.finish(None, window.mandatory_bound, Status::Unknown(reason)),
            };
        }
        let options = RunOptions::new(&run.clock, limits, 0.0);
        let raw = self
            .milp
            .run(model, &options, &run.clock, limits)
            .map_err(|message| SolveError::Backend {
                solver: run.name.clone(),
                message,
            })?;
        let mut bound = window.mandatory_bound;
        if let Some(b) = raw.bound.filter(|b| b.is_finite()) {
            bound = bound.max((b - 1e-6).ceil() as Time);
        }
        let found = raw
            .values
            .as_deref()
            .and_then(|values| vars.read(problem, values));
        let best = run.better(found, initial, window.initial_makespan);
        if improve_only {
            bound = bound.min(horizon);
        }
        let outcome = run.settle(&raw, best, bound, cap, improve_only, warm.is_some());
        outcome.map(|o| ModalOutcome {
            work: raw.nodes,
            ..o
        })
    }
}

/// What one modal solve reports with: the problem, the solver's name and the clock.
struct ModalRun<'a> {
    /// The problem.
    problem: &'a ModalProblem,
    /// The solver's name.
    name: String,
    /// The solve's clock.
    clock: Clock,
}

impl ModalRun<'_> {
    /// The verified outcome of `solution` (checked), `bound` and `status`.
    fn finish(
        &self,
        solution: Option<ModalSolution>,
        bound: Time,
        status: Status,
    ) -> Result<ModalOutcome, SolveError> {
        let makespan = solution
            .as_ref()
            .map(|s| check_modal(self.problem, s).expect("checked by verified_modal next"));
        verified_modal(
            self.problem,
            ModalOutcome {
                status,
                makespan,
                solution,
                lower_bound: bound,
                solver: self.name.clone(),
                elapsed: self.clock.elapsed(),
                work: 0,
            },
        )
    }

    /// The outcome when no model is needed: the initial solution meets the mandatory bound,
    /// or a mandatory activity cannot fit within the horizon.
    fn settled_without_model(
        &self,
        window: &Window,
        initial: Option<&ModalSolution>,
    ) -> Option<Result<ModalOutcome, SolveError>> {
        let (p, problem) = (self.problem.problem(), self.problem);
        let (es, ls) = (&window.es, &window.ls);
        if let (Some(s), Some(m)) = (initial, window.initial_makespan) {
            if window.mandatory_bound >= m {
                return Some(self.finish(Some(s.clone()), m, Status::Optimal));
            }
        }
        // Mandatory activities that cannot fit: no solution within the horizon.
        if p.ids().any(|a| {
            problem.membership(a) == Membership::Mandatory && ls[a.index()] < es[a.index()]
        }) {
            let bound = window.mandatory_bound.max(window.horizon + 1);
            return Some(self.finish(None, bound, Status::Infeasible));
        }
        None
    }

    /// The better of the backend's solution and the initial one (the backend's on a tie).
    fn better(
        &self,
        found: Option<ModalSolution>,
        initial: Option<&ModalSolution>,
        initial_makespan: Option<Time>,
    ) -> Option<ModalSolution> {
        match (found, initial) {
            (Some(f), Some(i)) => {
                let fm = check_modal(self.problem, &f).unwrap_or(Time::MAX);
                if fm <= initial_makespan.unwrap_or(Time::MAX) {
                    Some(f)
                } else {
                    Some(i.clone())
                }
            }
            (Some(f), None) => Some(f),
            (None, i) => i.cloned(),
        }
    }

    /// The outcome the backend's status gives (see [`super::verdict`]), with `best`, the
    /// proven `bound` and the model's horizon `cap`.
    fn settle(
        &self,
        raw: &RawResult,
        best: Option<ModalSolution>,
        bound: Time,
        cap: Time,
        improve_only: bool,
        warm: bool,
    ) -> Result<ModalOutcome, SolveError> {
        let makespan = |s: &ModalSolution| check_modal(self.problem, s).unwrap_or(Time::MAX);
        match verdict(raw.status, improve_only, warm, &self.clock, &self.name)? {
            Verdict::IncumbentOptimal => self.finish(best, cap + 1, Status::Optimal),
            Verdict::Infeasible => self.finish(None, bound.max(cap + 1), Status::Infeasible),
            Verdict::Optimal => match best {
                Some(s) => {
                    let m = makespan(&s);
                    self.finish(Some(s), m, Status::Optimal)
                }
                None => Err(SolveError::Backend {
                    solver: self.name.clone(),
                    message: "reported optimal without a valid solution".into(),
                }),
            },
            Verdict::Stopped(reason) => match best {
                Some(s) => {
                    let m = makespan(&s);
                    let bound = bound.min(m);
                    let status = if bound == m {
                        Status::Optimal
                    } else {
                        Status::Feasible(reason)
                    };
                    self.finish(Some(s), bound, status)
                }
                None => self.finish(None, bound, Status::Unknown(reason)),
            },
        }
    }
}

/// The start windows of a modal solve: the initial solution's makespan, the horizon, the
/// earliest and latest starts, and the bound the mandatory activities give.
struct Window {
    /// The initial solution's makespan, if there is one.
    initial_makespan: Option<Time>,
    /// The horizon: the initial makespan, or the problem's horizon.
    horizon: Time,
    /// Earliest starts, valid for every mode choice.
    es: Vec<Time>,
    /// Latest starts within the horizon, valid for every mode choice.
    ls: Vec<Time>,
    /// The largest earliest finish of a mandatory activity.
    mandatory_bound: Time,
}

impl Window {
    /// The windows for `initial` (checked: an invalid one is an error).
    fn new(problem: &ModalProblem, initial: Option<&ModalSolution>) -> Result<Self, SolveError> {
        let p = problem.problem();
        let initial_makespan = match initial {
            Some(s) => Some(
                check_modal(problem, s)
                    .map_err(|source| SolveError::InvalidModalInitial { source })?,
            ),
            None => None,
        };
        let horizon = initial_makespan.unwrap_or(p.horizon());
        let es = problem.earliest_starts();
        let ls = problem.latest_starts(horizon);
        let mandatory_bound = p
            .ids()
            .filter(|&a| problem.membership(a) == Membership::Mandatory)
            .map(|a| es[a.index()] + p.duration(a))
            .max()
            .unwrap_or(0);
        Ok(Self {
            initial_makespan,
            horizon,
            es,
            ls,
            mandatory_bound,
        })
    }

    /// Errors when the model would have more than [`MAX_MODAL_BINARIES`] start binaries.
    fn check_size(&self, solver: &str) -> Result<(), SolveError> {
        let binaries: usize = self
            .es
            .iter()
            .zip(&self.ls)
            .map(|(&es, &ls)| (ls - es + 1).max(0) as usize)
            .sum();
        if binaries > MAX_MODAL_BINARIES {
            return Err(SolveError::Unsupported {
                solver: solver.to_string(),
                reason: format!(
                    "{binaries} start binaries for a horizon of {} (at most \
                     {MAX_MODAL_BINARIES}): solve coarser windows",
                    self.horizon
                ),
            });
        }
        Ok(())
    }
}

/// The modal model's variables: mode binaries and start binaries.
struct ModalVars {
    /// `z[r][k]`: region `r` runs in mode `k`.
    z: Vec<Vec<good_lp::Variable>>,
    /// The column of each `z[r][k]`.
    z_pos: Vec<Vec<usize>>,
    /// Per activity, `(t, x[a][t], column)` for each possible start `t`.
    x: Vec<Vec<(Time, good_lp::Variable, usize)>>,
}

impl ModalVars {
    /// The presence of `a` as an expression (1 or a sum of `z`).
    fn presence(&self, problem: &ModalProblem, a: ActivityId) -> Expression {
        match problem.membership(a) {
            Membership::Mandatory => Expression::from(1.0),
            m @ Membership::Modes { region, .. } => {
                Model::sum(m.modes().into_iter().map(|k| (1.0, self.z[region][k])))
            }
        }
    }

    /// The start of `a` as an expression (0 when absent).
    fn start_of(&self, a: ActivityId) -> Expression {
        Model::sum(self.x[a.index()].iter().map(|&(t, var, _)| (t as f64, var)))
    }

    /// The solution in the backend's `values`: each region's largest mode binary and each
    /// present activity's start; `None` when a start is missing or the solution fails the
    /// check.
    fn read(&self, problem: &ModalProblem, values: &[f64]) -> Option<ModalSolution> {
        let p = problem.problem();
        let modes: Vec<usize> = self
            .z_pos
            .iter()
            .map(|row| {
                row.iter()
                    .enumerate()
                    .max_by(|(_, &i), (_, &j)| values[i].total_cmp(&values[j]))
                    .map_or(0, |(k, _)| k)
            })
            .collect();
        let mut starts = vec![0; p.len()];
        for a in p.ids() {
            if problem.present(a, &modes) {
                starts[a.index()] = self.x[a.index()]
                    .iter()
                    .find(|&&(_, _, pos)| values[pos] > 0.5)
                    .map(|&(t, _, _)| t)?;
            }
        }
        let s = ModalSolution { modes, starts };
        check_modal(problem, &s).ok().map(|_| s)
    }
}

/// The modal MILP of the module docs for horizon `cap`, warm-started from `warm`.
fn build_model(
    problem: &ModalProblem,
    window: &Window,
    cap: Time,
    warm: Option<&ModalSolution>,
) -> (Model, ModalVars) {
    let mut model = Model::new(window.mandatory_bound, cap, warm.map(|_| window.horizon));
    let (z, z_pos) = add_mode_vars(&mut model, problem, warm);
    let mut vars = ModalVars {
        z,
        z_pos,
        x: Vec::new(),
    };
    vars.x = add_start_vars(&mut model, problem, window, &vars, warm);
    add_resource_rows(&mut model, problem, cap, &vars);
    add_precedence_rows(&mut model, problem, window, &vars);
    // Makespan.
    let c = model.objective;
    for a in problem.problem().ids() {
        let d = problem.problem().duration(a) as f64;
        let mut e = Expression::from(c) - vars.start_of(a);
        e -= vars.presence(problem, a) * d;
        model.add(e.geq(0.0));
    }
    (model, vars)
}

/// The mode binaries `z[r][k]`, one mode per region, and their columns.
fn add_mode_vars(
    model: &mut Model,
    problem: &ModalProblem,
    warm: Option<&ModalSolution>,
) -> (Vec<Vec<good_lp::Variable>>, Vec<Vec<usize>>) {
    let mut z: Vec<Vec<good_lp::Variable>> = Vec::new();
    let mut z_pos: Vec<Vec<usize>> = Vec::new();
    for (r, region) in problem.regions().iter().enumerate() {
        let mut row = Vec::new();
        let mut pos = Vec::new();
        for k in 0..region.modes.len() {
            let w = warm.map(|s| f64::from(u8::from(s.modes[r] == k)));
            row.push(model.var(good_lp::variable().binary(), w));
            pos.push(model.last());
        }
        model.add(Model::sum(row.iter().map(|&v| (1.0, v))).eq(1.0));
        z.push(row);
        z_pos.push(pos);
    }
    (z, z_pos)
}

/// The start binaries `x[a][t]` of each activity, summing to its presence.
fn add_start_vars(
    model: &mut Model,
    problem: &ModalProblem,
    window: &Window,
    vars: &ModalVars,
    warm: Option<&ModalSolution>,
) -> Vec<Vec<(Time, good_lp::Variable, usize)>> {
    let p = problem.problem();
    let mut x: Vec<Vec<(Time, good_lp::Variable, usize)>> = Vec::with_capacity(p.len());
    for a in p.ids() {
        let present_warm = warm.map(|s| problem.present(a, &s.modes));
        let mut v = Vec::new();
        for t in window.es[a.index()]..=window.ls[a.index()] {
            let w = warm.map(|s| {
                f64::from(u8::from(
                    present_warm == Some(true) && s.starts[a.index()] == t,
                ))
            });
            let var = model.var(good_lp::variable().binary(), w);
            v.push((t, var, model.last()));
        }
        let mut e = Model::sum(v.iter().map(|&(_, var, _)| (1.0, var)));
        e -= vars.presence(problem, a);
        model.add(e.eq(0.0));
        x.push(v);
    }
    x
}

/// Per resource whose users can exceed its capacity, one row per time below `cap`.
fn add_resource_rows(model: &mut Model, problem: &ModalProblem, cap: Time, vars: &ModalVars) {
    let p = problem.problem();
    for (k, res) in p.resources().iter().enumerate() {
        let users: Vec<_> = p
            .ids()
            .filter(|&a| p.duration(a) > 0 && p.activity(a).demands[k] > 0)
            .collect();
        let total: u64 = users
            .iter()
            .map(|&a| u64::from(p.activity(a).demands[k]))
            .sum();
        if total <= u64::from(res.capacity) {
            continue;
        }
        for tau in 0..cap {
            let mut e = Expression::with_capacity(16);
            let mut any = false;
            for &a in &users {
                let d = p.duration(a);
                let q = f64::from(p.activity(a).demands[k]);
                for &(t, var, _) in &vars.x[a.index()] {
                    if t <= tau && tau < t + d {
                        e.add_mul(q, var);
                        any = true;
                    }
                }
            }
            if any {
                model.add(e.leq(f64::from(res.capacity)));
            }
        }
    }
}

/// One row per precedence: exact when both ends are present together, else void as soon as
/// one end is absent.
fn add_precedence_rows(
    model: &mut Model,
    problem: &ModalProblem,
    window: &Window,
    vars: &ModalVars,
) {
    let p = problem.problem();
    for pr in p.precedences() {
        let (a, b) = (pr.from, pr.to);
        let gap = (p.duration(a) + pr.lag) as f64;
        let (ma, mb) = (problem.membership(a), problem.membership(b));
        let same = ma == mb;
        if same {
            let mut e = vars.start_of(b) - vars.start_of(a);
            e -= vars.presence(problem, a) * gap;
            model.add(e.geq(0.0));
        } else {
            // Large enough when `a` is absent (S_a = 0) or `b` is (S_b = 0).
            let big = (window.ls[a.index()].max(0) + p.duration(a) + pr.lag) as f64;
            // S_b - S_a - gap + M (2 - p_a - p_b) >= 0
            let mut e = vars.start_of(b) - vars.start_of(a);
            e += vars.presence(problem, a) * (-big) + vars.presence(problem, b) * (-big);
            model.add(e.geq(gap - 2.0 * big));
        }
    }
}
