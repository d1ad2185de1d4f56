//! The independent schedule checker.
//!
//! [`check`] shares no code with any solver, heuristic or bound: it re-derives every
//! constraint from the [`Problem`] alone. Every schedule a test or a bench sees goes through
//! it.

use std::fmt;

use crate::problem::{Problem, Time};
use crate::schedule::Schedule;

/// One way a schedule breaks its problem.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// The schedule has no start time for this activity.
    MissingActivity {
        /// The activity's name.
        activity: String,
    },
    /// The schedule has more start times than the problem has activities.
    ExtraStarts {
        /// How many start times there are.
        starts: usize,
        /// How many activities the problem has.
        activities: usize,
    },
    /// An activity starts before time 0.
    NegativeStart {
        /// The activity's name.
        activity: String,
        /// Its start.
        start: Time,
    },
    /// An activity starts before its release date.
    BeforeRelease {
        /// The activity's name.
        activity: String,
        /// Its release date.
        release: Time,
        /// Its start.
        start: Time,
    },
    /// An activity finishes after its deadline.
    AfterDeadline {
        /// The activity's name.
        activity: String,
        /// Its deadline.
        deadline: Time,
        /// Its finish.
        finish: Time,
    },
    /// An activity's finish (start + duration) does not fit in a [`Time`].
    FinishOverflow {
        /// The activity's name.
        activity: String,
        /// Its start.
        start: Time,
    },
    /// A successor starts before its predecessor's finish plus the lag.
    Precedence {
        /// The predecessor.
        from: String,
        /// The successor.
        to: String,
        /// The lag of the precedence.
        lag: Time,
        /// The earliest start the precedence allows: `finish(from) + lag`.
        earliest: Time,
        /// The successor's start.
        start: Time,
    },
    /// A resource is used over its capacity during `[from, until)`.
    OverCapacity {
        /// The resource's name.
        resource: String,
        /// First time point of the overload.
        from: Time,
        /// First time point after it.
        until: Time,
        /// The largest usage during the overload.
        usage: u64,
        /// The capacity.
        capacity: u32,
        /// The activities running at `from`.
        running: Vec<String>,
    },
    /// An activity starts when nothing ends, in a problem whose activities start only at
    /// events ([`crate::ContendedProblem::launched_at_events`]: a GPU stream launches a kernel
    /// only at 0, at its release or when some kernel ends).
    BetweenEvents {
        /// The activity's name.
        activity: String,
        /// Its start.
        start: Time,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::MissingActivity { activity } => {
                write!(f, "activity `{activity}` has no start time")
            }
            Violation::ExtraStarts { starts, activities } => write!(
                f,
                "the schedule has {starts} start times but the problem has {activities} activities"
            ),
            Violation::NegativeStart { activity, start } => {
                write!(f, "activity `{activity}` starts at {start}, before 0")
            }
            Violation::BeforeRelease {
                activity,
                release,
                start,
            } => write!(f, "activity `{activity}` starts at {start}, before its release {release}"),
            Violation::AfterDeadline {
                activity,
                deadline,
                finish,
            } => write!(f, "activity `{activity}` finishes at {finish}, after its deadline {deadline}"),
            Violation::FinishOverflow { activity, start } => write!(
                f,
                "activity `{activity}` starts at {start} and would finish past the largest time {}",
                Time::MAX
            ),
            Violation::Precedence {
                from,
                to,
                lag,
                earliest,
                start,
            } => write!(
                f,
                "precedence `{from}` -> `{to}` (lag {lag}): `{to}` starts at {start}, before {earliest}"
            ),
            Violation::OverCapacity {
                resource,
                from,
                until,
                usage,
                capacity,
                running,
            } => write!(
                f,
                "resource `{resource}` is used {usage} > capacity {capacity} during [{from}, {until}); running at {from}: {}",
                running.join(", ")
            ),
            Violation::BetweenEvents { activity, start } => write!(
                f,
                "activity `{activity}` starts at {start}, when no activity ends (and not at 0 or its release)"
            ),
        }
    }
}

/// Every violation of one schedule, in a stable order (missing starts, negative starts,
/// precedences by arc, overloads by resource then time).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Violations(pub Vec<Violation>);

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} violation(s)", self.0.len())?;
        for v in &self.0 {
            write!(f, "\n  - {v}")?;
        }
        Ok(())
    }
}

/// Checks `schedule` against every constraint of `problem` and returns its makespan, or
/// every violation found.
///
/// Precedences are checked arc by arc; resources by a sweep over start and finish events per
/// resource (finishes before starts at equal times, since activities occupy half-open
/// intervals), reporting each maximal overloaded interval once. Cost: `O(m + R n log n)`.
pub fn check(problem: &Problem, schedule: &Schedule) -> Result<Time, Violations> {
    let starts = schedule.starts();
    let mut violations = Vec::new();
    check_starts(problem, starts, &mut violations);
    check_precedences(problem, starts, &mut violations);
    for r in 0..problem.resources().len() {
        check_resource(problem, starts, r, &mut violations);
    }
    if violations.is_empty() {
        Ok(schedule.makespan(problem))
    } else {
        Err(Violations(violations))
    }
}

