//! RCPSP with alternative modes per region: the model of joint decomposition and scheduling.
//!
//! A [`ModalProblem`] is a [`Problem`] whose activities are either *mandatory* or belong to
//! one or more *modes* of one *region*. A solution chooses one mode per region and a start for
//! every activity: the activities of the chosen modes and the mandatory ones are *present*,
//! those of the other modes are *absent*. Absent activities use no resource, do not count in
//! the makespan, and every precedence with an absent end is void. What remains, the
//! *reduced* problem of the chosen modes ([`ModalProblem::reduce`]), must be scheduled
//! feasibly; the makespan is the reduced schedule's.
//!
//! In joint decomposition each critical region of a training step has the mode "no split"
//! (its original ops) and one mode per candidate decomposition (the chunks and joins that
//! replace them); ops outside every region are mandatory, and the precedences of every mode to
//! and from the rest of the graph are all present in the problem, each active only when both
//! its ends are.
//!
//! - [`ModalProblem::reduce`] builds the reduced problem of a mode choice;
//! - [`check_modal`] is the independent check of a [`ModalSolution`] (reduce, then
//!   [`check`]);
//! - [`brute_force`] solves every mode combination separately with an exact [`Solver`] and
//!   keeps the best: the reference the exact modal encodings are tested against
//!   (exponential in the regions: for tests and small windows);
//! - [`ModalSolver`] is what a backend implements to solve the modes and the times together
//!   (the encodings are documented by each backend: presence literals in `pumpkin`, mode
//!   binaries in the MILP backends).
//!
//! Cost: [`ModalProblem::new`] and [`ModalProblem::reduce`] are O(activities + precedences).

use std::fmt;
use std::time::{Duration, Instant};

use crate::check::{check, Violations};
use crate::problem::{ActivityId, Problem, ProblemBuilder, ProblemError, Time};
use crate::schedule::Schedule;
use crate::solver::{Limits, SolveError, Solver, Status, StopReason};

/// One region: its alternative modes, each a set of activities.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Region {
    /// The region's name (the critical collective, in joint decomposition).
    pub name: String,
    /// The activities of each mode; mode 0 is the default (for decomposition: no split).
    pub modes: Vec<Vec<ActivityId>>,
}

/// Most modes of one region (a mode set is a 128-bit mask).
pub const MAX_REGION_MODES: usize = 128;

/// Where an activity belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Membership {
    /// Present in every solution.
    Mandatory,
    /// Present when its region runs in one of a set of modes (an activity that several
    /// modes share, such as an op that a decomposition leaves unchanged).
    Modes {
        /// The region's index.
        region: usize,
        /// The modes, one bit each (bit `k` for mode `k`).
        set: u128,
    },
}

impl Membership {
    /// Whether the activity is present when its region (if any) runs in `mode`.
    pub fn in_mode(self, mode: usize) -> bool {
        match self {
            Membership::Mandatory => true,
            Membership::Modes { set, .. } => mode < MAX_REGION_MODES && set >> mode & 1 == 1,
        }
    }

    /// The modes of the set, in order (empty for a mandatory activity).
    pub fn modes(self) -> Vec<usize> {
        match self {
            Membership::Mandatory => Vec::new(),
            Membership::Modes { set, .. } => (0..MAX_REGION_MODES)
                .filter(|k| set >> k & 1 == 1)
                .collect(),
        }
    }
}

/// A problem with regions of alternative modes (see the module docs).
#[derive(Clone, Debug)]
pub struct ModalProblem {
    problem: Problem,
    regions: Vec<Region>,
    membership: Vec<Membership>,
}

