//! `--memory-budget` on `optimize` and `simulate`, and `concerto pareto`, end to end.

mod common;

use common::{concerto, scratch, stderr, stdout};

/// A small pipeline-parallel GPT (its unbounded plan raises the peak), written to
/// `dir/gpt.json`.
fn small_gpt(dir: &std::path::Path) -> String {
    let path = dir.join("gpt.json").display().to_string();
    let o = concerto(&[
        "model", "gpt", "--layers", "4", "--hidden", "1024", "--heads", "16", "--seq", "1024",
        "--pp", "2", "--tp", "2", "--dp", "2", "-o", &path,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    path
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn optimize_keeps_the_budget_and_simulate_checks_the_plan() {
    let dir = scratch("membudget");
    let graph = small_gpt(&dir);
    let plan = dir.join("plan.json").display().to_string();
    let o = concerto(&[
        "optimize",
        &graph,
        "--work-limit",
        "300",
        "--memory-budget",
        "100%",
        "--json",
        "--plan",
        &plan,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let budget = v["memory_budget_bytes"].as_u64().expect("the budget");
    let program = v["schedulers"]["program-order"]["peak_memory_bytes"]
        .as_u64()
        .unwrap();
    assert_eq!(budget, program, "100% is program order's peak");
    let peak = v["schedulers"]["concerto"]["peak_memory_bytes"]
        .as_u64()
        .unwrap();
    assert!(peak <= budget, "{peak} > {budget}");
    assert!(v["peak_lower_bound_bytes"].as_u64().unwrap() <= peak);
    // simulate's checker agrees: within the same budget, and over a smaller one (exit 1,
    // naming when and what was live).
    let o = concerto(&[
        "simulate",
        &graph,
        "--plan",
        &plan,
        "--memory-budget",
        "100%",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("within"), "{}", stdout(&o));
    let tight = (peak - 1).to_string();
    let o = concerto(&[
        "simulate",
        &graph,
        "--plan",
        &plan,
        "--memory-budget",
        &tight,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("over"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("largest tensors live"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_budget_under_the_floor_is_a_clear_error() {
    let dir = scratch("memfloor");
    let graph = small_gpt(&dir);
    let o = concerto(&[
        "optimize",
        &graph,
        "--work-limit",
        "100",
        "--memory-budget",
        "1MiB",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(e.contains("no plan within the memory budget"), "{e}");
    assert!(
        e.contains("smallest peak found") && e.contains("no order"),
        "{e}"
    );
    let o = concerto(&["optimize", &graph, "--memory-budget", "lots"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("memory budget `lots`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn pareto_json_and_svg_show_the_same_points() {
    let dir = scratch("pareto");
    let graph = small_gpt(&dir);
    let svg = dir.join("p.svg");
    let o = concerto(&[
        "pareto",
        &graph,
        "--points",
        "4",
        "--work-limit",
        "200",
        "--json",
        "--svg",
        &svg.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let points = v["points"].as_array().expect("points");
    assert!(points.len() >= 2, "{v}");
    assert!(
        points[0]["budget_bytes"].is_null(),
        "the unbounded run first"
    );
    for p in &points[1..] {
        let b = p["budget_bytes"].as_u64().unwrap();
        assert!(p["peak_bytes"].as_u64().unwrap() <= b, "{p}");
    }
    assert!(points.iter().any(|p| p["on_front"] == true));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    let attr = |s: &str, name: &str| -> u64 {
        let at = s.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        s[at..s[at..].find('"').unwrap() + at].parse().unwrap()
    };
    let circles: Vec<(u64, u64)> = text
        .split("<circle class=\"point\"")
        .skip(1)
        .map(|c| (attr(c, "data-peak-bytes"), attr(c, "data-makespan-ns")))
        .collect();
    let expected: Vec<(u64, u64)> = points
        .iter()
        .map(|p| {
            (
                p["peak_bytes"].as_u64().unwrap(),
                p["makespan_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(circles, expected);
    let o = concerto(&["pareto", &graph, "--memory-budget", "100%"]);
    assert_eq!(o.status.code(), Some(2));
}
