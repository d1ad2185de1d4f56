//! Joint solving in windows: each region's mode decided together with the order around it,
//! by an exact [`ModalSolver`], from a starting solution that is never made worse.
//!
//! The odd-even driver ([`crate::oddeven`]) makes exact scheduling scale by solving windows
//! of the current order while everything else stays fixed. [`improve`] does the same for a
//! [`ModalProblem`], with windows anchored on the alternatives:
//!
//! - **Window.** Anchored on one alternative: for a region and another of its modes, the
//!   positions (in the current order by start) of the present activities that mode would
//!   remove, if they span at most [`JointConfig::max_span`] positions, plus `neighbours`
//!   present activities on each side. Every region may take, besides its current mode, each
//!   mode whose removals all lie in the window (its added activities join the window); the
//!   window decides them together. Its time span `[t0, t1]` is the current one of its present
//!   activities.
//! - **Sub-problem.** A modal problem with those regions and modes (the window's other
//!   activities mandatory, activities of modes it cannot take left out). Outside present
//!   activities stay where they are: a predecessor outside gives a release date, a successor
//!   outside a deadline, and every one that runs during the span is pinned, clipped to the
//!   span, so the capacity it takes is taken. Every window activity finishes by `t1`; the
//!   objective is the window's makespan.
//! - **Coarse time.** Times are measured from `t0` in units of `q = ceil((t1 - t0) /`
//!   [`JointConfig::resolution`]`)` and floored, so the floored current solution is feasible
//!   and is the solve's starting solution (as in the odd-even driver); the answer is used for
//!   its modes and its order only.
//! - **Decode.** The new mode choice's reduced problem is decoded by the serial SGS from the
//!   order "window activities by their new start, the others by their current start" (made
//!   topological by Kahn's algorithm), which gives exact, feasible times. The result replaces
//!   the current solution only when its makespan is shorter, or equal with a smaller sum of
//!   finish times (a left shift that later windows can use).
//!
//! Rounds visit the anchors in order of their position until a round changes nothing,
//! `rounds` is reached, the time limit runs out or the work budget is spent.
//!
//! **Work budget.** With [`Limits::work_limit`] each window gets
//! [`JointConfig::window_work_limit`] (capped by the budget left) instead of
//! [`JointConfig::window_time_limit`], and the time limit only as a safety net; the work each
//! window reports ([`ModalOutcome::work`](crate::ModalOutcome::work), at least 1) is charged,
//! and the run stops after the window that spends the budget. Windows run one after another,
//! so the result is then the same on any machine and load, as long as the time limit is not
//! reached (see [`Limits`]). Every solution kept passes
//! [`check_modal`]. Cost per window: one exact modal solve (bounded by
//! [`JointConfig::window_time_limit`]) plus O((n + m) log n) to decode.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::modal::{check_modal, ModalProblem, ModalSolution, ModalSolver};
use crate::problem::{ActivityId, Time};
use crate::solver::{Limits, SolveError};

mod window;

use window::solve_window;

/// Options of [`improve`].
#[derive(Clone, Debug, PartialEq)]
pub struct JointConfig {
    /// Present activities added on each side of a region's.
    pub neighbours: usize,
    /// Time limit of each window's solve (without a work budget).
    pub window_time_limit: Duration,
    /// Work limit of each window's solve under [`Limits::work_limit`], in the modal solver's
    /// unit (conflicts for pumpkin, nodes for the MILPs); it replaces
    /// [`JointConfig::window_time_limit`] then. `None`: a window may spend all the budget left.
    pub window_work_limit: Option<u64>,
    /// Rounds over all regions, at most.
    pub rounds: usize,
    /// Time units across a window (see the module docs).
    pub resolution: Time,
    /// Widest change (positions in the current order between the first and the last
    /// activity a mode removes) a window is anchored on; wider changes are not tried.
    pub max_span: usize,
}

impl Default for JointConfig {
    fn default() -> Self {
        Self {
            neighbours: 12,
            window_time_limit: Duration::from_millis(500),
            window_work_limit: Some(2_000),
            rounds: 3,
            resolution: 1_000,
            max_span: 96,
        }
    }
}

