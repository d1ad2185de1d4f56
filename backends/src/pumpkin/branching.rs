//! The branching of the CP search: the start-time series in either direction (Schutt et al.
//! 2013), and a wrapper that counts conflicts, the unit of [`Outcome::work`] and of the probes'
//! slices.
//!
//! [`Outcome::work`]: concerto_rcpsp::Outcome::work

use std::cell::Cell;
use std::rc::Rc;

use pumpkin_core::branching::{Brancher, BrancherEvent, SelectionContext};
use pumpkin_core::predicate;
use pumpkin_core::predicates::Predicate;
use pumpkin_core::results::SolutionReference;
use pumpkin_core::statistics::StatisticLogger;
use pumpkin_core::variables::DomainId;

use super::Direction;

/// A brancher that counts conflicts (the unit of [`Outcome::work`] and of the slices) and
/// delegates everything to the brancher it wraps. It also records whether the last event was a
/// decision (the solver is then below the root), for the probes' termination.
#[derive(Debug)]
pub(super) struct Counting<B> {
    pub(super) inner: B,
    pub(super) conflicts: Rc<Cell<u64>>,
    pub(super) decided: Rc<Cell<bool>>,
}

impl<B: Brancher> Brancher for Counting<B> {
    fn log_statistics(&self, statistic_logger: StatisticLogger) {
        self.inner.log_statistics(statistic_logger);
    }
    fn next_decision(&mut self, context: &mut SelectionContext<'_>) -> Option<Predicate> {
        let decision = self.inner.next_decision(context);
        if decision.is_some() {
            self.decided.set(true);
        }
        decision
    }
    fn on_conflict(&mut self) {
        self.decided.set(false);
        self.conflicts.set(self.conflicts.get() + 1);
        self.inner.on_conflict();
    }
    fn on_backtrack(&mut self) {
        self.inner.on_backtrack();
    }
    fn on_solution(&mut self, solution: SolutionReference<'_>) {
        self.inner.on_solution(solution);
    }
    fn on_unassign_integer(&mut self, variable: DomainId, value: i32) {
        self.inner.on_unassign_integer(variable, value);
    }
    fn on_appearance_in_conflict_predicate(&mut self, predicate: Predicate) {
        self.inner.on_appearance_in_conflict_predicate(predicate);
    }
    fn on_restart(&mut self) {
        self.inner.on_restart();
    }
    fn synchronise(&mut self, context: &mut SelectionContext<'_>) {
        self.inner.synchronise(context);
    }
    fn is_restart_pointless(&mut self) -> bool {
        self.inner.is_restart_pointless()
    }
    fn subscribe_to_events(&self) -> Vec<BrancherEvent> {
        let mut events = self.inner.subscribe_to_events();
        if !events.contains(&BrancherEvent::Conflict) {
            events.push(BrancherEvent::Conflict);
        }
        events
    }
}

/// The start-time series in a [`Direction`]: forward, the open activity with the smallest
/// earliest start (ties: smallest latest start, then index) starts at its earliest start, and
/// on backtracking it starts later; backward, the mirror image. Once every start is fixed, the
/// makespan takes its smallest value.
#[derive(Debug)]
pub(super) struct StartTimeSeries {
    pub(super) starts: Vec<DomainId>,
    /// The activities' durations, for the backward series.
    pub(super) durations: Vec<i32>,
    pub(super) makespan: DomainId,
    /// Resolved: [`Direction::Auto`] branches forward.
    pub(super) direction: Direction,
}

impl Brancher for StartTimeSeries {
    fn next_decision(&mut self, context: &mut SelectionContext<'_>) -> Option<Predicate> {
        if self.direction == Direction::Backward {
            largest_end_decision(context, &self.starts, &self.durations, self.makespan)
        } else {
            smallest_start_decision(context, &self.starts, self.makespan)
        }
    }

    fn subscribe_to_events(&self) -> Vec<BrancherEvent> {
        Vec::new()
    }
}

/// The smallest-start-time decision: the unfixed start with the smallest earliest start
/// (ties: smallest latest start) starts there; once every start is fixed, the makespan takes
/// its smallest value; `None` when everything is fixed. O(n) per decision.
pub(super) fn smallest_start_decision(
    context: &mut SelectionContext<'_>,
    starts: &[DomainId],
    makespan: DomainId,
) -> Option<Predicate> {
    let mut best: Option<(i32, i32, DomainId)> = None;
    for &s in starts {
        if context.is_integer_fixed(s) {
            continue;
        }
        let key = (context.lower_bound(s), context.upper_bound(s));
        if best.is_none_or(|(lb, ub, _)| key < (lb, ub)) {
            best = Some((key.0, key.1, s));
        }
    }
    if let Some((lb, _, s)) = best {
        return Some(predicate![s <= lb]);
    }
    (!context.is_integer_fixed(makespan)).then(|| {
        let lb = context.lower_bound(makespan);
        predicate![makespan <= lb]
    })
}

/// The backward series' decision: the unfixed start with the largest latest end (ties:
/// largest earliest end) ends there (`s >= LS`); once every start is fixed, the makespan takes
/// its smallest value; `None` when everything is fixed. O(n) per decision.
fn largest_end_decision(
    context: &mut SelectionContext<'_>,
    starts: &[DomainId],
    durations: &[i32],
    makespan: DomainId,
) -> Option<Predicate> {
    let mut best: Option<((i32, i32), DomainId)> = None;
    for (&s, &d) in starts.iter().zip(durations) {
        if context.is_integer_fixed(s) {
            continue;
        }
        let key = (context.upper_bound(s) + d, context.lower_bound(s) + d);
        if best.is_none_or(|(k, _)| key > k) {
            best = Some((key, s));
        }
    }
    if let Some((_, s)) = best {
        let ub = context.upper_bound(s);
        return Some(predicate![s >= ub]);
    }
    (!context.is_integer_fixed(makespan)).then(|| {
        let lb = context.lower_bound(makespan);
        predicate![makespan <= lb]
    })
}
