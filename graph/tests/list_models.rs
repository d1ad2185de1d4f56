//! The list-scheduling portfolio on model steps: small GPT steps built by `concerto-models`
//! (a dev-dependency, which the unit tests in `src/list/tests.rs` cannot use: it depends on
//! this crate, so there its `Graph` would be another crate's type).

use concerto_graph::baselines::{self, program_order};
use concerto_graph::bounds::bounds;
use concerto_graph::list::{portfolio, Candidate, ListConfig, Rule};
use concerto_graph::{simulate, Graph, Hardware};
use concerto_models::{build, GptConfig, Model, Parallel, Zero};

/// Small GPT steps under several plans, costed on an H100.
fn models() -> Vec<(Graph, Vec<u64>)> {
    let gpt = Model::Gpt(GptConfig {
        layers: 2,
        hidden: 256,
        heads: 8,
        seq: 128,
        micro_batch: 2,
        vocab: 1000,
    });
    let plans = [
        Parallel::new(2, 2, 1),
        Parallel::new(2, 2, 2),
        Parallel {
            dp: 4,
            zero: Zero::Stage3,
            ..Parallel::default()
        },
    ];
    let hw = Hardware::h100();
    plans
        .iter()
        .map(|p| {
            let g = build(&gpt, p).unwrap();
            let d = hw.durations(&g);
            (g, d)
        })
        .collect()
}

/// Every candidate is a valid plan whose simulated makespan is the one reported and at least
/// the proven bound; the candidates come best first, one per rule. (The unit tests' check of
/// the same name, for their random graphs.)
fn check_portfolio(g: &Graph, d: &[u64], contention: f64, what: &str) -> Vec<Candidate> {
    let config = ListConfig {
        contention,
        samples: 6,
        rules: Rule::ALL.to_vec(),
        ..ListConfig::default()
    };
    let c = portfolio(g, d, &config, &|| false).unwrap();
    let mut rules: Vec<Rule> = c.iter().map(|c| c.rule).collect();
    rules.sort();
    assert_eq!(rules, Rule::ALL.to_vec(), "{what}");
    let bound = bounds(g, d).value_ns();
    for k in &c {
        k.plan.validate(g).unwrap();
        let t = simulate(g, &k.plan, d, contention).unwrap();
        assert_eq!(t.makespan, k.makespan_ns, "{what}: {}", k.rule);
        assert!(k.makespan_ns >= bound, "{what}: {} below the bound", k.rule);
    }
    assert!(c.windows(2).all(|w| w[0].makespan_ns <= w[1].makespan_ns));
    // Justification starts from the plans before it (all but `sampled` and, listed after it in
    // `Rule::ALL`, `program-forward`), so it is never worse than they are.
    let j = c.iter().find(|k| k.rule == Rule::Justified).unwrap();
    assert!(
        c.iter()
            .all(|k| matches!(k.rule, Rule::Sampled | Rule::Program)
                || j.makespan_ns <= k.makespan_ns)
    );
    c
}

#[test]
fn model_steps_get_valid_plans_never_below_the_bound() {
    for (g, d) in models() {
        let c = check_portfolio(&g, &d, 1.0, g.name());
        let lhs = simulate(&g, &baselines::lhs(&g, &d).unwrap(), &d, 1.0).unwrap();
        let po = simulate(&g, &program_order(&g).unwrap(), &d, 1.0).unwrap();
        assert!(c[0].makespan_ns <= po.makespan, "{}", g.name());
        assert!(c[0].makespan_ns <= lhs.makespan, "{}", g.name());
        check_portfolio(&g, &d, 1.1, g.name());
    }
}

#[test]
fn same_inputs_same_candidates_on_model_steps() {
    let (g, d) = models().swap_remove(1);
    for seed in [0, 7] {
        let config = ListConfig {
            seed,
            samples: 9,
            contention: 1.1,
            ..ListConfig::default()
        };
        let a = portfolio(&g, &d, &config, &|| false).unwrap();
        let b = portfolio(&g, &d, &config, &|| false).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn stop_returns_what_was_found_and_always_the_first_rule() {
    let (g, d) = models().swap_remove(0);
    let config = ListConfig {
        rules: vec![Rule::Backward, Rule::CriticalPath, Rule::Sampled],
        ..ListConfig::default()
    };
    let c = portfolio(&g, &d, &config, &|| true).unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].rule, Rule::Backward);
    // Stopped after two polls: two rules.
    let polls = std::cell::Cell::new(0);
    let stop = || {
        polls.set(polls.get() + 1);
        polls.get() > 1
    };
    let c = portfolio(&g, &d, &config, &stop).unwrap();
    assert_eq!(c.len(), 2);
}

#[test]
fn the_default_runs_the_default_rules_in_order() {
    let (g, d) = models().swap_remove(0);
    let c = portfolio(&g, &d, &ListConfig::default(), &|| false).unwrap();
    let mut rules: Vec<Rule> = c.iter().map(|c| c.rule).collect();
    rules.sort();
    assert_eq!(rules, Rule::DEFAULT.to_vec());
    // Equal makespans keep the config's order.
    for w in c.windows(2) {
        assert!(w[0].makespan_ns < w[1].makespan_ns || w[0].rule < w[1].rule);
    }
}