/// What [`improve`] did.
#[derive(Clone, Debug)]
pub struct JointReport {
    /// The best solution (the start when nothing improved it); it passed [`check_modal`].
    pub solution: ModalSolution,
    /// Its makespan.
    pub makespan: Time,
    /// The starting solution's makespan.
    pub start_makespan: Time,
    /// Windows solved.
    pub windows: usize,
    /// Windows whose answer was kept.
    pub improved: usize,
    /// Windows whose answer changed a region's mode.
    pub mode_changes: usize,
    /// Windows the solver refused as too large for its encoding
    /// ([`SolveError::Unsupported`]), skipped.
    pub skipped: usize,
    /// Work the windows reported, at least 1 each, in the modal solver's unit.
    pub work: u64,
    /// Whether the run stopped because the work budget was spent.
    pub budget_spent: bool,
    /// Wall time.
    pub elapsed: Duration,
}

fn backend(message: String) -> SolveError {
    SolveError::Backend {
        solver: "joint".into(),
        message,
    }
}

/// Improves `start` window by window with `solver` (see the module docs). `start` must pass
/// [`check_modal`]. `limits.time_limit` bounds the whole run, and so does
/// `limits.work_limit`.
pub fn improve(
    problem: &ModalProblem,
    start: &ModalSolution,
    solver: &dyn ModalSolver,
    config: &JointConfig,
    limits: &Limits,
) -> Result<JointReport, SolveError> {
    let began = Instant::now();
    check_limits(config, limits)?;
    let start_makespan =
        check_modal(problem, start).map_err(|source| SolveError::InvalidModalInitial { source })?;
    let mut current = start.clone();
    let mut makespan = start_makespan;
    let (mut windows, mut improved, mut mode_changes, mut skipped) = (0, 0, 0, 0);
    let mut work = 0u64;
    let mut budget_spent = false;
    let out_of_time = |began: Instant| {
        limits.time_limit.is_some_and(|t| began.elapsed() >= t)
            || limits.cancel.as_ref().is_some_and(|c| c.is_cancelled())
    };
    'rounds: for _ in 0..config.rounds {
        let mut changed = false;
        for (r, lo, hi) in anchors(problem, &current, config.max_span) {
            if out_of_time(began) {
                break 'rounds;
            }
            let left = limits.time_limit.map(|t| t.saturating_sub(began.elapsed()));
            if left.is_some_and(|l| l.is_zero()) {
                break 'rounds;
            }
            let window_limits = window_limits(config, limits, left, work);
            windows += 1;
            let (found, spent) = match solve_window(
                problem,
                &current,
                (r, lo, hi),
                solver,
                config,
                &window_limits,
            ) {
                Ok(answer) => answer,
                // A window too large for this solver's encoding is skipped, not fatal.
                Err(SolveError::Unsupported { .. }) => {
                    skipped += 1;
                    (None, 0)
                }
                Err(e) => return Err(e),
            };
            work = work.saturating_add(spent.max(1));
            if limits.work_limit.is_some_and(|budget| work >= budget) {
                budget_spent = true;
            }
            let Some(candidate) = found else {
                continue;
            };
            let m = check_modal(problem, &candidate).map_err(|source| {
                SolveError::InvalidModalAnswer {
                    solver: solver.name().to_owned(),
                    source,
                }
            })?;
            if m < makespan
                || (m == makespan && finishes(problem, &candidate) < finishes(problem, &current))
            {
                if candidate.modes != current.modes {
                    mode_changes += 1;
                }
                current = candidate;
                makespan = m;
                improved += 1;
                changed = true;
            }
            if budget_spent {
                break 'rounds;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(JointReport {
        solution: current,
        makespan,
        start_makespan,
        windows,
        improved,
        mode_changes,
        skipped,
        work,
        budget_spent,
        elapsed: began.elapsed(),
    })
}

/// Errors on a zero time limit, or a zero work limit for the run or a window.
fn check_limits(config: &JointConfig, limits: &Limits) -> Result<(), SolveError> {
    if limits.time_limit.is_some_and(|t| t.is_zero()) {
        return Err(SolveError::ZeroTimeLimit);
    }
    if limits.work_limit == Some(0) || config.window_work_limit == Some(0) {
        return Err(SolveError::InvalidLimits {
            reason: format!(
                "the work limit and the window work limit must be positive, got {:?} and {:?}",
                limits.work_limit, config.window_work_limit
            ),
        });
    }
    Ok(())
}