/// Why a modal problem or solution is malformed. Every variant names the place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModalError {
    /// A region without modes.
    #[error("region `{region}` has no mode")]
    NoMode {
        /// The region.
        region: String,
    },
    /// An activity index out of range.
    #[error("region `{region}` mode {mode} names activity #{index}, but the problem has {len}")]
    UnknownActivity {
        /// The region.
        region: String,
        /// The mode.
        mode: usize,
        /// The index given.
        index: usize,
        /// Activities in the problem.
        len: usize,
    },
    /// An activity in two modes (of one region or two).
    #[error("activity `{activity}` is in two modes: {first} and {second}")]
    TwoModes {
        /// The activity.
        activity: String,
        /// `region/mode` of the first.
        first: String,
        /// `region/mode` of the second.
        second: String,
    },
    /// A solution names the wrong number of modes, or a mode out of range.
    #[error("invalid mode choice: {reason}")]
    InvalidChoice {
        /// What is wrong.
        reason: String,
    },
    /// The reduced problem could not be built.
    #[error("the reduced problem: {0}")]
    Reduced(#[from] ProblemError),
    /// A solution whose number of starts is not the number of activities.
    #[error("{starts} starts for {activities} activities")]
    StartCount {
        /// Starts given.
        starts: usize,
        /// Activities in the full problem.
        activities: usize,
    },
    /// The starts break the reduced problem of the chosen modes (the activities are named
    /// as in the reduced problem, whose names are the full problem's).
    #[error("{0}")]
    Schedule(#[from] Violations),
}

/// A solution: one mode per region and a start per activity of the full problem (the starts
/// of absent activities are ignored).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ModalSolution {
    /// The mode chosen in each region.
    pub modes: Vec<usize>,
    /// One start per activity of [`ModalProblem::problem`].
    pub starts: Vec<Time>,
}

/// The reduced problem of a mode choice.
#[derive(Clone, Debug)]
pub struct Reduced {
    /// The present activities, with the precedences between them.
    pub problem: Problem,
    /// `activities[i]`: the activity of the full problem that activity `i` of the reduced
    /// one is.
    pub activities: Vec<ActivityId>,
}

impl Reduced {
    /// The full problem's starts of a reduced schedule (absent activities start at 0).
    pub fn expand(&self, schedule: &Schedule, full_len: usize) -> Vec<Time> {
        let mut starts = vec![0; full_len];
        for (i, a) in self.activities.iter().enumerate() {
            starts[a.index()] = schedule.start(ActivityId(i));
        }
        starts
    }

    /// The reduced schedule of a full problem's starts.
    pub fn restrict(&self, starts: &[Time]) -> Schedule {
        Schedule::new(self.activities.iter().map(|a| starts[a.index()]).collect())
    }
}

impl ModalProblem {
    /// A modal problem; errors when a region has no mode or more than
    /// [`MAX_REGION_MODES`], names an unknown activity, or an activity is in modes of two
    /// regions or twice in one mode. An activity may be in several modes of one region.
    pub fn new(problem: Problem, regions: Vec<Region>) -> Result<ModalProblem, ModalError> {
        let n = problem.len();
        let mut membership = vec![Membership::Mandatory; n];
        for (r, region) in regions.iter().enumerate() {
            if region.modes.is_empty() {
                return Err(ModalError::NoMode {
                    region: region.name.clone(),
                });
            }
            if region.modes.len() > MAX_REGION_MODES {
                return Err(ModalError::InvalidChoice {
                    reason: format!(
                        "region `{}` has {} modes, more than {MAX_REGION_MODES}",
                        region.name,
                        region.modes.len()
                    ),
                });
            }
            for (m, acts) in region.modes.iter().enumerate() {
                for &a in acts {
                    if a.index() >= n {
                        return Err(ModalError::UnknownActivity {
                            region: region.name.clone(),
                            mode: m,
                            index: a.index(),
                            len: n,
                        });
                    }
                    let bit = 1u128 << m;
                    membership[a.index()] = match membership[a.index()] {
                        Membership::Mandatory => Membership::Modes {
                            region: r,
                            set: bit,
                        },
                        Membership::Modes { region: r0, set } if r0 == r && set & bit == 0 => {
                            Membership::Modes {
                                region: r,
                                set: set | bit,
                            }
                        }
                        Membership::Modes { region: r0, set } => {
                            let m0 = (0..MAX_REGION_MODES)
                                .find(|k| set >> k & 1 == 1)
                                .unwrap_or(0);
                            return Err(ModalError::TwoModes {
                                activity: problem.activity(a).name.clone(),
                                first: format!("{}/{m0}", regions[r0].name),
                                second: format!("{}/{m}", region.name),
                            });
                        }
                    };
                }
            }
        }
        Ok(ModalProblem {
            problem,
            regions,
            membership,
        })
    }

    /// The full problem: every activity of every mode, every precedence.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// The regions.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Where activity `a` belongs.
    pub fn membership(&self, a: ActivityId) -> Membership {
        self.membership[a.index()]
    }

