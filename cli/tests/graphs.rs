//! `concerto model`, `concerto optimize` and `concerto bench graphs` end to end.

mod common;

use common::{concerto, scratch, stderr, stdout};

/// A small GPT with tensor parallelism, written to `dir/gpt.json`.
fn small_gpt(dir: &std::path::Path) -> String {
    let path = dir.join("gpt.json").display().to_string();
    let o = concerto(&[
        "model", "gpt", "--layers", "2", "--hidden", "1024", "--heads", "16", "--seq", "1024",
        "--tp", "4", "--dp", "2", "-o", &path,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("all-reduce"), "{}", stdout(&o));
    path
}

#[test]
fn optimize_json_has_the_documented_keys_and_concerto_is_never_worse() {
    let dir = scratch("json");
    let graph = small_gpt(&dir);
    let trace = dir.join("t.json");
    let svg = dir.join("t.svg");
    let plan = dir.join("plan.json");
    let o = concerto(&[
        "optimize",
        &graph,
        "--time-limit",
        "2",
        "--json",
        "--trace",
        &trace.display().to_string(),
        "--svg",
        &svg.display().to_string(),
        "--plan",
        &plan.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    for key in [
        "ops",
        "lower_bound_ns",
        "program_order_ns",
        "lhs_ns",
        "inductor_ns",
        "list_ns",
        "optimized_ns",
        "exposed_comm_ns",
        "peak_memory_bytes",
        "time_s",
        "bound_kind",
        "bounds",
        "portfolio",
        "start",
    ] {
        assert!(v.get(key).is_some(), "missing `{key}` in {v}");
    }
    let opt = v["optimized_ns"].as_u64().unwrap();
    for key in ["program_order_ns", "lhs_ns", "inductor_ns", "list_ns"] {
        assert!(opt <= v[key].as_u64().unwrap(), "{key}: {v}");
    }
    assert!(opt >= v["lower_bound_ns"].as_u64().unwrap());
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = concerto_graph::trace::validate_chrome_trace(&t).expect("a valid trace");
    // One timeline per scheduler: program order, lhs, inductor, list and concerto.
    let schedulers = v["schedulers"].as_object().unwrap().len();
    assert_eq!(schedulers, 5, "{v}");
    assert_eq!(events, schedulers * v["ops"].as_u64().unwrap() as usize);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{}",
        &svg[..40]
    );
    // The plan file reads back against the graph.
    let g = concerto_graph::Graph::from_json(&std::fs::read_to_string(&graph).unwrap()).unwrap();
    concerto_graph::StreamPlan::from_json(&g, &std::fs::read_to_string(&plan).unwrap())
        .expect("the written plan is valid");
}

#[test]
fn noise_reports_mean_and_worst_per_scheduler() {
    let dir = scratch("noise");
    let graph = small_gpt(&dir);
    let o = concerto(&[
        "optimize",
        &graph,
        "--time-limit",
        "1",
        "--noise",
        "10",
        "--samples",
        "100",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("noise_mean_ms") && out.contains("noise_worst_ms"),
        "{out}"
    );
    for s in ["program-order", "lhs", "inductor", "concerto"] {
        assert!(out.contains(s), "{out}");
    }
    let o = concerto(&[
        "optimize",
        &graph,
        "--time-limit",
        "1",
        "--noise",
        "10",
        "--samples",
        "20",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for s in ["program-order", "lhs", "inductor", "concerto"] {
        let row = &v["schedulers"][s];
        let mean = row["noise_mean_ns"].as_f64().unwrap();
        let worst = row["noise_worst_ns"].as_u64().unwrap();
        assert!(mean > 0.0 && worst as f64 >= mean, "{s}: {row}");
    }
}

#[test]
fn bad_input_gets_errors_that_name_the_place() {
    let dir = scratch("errors");
    let graph = small_gpt(&dir);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["optimize", &graph, "--hardware", "tpu"],
            "unknown hardware `tpu`",
        ),
        (
            vec!["optimize", &graph, "--time-limit", "0"],
            "--time-limit",
        ),
        (
            vec!["optimize", &graph, "--contention", "0.5"],
            "contention",
        ),
        (
            vec!["model", "gpt", "--zero", "1"],
            "--zero must be 0, 2 or 3",
        ),
        (vec!["model", "gpt", "--tp", "3"], "tp"),
        (
            vec!["optimize", "/nonexistent/graph.json"],
            "/nonexistent/graph.json",
        ),
    ];
    for (args, needle) in cases {
        let o = concerto(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        "{\"format\": \"concerto-graph\",\n \"version\": 1,\n \"ops\": [}",
    )
    .unwrap();
    let o = concerto(&["optimize", &bad.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));
}

#[test]
fn bench_graphs_runs_a_configuration() {
    let args = [
        "bench",
        "graphs",
        "--only",
        "evoformer",
        "--time-limit",
        "1",
    ];
    let o = concerto(&[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert!(r["optimized_ns"].as_u64() <= r["lhs_ns"].as_u64());
    assert!(r["trace_events"].as_u64().unwrap() > 0);
    // The bound before the search, and the solver's, never above the final one.
    let final_bound = r["lower_bound_ns"].as_u64().unwrap();
    let graph_bound = r["graph_bound_ns"].as_u64().unwrap();
    assert!(0 < graph_bound && graph_bound <= final_bound, "{r}");
    assert!(
        r["solver_bound_ns"]
            .as_u64()
            .is_none_or(|b| b <= final_bound),
        "{r}"
    );
    // The table says where the gap is, in shares that sum to 100 %.
    let o = concerto(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let gap = out.split("by_solver_bound").nth(1).expect("the gap table");
    let row = gap
        .lines()
        .find(|l| l.starts_with("evoformer"))
        .expect("its row");
    let shares: Vec<f64> = row
        .split_whitespace()
        .skip(4)
        .map(|c| c.trim_end_matches('%').parse().unwrap())
        .collect();
    assert_eq!(shares.len(), 4, "{row}");
    assert!((shares.iter().sum::<f64>() - 100.0).abs() < 0.3, "{row}");
    assert!(out.contains("where the gap is:"), "{out}");
}

#[test]
fn bench_graphs_takes_a_graph_file_and_reports_the_list_schedule_and_the_binding_bound() {
    let dir = scratch("bench-graphs-file");
    let path = small_gpt(&dir);
    let o = concerto(&[
        "bench",
        "graphs",
        "--graph",
        &path,
        "--only",
        "gpt",
        "--time-limit",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v.as_array().unwrap();
    // The file comes first, named by its stem, then the configurations named gpt-*.
    assert_eq!(rows[0]["config"], "gpt");
    assert!(
        rows.len() > 1
            && rows[1..]
                .iter()
                .all(|r| r["config"].as_str().unwrap().starts_with("gpt-"))
    );
    for r in rows {
        let own = r["solver_plan_ns"].as_u64().unwrap();
        let list = r["list_ns"].as_u64().unwrap();
        assert!(own <= list, "{}: search {own} > list {list}", r["config"]);
        assert!(r["lower_bound_ns"].as_u64().unwrap() <= r["optimized_ns"].as_u64().unwrap());
        assert!(!r["bound_kind"].as_str().unwrap().is_empty());
    }
    // A missing file is an error naming it.
    let o = concerto(&["bench", "graphs", "--graph", "no/such.hlo", "--json"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no/such.hlo"), "{}", stderr(&o));
}

const HLO: &str = r#"HloModule tiny, num_partitions=8

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}

ENTRY %main (x: bf16[512,1024], w: bf16[1024,1024]) -> bf16[4096,1024] {
  %x = bf16[512,1024]{1,0} parameter(0)
  %w = bf16[1024,1024]{1,0} parameter(1)
  %ags = (bf16[1024,1024]{1,0}, bf16[8192,1024]{1,0}) all-gather-start(%w), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true
  %y = bf16[512,1024]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %ar = bf16[512,1024]{1,0} all-reduce(%y), channel_id=2, replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=%add
  %agd = bf16[8192,1024]{1,0} all-gather-done(%ags)
  %z = bf16[512,1024]{1,0} tanh(%ar)
  ROOT %g = bf16[4096,1024]{1,0} slice(%agd), slice={[0:4096], [0:1024]}
}
"#;

#[test]
fn import_counts_collectives_and_optimize_reads_hlo() {
    let dir = scratch("hlo");
    let path = dir.join("tiny.hlo");
    std::fs::write(&path, HLO).unwrap();
    let p = path.display().to_string();
    let out = dir.join("tiny.json").display().to_string();
    let o = concerto(&["import", &p, "--json", "-o", &out]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["instructions"], 8);
    assert_eq!(v["ops"], 5);
    assert_eq!(v["collectives"]["all-gather"], 1);
    assert_eq!(v["collectives"]["all-reduce"], 1);
    assert!(v["compute_ns"].as_u64().unwrap() > 0 && v["comm_ns"].as_u64().unwrap() > 0);
    // `optimize` takes the .hlo directly and the imported .json alike.
    for g in [&p, &out] {
        let o = concerto(&["optimize", g, "--time-limit", "1", "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["ops"], 5);
        assert!(v["optimized_ns"].as_u64() <= v["program_order_ns"].as_u64());
    }
    // With 4 GPUs per node the 8-way all-gather crosses nodes: slower than inside one node.
    let json = |args: &[&str]| -> serde_json::Value {
        let o = concerto(args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let eight = json(&["optimize", &p, "--time-limit", "1", "--json"]);
    let four = json(&[
        "optimize",
        &p,
        "--time-limit",
        "1",
        "--json",
        "--gpus-per-node",
        "4",
    ]);
    assert!(
        four["lower_bound_ns"].as_u64() > eight["lower_bound_ns"].as_u64(),
        "{four} {eight}"
    );
}

#[test]
fn malformed_hlo_names_the_line_and_column() {
    let dir = scratch("badhlo");
    let path = dir.join("bad.hlo");
    std::fs::write(
        &path,
        HLO.replace("%y = bf16[512,1024]{1,0} dot", "%y bf16[512,1024]{1,0} dot"),
    )
    .unwrap();
    let o = concerto(&["import", &path.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 13, column 6"), "{}", stderr(&o));
}

#[test]
fn decompose_sequential_adds_the_s_plus_ad_keys() {
    let dir = scratch("decompose");
    let graph = small_gpt(&dir);
    let o = concerto(&[
        "optimize",
        &graph,
        "--time-limit",
        "1",
        "--decompose",
        "sequential",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["decomposed_ns"].as_u64().unwrap() > 0);
    for d in v["decompositions"].as_array().unwrap() {
        for key in ["collective", "axis", "n", "context_size"] {
            assert!(d.get(key).is_some(), "{d}");
        }
    }
    let o = concerto(&[
        "optimize",
        &graph,
        "--decompose",
        "sequential",
        "--split-slowdown",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--split-slowdown"), "{}", stderr(&o));
}

#[test]
fn decompose_joint_is_never_above_s_plus_ad_nor_s() {
    let dir = scratch("joint");
    let graph = small_gpt(&dir);
    let o = concerto(&[
        "optimize",
        &graph,
        "--time-limit",
        "1",
        "--decompose",
        "joint",
        "--split-slowdown",
        "1.0",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let joint = v["joint_ns"].as_u64().unwrap();
    let s = v["optimized_ns"].as_u64().unwrap();
    let sad = v["decomposed_ns"].as_u64().unwrap();
    // Joint starts from S+AD, or from S when the decompositions scheduled longer.
    assert!(joint <= s.min(sad), "{v}");
    assert!(v["joint_decompositions"].as_array().is_some(), "{v}");
    assert!(v["joint_time_s"].as_f64().unwrap() > 0.0, "{v}");
    // A solver without a modal encoding is refused by name.
    let o = concerto(&[
        "optimize",
        &graph,
        "--time-limit",
        "1",
        "--decompose",
        "joint",
        "--split-slowdown",
        "1.0",
        "--solver",
        "sgs",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("modal solver"), "{}", stderr(&o));
}

#[test]
fn decompose_json_lists_critical_collectives_decompositions_and_s_plus_ad() {
    let dir = scratch("decompose-cmd");
    let graph = small_gpt(&dir);
    let o = concerto(&["decompose", &graph, "--time-limit", "1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    for key in [
        "graph",
        "hardware",
        "baseline_ns",
        "critical",
        "decompositions",
        "n_values",
        "evaluated_before_ns",
        "evaluated_after_ns",
        "optimized_ns",
        "decomposed_ns",
        "ad_gain_pct",
    ] {
        assert!(v.get(key).is_some(), "missing `{key}` in {v}");
    }
    let critical = v["critical"].as_array().unwrap();
    assert!(!critical.is_empty(), "{v}");
    for c in critical {
        for key in ["name", "kind", "bytes", "exposed_ns"] {
            assert!(c.get(key).is_some(), "{c}");
        }
        assert!(c["exposed_ns"].as_u64().unwrap() > 0, "{c}");
    }
    for d in v["decompositions"].as_array().unwrap() {
        for key in [
            "collective",
            "axis",
            "n",
            "context_size",
            "before_ns",
            "after_ns",
        ] {
            assert!(d.get(key).is_some(), "{d}");
        }
        assert!(d["after_ns"].as_u64() < d["before_ns"].as_u64(), "{d}");
    }
    assert!(v["evaluated_after_ns"].as_u64() <= v["evaluated_before_ns"].as_u64());
    assert!(v["decomposed_ns"].as_u64().unwrap() > 0);
    assert!(
        v["optimized_ns"].as_u64() <= v["baseline_ns"].as_u64(),
        "{v}"
    );
}

#[test]
fn decompose_sweep_has_a_measured_row_and_one_per_factor() {
    let dir = scratch("decompose-sweep");
    let graph = small_gpt(&dir);
    let o = concerto(&[
        "decompose",
        &graph,
        "--time-limit",
        "1",
        "--sweep-slowdown",
        "1.0,1.5",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON array");
    let rows = v.as_array().unwrap();
    let labels: Vec<&str> = rows.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["measured", "1.0", "1.5"], "{v}");
    assert!(rows[0]["slowdown"].is_null());
    assert_eq!(rows[1]["slowdown"].as_f64(), Some(1.0));
    assert_eq!(rows[2]["slowdown"].as_f64(), Some(1.5));
    for r in rows {
        for key in [
            "decompositions",
            "n_values",
            "evaluated_before_ns",
            "evaluated_after_ns",
            "optimized_ns",
            "decomposed_ns",
        ] {
            assert!(r.get(key).is_some(), "missing `{key}` in {r}");
        }
        assert!(r["evaluated_after_ns"].as_u64() <= r["evaluated_before_ns"].as_u64());
        // Every row starts from the same graph and the same S.
        assert_eq!(r["evaluated_before_ns"], rows[0]["evaluated_before_ns"]);
        assert_eq!(r["optimized_ns"], rows[0]["optimized_ns"]);
        let ds = r["decompositions"].as_array().unwrap();
        if ds.is_empty() {
            assert_eq!(r["n_values"], "-");
            assert_eq!(r["decomposed_ns"], r["optimized_ns"]);
        }
    }
}

#[test]
fn decompose_sweep_errors_name_the_flag() {
    let dir = scratch("decompose-errors");
    let graph = small_gpt(&dir);
    for list in ["1.0,x", "0", "1.0,-1.5", ""] {
        let o = concerto(&["decompose", &graph, "--sweep-slowdown", list]);
        assert_eq!(o.status.code(), Some(2), "{list}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--sweep-slowdown"),
            "{list}: {}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty(), "{list}: {}", stdout(&o));
    }
    let o = concerto(&["decompose", &graph, "--decompose", "off"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--decompose off"), "{}", stderr(&o));
}

#[test]
fn bench_graphs_decompose_never_reports_s_plus_ad_above_s() {
    let o = concerto(&[
        "bench",
        "graphs",
        "--only",
        "evoformer",
        "--decompose",
        "sequential",
        "--time-limit",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 1);
    for r in rows {
        let s = r["optimized_ns"].as_u64().unwrap();
        let sad = r["decomposed_ns"]
            .as_u64()
            .expect("decomposed_ns with --decompose");
        assert!(sad <= s, "{r}");
        assert!(r["ad_gain_pct"].as_f64().unwrap() >= 0.0, "{r}");
        let ds = r["decompositions"].as_array().expect("decompositions");
        for d in ds {
            for key in ["collective", "axis", "n", "context_size"] {
                assert!(d.get(key).is_some(), "{d}");
            }
        }
        if r.get("ad_note").is_some() || ds.is_empty() {
            assert_eq!(sad, s, "{r}");
        }
    }
    // Without --decompose the row has no S+AD keys.
    let o = concerto(&[
        "bench",
        "graphs",
        "--only",
        "evoformer",
        "--time-limit",
        "1",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v[0].get("decomposed_ns").is_none(), "{v}");
}

#[test]
fn fuse_on_reports_the_fused_schedule_never_longer_than_unfused() {
    let dir = scratch("fuse");
    let path = dir.join("z3.json").display().to_string();
    let o = concerto(&[
        "model", "gpt", "--layers", "2", "--hidden", "1024", "--heads", "16", "--seq", "1024",
        "--dp", "16", "--zero", "3", "-o", &path,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = concerto(&[
        "optimize",
        &path,
        "--time-limit",
        "1",
        "--fuse",
        "on",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        v["fused_ns"].as_u64().unwrap() <= v["optimized_ns"].as_u64().unwrap(),
        "{v}"
    );
    assert!(v["buckets"].as_u64().is_some(), "{v}");
}

#[test]
fn bench_ablation_reports_the_shape_and_the_fusion_rows() {
    let o = concerto(&[
        "bench",
        "ablation",
        "--only",
        "dp8",
        "--time-limit",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["ablation"].as_array().unwrap().is_empty(), "{v}");
    let rows = v["fusion"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    let r = &rows[0];
    assert_eq!(r["gpus"], 8);
    let (s, f) = (
        r["optimized_ns"].as_u64().unwrap(),
        r["fused_ns"].as_u64().unwrap(),
    );
    assert!(f <= s && s <= r["baseline_ns"].as_u64().unwrap(), "{r}");
    let calls = r["collective_calls"].as_array().unwrap();
    assert!(
        calls[1].as_u64().unwrap() <= calls[0].as_u64().unwrap(),
        "{r}"
    );
    // One ablation row: baseline >= S >= S+AD, and `shape` says whether both are strict.
    let o = concerto(&[
        "bench",
        "ablation",
        "--only",
        "(1,16,1) bf16",
        "--time-limit",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let r = &v["ablation"][0];
    let (b, s, d) = (
        r["baseline_ns"].as_u64().unwrap(),
        r["optimized_ns"].as_u64().unwrap(),
        r["decomposed_ns"].as_u64().unwrap(),
    );
    assert!(b >= s && s >= d, "{r}");
    assert_eq!(r["shape"].as_bool().unwrap(), b > s && s > d, "{r}");
    assert_eq!(r["hardware"], "h100");
}

#[test]
fn both_decomposition_families_are_tried_on_a_sequence_parallel_graph() {
    let dir = scratch("sp");
    let path = dir.join("sp.json").display().to_string();
    let o = concerto(&[
        "model", "gpt", "--layers", "1", "--hidden", "1024", "--heads", "16", "--seq", "1024",
        "--tp", "4", "--sp", "-o", &path,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("gpt-dp1-tp4-pp1-sp"), "{}", stdout(&o));
    assert!(stdout(&o).contains("reduce-scatter"), "{}", stdout(&o));
    let o = concerto(&[
        "decompose",
        &path,
        "--hardware",
        "a800",
        "--candidates",
        "--time-limit",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let cands = v["candidates"].as_array().expect("--candidates lists them");
    // Some collective has candidates of both families.
    let families = |name: &str| -> Vec<String> {
        cands
            .iter()
            .filter(|c| c["collective"] == name)
            .map(|c| c["family"].as_str().unwrap().to_string())
            .collect()
    };
    let both = cands.iter().any(|c| {
        let f = families(c["collective"].as_str().unwrap());
        f.iter().any(|x| x == "split") && f.iter().any(|x| x == "collective-matmul")
    });
    assert!(both, "{v}");
    for c in cands {
        if c["family"] == "collective-matmul" {
            assert_eq!(c["label"], "ring/4", "{c}");
            assert_eq!(c["context_ops"], 2, "{c}");
        }
    }
    // Rings only: every decomposition chosen is a ring, and S+AD never exceeds S.
    let o = concerto(&[
        "decompose",
        &path,
        "--hardware",
        "a800",
        "--families",
        "ring",
        "--time-limit",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for d in v["decompositions"].as_array().unwrap() {
        assert_eq!(d["family"], "collective-matmul", "{d}");
    }
    assert!(!v["decompositions"].as_array().unwrap().is_empty(), "{v}");
    let o = concerto(&["model", "vit", "--tp", "2", "--sp"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("gpt only"), "{}", stderr(&o));
}

#[test]
fn bench_ablation_compares_the_families_on_one_graph() {
    let o = concerto(&[
        "bench",
        "ablation",
        "--only",
        "(1,16,1) SP",
        "--time-limit",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v["families"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    let r = &rows[0];
    let s = r["optimized_ns"].as_u64().unwrap();
    for key in ["split_ns", "ring_ns", "all_ns"] {
        assert!(r[key].as_u64().unwrap() <= s, "{key}: {r}");
    }
    // Across two nodes on the roofline profile, the rings hide the gathers: strictly shorter.
    assert!(r["ring_ns"].as_u64().unwrap() < s, "{r}");
}

#[test]
fn simulate_gives_the_makespan_optimize_printed_for_s_sad_and_joint() {
    let dir = scratch("simulate");
    let graph = dir.join("gpt8.json").display().to_string();
    let o = concerto(&["model", "gpt", "--layers", "2", "--tp", "8", "-o", &graph]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut kept_rows = Vec::new();
    for (mode, key) in [
        ("off", "optimized_ns"),
        ("sequential", "decomposed_ns"),
        ("joint", "joint_ns"),
    ] {
        let plan = dir.join(format!("plan-{mode}.json")).display().to_string();
        let out = dir.join(format!("graph-{mode}.json")).display().to_string();
        let o = concerto(&[
            "optimize",
            &graph,
            "--time-limit",
            "2",
            "--decompose",
            mode,
            "--plan",
            &plan,
            "--graph-out",
            &out,
            "--json",
        ]);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let kept = v["kept"].as_str().unwrap().to_string();
        let kept_ns = v["kept_ns"].as_u64().unwrap();
        // The row this mode adds is what was kept, at the makespan its key reports.
        assert_eq!(v[key].as_u64().unwrap(), kept_ns, "{mode}: {v}");
        let o = concerto(&["simulate", &out, "--plan", &plan, "--json"]);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        let sim: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(
            sim["makespan_ns"].as_u64().unwrap(),
            kept_ns,
            "{mode}: {sim} vs {v}"
        );
        // The table says the same.
        let o = concerto(&["simulate", &out, "--plan", &plan]);
        assert!(
            stdout(&o).contains(&format!("{:.3} ms", kept_ns as f64 / 1e6)),
            "{}",
            stdout(&o)
        );
        if kept != "S" {
            // A rewritten graph's plan does not fit the original graph: said, not simulated.
            let o = concerto(&["simulate", &graph, "--plan", &plan]);
            assert_eq!(o.status.code(), Some(2), "{mode}: {}", stdout(&o));
        }
        kept_rows.push(kept);
    }
    // The three rows were each the result once: the test covers S, S+AD and joint plans.
    assert_eq!(kept_rows, ["S", "S+AD", "joint"]);
}

/// Every key `optimize --json` printed before the pipeline moved into the library is still
/// there (with decomposition, joint, fusion and noise all on), and the keys added since.
#[test]
fn optimize_json_keeps_every_key() {
    let dir = scratch("keys");
    let graph = small_gpt(&dir);
    let o = concerto(&[
        "optimize",
        &graph,
        "--time-limit",
        "1",
        "--decompose",
        "joint",
        "--fuse",
        "on",
        "--noise",
        "5",
        "--samples",
        "3",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for key in [
        "graph",
        "hardware",
        "contention",
        "ops",
        "collectives",
        "lower_bound_ns",
        "program_order_ns",
        "lhs_ns",
        "inductor_ns",
        "optimized_ns",
        "exposed_comm_ns",
        "peak_memory_bytes",
        "time_s",
        "origin",
        "solver",
        "solver_status",
        "solver_makespan_ns",
        "start_makespan_ns",
        "schedulers",
        "fused_ns",
        "buckets",
        "decomposed_ns",
        "decompositions",
        "joint_ns",
        "joint_decompositions",
        "joint_time_s",
        "noise_pct",
        "noise_samples",
        "solver_plan_ns",
        "work",
        "kept",
        "kept_ns",
    ] {
        assert!(v.get(key).is_some(), "missing `{key}` in {v}");
    }
    for s in ["program-order", "lhs", "inductor", "concerto"] {
        let row = &v["schedulers"][s];
        for key in [
            "makespan_ns",
            "exposed_comm_ns",
            "peak_memory_bytes",
            "noise_mean_ns",
            "noise_worst_ns",
        ] {
            assert!(row.get(key).is_some(), "missing `{key}` of {s} in {v}");
        }
    }
    for d in v["decompositions"].as_array().unwrap() {
        for key in ["collective", "family", "axis", "n", "context_size"] {
            assert!(d.get(key).is_some(), "missing `{key}` in {d}");
        }
    }
    let (s, sad, joint, fused) = (
        v["optimized_ns"].as_u64().unwrap(),
        v["decomposed_ns"].as_u64().unwrap(),
        v["joint_ns"].as_u64().unwrap(),
        v["fused_ns"].as_u64().unwrap(),
    );
    assert!(joint <= sad && sad <= s && fused <= s, "{v}");
    assert!(v["kept_ns"].as_u64().unwrap() <= joint.min(fused), "{v}");
}
