//! Helpers shared by this crate's tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::solver::Outcome;

/// Runs `f` while three other threads spin (each for at most two minutes), then stops and
/// joins them: a machine under load, for tests that the clock decides nothing.
pub(crate) fn under_load<T>(f: impl FnOnce() -> T) -> T {
    let stop = Arc::new(AtomicBool::new(false));
    let burners: Vec<_> = (0..3)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let began = Instant::now();
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) && began.elapsed() < Duration::from_secs(120) {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    std::hint::black_box(x);
                }
            })
        })
        .collect();
    let out = f();
    stop.store(true, Ordering::Relaxed);
    for burner in burners {
        burner.join().expect("a burner thread ends");
    }
    out
}

/// Asserts that two outcomes agree on everything but the wall time.
pub(crate) fn assert_same(a: &Outcome, b: &Outcome) {
    assert_eq!(a.schedule, b.schedule);
    assert_eq!(a.makespan, b.makespan);
    assert_eq!(a.status, b.status);
    assert_eq!(a.lower_bound, b.lower_bound);
    assert_eq!(a.work, b.work);
}
