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
    check_modal, verified_modal, Limits, Membership, ModalOutcome, ModalProblem, ModalSolution,
    ModalSolver, SolveError, Status, StopReason, Time,
};
use good_lp::Expression;

use super::{Backend, Milp, Model, RawStatus, RunOptions};

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
        let clock = limits.clock();
        // Without a start, the serial SGS of the default modes (0 everywhere) in topological
        // order gives one: its makespan is the horizon, far below the problem's sum of
        // durations, which keeps the time-indexed model small.
        let own_start = match initial {
            Some(_) => None,
            None => default_start(problem),
        };
        let initial = initial.or(own_start.as_ref());
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
        let finish = |solution: Option<ModalSolution>, bound: Time, status: Status| {
            let makespan = solution
                .as_ref()
                .map(|s| check_modal(problem, s).expect("checked by verified_modal next"));
            verified_modal(
                problem,
                ModalOutcome {
                    status,
                    makespan,
                    solution,
                    lower_bound: bound,
                    solver: name.clone(),
                    elapsed: clock.elapsed(),
                    work: 0,
                },
            )
        };
        if let (Some(s), Some(m)) = (initial, initial_makespan) {
            if mandatory_bound >= m {
                return finish(Some(s.clone()), m, Status::Optimal);
            }
        }
        // Mandatory activities that cannot fit: no solution within the horizon.
        if p.ids().any(|a| {
            problem.membership(a) == Membership::Mandatory && ls[a.index()] < es[a.index()]
        }) {
            return finish(None, mandatory_bound.max(horizon + 1), Status::Infeasible);
        }
        let binaries: usize = p
            .ids()
            .map(|a| (ls[a.index()] - es[a.index()] + 1).max(0) as usize)
            .sum();
        if binaries > MAX_MODAL_BINARIES {
            return Err(SolveError::Unsupported {
                solver: name,
                reason: format!(
                    "{binaries} start binaries for a horizon of {horizon} (at most \
                     {MAX_MODAL_BINARIES}): solve coarser windows"
                ),
            });
        }
        let improve_only = initial.is_some() && self.milp.backend.searches_below_incumbent();
        let cap = if improve_only { horizon - 1 } else { horizon };
        if cap < mandatory_bound {
            return match initial {
                Some(s) => finish(Some(s.clone()), horizon, Status::Optimal),
                None => finish(None, mandatory_bound, Status::Infeasible),
            };
        }
        let warm = initial.filter(|_| !improve_only);
        let mut model = Model::new(mandatory_bound, cap, warm.map(|_| horizon));
        let regions = problem.regions();
        let mut z: Vec<Vec<good_lp::Variable>> = Vec::new();
        let mut z_pos: Vec<Vec<usize>> = Vec::new();
        for (r, region) in regions.iter().enumerate() {
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
        // Presence as an expression (1 or z).
        let presence = |a: concerto_rcpsp::ActivityId| -> Expression {
            match problem.membership(a) {
                Membership::Mandatory => Expression::from(1.0),
                m @ Membership::Modes { region, .. } => {
                    Model::sum(m.modes().into_iter().map(|k| (1.0, z[region][k])))
                }
            }
        };
        let mut x: Vec<Vec<(Time, good_lp::Variable, usize)>> = Vec::with_capacity(p.len());
        for a in p.ids() {
            let present_warm = warm.map(|s| problem.present(a, &s.modes));
            let mut v = Vec::new();
            for t in es[a.index()]..=ls[a.index()] {
                let w = warm.map(|s| {
                    f64::from(u8::from(
                        present_warm == Some(true) && s.starts[a.index()] == t,
                    ))
                });
                let var = model.var(good_lp::variable().binary(), w);
                v.push((t, var, model.last()));
            }
            let mut e = Model::sum(v.iter().map(|&(_, var, _)| (1.0, var)));
            e -= presence(a);
            model.add(e.eq(0.0));
            x.push(v);
        }
        let start_of = |a: concerto_rcpsp::ActivityId| -> Expression {
            Model::sum(x[a.index()].iter().map(|&(t, var, _)| (t as f64, var)))
        };
        // Resources.
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
                    for &(t, var, _) in &x[a.index()] {
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
        // Precedences.
        for pr in p.precedences() {
            let (a, b) = (pr.from, pr.to);
            let gap = (p.duration(a) + pr.lag) as f64;
            let (ma, mb) = (problem.membership(a), problem.membership(b));
            let same = ma == mb;
            if same {
                let mut e = start_of(b) - start_of(a);
                e -= presence(a) * gap;
                model.add(e.geq(0.0));
            } else {
                // Large enough when `a` is absent (S_a = 0) or `b` is (S_b = 0).
                let big = (ls[a.index()].max(0) + p.duration(a) + pr.lag) as f64;
                // S_b - S_a - gap + M (2 - p_a - p_b) >= 0
                let mut e = start_of(b) - start_of(a);
                e += presence(a) * (-big) + presence(b) * (-big);
                model.add(e.geq(gap - 2.0 * big));
            }
        }
        // Makespan.
        let c = model.objective;
        for a in p.ids() {
            let d = p.duration(a) as f64;
            let mut e = Expression::from(c) - start_of(a);
            e -= presence(a) * d;
            model.add(e.geq(0.0));
        }
        if let Some(reason) = clock.should_stop() {
            return match initial {
                Some(s) => finish(Some(s.clone()), mandatory_bound, Status::Feasible(reason)),
                None => finish(None, mandatory_bound, Status::Unknown(reason)),
            };
        }
        let options = RunOptions {
            time_limit: clock.remaining().map(|left| {
                left.saturating_sub(super::margin(limits))
                    .max(std::time::Duration::from_millis(1))
            }),
            threads: limits.threads,
            seed: limits.seed,
            mip_gap: 0.0,
            work_limit: limits.work_limit,
        };
        let raw = self
            .milp
            .run(model, &options, &clock, limits)
            .map_err(|message| SolveError::Backend {
                solver: name.clone(),
                message,
            })?;
        let mut bound = mandatory_bound;
        if let Some(b) = raw.bound.filter(|b| b.is_finite()) {
            bound = bound.max((b - 1e-6).ceil() as Time);
        }
        let read = |values: &[f64]| -> Option<ModalSolution> {
            let modes: Vec<usize> = z_pos
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
                    starts[a.index()] = x[a.index()]
                        .iter()
                        .find(|&&(_, _, pos)| values[pos] > 0.5)
                        .map(|&(t, _, _)| t)?;
                }
            }
            let s = ModalSolution { modes, starts };
            check_modal(problem, &s).ok().map(|_| s)
        };
        let found = raw.values.as_deref().and_then(read);
        let best = match (found, initial) {
            (Some(f), Some(i)) => {
                let fm = check_modal(problem, &f).unwrap_or(Time::MAX);
                if fm <= initial_makespan.unwrap_or(Time::MAX) {
                    Some(f)
                } else {
                    Some(i.clone())
                }
            }
            (Some(f), None) => Some(f),
            (None, i) => i.cloned(),
        };
        if improve_only {
            bound = bound.min(horizon);
        }
        let outcome = match raw.status {
            RawStatus::Infeasible if improve_only => finish(best, horizon, Status::Optimal),
            RawStatus::Infeasible => {
                if warm.is_some() {
                    return Err(SolveError::Backend {
                        solver: name,
                        message: "reported infeasible although the warm start is feasible".into(),
                    });
                }
                finish(None, bound.max(horizon + 1), Status::Infeasible)
            }
            RawStatus::Optimal => match best {
                Some(s) => {
                    let m = check_modal(problem, &s).unwrap_or(Time::MAX);
                    finish(Some(s), m, Status::Optimal)
                }
                None => Err(SolveError::Backend {
                    solver: name,
                    message: "reported optimal without a valid solution".into(),
                }),
            },
            RawStatus::GapReached | RawStatus::WorkLimit | RawStatus::TimeLimit => {
                let reason = match raw.status {
                    RawStatus::GapReached => StopReason::GapLimit,
                    RawStatus::WorkLimit => StopReason::WorkLimit,
                    // The wait for the backend ends at the deadline or on the cancel flag.
                    _ => clock.should_stop().unwrap_or(StopReason::TimeLimit),
                };
                match best {
                    Some(s) => {
                        let m = check_modal(problem, &s).unwrap_or(Time::MAX);
                        let bound = bound.min(m);
                        let status = if bound == m {
                            Status::Optimal
                        } else {
                            Status::Feasible(reason)
                        };
                        finish(Some(s), bound, status)
                    }
                    None => finish(None, bound, Status::Unknown(reason)),
                }
            }
        };
        outcome.map(|o| ModalOutcome {
            work: raw.nodes,
            ..o
        })
    }
}
