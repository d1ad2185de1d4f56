//! The pipeline with the exact backend: the solver's own plan against the baselines, and the
//! deterministic work budget under a competing CPU load.

use std::sync::Arc;

use concerto_benches::graphs::configs;
use concerto_graph::{Graph, Hardware};
use concerto_models::{GptConfig, Model, Parallel};
use concerto_pipeline::{
    schedule, Config, Decompose, Origin, Pipeline, ScheduleConfig, Scheduler, Silent, Solvers,
};
use concerto_rcpsp::Solver;

fn bench_graph(name: &str) -> Graph {
    let c = configs()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no bench configuration `{name}`"));
    concerto_models::build(&c.model, &c.parallel).unwrap()
}

fn pumpkin() -> Arc<dyn Solver> {
    concerto_backends::registry().get("pumpkin").unwrap().into()
}

/// The solver's own plan (not a fallback to a baseline) is at least as short as every
/// baseline on three `bench graphs` configurations, at the bench's default budget.
#[test]
fn the_solvers_own_plan_is_never_behind_a_baseline_on_bench_graphs() {
    for name in ["gpt-tp8", "gpt-zero3-dp8", "vit-tp4-dp2"] {
        let g = bench_graph(name);
        let r = schedule(&g, &Hardware::h100(), pumpkin(), &ScheduleConfig::default()).unwrap();
        let own = r.solver_plan.makespan_ns();
        for b in Scheduler::BASELINES {
            let base = r.get(b).unwrap().makespan_ns();
            assert!(
                own <= base,
                "{name}: the solver's plan {own} ns > {b} {base} ns"
            );
        }
        assert_eq!(r.origin, Origin::Solver, "{name}: a baseline was kept");
        assert_eq!(r.concerto().makespan_ns(), own, "{name}");
        assert!(own >= r.lower_bound_ns, "{name}");
    }
}

/// With a work budget and no time limit, the same graph and seed give a byte-identical plan,
/// once on a quiet machine and once while other threads compete for every core.
#[test]
fn a_work_budget_gives_the_same_plan_under_load() {
    // Two layers of the bench's GPT, 8-way tensor parallel (its all-reduces are exposed, so
    // the selection chooses decompositions and S+AD is scheduled too).
    let gpt = GptConfig {
        layers: 2,
        ..GptConfig::default()
    };
    let g = concerto_models::build(&Model::Gpt(gpt), &Parallel::new(1, 8, 1)).unwrap();
    let mut config = Config::new(Hardware::h100());
    config.schedule.time_limit = None;
    config.schedule.work_limit = Some(4_000);
    config.decompose = Decompose::Sequential;
    let solvers =
        Solvers::new(pumpkin()).with_selector(concerto_backends::default_selector().into());
    for threads in [1, 2] {
        config.schedule.threads = threads;
        let p = Pipeline::new(config.clone(), solvers.clone());
        let quiet = p.run(&g, &Silent).unwrap();
        let loaded = concerto_tests::under_load(|| p.run(&g, &Silent)).unwrap();
        let (gq, pq) = quiet.result();
        let (gl, pl) = loaded.result();
        assert_eq!(quiet.kept, loaded.kept, "threads {threads}");
        assert_eq!(
            gq.to_json(),
            gl.to_json(),
            "threads {threads}: the graphs differ"
        );
        assert_eq!(
            pq.plan.to_json(gq),
            pl.plan.to_json(gl),
            "threads {threads}: the plans differ"
        );
        assert_eq!(
            quiet.schedule.work, loaded.schedule.work,
            "threads {threads}"
        );
        assert!(
            quiet.schedule.work > 0,
            "threads {threads}: no work was done"
        );
        let d = quiet.decomposed.as_ref().unwrap();
        assert!(!d.selected.decompositions.is_empty(), "nothing decomposed");
    }
}
