//! Tests of the list-scheduling portfolio.

use super::engine::Net;
use super::priority::{descendant_comm, Priorities};
use super::*;
use crate::baselines::{bottom_levels, program_order};
use crate::bounds::bounds;
use crate::hardware::Hardware;
use crate::ir::{CollectiveKind, ComputeClass, GraphBuilder, LinkClass, Op, OpId};
use crate::models::{build, GptConfig, Model, Parallel, Zero};
use crate::plan::Stream;

/// A small random graph: compute and collectives on two links, random inputs from earlier
/// ops (sometimes one of them twice: two edges between the same ops), random durations (seeded LCG).
fn random_graph(seed: u64, n: usize) -> (Graph, Vec<u64>) {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    let mut next = |m: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % m
    };
    let mut b = GraphBuilder::new("random");
    let mut ids: Vec<OpId> = Vec::new();
    let mut d = Vec::new();
    for i in 0..n {
        let op = match next(3) {
            0 => Op::collective(
                format!("ar{i}"),
                CollectiveKind::AllReduce,
                8,
                8,
                LinkClass::IntraNode,
            ),
            1 if i % 2 == 0 => Op::collective(
                format!("ag{i}"),
                CollectiveKind::AllGather,
                8,
                16,
                LinkClass::InterNode,
            ),
            _ => Op::compute(format!("c{i}"), ComputeClass::Gemm, 1, 1),
        };
        let mut inputs: Vec<OpId> = ids.iter().copied().filter(|_| next(4) == 0).collect();
        if let Some(&first) = inputs.first() {
            if next(3) == 0 {
                inputs.push(first);
            }
        }
        ids.push(b.add(op, &inputs));
        d.push(1 + next(20));
    }
    (b.finish(), d)
}

/// A backward pass in program order that waits for each gradient all-reduce right away (as
/// in the baselines' tests): g1 -> ar1 -> u1, then g0 -> ar0 -> u0, g0 independent of ar1.
fn eager() -> (Graph, Vec<u64>) {
    let mut b = GraphBuilder::new("eager");
    let c = |n: &str| Op::compute(n, ComputeClass::Other, 0, 0);
    let ar = |n: &str| Op::collective(n, CollectiveKind::AllReduce, 8, 8, LinkClass::IntraNode);
    let g1 = b.add(c("g1"), &[]);
    let ar1 = b.add(ar("ar1"), &[g1]);
    let u1 = b.add(c("u1"), &[ar1]);
    let g0 = b.add(c("g0"), &[g1]);
    let ar0 = b.add(ar("ar0"), &[g0]);
    b.add(c("u0"), &[ar0, u1]);
    (b.finish(), vec![4, 5, 1, 4, 5, 1])
}

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
/// the proven bound; the candidates come best first, one per rule.
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
    // Justification starts from the plans before it, so it is never worse than they are.
    let j = c.iter().find(|k| k.rule == Rule::Justified).unwrap();
    assert!(c
        .iter()
        .all(|k| k.rule == Rule::Sampled || j.makespan_ns <= k.makespan_ns));
    c
}

#[test]
fn every_rule_gives_a_valid_plan_timed_as_the_simulator_does() {
    for seed in 0..120 {
        let (g, d) = random_graph(seed, 2 + (seed % 30) as usize);
        for contention in [1.0, 1.7] {
            check_portfolio(&g, &d, contention, &format!("seed {seed} x{contention}"));
        }
        for direction in [Direction::Forward, Direction::Backward] {
            let prio: Vec<u64> = (0..g.len() as u64).map(|i| (i * 7919) % 13).collect();
            let plan = list_schedule(&g, &d, &prio, direction, 1.0).unwrap();
            plan.validate(&g).unwrap();
        }
    }
}

#[test]
fn model_steps_get_valid_plans_never_below_the_bound() {
    for (g, d) in models() {
        let c = check_portfolio(&g, &d, 1.0, g.name());
        let lhs = simulate(&g, &crate::baselines::lhs(&g, &d).unwrap(), &d, 1.0).unwrap();
        let po = simulate(&g, &program_order(&g).unwrap(), &d, 1.0).unwrap();
        assert!(c[0].makespan_ns <= po.makespan, "{}", g.name());
        assert!(c[0].makespan_ns <= lhs.makespan, "{}", g.name());
        check_portfolio(&g, &d, 1.1, g.name());
    }
}