    /// Whether `a` is present under the mode choice `modes`.
    pub fn present(&self, a: ActivityId, modes: &[usize]) -> bool {
        match self.membership[a.index()] {
            Membership::Mandatory => true,
            m @ Membership::Modes { region, .. } => m.in_mode(modes[region]),
        }
    }

    /// Mode combinations: the product of the regions' mode counts (saturating).
    pub fn combinations(&self) -> u64 {
        self.regions
            .iter()
            .fold(1u64, |p, r| p.saturating_mul(r.modes.len() as u64))
    }

    fn validate_choice(&self, modes: &[usize]) -> Result<(), ModalError> {
        if modes.len() != self.regions.len() {
            return Err(ModalError::InvalidChoice {
                reason: format!("{} modes for {} regions", modes.len(), self.regions.len()),
            });
        }
        for (r, (&m, region)) in modes.iter().zip(&self.regions).enumerate() {
            if m >= region.modes.len() {
                return Err(ModalError::InvalidChoice {
                    reason: format!(
                        "region {r} (`{}`) has {} modes, not mode {m}",
                        region.name,
                        region.modes.len()
                    ),
                });
            }
        }
        Ok(())
    }

    /// The reduced problem of the mode choice `modes` (one per region): the present
    /// activities, in their order in the full problem, with the precedences between them.
    pub fn reduce(&self, modes: &[usize]) -> Result<Reduced, ModalError> {
        self.validate_choice(modes)?;
        let p = &self.problem;
        let mut b = ProblemBuilder::new();
        let resources: Vec<_> = p
            .resources()
            .iter()
            .map(|r| b.resource(r.name.clone(), r.capacity))
            .collect();
        let mut index = vec![None; p.len()];
        let mut activities = Vec::new();
        for a in p.ids() {
            if !self.present(a, modes) {
                continue;
            }
            let act = p.activity(a);
            let id = b.activity(act.name.clone(), act.duration);
            if act.release > 0 {
                b.release(id, act.release);
            }
            if let Some(d) = act.deadline {
                b.deadline(id, d);
            }
            for (r, &amount) in act.demands.iter().enumerate() {
                if amount > 0 {
                    b.demand(id, resources[r], amount);
                }
            }
            index[a.index()] = Some(id);
            activities.push(a);
        }
        for pr in p.precedences() {
            if let (Some(f), Some(t)) = (index[pr.from.index()], index[pr.to.index()]) {
                b.precedence_with_lag(f, t, pr.lag);
            }
        }
        Ok(Reduced {
            problem: b.build()?,
            activities,
        })
    }

    /// Whether the precedence between `a` and `b` binds in every solution where `b` is
    /// present: `a` is mandatory, or `a` is present in every mode of its region where `b` is.
    pub fn binds_with(&self, a: ActivityId, b: ActivityId) -> bool {
        match (self.membership[a.index()], self.membership[b.index()]) {
            (Membership::Mandatory, _) => true,
            (
                Membership::Modes {
                    region: ra,
                    set: sa,
                },
                Membership::Modes {
                    region: rb,
                    set: sb,
                },
            ) => ra == rb && sb & !sa == 0,
            (Membership::Modes { .. }, Membership::Mandatory) => false,
        }
    }

    /// Earliest start of each activity over every mode choice in which it is present: the
    /// critical path method over the precedences that bind whenever their successor is present
    /// ([`ModalProblem::binds_with`]); the others (from an activity of another mode) are
    /// skipped, so the bound holds for every choice. O(activities + precedences).
    pub fn earliest_starts(&self) -> Vec<Time> {
        let p = &self.problem;
        let mut es = vec![0 as Time; p.len()];
        for &j in p.topological_order() {
            let e = p
                .predecessors(j)
                .iter()
                .filter(|arc| self.binds_with(arc.activity, j))
                .map(|arc| es[arc.activity.index()] + p.duration(arc.activity) + arc.lag)
                .max()
                .unwrap_or(0)
                .max(p.release(j));
            es[j.index()] = e;
        }
        es
    }

