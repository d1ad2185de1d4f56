//! `--profile`: the H200 train step of `docs/fidelity-data` costed from its own `jax.profiler`
//! trace through `import`, `optimize` and `simulate`, and the errors for a trace of another
//! module and for a graph that is not an HLO module.

mod common;

use common::{concerto, json, scratch, stderr, stdout};

fn fidelity(name: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/fidelity-data");
    dir.join(name).display().to_string()
}

#[test]
fn xla_s_schedule_costed_from_its_profile_simulates_to_the_measured_kernel_sum() {
    let (module, trace) = (fidelity("step.opt.hlo.gz"), fidelity("step_trace.json.gz"));
    let v = json(&[
        "import",
        &module,
        "--profile",
        &trace,
        "--profile-strict",
        "--json",
    ]);
    let p = &v["profile"];
    assert_eq!(p["steps"], 5);
    assert_eq!(
        (p["ops"].as_u64(), p["measured_ops"].as_u64()),
        (Some(337), Some(337))
    );
    assert!(p["time_pct"].as_f64().unwrap() >= 99.0, "{p}");
    assert_eq!(p["not_in_module"], serde_json::json!([]));
    let measured = p["step_kernel_ns"].as_f64().unwrap();
    let simulated = v["schedule_ns"].as_f64().unwrap();
    assert!(
        (simulated / measured - 1.0).abs() < 0.02,
        "{simulated} against {measured}"
    );
    // The text report says the same.
    let o = concerto(&["import", &module, "--profile", &trace]);
    assert!(
        stdout(&o).contains("measured costs for 337 of 337 ops (100.0 %)"),
        "{}",
        stdout(&o)
    );
    // optimize and simulate take it too: the module's own schedule is the `xla` row.
    let dir = scratch("profile");
    let plan = dir.join("plan.json").display().to_string();
    let v = json(&[
        "optimize",
        &module,
        "--profile",
        &trace,
        "--work-limit",
        "2000",
        "--plan",
        &plan,
        "--json",
    ]);
    assert_eq!(v["profile"]["measured_ops"], 337);
    let s = json(&[
        "simulate",
        &module,
        "--plan",
        &plan,
        "--profile",
        &trace,
        "--json",
    ]);
    assert_eq!(s["profile"]["measured_ops"], 337);
    assert_eq!(s["makespan_ns"], v["optimized_ns"], "{s}\n{v}");
}

#[test]
fn a_trace_of_another_module_or_a_graph_that_is_no_module_is_refused() {
    let trace = fidelity("step_trace.json.gz");
    let other = concerto_fixtures::path("hlo/dp.opt.hlo")
        .display()
        .to_string();
    let o = concerto(&["import", &other, "--profile", &trace]);
    assert!(!o.status.success());
    // Another jit_step (the fixture's dp step): none of the trace's instructions is its.
    assert!(
        stderr(&o).contains("names none of the graph's 11 ops")
            && stderr(&o).contains("a profile of another module"),
        "{}",
        stderr(&o)
    );
    // The same step as a native graph: no instruction names to match.
    let graph = scratch("profile-json")
        .join("dp.json")
        .display()
        .to_string();
    assert!(concerto(&["import", &other, "-o", &graph]).status.success());
    let o = concerto(&["simulate", &graph, "--plan", &graph, "--profile", &trace]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("a profile costs the ops of an HLO module"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn fidelity_prints_the_classes_the_step_and_the_coverage() {
    let (module, trace) = (fidelity("step.opt.hlo.gz"), fidelity("step_trace.json.gz"));
    let v = json(&["fidelity", &module, &trace, "--hardware", "h200", "--json"]);
    for key in ["measured_ns", "modelled_ns", "error_pct"] {
        assert!(v["step"][key].is_number(), "step.{key}: {v}");
    }
    let classes = v["classes"].as_array().unwrap();
    for c in classes {
        for key in [
            "class",
            "instructions",
            "measured_ns",
            "modelled_ns",
            "error_pct",
        ] {
            assert!(!c[key].is_null(), "{key}: {c}");
        }
    }
    let batched = classes
        .iter()
        .find(|c| c["class"] == "GEMM, batched")
        .unwrap();
    assert!(
        batched["error_pct"].as_f64().unwrap().abs() <= 10.0,
        "{batched}"
    );
    assert_eq!(v["coverage"]["instructions_pct"], 100.0);
    assert_eq!(
        v["ops"].as_array().unwrap().len(),
        10,
        "--worst 10 by default"
    );
    // With the trace as the costs, XLA's schedule simulates to the measured kernel sum.
    let p = json(&[
        "fidelity",
        &module,
        &trace,
        "--hardware",
        "h200",
        "--profile",
        &trace,
        "--json",
    ]);
    assert!(
        p["step"]["error_pct"].as_f64().unwrap().abs() <= 2.0,
        "{}",
        p["step"]
    );
    assert!(p["coverage"]["time_pct"].as_f64().unwrap() >= 99.0);
    // An HLO module needs its trace; a profiler trace is its own measurement.
    let e = stderr(&concerto(&["fidelity", &module]));
    assert!(e.contains("give the jax.profiler trace"), "{e}");
    let kineto = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/kineto/alexnet_1gpu.json.gz")
        .display()
        .to_string();
    let e = stderr(&concerto(&["fidelity", &kineto, &trace]));
    assert!(e.contains("is not an HLO module"), "{e}");
    let k = json(&["fidelity", &kineto, "--hardware", "a100", "--json"]);
    assert!(k["step"]["measured_ns"].as_u64().unwrap() > 0);
    assert!(k["shapeless"].as_u64().is_some());
}

#[test]
fn calibrate_reads_a_jax_profile_with_its_module() {
    let (module, trace) = (fidelity("step.opt.hlo.gz"), fidelity("step_trace.json.gz"));
    let dir = scratch("calibrate-jax");
    let fit = dir.join("h200-fit.json").display().to_string();
    let args = [
        "calibrate",
        &trace,
        "--module",
        &module,
        "--hardware",
        "h200",
        "-o",
        &fit,
        "--json",
    ];
    let v = json(&args);
    // Fitted on the median step (by kernel sum), checked on the next one.
    assert_eq!(v["step"], "step 2");
    assert_eq!(v["held_out"]["step"], "step 3");
    let rows = v["fitted"]["rows"].as_array().unwrap();
    let classes: Vec<&str> = rows.iter().map(|r| r["class"].as_str().unwrap()).collect();
    assert_eq!(
        classes,
        ["elementwise", "gemm", "norm", "other", "reduction"]
    );
    let ops: u64 = rows.iter().map(|r| r["ops"].as_u64().unwrap()).sum();
    assert_eq!(ops, 337);
    // The fit is closer than the profile on the step it was not fitted on.
    let err = |c: &serde_json::Value| -> f64 {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["error_pct"].as_f64().unwrap().abs())
            .sum()
    };
    let h = &v["held_out"];
    assert!(err(&h["fitted"]) < err(&h["base"]), "{h}");
    // The fitted profile is a --hardware file.
    let f = json(&["fidelity", &module, &trace, "--hardware", &fit, "--json"]);
    assert!(
        f["step"]["error_pct"].as_f64().unwrap().abs() < 2.0,
        "{}",
        f["step"]
    );
    let o = concerto(&["calibrate", &trace, "--module", &module, "--step", "9"]);
    assert!(
        stderr(&o).contains("--step 9: the profile has steps 0 to 4"),
        "{}",
        stderr(&o)
    );
}
