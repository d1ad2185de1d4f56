//! Every instance of `concerto-fixtures` against its known bounds: our bounds are sound, the
//! heuristic's schedules pass the independent checker and respect the best known lower bound,
//! the hand-made `tiny/` instances are solved to optimality, and the serial and parallel
//! schedule-generation schemes give valid schedules under every priority rule.

use std::collections::BTreeSet;

use concerto_fixtures::Fixture;
use concerto_rcpsp::priority::{list_from_priorities, priorities, Rule};
use concerto_rcpsp::{
    bounds, check, read_problem, sgs, ActivityList, Heuristic, HeuristicConfig, Limits, Problem,
    Solver, Status, StopReason,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn fixture(name: &str) -> Fixture {
    concerto_fixtures::all()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("`{name}` is not in expected.csv"))
}

fn problem(f: &Fixture) -> Problem {
    read_problem(&f.path).unwrap_or_else(|e| panic!("{}: {e}", f.name))
}

/// Reads the fixture, checks our bounds against its known ones, solves it with a fixed
/// schedule budget and checks the outcome.
fn solve_fixture(name: &str) {
    let f = fixture(name);
    let p = problem(&f);

    let cp = bounds::critical_path(&p).value;
    assert_eq!(cp, f.critical_path, "{name}: critical path");
    let lb = bounds::lower_bound(&p).value;
    assert!(
        lb >= cp,
        "{name}: lower bound {lb} below the critical path {cp}"
    );
    // Sound: never above a makespan that is known to be achievable (the optimum when proven).
    assert!(
        lb <= f.upper_bound,
        "{name}: lower bound {lb} above the best known makespan {}",
        f.upper_bound
    );

    let solver = Heuristic::new(HeuristicConfig {
        max_schedules: Some(20_000),
        ..HeuristicConfig::default()
    });
    let outcome = solver
        .solve(&p, &Limits::default().seed(2024))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let schedule = outcome
        .schedule
        .as_ref()
        .expect("the heuristic always has a schedule");
    let makespan = check(&p, schedule).unwrap_or_else(|v| panic!("{name}: {v}"));
    assert_eq!(
        outcome.makespan,
        Some(makespan),
        "{name}: reported makespan"
    );
    assert_eq!(outcome.solver, "sgs");
    assert!(
        makespan >= f.lower_bound,
        "{name}: makespan {makespan} below the best known lower bound {}",
        f.lower_bound
    );
    assert!(
        outcome.lower_bound >= lb,
        "{name}: outcome bound {} below our bound {lb}",
        outcome.lower_bound
    );
    assert!(
        outcome.lower_bound <= makespan,
        "{name}: bound {} above makespan {makespan}",
        outcome.lower_bound
    );
    if outcome.status == Status::Optimal {
        assert_eq!(
            makespan, outcome.lower_bound,
            "{name}: Optimal without meeting the bound"
        );
    } else {
        assert_eq!(
            outcome.status,
            Status::Feasible(StopReason::WorkLimit),
            "{name}"
        );
        assert!(
            makespan > outcome.lower_bound,
            "{name}: bound met but not reported Optimal"
        );
        assert!(
            outcome.work >= 20_000,
            "{name}: stopped after {} schedules",
            outcome.work
        );
    }
    if name.starts_with("tiny/") {
        assert_eq!(
            makespan, f.upper_bound,
            "{name}: the heuristic misses the optimum"
        );
    }
}

macro_rules! fixture_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                solve_fixture($name);
            }
        )*

        /// The fixtures that have a test above.
        const COVERED: &[&str] = &[$($name),*];
    };
}

fixture_tests! {
    j301_1 => "psplib/j30/j301_1.sm",
    j305_1 => "psplib/j30/j305_1.sm",
    j3013_1 => "psplib/j30/j3013_1.sm",
    j3046_3 => "psplib/j30/j3046_3.sm",
    j601_1 => "psplib/j60/j601_1.sm",
    j605_2 => "psplib/j60/j605_2.sm",
    j609_1 => "psplib/j60/j609_1.sm",
    j6013_1 => "psplib/j60/j6013_1.sm",
    tiny_two_streams => "tiny/two_streams.json",
    tiny_lags => "tiny/lags.json",
    tiny_packing => "tiny/packing.rcp",
}

#[test]
fn every_fixture_has_a_test() {
    let listed: BTreeSet<String> = concerto_fixtures::all()
        .into_iter()
        .map(|f| f.name)
        .collect();
    let covered: BTreeSet<String> = COVERED.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        listed, covered,
        "add a line to `fixture_tests!` for each new fixture"
    );
}

#[test]
fn tiny_bounds_match_the_readme() {
    // packing.rcp: energy 15 / 2 rounded up = 8, critical path 3, optimum 9.
    let p = problem(&fixture("tiny/packing.rcp"));
    assert_eq!(bounds::critical_path(&p).value, 3);
    assert_eq!(bounds::energy(&p).value, 8);
    assert_eq!(bounds::lower_bound(&p).kind, bounds::BoundKind::Energy);
    // lags.json: a [0,2), lag 5, b [7,9): the critical path is the optimum.
    let p = problem(&fixture("tiny/lags.json"));
    assert_eq!(bounds::lower_bound(&p).value, 9);
}

#[test]
fn every_rule_gives_valid_serial_and_parallel_schedules() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for f in concerto_fixtures::all() {
        let p = problem(&f);
        for rule in Rule::ALL {
            let values = priorities(&p, rule, &mut rng);
            assert_eq!(values.len(), p.len());
            let list = ActivityList::new(&p, list_from_priorities(&p, &values))
                .unwrap_or_else(|e| panic!("{} {}: {e}", f.name, rule.as_str()));
            for (scheme, schedule) in [
                ("serial", sgs::serial(&p, &list)),
                ("parallel", sgs::parallel(&p, &values)),
            ] {
                let makespan = check(&p, &schedule)
                    .unwrap_or_else(|v| panic!("{} {scheme} {}: {v}", f.name, rule.as_str()));
                assert!(
                    makespan >= f.lower_bound,
                    "{} {scheme} {}: makespan {makespan} below the known bound {}",
                    f.name,
                    rule.as_str(),
                    f.lower_bound
                );
                assert!(
                    makespan <= p.horizon(),
                    "{} {scheme} {}: beyond the horizon",
                    f.name,
                    rule.as_str()
                );
            }
        }
    }
}