    /// Latest start of each activity for the makespan `deadline`, over every mode choice in
    /// which it is present: backward CPM over the precedences that bind whenever their
    /// predecessor is present. O(activities + precedences).
    pub fn latest_starts(&self, deadline: Time) -> Vec<Time> {
        let p = &self.problem;
        let mut ls = vec![0 as Time; p.len()];
        for &i in p.topological_order().iter().rev() {
            let d = p.duration(i);
            let own = p.deadline(i).map_or(deadline, |di| di.min(deadline)) - d;
            ls[i.index()] = p
                .successors(i)
                .iter()
                .filter(|arc| self.binds_with(arc.activity, i))
                .map(|arc| ls[arc.activity.index()] - arc.lag - d)
                .min()
                .unwrap_or(own)
                .min(own);
        }
        ls
    }

    /// Every mode combination, in lexicographic order (region 0 slowest).
    pub fn all_choices(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new()];
        for region in &self.regions {
            out = out
                .into_iter()
                .flat_map(|prefix| {
                    (0..region.modes.len()).map(move |m| {
                        let mut v = prefix.clone();
                        v.push(m);
                        v
                    })
                })
                .collect();
        }
        out
    }
}

/// Checks a modal solution independently: a valid mode choice
/// ([`ModalError::InvalidChoice`]), one start per activity ([`ModalError::StartCount`]), and
/// the reduced problem's schedule passes [`check`] ([`ModalError::Schedule`]). Returns the
/// makespan.
pub fn check_modal(problem: &ModalProblem, solution: &ModalSolution) -> Result<Time, ModalError> {
    if solution.starts.len() != problem.problem().len() {
        return Err(ModalError::StartCount {
            starts: solution.starts.len(),
            activities: problem.problem().len(),
        });
    }
    let reduced = problem.reduce(&solution.modes)?;
    Ok(check(
        &reduced.problem,
        &reduced.restrict(&solution.starts),
    )?)
}

/// The result of a modal solve.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ModalOutcome {
    /// What was established.
    pub status: Status,
    /// The best solution found (`Some` exactly for `Optimal` and `Feasible`).
    pub solution: Option<ModalSolution>,
    /// Its makespan.
    pub makespan: Option<Time>,
    /// The best lower bound proven on the optimal makespan over all mode choices.
    pub lower_bound: Time,
    /// The solver's name.
    pub solver: String,
    /// Wall time.
    pub elapsed: Duration,
    /// Work done, in the solver's own unit, the one of
    /// [`Limits::work_limit`](crate::Limits#structfield.work_limit) (conflicts for pumpkin,
    /// branch-and-bound nodes for the MILPs, the sub-solves' work added up for
    /// [`brute_force`]).
    pub work: u64,
}

impl fmt::Display for ModalOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.solution, self.makespan) {
            (Some(s), Some(m)) => write!(
                f,
                "{}: makespan {m} (bound {}) with modes {:?}",
                self.status, self.lower_bound, s.modes
            ),
            _ => write!(f, "{} (bound {})", self.status, self.lower_bound),
        }
    }
}

/// A solver of modal problems: modes and times together.
///
/// Implementations must validate the limits, stop at the time limit and return the best
/// solution found with the best bound proven, start from `initial` when given (a valid
/// solution: the search only looks for better ones), and pass every solution through
/// [`check_modal`] before returning it ([`SolveError::Backend`] otherwise: a bug).
pub trait ModalSolver: Send + Sync {
    /// The backend's name.
    fn name(&self) -> &str;

    /// Solves `problem` within `limits` (`limits.initial` is ignored: the starting solution
    /// is `initial`).
    fn solve_modal(
        &self,
        problem: &ModalProblem,
        limits: &Limits,
        initial: Option<&ModalSolution>,
    ) -> Result<ModalOutcome, SolveError>;
}

/// Checks `outcome`'s solution with [`check_modal`]: a solution that fails, or a makespan or
/// bound inconsistent with it, is a [`SolveError::Backend`] naming the solver.
pub fn verified_modal(
    problem: &ModalProblem,
    outcome: ModalOutcome,
) -> Result<ModalOutcome, SolveError> {
    if let Some(s) = &outcome.solution {
        let makespan =
            check_modal(problem, s).map_err(|source| SolveError::InvalidModalAnswer {
                solver: outcome.solver.clone(),
                source,
            })?;
        if outcome.makespan != Some(makespan) || outcome.lower_bound > makespan {
            return Err(SolveError::Backend {
                solver: outcome.solver.clone(),
                message: format!(
                    "makespan {:?} and bound {} for a solution of makespan {makespan}",
                    outcome.makespan, outcome.lower_bound
                ),
            });
        }
    }
    Ok(outcome)
}

