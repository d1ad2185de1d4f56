//! The CP model of a modal problem: one 0/1 variable per region and mode, a presence literal
//! per activity, starts with parking slots for absent activities, conditional precedences,
//! the makespan and the resources' cumulatives.

use std::collections::BTreeMap;

use concerto_rcpsp::modal::Membership;
use concerto_rcpsp::{ActivityId, ModalProblem, SolveError, Time};
use pumpkin_core::options::SolverOptions;
use pumpkin_core::predicate;
use pumpkin_core::predicates::Predicate;
use pumpkin_core::proof::ConstraintTag;
use pumpkin_core::rand::rngs::SmallRng;
use pumpkin_core::rand::SeedableRng;
use pumpkin_core::variables::{DomainId, Literal, TransformableVariable};

use super::super::common::{fit, post_cumulatives};

/// The CP model of a modal problem.
pub(super) struct Model {
    /// The solver holding the model.
    pub(super) solver: pumpkin_core::Solver,
    /// Each activity's start.
    pub(super) starts: Vec<DomainId>,
    /// The 0/1 variable of each region's modes.
    pub(super) modes: Vec<Vec<DomainId>>,
    /// The makespan.
    pub(super) makespan: DomainId,
}

impl Model {
    /// Builds the model with the makespan in `[bound, cap]` and parking slots from `horizon`
    /// on; `None` when a mandatory activity's window is empty (no solution within `cap`).
    pub(super) fn build(
        problem: &ModalProblem,
        seed: u64,
        es: &[Time],
        bound: Time,
        horizon: Time,
        cap: Time,
    ) -> Result<Option<Self>, SolveError> {
        let p = problem.problem();
        fit(horizon, "the horizon")?;
        let ls = problem.latest_starts(cap);
        let mut solver = pumpkin_core::Solver::with_options(SolverOptions {
            random_generator: SmallRng::seed_from_u64(seed),
            ..SolverOptions::default()
        });
        let tag = solver.new_constraint_tag();
        let mut cp = Cp {
            solver: &mut solver,
            tag,
        };
        let modes = cp.mode_vars(problem);
        let presence = cp.presence_vars(problem, &modes);
        let Some(starts) = cp.start_vars(problem, &presence, es, &ls, horizon)? else {
            return Ok(None);
        };
        cp.post_precedences(problem, &presence, &starts)?;
        let makespan = cp.post_makespan(problem, &presence, &starts, bound, cap)?;
        // Resources.
        let _ = post_cumulatives(&mut solver, p, &starts, tag)?;
        Ok(Some(Self {
            solver,
            starts,
            modes,
            makespan,
        }))
    }
}

/// The literal "`v` is 1" of a 0/1 variable.
fn on(v: DomainId) -> Predicate {
    predicate![v >= 1]
}

/// The literal "`v` is 0" of a 0/1 variable.
fn off(v: DomainId) -> Predicate {
    predicate![v <= 0]
}

/// Each activity's presence variable: `None` when mandatory, a mode's literal, or for an
/// activity that several modes share a literal equivalent to their disjunction.
struct Presence<'a> {
    /// The problem.
    problem: &'a ModalProblem,
    /// The 0/1 variable of each region's modes.
    modes: &'a [Vec<DomainId>],
    /// The literal of each `(region, mode set)` of at least 2 modes.
    shared: BTreeMap<(usize, u128), DomainId>,
}

impl Presence<'_> {
    /// The presence variable of `a`, `None` when it is mandatory.
    fn of(&self, a: ActivityId) -> Option<DomainId> {
        match self.problem.membership(a) {
            Membership::Mandatory => None,
            Membership::Modes { region, set } if set.count_ones() == 1 => {
                Some(self.modes[region][set.trailing_zeros() as usize])
            }
            Membership::Modes { region, set } => Some(self.shared[&(region, set)]),
        }
    }
}

/// The solver a model is posted to, with the tag of its constraints.
struct Cp<'s> {
    /// The solver.
    solver: &'s mut pumpkin_core::Solver,
    /// The constraints' tag.
    tag: ConstraintTag,
}

