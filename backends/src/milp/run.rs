//! Running a backend on a worker thread, waited for until the deadline (see the parent
//! module's docs on deadlines).

use std::time::Duration;

use concerto_rcpsp::{Clock, Limits};

use super::{Backend, Milp, Model, RawResult, RawStatus, RunOptions};

/// How often a waiting solve looks at the cancel flag.
const POLL: Duration = Duration::from_millis(20);

/// The part of the time limit kept between the backend's own limit and the deadline, and
/// waited past the deadline for a backend that overruns: 2% of the limit, at most 0.2 s.
pub(crate) fn margin(limits: &Limits) -> Duration {
    limits.time_limit.map_or(Duration::ZERO, |t| {
        t.mul_f64(0.02).min(Duration::from_millis(200))
    })
}

impl RunOptions {
    /// The options of a solve with `limits` on `clock`: the backend's own time limit ends
    /// [`margin`] before the deadline (at least 1 ms), so that its answer, with its bound,
    /// arrives before the caller stops waiting for it.
    pub(crate) fn new(clock: &Clock, limits: &Limits, mip_gap: f64) -> Self {
        RunOptions {
            time_limit: clock.remaining().map(|left| {
                left.saturating_sub(margin(limits))
                    .max(Duration::from_millis(1))
            }),
            threads: limits.threads,
            seed: limits.seed,
            mip_gap,
            work_limit: limits.work_limit,
        }
    }
}

impl Milp {
    /// Runs the backend on a worker thread and waits for it until the deadline (see the module
    /// docs).
    pub(crate) fn run(
        &self,
        model: Model,
        options: &RunOptions,
        clock: &Clock,
        limits: &Limits,
    ) -> Result<RawResult, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let solver = self.clone();
        let opts = options.clone();
        std::thread::Builder::new()
            .name(format!("concerto-{}", self.backend.name()))
            .spawn(move || {
                // The receiver may be gone (deadline passed): the answer is then dropped.
                let _ = tx.send(solver.dispatch(model, &opts));
            })
            .map_err(|e| format!("cannot start the solver thread: {e}"))?;
        let timed_out = || RawResult {
            status: RawStatus::TimeLimit,
            values: None,
            bound: None,
            nodes: 0,
        };
        let grace = margin(limits);
        loop {
            let wait = clock
                .remaining()
                .map_or(POLL, |left| (left + grace).min(POLL))
                .max(Duration::from_millis(1));
            match rx.recv_timeout(wait) {
                Ok(result) => return result,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the solver thread stopped without an answer (it panicked)".into())
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let cancelled = limits.cancel.as_ref().is_some_and(|c| c.is_cancelled());
                    let overdue = clock.remaining().is_some_and(|d| d.is_zero())
                        && clock.overdue().is_some_and(|late| late >= grace);
                    if cancelled || overdue {
                        return Ok(timed_out());
                    }
                }
            }
        }
    }

    pub(crate) fn dispatch(&self, model: Model, options: &RunOptions) -> Result<RawResult, String> {
        match self.backend {
            #[cfg(feature = "microlp")]
            Backend::Microlp => super::microlp::run(model, options),
            #[cfg(feature = "highs")]
            Backend::Highs => super::highs::run(model, options),
            #[cfg(feature = "cbc")]
            Backend::Cbc => super::cbc::run(model, options),
        }
    }
}