/// The best solution over every mode combination, each reduced problem solved by `solver`
/// within `limits` (its time limit applies to each solve). Exact when every solve is
/// optimal; otherwise the outcome is `Feasible` and its bound the smallest bound proven
/// over the combinations. Exponential in the number of regions: for tests and small
/// windows ([`ModalProblem::combinations`] says how many solves).
pub fn brute_force(
    problem: &ModalProblem,
    solver: &dyn Solver,
    limits: &Limits,
) -> Result<ModalOutcome, SolveError> {
    let began = Instant::now();
    let mut best: Option<(Time, ModalSolution)> = None;
    let mut bound = Time::MAX;
    let mut all_optimal = true;
    let mut work = 0u64;
    // Why the first sub-solve that proved nothing stopped.
    let mut reason = None;
    for modes in problem.all_choices() {
        let reduced = problem.reduce(&modes).map_err(|e| SolveError::Backend {
            solver: solver.name().to_string(),
            message: e.to_string(),
        })?;
        let o = solver.solve(&reduced.problem, &limits.helper(limits.time_limit))?;
        bound = bound.min(o.lower_bound);
        all_optimal &= o.status == Status::Optimal;
        work = work.saturating_add(o.work);
        reason = reason.or(o.status.stop_reason());
        if let (Some(s), Some(m)) = (&o.schedule, o.makespan) {
            if best.as_ref().is_none_or(|(b, _)| m < *b) {
                let starts = reduced.expand(s, problem.problem().len());
                best = Some((m, ModalSolution { modes, starts }));
            }
        }
    }
    let elapsed = began.elapsed();
    let name = format!("brute-force({})", solver.name());
    Ok(match best {
        Some((m, solution)) => {
            let lower_bound = if all_optimal { m } else { bound.min(m) };
            ModalOutcome {
                status: if lower_bound == m {
                    Status::Optimal
                } else {
                    Status::Feasible(reason.unwrap_or(StopReason::TimeLimit))
                },
                solution: Some(solution),
                makespan: Some(m),
                lower_bound,
                solver: name,
                elapsed,
                work,
            }
        }
        None => ModalOutcome {
            status: if all_optimal {
                Status::Infeasible
            } else {
                Status::Unknown(reason.unwrap_or(StopReason::TimeLimit))
            },
            solution: None,
            makespan: None,
            lower_bound: if bound == Time::MAX { 0 } else { bound },
            solver: name,
            elapsed,
            work,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemBuilder;

    /// `a -> x -> c` or `a -> y1, y2 -> c` on one unit resource: x takes 6, y1 and y2 take 2
    /// each but y2 also needs a second resource held by `b` (duration 3, parallel to a).
    fn two_modes() -> ModalProblem {
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 1);
        let a = b.activity("a", 1);
        let x = b.activity("x", 6);
        let y1 = b.activity("y1", 2);
        let y2 = b.activity("y2", 2);
        let c = b.activity("c", 1);
        for act in [a, x, y1, y2, c] {
            b.demand(act, r, 1);
        }
        for (f, t) in [(a, x), (x, c), (a, y1), (y1, y2), (y2, c)] {
            b.precedence(f, t);
        }
        let p = b.build().unwrap();
        ModalProblem::new(
            p,
            vec![Region {
                name: "x".into(),
                modes: vec![vec![x], vec![y1, y2]],
            }],
        )
        .unwrap()
    }

    #[test]
    fn reduce_keeps_present_activities_and_their_precedences() {
        let m = two_modes();
        let r0 = m.reduce(&[0]).unwrap();
        assert_eq!(r0.problem.len(), 3);
        assert_eq!(r0.problem.precedences().len(), 2);
        let r1 = m.reduce(&[1]).unwrap();
        assert_eq!(r1.problem.len(), 4);
        assert_eq!(r1.problem.precedences().len(), 3);
        assert_eq!(
            r1.activities,
            vec![ActivityId(0), ActivityId(2), ActivityId(3), ActivityId(4)]
        );
        assert_eq!(m.all_choices(), vec![vec![0], vec![1]]);
        assert_eq!(m.combinations(), 2);
    }

    #[test]
    fn check_modal_ignores_absent_activities_and_rejects_bad_choices() {
        let m = two_modes();
        // Mode 1: a [0,1), y1 [1,3), y2 [3,5), c [5,6); x is absent (its start is ignored).
        let s = ModalSolution {
            modes: vec![1],
            starts: vec![0, 0, 1, 3, 5],
        };
        assert_eq!(check_modal(&m, &s), Ok(6));
        let bad = ModalSolution {
            modes: vec![1],
            starts: vec![0, 0, 1, 2, 5],
        };
        let err = check_modal(&m, &bad).unwrap_err();
        assert!(matches!(err, ModalError::Schedule(_)), "{err}");
        assert!(err.to_string().contains("y2"), "{err}");
        let wrong = ModalSolution {
            modes: vec![2],
            starts: vec![0; 5],
        };
        assert!(check_modal(&m, &wrong)
            .unwrap_err()
            .to_string()
            .contains("has 2 modes, not mode 2"));
        let short = ModalSolution {
            modes: vec![0, 0],
            starts: vec![0; 5],
        };
        assert!(check_modal(&m, &short)
            .unwrap_err()
            .to_string()
            .contains("2 modes for 1 regions"));
        let few = ModalSolution {
            modes: vec![0],
            starts: vec![0; 4],
        };
        assert_eq!(
            check_modal(&m, &few),
            Err(ModalError::StartCount {
                starts: 4,
                activities: 5
            })
        );
    }

    #[test]
    fn time_windows_hold_for_every_mode_choice() {
        let m = two_modes();
        let es = m.earliest_starts();
        // c's predecessors x and y2 are optional in other modes than c (mandatory): skipped.
        assert_eq!(es, vec![0, 1, 1, 3, 0]);
        let ls = m.latest_starts(10);
        // x, y1, y2 lead to c (mandatory); a's successors are optional: only the deadline.
        assert_eq!(ls, vec![9, 3, 5, 7, 9]);
        for modes in m.all_choices() {
            let r = m.reduce(&modes).unwrap();
            let res = crate::temporal::earliest_starts(&r.problem);
            for (i, a) in r.activities.iter().enumerate() {
                assert!(es[a.index()] <= res[i]);
            }
        }
    }

    #[test]
    fn an_activity_shared_by_modes_is_present_in_each() {
        let m = two_modes();
        // `a` shared by both modes of a region of its own; present under either.
        let shared = ModalProblem::new(
            m.problem().clone(),
            vec![
                m.regions()[0].clone(),
                Region {
                    name: "s".into(),
                    modes: vec![vec![ActivityId(0)], vec![ActivityId(0), ActivityId(4)]],
                },
            ],
        )
        .unwrap();
        assert_eq!(
            shared.membership(ActivityId(0)),
            Membership::Modes {
                region: 1,
                set: 0b11
            }
        );
        assert_eq!(shared.membership(ActivityId(0)).modes(), vec![0, 1]);
        assert_eq!(shared.reduce(&[0, 0]).unwrap().problem.len(), 2);
        assert_eq!(shared.reduce(&[0, 1]).unwrap().problem.len(), 3);
        // c (mode 1 only) is present only with a (modes 0 and 1): the arc a -> ... binds.
        assert!(shared.binds_with(ActivityId(0), ActivityId(4)));
        assert!(!shared.binds_with(ActivityId(4), ActivityId(0)));
        let twice = ModalProblem::new(
            m.problem().clone(),
            vec![Region {
                name: "t".into(),
                modes: vec![vec![ActivityId(1), ActivityId(1)]],
            }],
        );
        assert!(twice.is_err());
    }

    #[test]
    fn malformed_regions_are_errors_that_name_them() {
        let p = two_modes().problem().clone();
        let e = ModalProblem::new(
            p.clone(),
            vec![Region {
                name: "r".into(),
                modes: vec![],
            }],
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "region `r` has no mode");
        let e = ModalProblem::new(
            p.clone(),
            vec![Region {
                name: "r".into(),
                modes: vec![vec![ActivityId(9)]],
            }],
        )
        .unwrap_err();
        assert!(e.to_string().contains("names activity #9"), "{e}");
        let e = ModalProblem::new(
            p,
            vec![
                Region {
                    name: "r".into(),
                    modes: vec![vec![ActivityId(1)]],
                },
                Region {
                    name: "s".into(),
                    modes: vec![vec![ActivityId(2)], vec![ActivityId(1)]],
                },
            ],
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "activity `x` is in two modes: r/0 and s/1");
    }
}