/// The limits of the next window, with `left` of the run's time and `work` spent: the work
/// left (at most the window's limit) under the run's deadline when the run has a work
/// budget, else the window's time limit within the time left.
fn window_limits(
    config: &JointConfig,
    limits: &Limits,
    left: Option<Duration>,
    work: u64,
) -> Limits {
    match limits.work_limit {
        // The run's deadline as a safety net; the budget decides.
        Some(budget) => {
            let left_work = budget.saturating_sub(work);
            Limits {
                work_limit: Some(
                    config
                        .window_work_limit
                        .map_or(left_work, |w| w.min(left_work)),
                ),
                ..limits.helper(left)
            }
        }
        None => {
            let window = left.map_or(config.window_time_limit, |l| {
                l.min(config.window_time_limit)
            });
            limits.helper(Some(window))
        }
    }
}

/// The sum of the present activities' finishes in `s`: among equal makespans, the smaller
/// is better.
fn finishes(problem: &ModalProblem, s: &ModalSolution) -> i128 {
    problem
        .problem()
        .ids()
        .filter(|&a| problem.present(a, &s.modes))
        .map(|a| i128::from(s.starts[a.index()] + problem.problem().duration(a)))
        .sum()
}

/// The activities present now that region `x`'s mode `k` removes.
fn removed(problem: &ModalProblem, s: &ModalSolution, x: usize, k: usize) -> Vec<ActivityId> {
    let region = &problem.regions()[x];
    region.modes[s.modes[x]]
        .iter()
        .copied()
        .filter(|&a| !problem.membership(a).in_mode(k))
        .collect()
}