#[test]
fn the_critical_path_rule_hides_the_all_reduce() {
    let (g, d) = eager();
    let po = simulate(&g, &program_order(&g).unwrap(), &d, 1.0).unwrap();
    let c = portfolio(
        &g,
        &d,
        &ListConfig {
            rules: vec![Rule::CriticalPath],
            ..ListConfig::default()
        },
        &|| false,
    )
    .unwrap();
    let t = simulate(&g, &c[0].plan, &d, 1.0).unwrap();
    // g1 [0,4), g0 [4,8) beside ar1 [4,9), u1 [9,10), ar0 [9,14), u0 [14,15): the channel
    // is busy from g1's end to u0's start, the least makespan there is.
    assert_eq!((po.makespan, c[0].makespan_ns), (20, 15));
    assert_eq!(t.start[3], 4);
    assert!(t.exposed_comm_ns(&g) < po.exposed_comm_ns(&g));
}

/// A (1) -> A2 (5) on compute; B (1) feeds two 3 ns all-reduces. B's bottom level (4) is
/// below A's (6), but the channel has 6 ns to do after B.
fn feeder() -> (Graph, Vec<u64>) {
    let mut b = GraphBuilder::new("feeder");
    let c = |n: &str| Op::compute(n, ComputeClass::Other, 0, 0);
    let ar = |n: &str| Op::collective(n, CollectiveKind::AllReduce, 8, 8, LinkClass::IntraNode);
    let a = b.add(c("a"), &[]);
    b.add(c("a2"), &[a]);
    let f = b.add(c("b"), &[]);
    b.add(ar("ar1"), &[f]);
    b.add(ar("ar2"), &[f]);
    (b.finish(), vec![1, 5, 1, 3, 3])
}

#[test]
fn the_energy_tail_and_justification_beat_the_critical_path_by_hand() {
    let (g, d) = feeder();
    let run = |rules: Vec<Rule>| {
        let config = ListConfig {
            rules,
            ..ListConfig::default()
        };
        portfolio(&g, &d, &config, &|| false).unwrap()
    };
    let ms = |c: &[Candidate], r: Rule| c.iter().find(|k| k.rule == r).unwrap().makespan_ns;
    // cp: a [0,1), a2 [1,6), b [6,7), ar1 [7,10), ar2 [10,13).
    let c = run(vec![Rule::CriticalPath, Rule::Justified]);
    assert_eq!(ms(&c, Rule::CriticalPath), 13);
    // Right-justified from cp's ends, then timed forward: b [0,1) feeds both all-reduces
    // [1,4), [4,7) beside a, a2 [1,7).
    assert_eq!(ms(&c, Rule::Justified), 7);
    // The energy tail of b is 1 + 6 = 7 > 6: b first.
    let c = run(vec![Rule::EnergyTail, Rule::CommWeighted, Rule::Backward]);
    assert_eq!(ms(&c, Rule::EnergyTail), 7);
    assert_eq!(ms(&c, Rule::CommWeighted), 7);
    assert_eq!(ms(&c, Rule::Backward), 7);
    assert_eq!(bounds(&g, &d).value_ns(), 7);
    // justify() on cp's plan does the same.
    let cp = list_schedule(&g, &d, &bottom_levels(&g, &d), Direction::Forward, 1.0).unwrap();
    let (plan, m) = justify(&g, &d, &cp, 1.0, &|| false).unwrap();
    assert_eq!(m, 7);
    assert_eq!(simulate(&g, &plan, &d, 1.0).unwrap().makespan, 7);
}