/// One start per activity, not negative, not before its release, its finish representable
/// and not after its deadline.
fn check_starts(problem: &Problem, starts: &[Time], violations: &mut Vec<Violation>) {
    let acts = problem.activities();
    if starts.len() > acts.len() {
        violations.push(Violation::ExtraStarts {
            starts: starts.len(),
            activities: acts.len(),
        });
    }
    for a in acts.iter().skip(starts.len()) {
        violations.push(Violation::MissingActivity {
            activity: a.name.clone(),
        });
    }
    for (a, &s) in acts.iter().zip(starts) {
        if s < 0 {
            violations.push(Violation::NegativeStart {
                activity: a.name.clone(),
                start: s,
            });
        }
        if s >= 0 && s < a.release {
            violations.push(Violation::BeforeRelease {
                activity: a.name.clone(),
                release: a.release,
                start: s,
            });
        }
        match s.checked_add(a.duration) {
            None => violations.push(Violation::FinishOverflow {
                activity: a.name.clone(),
                start: s,
            }),
            Some(finish) => {
                if let Some(deadline) = a.deadline.filter(|&d| finish > d) {
                    violations.push(Violation::AfterDeadline {
                        activity: a.name.clone(),
                        deadline,
                        finish,
                    });
                }
            }
        }
    }
}

/// Every precedence between activities with a start, arc by arc.
fn check_precedences(problem: &Problem, starts: &[Time], violations: &mut Vec<Violation>) {
    let acts = problem.activities();
    let known = starts.len().min(acts.len());
    for p in problem.precedences() {
        let (i, j) = (p.from.index(), p.to.index());
        if i >= known || j >= known {
            continue;
        }
        let earliest = starts[i]
            .saturating_add(acts[i].duration)
            .saturating_add(p.lag);
        if starts[j] < earliest {
            violations.push(Violation::Precedence {
                from: acts[i].name.clone(),
                to: acts[j].name.clone(),
                lag: p.lag,
                earliest,
                start: starts[j],
            });
        }
    }
}

/// Resource `r` by a sweep over start and finish events (finishes before starts at equal
/// times), each maximal overloaded interval once.
fn check_resource(problem: &Problem, starts: &[Time], r: usize, violations: &mut Vec<Violation>) {
    let acts = problem.activities();
    let resource = &problem.resources()[r];
    let known = starts.len().min(acts.len());
    // (time, +1 start / 0 finish, activity): finishes sort before starts.
    let mut events: Vec<(Time, u8, usize)> = Vec::new();
    for (i, a) in acts.iter().enumerate().take(known) {
        if a.duration > 0 && a.demands[r] > 0 {
            events.push((starts[i], 1, i));
            events.push((starts[i].saturating_add(a.duration), 0, i));
        }
    }
    events.sort_unstable();
    let mut usage: u64 = 0;
    let mut overload: Option<(Time, u64, Vec<usize>)> = None;
    let mut running: Vec<usize> = Vec::new();
    let mut k = 0;
    while k < events.len() {
        let t = events[k].0;
        while k < events.len() && events[k].0 == t {
            let (_, kind, i) = events[k];
            let d = u64::from(acts[i].demands[r]);
            if kind == 1 {
                usage += d;
                running.push(i);
            } else {
                usage -= d;
                if let Some(pos) = running.iter().position(|&x| x == i) {
                    running.swap_remove(pos);
                }
            }
            k += 1;
        }
        let over = usage > u64::from(resource.capacity);
        match (&mut overload, over) {
            (None, true) => {
                let mut names = running.clone();
                names.sort_unstable();
                overload = Some((t, usage, names));
            }
            (Some((_, peak, _)), true) => *peak = (*peak).max(usage),
            (Some(_), false) => {
                let (from, peak, names) = overload.take().expect("matched Some");
                violations.push(Violation::OverCapacity {
                    resource: resource.name.clone(),
                    from,
                    until: t,
                    usage: peak,
                    capacity: resource.capacity,
                    running: names.iter().map(|&i| acts[i].name.clone()).collect(),
                });
            }
            (None, false) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemBuilder;

    fn two_on_one() -> Problem {
        let mut b = ProblemBuilder::new();
        let r = b.resource("r", 1);
        let x = b.activity("x", 2);
        let y = b.activity("y", 3);
        let z = b.activity("z", 1);
        b.demand(x, r, 1);
        b.demand(y, r, 1);
        b.precedence_with_lag(x, z, 1);
        b.build().unwrap()
    }

    #[test]
    fn valid_schedule_gives_makespan() {
        let p = two_on_one();
        assert_eq!(check(&p, &Schedule::new(vec![0, 2, 3])), Ok(5));
        // Touching intervals do not overlap.
        assert_eq!(check(&p, &Schedule::new(vec![3, 0, 6])), Ok(7));
    }

    #[test]
    fn reports_every_violation() {
        let p = two_on_one();
        let err = check(&p, &Schedule::new(vec![0, 1, 2])).unwrap_err();
        assert_eq!(err.0.len(), 2, "{err}");
        assert!(matches!(
            err.0[0],
            Violation::Precedence {
                earliest: 3,
                start: 2,
                ..
            }
        ));
        assert!(matches!(
            &err.0[1],
            Violation::OverCapacity { from: 1, until: 2, usage: 2, capacity: 1, running, .. }
                if running == &["x".to_string(), "y".to_string()]
        ));
    }

    #[test]
    fn missing_extra_and_negative() {
        let p = two_on_one();
        let err = check(&p, &Schedule::new(vec![-1])).unwrap_err();
        assert!(err.0.contains(&Violation::MissingActivity {
            activity: "y".into()
        }));
        assert!(err.0.contains(&Violation::NegativeStart {
            activity: "x".into(),
            start: -1
        }));
        let err = check(&p, &Schedule::new(vec![0, 2, 3, 9])).unwrap_err();
        assert!(matches!(
            err.0[0],
            Violation::ExtraStarts {
                starts: 4,
                activities: 3
            }
        ));
    }
}