/// The windows of a round: for each region and each other mode, the span of positions (in
/// the current order by start) of what the mode would remove, at most `max_span` wide;
/// duplicates dropped; by start. A mode that removes nothing is anchored at its region's
/// present activities.
fn anchors(
    problem: &ModalProblem,
    s: &ModalSolution,
    max_span: usize,
) -> Vec<(usize, usize, usize)> {
    let p = problem.problem();
    let mut order: Vec<ActivityId> = p.ids().filter(|&a| problem.present(a, &s.modes)).collect();
    order.sort_by_key(|&a| (s.starts[a.index()], a.0));
    let position: BTreeMap<ActivityId, usize> =
        order.iter().enumerate().map(|(i, &a)| (a, i)).collect();
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    for (x, region) in problem.regions().iter().enumerate() {
        for k in 0..region.modes.len() {
            if k == s.modes[x] {
                continue;
            }
            let mut gone = removed(problem, s, x, k);
            if gone.is_empty() {
                gone = region.modes[s.modes[x]].clone();
            }
            let ps: Vec<usize> = gone
                .iter()
                .filter_map(|a| position.get(a).copied())
                .collect();
            let (Some(&lo), Some(&hi)) = (ps.iter().min(), ps.iter().max()) else {
                continue;
            };
            if hi - lo <= max_span {
                out.push((x, lo, hi));
            }
        }
    }
    out.sort_by_key(|&(x, lo, hi)| (lo, hi, x));
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modal::{brute_force, ModalOutcome, Region};
    use crate::problem::ProblemBuilder;
    use crate::registry::Registry;

    /// Brute force over the modes with the `sgs` heuristic: enough for these tiny windows.
    struct Brute;

    impl ModalSolver for Brute {
        fn name(&self) -> &str {
            "brute"
        }

        fn solve_modal(
            &self,
            problem: &ModalProblem,
            limits: &Limits,
            _initial: Option<&ModalSolution>,
        ) -> Result<ModalOutcome, SolveError> {
            let sgs = Registry::with_builtin().get("sgs").expect("built in");
            brute_force(problem, sgs.as_ref(), limits)
        }
    }

    /// Mandatory `x` (compute 6); regions `a` and `b`, each either compute 6 (mode 0) or a
    /// transfer of 9 on the one comm channel (mode 1). Alone, each mode 1 saves 6 (18 -> 12);
    /// together they queue on the channel (18). A selection by additive gains takes both.
    fn interaction() -> ModalProblem {
        let mut b = ProblemBuilder::new();
        let compute = b.resource("compute", 1);
        let comm = b.resource("comm", 1);
        let x = b.activity("x", 6);
        b.demand(x, compute, 1);
        let mut regions = Vec::new();
        for name in ["a", "b"] {
            let c = b.activity(format!("{name}.compute"), 6);
            b.demand(c, compute, 1);
            let t = b.activity(format!("{name}.comm"), 9);
            b.demand(t, comm, 1);
            regions.push(Region {
                name: name.into(),
                modes: vec![vec![c], vec![t]],
            });
        }
        ModalProblem::new(b.build().unwrap(), regions).unwrap()
    }

    #[test]
    fn windows_undo_a_choice_whose_parts_only_help_alone() {
        let m = interaction();
        let both = ModalSolution {
            modes: vec![1, 1],
            starts: vec![0, 0, 0, 0, 9],
        };
        assert_eq!(check_modal(&m, &both), Ok(18));
        let limits = Limits::with_time_limit(Duration::from_secs(10));
        let r = improve(&m, &both, &Brute, &JointConfig::default(), &limits).unwrap();
        assert_eq!(r.start_makespan, 18);
        assert_eq!(r.makespan, 12, "{:?}", r.solution);
        assert_eq!(check_modal(&m, &r.solution), Ok(12));
        assert_eq!(r.solution.modes.iter().filter(|&&k| k == 1).count(), 1);
        assert!(r.mode_changes >= 1 && r.improved >= 1);
        // The exact optimum over all modes is 12 too.
        let sgs = Registry::with_builtin().get("sgs").unwrap();
        let best = brute_force(&m, sgs.as_ref(), &limits).unwrap();
        assert_eq!(best.makespan, Some(12));
    }

    /// A solver that takes no window.
    struct TooSmall;

    impl ModalSolver for TooSmall {
        fn name(&self) -> &str {
            "too-small"
        }

        fn solve_modal(
            &self,
            _: &ModalProblem,
            _: &Limits,
            _: Option<&ModalSolution>,
        ) -> Result<ModalOutcome, SolveError> {
            Err(SolveError::Unsupported {
                solver: "too-small".into(),
                reason: "every window is too large".into(),
            })
        }
    }

    #[test]
    fn windows_a_solver_refuses_are_skipped_and_the_start_kept() {
        let m = interaction();
        let both = ModalSolution {
            modes: vec![1, 1],
            starts: vec![0, 0, 0, 0, 9],
        };
        let limits = Limits::with_time_limit(Duration::from_secs(10));
        let r = improve(&m, &both, &TooSmall, &JointConfig::default(), &limits).unwrap();
        assert_eq!((r.makespan, r.improved), (18, 0));
        assert_eq!(r.skipped, r.windows);
        assert!(r.windows >= 2);
    }

    #[test]
    fn a_start_that_is_already_best_is_kept_and_bad_starts_are_errors() {
        let m = interaction();
        let one = ModalSolution {
            modes: vec![1, 0],
            starts: vec![0, 0, 0, 6, 0],
        };
        assert_eq!(check_modal(&m, &one), Ok(12));
        let limits = Limits::with_time_limit(Duration::from_secs(10));
        let r = improve(&m, &one, &Brute, &JointConfig::default(), &limits).unwrap();
        assert_eq!(r.makespan, 12);
        let bad = ModalSolution {
            modes: vec![0, 0],
            starts: vec![0, 0, 0, 0, 0],
        };
        let e = improve(&m, &bad, &Brute, &JointConfig::default(), &limits).unwrap_err();
        assert!(matches!(e, SolveError::InvalidModalInitial { .. }), "{e}");
        assert!(
            e.to_string().contains("initial modal solution is invalid"),
            "{e}"
        );
        let zero = Limits::with_time_limit(Duration::ZERO);
        assert!(improve(&m, &one, &Brute, &JointConfig::default(), &zero).is_err());
    }
}