impl Cp<'_> {
    /// The 0/1 variables of each region's modes, exactly one per region.
    fn mode_vars(&mut self, problem: &ModalProblem) -> Vec<Vec<DomainId>> {
        let tag = self.tag;
        problem
            .regions()
            .iter()
            .map(|region| {
                let vars: Vec<DomainId> = region
                    .modes
                    .iter()
                    .map(|_| self.solver.new_bounded_integer(0, 1))
                    .collect();
                self.solver.add_clause(vars.iter().map(|&v| on(v)), tag);
                for (i, &x) in vars.iter().enumerate() {
                    for &y in &vars[i + 1..] {
                        self.solver.add_clause([off(x), off(y)], tag);
                    }
                }
                vars
            })
            .collect()
    }

    /// Presence: a mode's literal, or for an activity that several modes share, a literal
    /// equivalent to their disjunction (one per distinct set).
    fn presence_vars<'a>(
        &mut self,
        problem: &'a ModalProblem,
        modes: &'a [Vec<DomainId>],
    ) -> Presence<'a> {
        let tag = self.tag;
        let mut shared: BTreeMap<(usize, u128), DomainId> = BTreeMap::new();
        for a in problem.problem().ids() {
            let m = problem.membership(a);
            let Membership::Modes { region, set } = m else {
                continue;
            };
            if set.count_ones() < 2 || shared.contains_key(&(region, set)) {
                continue;
            }
            let v = self.solver.new_bounded_integer(0, 1);
            let ks = m.modes();
            for &k in &ks {
                self.solver.add_clause([off(modes[region][k]), on(v)], tag);
            }
            self.solver.add_clause(
                std::iter::once(off(v)).chain(ks.iter().map(|&k| on(modes[region][k]))),
                tag,
            );
            shared.insert((region, set), v);
        }
        Presence {
            problem,
            modes,
            shared,
        }
    }

    /// Starts, with the parking slots of the optional activities from `horizon` on; `None`
    /// when a mandatory activity's window is empty.
    fn start_vars(
        &mut self,
        problem: &ModalProblem,
        presence: &Presence<'_>,
        es: &[Time],
        ls: &[Time],
        horizon: Time,
    ) -> Result<Option<Vec<DomainId>>, SolveError> {
        let (p, tag) = (problem.problem(), self.tag);
        let park_base = p
            .ids()
            .filter(|&a| presence.of(a).is_some())
            .map(|a| es[a.index()])
            .fold(horizon, Time::max);
        let mut next_slot = park_base;
        let mut starts = Vec::with_capacity(p.len());
        for a in p.ids() {
            let i = a.index();
            let d = p.duration(a);
            fit(d, "a duration")?;
            let s = match presence.of(a) {
                None => {
                    if es[i] > ls[i] {
                        return Ok(None);
                    }
                    self.solver
                        .new_bounded_integer(fit(es[i], "a start")?, fit(ls[i], "a start")?)
                }
                Some(m) => {
                    let park = fit(next_slot, "a parking slot")?;
                    next_slot += d;
                    let s = self
                        .solver
                        .new_bounded_integer(fit(es[i], "a start")?, park);
                    if ls[i] < es[i] {
                        // Never present within the cap.
                        self.solver.add_clause([off(m)], tag);
                    } else {
                        let latest = fit(ls[i], "a start")?;
                        self.solver
                            .add_clause([off(m), predicate![s <= latest]], tag);
                    }
                    self.solver.add_clause([on(m), predicate![s >= park]], tag);
                    s
                }
            };
            starts.push(s);
        }
        fit(next_slot, "the last parking slot's end")?;
        Ok(Some(starts))
    }

    /// Each precedence, implied by the presence of both ends (dropped when they are never
    /// present together).
    fn post_precedences(
        &mut self,
        problem: &ModalProblem,
        presence: &Presence<'_>,
        starts: &[DomainId],
    ) -> Result<(), SolveError> {
        let (p, tag) = (problem.problem(), self.tag);
        for pr in p.precedences() {
            let (pa, pb) = (presence.of(pr.from), presence.of(pr.to));
            let gap = fit(p.duration(pr.from) + pr.lag, "a duration plus lag")?;
            let constraint = pumpkin_constraints::binary_less_than_or_equals(
                starts[pr.from.index()].offset(gap),
                starts[pr.to.index()].scaled(1),
                tag,
            );
            let condition = match (pa, pb) {
                (None, None) => None,
                (Some(x), None) | (None, Some(x)) => Some(x),
                (Some(x), Some(y)) if x == y => Some(x),
                (Some(x), Some(y)) => {
                    // Two activities of one region whose mode sets are disjoint are never
                    // present together.
                    let never = matches!(
                        (problem.membership(pr.from), problem.membership(pr.to)),
                        (
                            Membership::Modes { region: r1, set: s1 },
                            Membership::Modes { region: r2, set: s2 }
                        ) if r1 == r2 && s1 & s2 == 0
                    );
                    if never {
                        continue;
                    }
                    let c = self.solver.new_bounded_integer(0, 1);
                    self.solver.add_clause([off(x), off(y), on(c)], tag);
                    self.solver.add_clause([off(c), on(x)], tag);
                    self.solver.add_clause([off(c), on(y)], tag);
                    Some(c)
                }
            };
            let poster = self.solver.add_constraint(constraint);
            match condition {
                None => poster.post(),
                Some(v) => poster.implied_by(Literal::new(v)),
            }
        }
        Ok(())
    }

    /// The makespan in `[bound, cap]`, after every present activity that no present successor
    /// covers.
    fn post_makespan(
        &mut self,
        problem: &ModalProblem,
        presence: &Presence<'_>,
        starts: &[DomainId],
        bound: Time,
        cap: Time,
    ) -> Result<DomainId, SolveError> {
        let (p, tag) = (problem.problem(), self.tag);
        let makespan = self
            .solver
            .new_bounded_integer(fit(bound, "the lower bound")?, fit(cap, "the cap")?);
        for a in p.ids() {
            // Some successor is present whenever `a` is.
            let covered = p
                .successors(a)
                .iter()
                .any(|arc| problem.binds_with(arc.activity, a));
            if covered {
                continue;
            }
            let constraint = pumpkin_constraints::binary_less_than_or_equals(
                starts[a.index()].offset(fit(p.duration(a), "a duration")?),
                makespan.scaled(1),
                tag,
            );
            let poster = self.solver.add_constraint(constraint);
            match presence.of(a) {
                None => poster.post(),
                Some(m) => poster.implied_by(Literal::new(m)),
            }
        }
        Ok(makespan)
    }
}
