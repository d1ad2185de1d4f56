//! The odd-even driver on random problems: it never returns a schedule worse than the one it
//! started from, every schedule it returns passes the independent check, its rounds never get
//! worse, and its bound is a bound.

use std::time::Duration;

use concerto_rcpsp::{check, Heuristic, HeuristicConfig, Limits, OddEven, OddEvenConfig, Solver};
use concerto_tests::problems;
use proptest::prelude::*;

fn config(block: usize) -> OddEvenConfig {
    OddEvenConfig {
        block,
        rounds: 3,
        window_time_limit: Duration::from_secs(5),
        start_schedules: 5,
        ..OddEvenConfig::default()
    }
}

fn inners() -> Vec<Box<dyn Solver>> {
    let registry = concerto_backends::registry();
    let mut solvers: Vec<Box<dyn Solver>> = vec![Box::new(Heuristic::new(HeuristicConfig {
        max_schedules: Some(100),
        ..HeuristicConfig::default()
    }))];
    for info in registry.list() {
        if info.missing_feature.is_none() && info.name != "sgs" && info.name != "microlp" {
            solvers.push(registry.get(&info.name).expect("compiled in"));
        }
    }
    solvers
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn never_worse_than_the_start(p in problems(12), block in 2usize..4, seed in 0u64..100) {
        // The start: a deliberately poor schedule (a single rule, no search).
        let start = Heuristic::new(HeuristicConfig { max_schedules: Some(1), ..HeuristicConfig::default() })
            .solve(&p, &Limits::default().seed(seed))
            .expect("heuristic")
            .schedule
            .expect("a schedule");
        let start_makespan = check(&p, &start).expect("valid start");
        for inner in inners() {
            let name = inner.name().to_owned();
            let driver = OddEven::new(inner, config(block));
            let limits = Limits { seed, threads: 2, ..Limits::default() }.initial(start.clone());
            let report = driver.run(&p, &limits).map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
            let schedule = report.outcome.schedule.as_ref().expect("a schedule");
            let m = check(&p, schedule).map_err(|v| TestCaseError::fail(format!("{name}: {v}")))?;
            prop_assert!(m <= start_makespan, "{}: {} worse than the start {}", name, m, start_makespan);
            prop_assert_eq!(report.start_makespan, start_makespan);
            prop_assert!(report.outcome.lower_bound <= m);
            let mut previous = start_makespan;
            for r in &report.rounds {
                prop_assert!(r.makespan <= previous, "{}: round {} got worse", name, r.round);
                previous = r.makespan;
            }
        }
    }
}

/// Generated training steps (compute on one unit stream, collectives on one or two channels,
/// hundreds of activities, many windows with fixed activities on both sides) with the exact
/// `pumpkin` inner: every returned schedule is checked, never worse than the start, and the
/// bound stays below it.
#[test]
fn generated_training_steps_with_pumpkin_windows() {
    use concerto_rcpsp::generate::{training_step, TrainingStep};
    for (size, channels, seed) in [(200, 1, 1), (600, 2, 2), (600, 1, 3)] {
        let p = training_step(&TrainingStep::with_size(size, channels, seed));
        let inner = concerto_backends::registry()
            .get("pumpkin")
            .expect("pumpkin is a dev feature");
        let driver = OddEven::new(
            inner,
            OddEvenConfig {
                block: 8,
                rounds: 2,
                window_time_limit: Duration::from_millis(50),
                start_schedules: 10,
                ..OddEvenConfig::default()
            },
        );
        let limits = Limits {
            seed,
            threads: 2,
            ..Limits::default()
        };
        let report = driver.run(&p, &limits).expect("runs");
        let schedule = report.outcome.schedule.as_ref().expect("a schedule");
        let m = check(&p, schedule).unwrap_or_else(|v| panic!("size {size}: {v}"));
        assert!(
            m <= report.start_makespan,
            "size {size}: {m} > start {}",
            report.start_makespan
        );
        assert!(report.outcome.lower_bound <= m);
        assert!(!report.rounds.is_empty(), "size {size}: no round ran");
        let mut previous = report.start_makespan;
        for r in &report.rounds {
            assert!(
                r.makespan <= previous,
                "size {size}: round {} got worse",
                r.round
            );
            assert!(r.windows > 0);
            previous = r.makespan;
        }
    }
}
