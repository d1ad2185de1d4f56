//! Compiled XLA modules: the train steps XLA's CUDA compiler builds for 8 H100s
//! (`scripts/xla-gpu-corpus`, deviceless), imported with every GEMM, attention kernel and
//! collective costed as what it is, XLA's own schedule as the `xla` baseline, concerto's own
//! search never behind it, and the memory model's peak for XLA's schedule against XLA's buffer
//! assignment.
//!
//! The corpus directory comes from `CONCERTO_XLA_GPU_CORPUS` (the last line of
//! `scripts/xla-gpu-corpus`). The test is `#[ignore]`d in a plain `cargo test`; `scripts/test`
//! builds the corpus and runs it with `--ignored`, where a missing corpus is a failure, never a
//! skip.

use std::path::PathBuf;
use std::sync::Arc;

use concerto_extract::hlo::ImportOptions;
use concerto_extract::read_imported;
use concerto_graph::{memory, Hardware, OpKind};
use concerto_pipeline::{schedule, ModuleSchedule, ScheduleConfig, Scheduler};
use concerto_rcpsp::Solver;

fn corpus() -> PathBuf {
    let dir = std::env::var_os("CONCERTO_XLA_GPU_CORPUS").unwrap_or_else(|| {
        panic!(
            "CONCERTO_XLA_GPU_CORPUS is not set: run `CONCERTO_XLA_GPU_CORPUS=$(scripts/xla-gpu-corpus | tail -n 1) \
             cargo test -p concerto-tests --test compiled -- --ignored`, or scripts/test"
        )
    });
    PathBuf::from(dir)
}

#[test]
#[ignore = "needs the compiled corpus (scripts/xla-gpu-corpus); scripts/test runs it"]
fn compiled_corpus_imports_and_concerto_is_never_behind_xla() {
    let dir = corpus();
    let mut modules: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".gpu.hlo"))
        .collect();
    modules.sort();
    assert!(
        modules.len() >= 8,
        "{} modules in {}",
        modules.len(),
        dir.display()
    );
    let hw = Hardware::h100();
    let solver: Arc<dyn Solver> = concerto_backends::registry().get("pumpkin").unwrap().into();
    let mut wrapped = 0;
    for path in &modules {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let imported =
            read_imported(path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        for w in &imported.warnings {
            let lower = w.to_ascii_lowercase();
            assert!(
                ![
                    "cublas",
                    "cudnn",
                    "attention",
                    "fmha",
                    "all-",
                    "reduce-scatter",
                    "collective"
                ]
                .iter()
                .any(|k| lower.contains(k)),
                "{name}: {w}"
            );
        }
        let g = &imported.graph;
        if g.ops().any(|o| {
            matches!(
                o.kind,
                OpKind::Collective {
                    kind: concerto_graph::CollectiveKind::ReduceScatter
                        | concerto_graph::CollectiveKind::AllToAll,
                    ..
                }
            )
        }) {
            wrapped += 1;
        }
        let plan = imported
            .schedule
            .unwrap_or_else(|| panic!("{name}: a compiled module carries XLA's schedule"));
        let config = ScheduleConfig {
            // The work limit decides the plan; the time limit only guards against a hang, wide
            // enough for a loaded machine (the test command runs this beside other builds).
            work_limit: Some(20_000),
            time_limit: Some(std::time::Duration::from_secs(900)),
            module_schedule: Some(ModuleSchedule::new(g, plan).unwrap()),
            ..ScheduleConfig::default()
        };
        let r = schedule(g, &hw, solver.clone(), &config).unwrap_or_else(|e| panic!("{name}: {e}"));
        let xla = r.get(Scheduler::Xla).expect("the xla row");
        assert!(
            r.solver_plan.makespan_ns() <= xla.makespan_ns(),
            "{name}: concerto's own search {} ns > xla {} ns",
            r.solver_plan.makespan_ns(),
            xla.makespan_ns()
        );
        assert!(r.lower_bound_ns <= r.concerto().makespan_ns(), "{name}");
        // Memory: the model's peak for XLA's schedule against XLA's buffer assignment.
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(name.replace(".gpu.hlo", ".json"))).unwrap(),
        )
        .unwrap();
        let xla_peak = meta["xla_peak_bytes"].as_u64().expect("xla_peak_bytes") as f64;
        let peak = memory::profile(g, &xla.timeline).unwrap().peak_bytes as f64;
        let ratio = peak / xla_peak;
        let over = memory::check_memory(g, &xla.timeline, xla_peak as u64)
            .err()
            .map_or(String::new(), |e| e.to_string());
        // Loops: XLA updates a loop's state in place, and a multi-output fusion that
        // initialises it counts here as one tensor of all its leaves (see the README's memory
        // table): only the lower side holds there.
        let looped = std::fs::read_to_string(path).unwrap().contains(" while(");
        let range = if looped { 0.85..=2.0 } else { 0.85..=1.25 };
        assert!(
            range.contains(&ratio),
            "{name}: memory model {peak} B vs XLA's buffer assignment {xla_peak} B ({ratio:.2}): {over}"
        );
    }
    assert!(
        wrapped >= 2,
        "{wrapped} modules with reduce-scatter or all-to-all"
    );
}
