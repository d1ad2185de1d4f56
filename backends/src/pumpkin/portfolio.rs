//! The portfolio: with two or more threads, one search per thread on its own model, the even
//! ones with the configuration as given and the odd ones [`diversified`], sharing the best
//! makespan and bound (see the parent module's docs).

use std::sync::atomic::AtomicI64;
use std::sync::Mutex;

use concerto_rcpsp::{Limits, Schedule, SolveError, StopReason, Time};

use super::model::Model;
use super::probing::Run;
use super::{start, Direction, PumpkinConfig};

/// What the workers of a portfolio share: the best makespan found and its schedule (the
/// neighbourhoods of [`PumpkinConfig::lns`] are built around it), the best bound proven, and
/// a flag raised when one of them closes the gap.
pub(super) struct Shared {
    pub(super) upper: AtomicI64,
    pub(super) best: Mutex<Option<Schedule>>,
    pub(super) lower: AtomicI64,
    pub(super) done: concerto_rcpsp::CancelFlag,
}

/// The second configuration of a portfolio: the start-time series in the other
/// [`Direction`], no edge finding, dual probes at a fifth of the primal slices, no
/// large-neighbourhood search ([`PumpkinConfig::lns`]: the first worker improves, this one
/// proves). The direction
/// is what diversifies most: on the seven hardest j30 instances, each direction is the faster
/// one on some of them (`j3013_6`: 8.4 s backward, 7.2 s forward; `j3013_2`: 4.9 s and 18.1 s).
/// Edge finding off and small dual probes were measured faster in both directions on those
/// seven (backward: 28.0 s in all against 36.1 s with the defaults). On PSPLIB j30 at 10 s on
/// 2 cores this portfolio proves all 480, the slowest in 6.1 s (`j3013_6`; `j3013_2` 4.2 s,
/// `j3013_5` 4.9 s); two forward searches (the second one this configuration, forwards) prove
/// 480 too, the slowest in 6.5 s (`j3013_2` and `j3013_5`).
pub fn diversified(config: &PumpkinConfig) -> PumpkinConfig {
    let direction = match config.direction {
        Direction::Forward => Direction::Backward,
        Direction::Backward => Direction::Forward,
        // Unresolved: without a problem, the other of the two choices.
        Direction::Auto => Direction::Forward,
    };
    PumpkinConfig {
        lns: false,
        edge_finding: false,
        dual_weight: 0.2,
        direction,
        ..config.clone()
    }
}

/// What a portfolio worker ends with: its best schedule, its bound, why it stopped, and its
/// conflicts.
type WorkerResult = (Option<Schedule>, Time, StopReason, u64);

/// Runs one search per worker on its own thread, each on its own model, sharing the best
/// makespan and bound (see the module docs), and folds their results into `run`. Returns why
/// the search stopped.
///
/// Under a work budget ([`Limits::work_limit`]) nothing is shared: what one worker would
/// adopt from another, and when another would stop it, depends on thread timing. Each worker
/// then runs to its own end (its gap closed or its budget spent), and the fold, in worker
/// order, keeps the first of the shortest schedules, the largest bound and the sum of the
/// conflicts: the same on any machine and load.
pub(super) fn portfolio(
    run: &mut Run<'_>,
    workers: &[(PumpkinConfig, u64)],
    limits: &Limits,
    bound: Time,
) -> Result<StopReason, SolveError> {
    let shared = Shared {
        upper: AtomicI64::new(run.best_makespan),
        best: Mutex::new(run.best.clone()),
        lower: AtomicI64::new(run.lower_bound),
        done: concerto_rcpsp::CancelFlag::new(),
    };
    let (problem, clock, cap) = (run.problem, run.clock, run.cap);
    let shared = limits.work_limit.is_none().then_some(&shared);
    let results: Vec<Result<WorkerResult, SolveError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = workers
            .iter()
            .enumerate()
            .map(|(w, (config, seed))| {
                let mut best = run.best.clone();
                let (mut best_makespan, lower_bound) = (run.best_makespan, run.lower_bound);
                scope.spawn(move || {
                    if w > 0 {
                        // Its own start, from its own seed: where the search starts from
                        // matters more than the solver's seed. Kept when no longer.
                        let own = start(config, problem, limits, clock, *seed)?.schedule;
                        if let Some(own) = own {
                            let m = own.makespan(problem);
                            if m <= best_makespan {
                                best_makespan = m;
                                best = Some(own);
                            }
                        }
                    }
                    let mut model = Model::build(problem, config, *seed, bound, cap)?;
                    let mut worker = Run {
                        problem,
                        clock,
                        best,
                        best_makespan,
                        lower_bound,
                        cap,
                        conflicts: 0,
                        shared,
                    };
                    let reason = worker.search(&mut model, config, limits);
                    worker.publish();
                    if let Some(shared) = shared.filter(|_| worker.closed()) {
                        shared.done.cancel();
                    }
                    Ok((worker.best, worker.lower_bound, reason, worker.conflicts))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a portfolio worker panicked"))
            .collect()
    });
    let mut reasons = Vec::new();
    for result in results {
        let (best, lower_bound, reason, conflicts) = result?;
        if let Some(schedule) = best {
            run.record(schedule);
        }
        run.lower_bound = run.lower_bound.max(lower_bound);
        run.conflicts += conflicts;
        reasons.push(reason);
    }
    // A closed gap is `Exhausted` whichever worker closed it; otherwise the first worker's
    // reason (they all stop on the same clock and cancel flag).
    Ok(
        if run.lower_bound >= run.best_makespan || run.lower_bound > cap {
            StopReason::Exhausted
        } else {
            reasons[0]
        },
    )
}
