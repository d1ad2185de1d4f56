//! The probes of the conformance kit: one random case (plain, again with the same limits,
//! with the optimum as upper bound, from a starting schedule) and the hard-instance probes
//! (time limit, cancellation before and during a solve, the work budget).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use concerto_rcpsp::{CancelFlag, Limits, Status, StopReason, Time};

use super::conformance::{holds, report, timed, Answer, Claim, Conformance, Known, Subject};

/// The properties of a random case whose optimum is `optimum`.
pub(super) fn probe_case(s: &dyn Subject, optimum: Time, c: &Conformance) -> Result<(), String> {
    let known = Known {
        lower: optimum,
        upper: optimum,
    };
    let limits = c.case_limits();
    let exact = |a: &Answer, text: &str| {
        if c.claim == Claim::Exact && a.status != Status::Optimal {
            return Err(report(
                "an exact solver did not prove the optimum within the case limits",
                text,
                &format!("`optimal` at {optimum}"),
                &a.text,
            ));
        }
        Ok(())
    };
    let text = s.limits_text(&limits, false);
    let (first, _) = timed(s, &limits, false, c)?;
    holds(&first, known, &text)?;
    exact(&first, &text)?;

    if !stopped_by_clock(first.status) {
        let (again, _) = timed(s, &limits, false, c)?;
        // A second solve the clock stopped (the first finished just in time) proves nothing.
        if !stopped_by_clock(again.status) && !again.same(&first) {
            return Err(report(
                "the same problem, limits and seed gave another answer",
                &text,
                &format!("the first answer again: {}", first.text),
                &again.text,
            ));
        }
    }

    let bounded = Limits {
        upper_bound: Some(optimum),
        ..limits.clone()
    };
    let text = s.limits_text(&bounded, false);
    let (a, _) = timed(s, &bounded, false, c)?;
    holds(&a, known, &text)?;
    exact(&a, &text)?;

    let text = s.limits_text(&limits, true);
    let (a, _) = timed(s, &limits, true, c)?;
    holds(&a, known, &text)?;
    exact(&a, &text)?;
    if a.makespan.is_none_or(|m| m > s.start_makespan()) {
        return Err(report(
            "lost its starting solution",
            &text,
            &format!("a makespan of at most {}", s.start_makespan()),
            &a.text,
        ));
    }
    Ok(())
}

fn stopped_by_clock(status: Status) -> bool {
    matches!(
        status.stop_reason(),
        Some(StopReason::TimeLimit | StopReason::Cancelled)
    )
}

/// Whether a status is what a cancelled solve may return.
fn cancelled_or_proven(status: Status) -> bool {
    matches!(
        status,
        Status::Optimal
            | Status::Infeasible
            | Status::Feasible(StopReason::Cancelled)
            | Status::Unknown(StopReason::Cancelled)
    )
}

/// Held while the hard-instance probes run.
static TIMING: Mutex<()> = Mutex::new(());

/// The probes on the hard instance.
pub(super) fn probe_hard(s: &dyn Subject, known: Known, c: &Conformance) -> Result<(), String> {
    // One timing probe at a time in a process (see [`Conformance`]); a panic elsewhere while
    // holding the lock leaves nothing inconsistent.
    let _timing = TIMING.lock().unwrap_or_else(PoisonError::into_inner);
    let base = Limits {
        seed: c.seed,
        threads: c.threads,
        ..Limits::default()
    };

    // The time limit.
    let limits = Limits {
        time_limit: Some(c.hard_time_limit),
        ..base.clone()
    };
    let (a, _) = timed(s, &limits, false, c)?;
    holds(&a, known, &s.limits_text(&limits, false))?;

    // Cancelled before the start. The guard limit only ends a solve that ignores the flag
    // (and the backend threads some solvers abandon on a cancel, which run to their limit).
    let guard = c.cancel_delay + c.cancel_latency * 4;
    let flag = CancelFlag::new();
    flag.cancel();
    let limits = Limits {
        time_limit: Some(guard),
        cancel: Some(flag),
        ..base.clone()
    };
    let text = s.limits_text(&limits, false);
    let (a, elapsed) = timed(s, &limits, false, c)?;
    holds(&a, known, &text)?;
    if elapsed > c.cancel_latency || !cancelled_or_proven(a.status) {
        return Err(report(
            "a solve cancelled before it started did not return promptly with `cancelled`",
            &text,
            &format!(
                "a return within {:?} with stop reason `cancelled` or a proven result",
                c.cancel_latency
            ),
            &format!("a return after {elapsed:?}: {}", a.text),
        ));
    }

    // Cancelled while it runs.
    let flag = CancelFlag::new();
    let limits = Limits {
        time_limit: Some(guard),
        cancel: Some(flag.clone()),
        ..base.clone()
    };
    let text = format!(
        "{}, raised {:?} after the start",
        s.limits_text(&limits, false),
        c.cancel_delay
    );
    let (result, finished, raised) = std::thread::scope(|scope| {
        let raiser = scope.spawn(|| {
            std::thread::sleep(c.cancel_delay);
            flag.cancel();
            Instant::now()
        });
        let result = timed(s, &limits, false, c);
        let finished = Instant::now();
        let raised = raiser
            .join()
            .expect("the thread raising the flag does not panic");
        (result, finished, raised)
    });
    let (a, _) = result?;
    holds(&a, known, &text)?;
    let late = finished.saturating_duration_since(raised);
    if finished > raised && (late > c.cancel_latency || !cancelled_or_proven(a.status)) {
        return Err(report(
            "a solve cancelled while running did not return promptly with `cancelled`",
            &text,
            &format!(
                "a return within {:?} of the flag with stop reason `cancelled` or a proven result",
                c.cancel_latency
            ),
            &format!("a return {late:?} after the flag: {}", a.text),
        ));
    }

    // The work limit: deterministic answers.
    if let Some(w) = c.hard_work_limit {
        let limits = Limits {
            work_limit: Some(w),
            time_limit: Some(Duration::from_secs(60)),
            ..base
        };
        let text = s.limits_text(&limits, false);
        let (first, _) = timed(s, &limits, false, c)?;
        holds(&first, known, &text)?;
        if stopped_by_clock(first.status) {
            return Err(report(
                "the solve did not stop at its work limit",
                &text,
                "stop reason `work-limit` or a proven result",
                &first.text,
            ));
        }
        let (again, _) = timed(s, &limits, false, c)?;
        if !again.same(&first) || again.work != first.work {
            return Err(report(
                "the same problem, work limit and seed gave another answer (or other work)",
                &text,
                &format!("the first answer again: {}", first.text),
                &again.text,
            ));
        }
    }
    Ok(())
}
