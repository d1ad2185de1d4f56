//! Problems, limits and outcomes as text for counter-examples: what a failing check prints.

use std::fmt::Write;

use concerto_rcpsp::{
    Limits, Membership, ModalOutcome, ModalProblem, ModalSolution, Outcome, Problem, Schedule, Time,
};

/// A problem as text: its resources, each activity with its duration, demands and time
/// window, and its precedences (with their lags).
///
/// ```
/// use concerto::testing::describe_problem;
/// use concerto::ProblemBuilder;
///
/// let mut b = ProblemBuilder::new();
/// let r = b.resource("r", 2);
/// let x = b.activity("x", 3);
/// let y = b.activity("y", 0);
/// b.demand(x, r, 1);
/// b.precedence_with_lag(x, y, 2);
/// let text = describe_problem(&b.build()?);
/// assert!(text.contains("resources: r (capacity 2)"));
/// assert!(text.contains("x: duration 3; demands r=1"));
/// assert!(text.contains("precedences: x -> y (lag 2)"));
/// # Ok::<(), concerto::rcpsp::ProblemError>(())
/// ```
pub fn describe_problem(problem: &Problem) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}, {}, {}",
        count(problem.len(), "activity", "activities"),
        count(problem.resources().len(), "resource", "resources"),
        count(problem.precedences().len(), "precedence", "precedences")
    );
    let resources: Vec<String> = problem
        .resources()
        .iter()
        .map(|r| format!("{} (capacity {})", r.name, r.capacity))
        .collect();
    let _ = writeln!(out, "resources: {}", resources.join(", "));
    let _ = writeln!(out, "activities:");
    for a in problem.activities() {
        let demands: Vec<String> = a
            .demands
            .iter()
            .zip(problem.resources())
            .filter(|(&q, _)| q > 0)
            .map(|(q, r)| format!("{}={q}", r.name))
            .collect();
        let _ = write!(out, "  {}: duration {}; ", a.name, a.duration);
        if demands.is_empty() {
            out.push_str("no demand");
        } else {
            let _ = write!(out, "demands {}", demands.join(" "));
        }
        if a.release > 0 {
            let _ = write!(out, "; release {}", a.release);
        }
        if let Some(d) = a.deadline {
            let _ = write!(out, "; deadline {d}");
        }
        out.push('\n');
    }
    let arcs: Vec<String> = problem
        .precedences()
        .iter()
        .map(|p| {
            let (from, to) = (&problem.activity(p.from).name, &problem.activity(p.to).name);
            if p.lag == 0 {
                format!("{from} -> {to}")
            } else {
                format!("{from} -> {to} (lag {})", p.lag)
            }
        })
        .collect();
    if arcs.is_empty() {
        out.push_str("precedences: none\n");
    } else {
        let _ = writeln!(out, "precedences: {}", arcs.join(", "));
    }
    out
}

/// A modal problem as text: [`describe_problem`] of the full problem, then each region's
/// modes with their activities.
pub fn describe_modal(problem: &ModalProblem) -> String {
    let p = problem.problem();
    let mut out = describe_problem(p);
    let mandatory: Vec<&str> = p
        .ids()
        .filter(|&a| problem.membership(a) == Membership::Mandatory)
        .map(|a| p.activity(a).name.as_str())
        .collect();
    let _ = writeln!(out, "mandatory activities: {}", list_or_none(&mandatory));
    for region in problem.regions() {
        let modes: Vec<String> = region
            .modes
            .iter()
            .enumerate()
            .map(|(m, acts)| {
                let names: Vec<&str> = acts.iter().map(|&a| p.activity(a).name.as_str()).collect();
                format!("mode {m} {{{}}}", names.join(", "))
            })
            .collect();
        let _ = writeln!(out, "region {}: {}", region.name, modes.join(", "));
    }
    out
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn list_or_none(items: &[&str]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// A schedule as `name=start` pairs in activity order.
pub fn describe_schedule(problem: &Problem, schedule: &Schedule) -> String {
    describe_starts(problem, schedule.starts())
}

fn describe_starts(problem: &Problem, starts: &[Time]) -> String {
    let pairs: Vec<String> = starts
        .iter()
        .enumerate()
        .map(|(i, s)| match problem.activities().get(i) {
            Some(a) => format!("{}={s}", a.name),
            None => format!("#{i}={s}"),
        })
        .collect();
    format!("[{}]", pairs.join(", "))
}

/// The limits of a solve as text (time and work limits, seed, threads, upper bound, starting
/// schedule, cancel flag).
pub fn describe_limits(problem: &Problem, limits: &Limits) -> String {
    let mut parts = vec![match limits.time_limit {
        Some(t) => format!("time limit {t:?}"),
        None => "no time limit".to_string(),
    }];
    if let Some(w) = limits.work_limit {
        parts.push(format!("work limit {w}"));
    }
    parts.push(format!("seed {}", limits.seed));
    parts.push(format!("{} thread(s)", limits.threads));
    if let Some(ub) = limits.upper_bound {
        parts.push(format!("upper bound {ub}"));
    }
    if let Some(s) = &limits.initial {
        parts.push(format!(
            "starting schedule {} (makespan {})",
            describe_schedule(problem, s),
            s.makespan(problem)
        ));
    }
    if let Some(c) = &limits.cancel {
        parts.push(if c.is_cancelled() {
            "cancel flag raised".to_string()
        } else {
            "cancel flag given".to_string()
        });
    }
    parts.join(", ")
}

/// An outcome as text: status, makespan, bound, schedule, time and work.
pub fn describe_outcome(problem: &Problem, outcome: &Outcome) -> String {
    let mut out = format!("{}", outcome.status);
    if let Some(m) = outcome.makespan {
        let _ = write!(out, ", makespan {m}");
    }
    let _ = write!(out, ", lower bound {}", outcome.lower_bound);
    match &outcome.schedule {
        Some(s) => {
            let _ = write!(out, ", schedule {}", describe_schedule(problem, s));
        }
        None => out.push_str(", no schedule"),
    }
    let _ = write!(
        out,
        " (solver `{}`, {:?}, work {})",
        outcome.solver, outcome.elapsed, outcome.work
    );
    out
}

/// A modal solution as text: the modes and the starts of the full problem.
pub fn describe_modal_solution(problem: &ModalProblem, solution: &ModalSolution) -> String {
    format!(
        "modes {:?}, starts {}",
        solution.modes,
        describe_starts(problem.problem(), &solution.starts)
    )
}

/// A modal outcome as text.
pub fn describe_modal_outcome(problem: &ModalProblem, outcome: &ModalOutcome) -> String {
    let mut out = format!("{}", outcome.status);
    if let Some(m) = outcome.makespan {
        let _ = write!(out, ", makespan {m}");
    }
    let _ = write!(out, ", lower bound {}", outcome.lower_bound);
    match &outcome.solution {
        Some(s) => {
            let _ = write!(out, ", {}", describe_modal_solution(problem, s));
        }
        None => out.push_str(", no solution"),
    }
    let _ = write!(
        out,
        " (solver `{}`, {:?}, work {})",
        outcome.solver, outcome.elapsed, outcome.work
    );
    out
}