#[test]
fn same_inputs_same_candidates() {
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
    for seed in 0..20 {
        let (g, d) = random_graph(seed, 25);
        let config = ListConfig {
            samples: 4,
            ..ListConfig::default()
        };
        assert_eq!(
            portfolio(&g, &d, &config, &|| false).unwrap(),
            portfolio(&g, &d, &config, &|| false).unwrap()
        );
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
fn bad_inputs_are_named_errors() {
    let (g, d) = eager();
    let config = ListConfig::default();
    let e = portfolio(&g, &d[..5], &config, &|| false).unwrap_err();
    assert!(e.to_string().contains("5 durations for 6 ops"), "{e}");
    let bad = ListConfig {
        contention: 0.5,
        ..ListConfig::default()
    };
    let e = portfolio(&g, &d, &bad, &|| false).unwrap_err();
    assert!(e.to_string().contains("contention"), "{e}");
    let none = ListConfig {
        rules: vec![],
        ..ListConfig::default()
    };
    let e = portfolio(&g, &d, &none, &|| false).unwrap_err();
    assert!(e.to_string().contains("no rule"), "{e}");
    let e = list_schedule(&g, &d, &[1, 2], Direction::Forward, 1.0).unwrap_err();
    assert!(e.to_string().contains("2 priorities for 6 ops"), "{e}");
    let e = list_schedule(&g, &d, &d, Direction::Forward, f64::NAN).unwrap_err();
    assert!(e.to_string().contains("contention"), "{e}");
    // An empty graph has one empty plan per rule.
    let empty = GraphBuilder::new("empty").finish();
    let c = portfolio(&empty, &[], &config, &|| false).unwrap();
    assert!(c.iter().all(|k| k.makespan_ns == 0));
}

#[test]
fn justify_never_worsens_a_plan() {
    for seed in 0..60 {
        let (g, d) = random_graph(seed, 3 + (seed % 25) as usize);
        let plan = program_order(&g).unwrap();
        let before = simulate(&g, &plan, &d, 1.3).unwrap().makespan;
        let (better, after) = justify(&g, &d, &plan, 1.3, &|| false).unwrap();
        assert!(after <= before, "seed {seed}");
        assert_eq!(simulate(&g, &better, &d, 1.3).unwrap().makespan, after);
    }
}

#[test]
fn priorities_match_their_definitions() {
    for seed in 0..60 {
        let (g, d) = random_graph(seed, 2 + (seed % 30) as usize);
        let net = Net::new(&g);
        let mut p = Priorities::new(&d);
        assert_eq!(
            p.bottom(&net),
            bottom_levels(&g, &d).as_slice(),
            "seed {seed}"
        );
        // Descendant sums against a brute-force reachability, all collectives counted and
        // only the two longest.
        let n = g.len();
        let mut below = vec![vec![false; n]; n];
        for v in (0..n).rev() {
            below[v][v] = true;
            for s in g.successors(OpId(v)) {
                let reached = below[s.0].clone();
                for (mine, r) in below[v].iter_mut().zip(reached) {
                    *mine |= r;
                }
            }
        }
        let mut longest: Vec<usize> = (0..n).filter(|&v| g.op(OpId(v)).is_collective()).collect();
        longest.sort_by_key(|&v| (std::cmp::Reverse(d[v]), v));
        longest.truncate(2);
        for (cap, counted) in [(usize::MAX, None), (2, Some(&longest))] {
            let sums = descendant_comm(&net, &d, cap);
            for (c, s) in net.streams.iter().enumerate() {
                if *s == Stream::Compute {
                    assert!(sums[c].is_empty());
                    continue;
                }
                for v in 0..n {
                    let want: u64 = (0..n)
                        .filter(|&w| below[v][w] && Stream::of(g.op(OpId(w))) == *s)
                        .filter(|w| counted.is_none_or(|l| l.contains(w)))
                        .map(|w| d[w])
                        .sum();
                    assert_eq!(sums[c][v], want, "seed {seed} cap {cap} op {v}");
                }
            }
        }
    }
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

#[test]
fn rules_round_trip_their_names() {
    for r in Rule::ALL {
        assert_eq!(Rule::parse(r.as_str()), Some(r));
        assert_eq!(r.to_string(), r.as_str());
    }
    assert_eq!(Rule::parse("cp"), None);
}
