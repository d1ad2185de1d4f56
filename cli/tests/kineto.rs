//! `concerto import`, `optimize`, `simulate` and `calibrate` on a small hand-made profiler
//! trace (`fixtures/kineto/ddp_3steps.json`, written by `make_ddp_3steps.py` beside it: three
//! steps of a 2-rank data-parallel job, two gradient all-reduces on an NCCL stream, a
//! launch-bound tail).

mod common;

use common::{concerto, json, scratch, stderr, stdout};

fn fixture() -> String {
    format!(
        "{}/../fixtures/kineto/ddp_3steps.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn import_prints_the_measured_step_and_its_exact_replay() {
    let path = fixture();
    let v = json(&["import", &path, "--json"]);
    // Steps measure 260.0, 260.6 and 259.8 us: the median is step 1.
    assert_eq!(v["step"], "ProfilerStep#1", "{v}");
    assert_eq!(v["measured_step_ns"], 260_000, "{v}");
    assert_eq!(v["replay_ns"], v["measured_step_ns"], "{v}");
    assert_eq!(v["replay_error_pct"], 0.0, "{v}");
    assert_eq!(v["ops"], 13);
    assert_eq!(v["collectives"]["all-reduce"], 2);
    assert_eq!(v["trace"]["waits"]["inferred"], 3, "{v}");
    let v = json(&["import", &path, "--step", "2", "--json"]);
    assert_eq!(v["step"], "ProfilerStep#2");
    assert_eq!(v["measured_step_ns"], v["replay_ns"]);
    let o = concerto(&["import", &path, "--step", "7"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no step `ProfilerStep#7`") && stderr(&o).contains("ddp_3steps.json"),
        "{}",
        stderr(&o)
    );
}

/// A graph launch of twenty ops and six kernels without a launch call
/// (`fixtures/kineto/graph_launches.json`): all counted, in the text and in `--json`.
#[test]
fn import_counts_graph_launches_and_unlaunched_kernels() {
    let path = format!(
        "{}/../fixtures/kineto/graph_launches.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let v = json(&["import", &path, "--json"]);
    assert_eq!(v["ops"], 39, "{v}");
    assert_eq!(v["trace"]["unlaunched_ops"], 6, "{v}");
    assert_eq!(v["trace"]["multi_op_launches"], 1, "{v}");
    let o = concerto(&["import", &path]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("launches      1 launch calls ran several GPU ops")
            && out.contains("6 GPU ops have no launch call"),
        "{out}"
    );
}

#[test]
fn optimize_and_simulate_a_trace() {
    let dir = scratch("kineto-optimize");
    let plan = dir.join("plan.json").display().to_string();
    let path = fixture();
    let v = json(&[
        "optimize",
        &path,
        "--work-limit",
        "2000",
        "--plan",
        &plan,
        "--json",
    ]);
    let get = |key: &str| v[key].as_u64().unwrap_or_else(|| panic!("no {key}: {v}"));
    let (recorded, ours) = (get("program_order_ns"), get("optimized_ns"));
    assert_eq!(
        recorded, 260_000,
        "the program order is the recorded order: {v}"
    );
    assert!(ours <= recorded);
    assert!(v["lower_bound_ns"].as_u64().unwrap() <= ours);
    assert_eq!(
        v["contention"], 1.0,
        "no contention on measured durations: {v}"
    );
    let s = json(&["simulate", &path, "--plan", &plan, "--json"]);
    assert_eq!(s["makespan_ns"].as_u64().unwrap(), ours, "{s}");
    // Without launch times the GPU alone is faster: the tail is launch-bound.
    let g = json(&[
        "optimize",
        &path,
        "--work-limit",
        "2000",
        "--no-launch-times",
        "--json",
    ]);
    let gpu_only = g["program_order_ns"].as_u64().unwrap();
    assert!(gpu_only < recorded, "{g}");
}

#[test]
fn calibrate_fits_a_profile_that_hardware_file_reads() {
    let dir = scratch("kineto-calibrate");
    let fit = dir.join("fit.json").display().to_string();
    let path = fixture();
    let v = json(&["calibrate", &path, "-o", &fit, "--json"]);
    assert_eq!(
        v["fitted"]["hardware"], "v100",
        "chosen by the trace's GPU: {v}"
    );
    let rows = v["fitted"]["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["class"] == "all-reduce"), "{v}");
    assert_eq!(v["held_out"]["step"], "ProfilerStep#2", "{v}");
    let text = std::fs::read_to_string(&fit).unwrap();
    assert!(text.contains("concerto-hardware-fit"), "{text}");
    // The fitted file is a profile everywhere --hardware is taken.
    let o = concerto(&[
        "model",
        "gpt",
        "--layers",
        "1",
        "--dp",
        "2",
        "-o",
        &dir.join("g.json").display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let g = json(&[
        "import",
        &dir.join("g.json").display().to_string(),
        "--hardware",
        &fit,
        "--json",
    ]);
    assert_eq!(g["hardware"], "v100+fit", "{g}");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"format\": \"concerto-hardware-fit\", \"version\": 1, \"base\": \"v100\", \"source\": \"x\", \"compute_scale\": {\"gemm\": -2}}").unwrap();
    let o = concerto(&[
        "import",
        &dir.join("g.json").display().to_string(),
        "--hardware",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not positive"), "{}", stderr(&o));
}

#[test]
fn a_trace_without_gpu_events_says_so() {
    let dir = scratch("kineto-cpu-only");
    let path = dir.join("cpu.json");
    std::fs::write(
        &path,
        r#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}"#,
    )
    .unwrap();
    let o = concerto(&["import", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("cpu.json") && e.contains("no GPU events"), "{e}");
    std::fs::write(
        &path,
        r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k""#,
    )
    .unwrap();
    let o = concerto(&["import", path.to_str().unwrap()]);
    let e = stderr(&o);
    assert!(e.contains("line 1") && e.contains("EOF"), "{e}");
}

#[test]
fn bench_traces_replays_every_step() {
    let path = fixture();
    let o = concerto(&["bench", "traces", &path]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("ddp_3steps") && out.contains("#1 of 3") && out.contains("+0.00%"),
        "{out}"
    );
    let v = json(&["bench", "traces", &path, "--json"]);
    let steps = v[0]["fidelity"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    for s in steps {
        assert_eq!(s["replay_ns"], s["measured_ns"], "{s}");
    }
}

/// With no trace given, the public traces of the data folder (here a copy of two of the
/// repository's five, by `--data`): every step replays within 0.5 % of its measurement;
/// `--public-traces` adds them after the traces given.
#[test]
fn bench_traces_replays_the_public_traces_by_default() {
    let data = scratch("public-traces");
    std::fs::create_dir_all(data.join("kineto")).unwrap();
    for t in ["alexnet_1gpu", "event_sync_multi_stream"] {
        let from = format!("{}/../data/kineto/{t}.json.gz", env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(from, data.join(format!("kineto/{t}.json.gz"))).unwrap();
    }
    let data = data.to_str().unwrap();
    let v = json(&["bench", "traces", "--data", data, "--json"]);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["trace"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alexnet_1gpu", "event_sync_multi_stream"]);
    for row in v.as_array().unwrap() {
        for s in row["fidelity"]["steps"].as_array().unwrap() {
            let replay = s["replay_ns"].as_f64().unwrap();
            let measured = s["measured_ns"].as_f64().unwrap();
            assert!(
                (replay - measured).abs() <= 0.005 * measured,
                "{}: {s}",
                row["trace"]
            );
        }
    }
    let fixture = fixture();
    let v = json(&[
        "bench",
        "traces",
        &fixture,
        "--public-traces",
        "--data",
        data,
        "--json",
    ]);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["trace"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["ddp_3steps", "alexnet_1gpu", "event_sync_multi_stream"]
    );
}

/// A data folder that is not there: the error lists the place tried and names `--data`.
#[test]
fn bench_traces_names_the_data_folder_it_did_not_find() {
    let o = concerto(&["bench", "traces", "--data", "/nonexistent/concerto-data"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("/nonexistent/concerto-data/kineto") && e.contains("--data DIR"),
        "{e}"
    );
}

#[test]
fn bench_graphs_takes_a_trace_with_an_explicit_contention() {
    let path = fixture();
    let o = concerto(&["bench", "graphs", "--graph", &path, "--only", "ddp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("pass --contention explicitly"),
        "{}",
        stderr(&o)
    );
    let o = concerto(&[
        "bench",
        "graphs",
        "--graph",
        &path,
        "--only",
        "ddp",
        "--contention",
        "1",
        "--work-limit",
        "2000",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["config"], "ddp_3steps", "{v}");
    assert_eq!(v[0]["program_order_ns"], 260_000, "{v}");
}
