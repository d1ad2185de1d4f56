//! The `concerto` binary end to end: output keys, exit statuses, errors that name the place,
//! the PSPLIB bench against a reference, and backends missing from the build.

mod common;

use common::{concerto, scratch, stderr, stdout};

fn fixture(name: &str) -> String {
    concerto_fixtures::path(name).display().to_string()
}

#[test]
fn solve_json_has_the_documented_keys() {
    let o = concerto(&[
        "solve",
        &fixture("tiny/two_streams.json"),
        "--solver",
        "sgs",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    for key in ["status", "makespan", "lower_bound", "solver", "time_s"] {
        assert!(v.get(key).is_some(), "missing `{key}` in {v}");
    }
    assert_eq!(v["status"], "optimal");
    assert_eq!(v["makespan"], 12);
    assert_eq!(v["solver"], "sgs");
}

#[test]
fn solve_text_names_status_makespan_and_bound() {
    let o = concerto(&[
        "solve",
        &fixture("tiny/packing.rcp"),
        "--solver",
        "sgs",
        "--seed",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for line in [
        "status",
        "makespan     9",
        "lower bound",
        "solver       sgs",
        "time",
    ] {
        assert!(text.contains(line), "`{line}` not in:\n{text}");
    }
}

#[test]
fn check_accepts_a_solved_schedule_and_rejects_a_broken_one() {
    let dir = scratch("check");
    let good = dir.join("good.json");
    let problem = fixture("tiny/lags.json");
    let o = concerto(&[
        "solve",
        &problem,
        "--solver",
        "sgs",
        "-o",
        good.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = concerto(&["check", &problem, good.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("valid: makespan 9"));

    // Start `b` right after `a`, ignoring the lag of 5.
    let broken = dir.join("broken.json");
    let text = std::fs::read_to_string(&good).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for entry in v["starts"].as_array_mut().unwrap() {
        if entry["activity"] == "b" {
            entry["start"] = serde_json::json!(2);
        }
    }
    std::fs::write(&broken, v.to_string()).unwrap();
    let o = concerto(&["check", &problem, broken.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("precedence `a` -> `b` (lag 5)"),
        "{}",
        stdout(&o)
    );

    // A schedule without some activity is a violation too, not a crash.
    let partial = dir.join("partial.json");
    std::fs::write(&partial, r#"{"starts": [{"activity": "a", "start": 0}]}"#).unwrap();
    let o = concerto(&["check", &problem, partial.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("activity `b` has no start time"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bad_input_exits_2_with_the_place_named() {
    let dir = scratch("bad");
    let file = dir.join("broken.json");
    std::fs::write(
        &file,
        "{\n  \"activities\": [\n    {\"name\": \"a\", \"duration\": -1}\n  ]\n}\n",
    )
    .unwrap();
    let o = concerto(&["solve", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("negative duration"), "{}", stderr(&o));

    let o = concerto(&["solve", &fixture("tiny/lags.json"), "--time-limit", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--time-limit must be a positive"),
        "{}",
        stderr(&o)
    );

    let o = concerto(&["solve", &fixture("tiny/lags.json"), "--solver", "gurobi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown solver `gurobi`"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("sgs"), "{}", stderr(&o));

    let file = dir.join("x.txt");
    std::fs::write(&file, "1 2 3").unwrap();
    let o = concerto(&["solve", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown problem format"),
        "{}",
        stderr(&o)
    );
}

/// A backend this build lacks is an error that names the feature to enable.
#[test]
fn missing_backends_name_their_feature() {
    let compiled = [
        ("pumpkin", cfg!(feature = "pumpkin")),
        ("microlp", cfg!(feature = "microlp")),
        ("highs", cfg!(feature = "highs")),
        ("cbc", cfg!(feature = "cbc")),
    ];
    let listing = stdout(&concerto(&["solvers"]));
    for (name, present) in compiled {
        assert!(
            listing.contains(name),
            "`concerto solvers` does not list {name}:\n{listing}"
        );
        let o = concerto(&[
            "solve",
            &fixture("tiny/lags.json"),
            "--solver",
            name,
            "--json",
        ]);
        if present {
            assert!(o.status.success(), "{name}: {}", stderr(&o));
            assert!(
                stdout(&o).contains("\"makespan\":9"),
                "{name}: {}",
                stdout(&o)
            );
        } else {
            assert_eq!(o.status.code(), Some(2), "{name}");
            let err = stderr(&o);
            assert!(err.contains(&format!("--features {name}")), "{name}: {err}");
            assert!(listing.contains(&format!("feature `{name}`")), "{listing}");
        }
    }
}

/// With no `--dir`, PSPLIB's j30 set of the repository's data folder (gzipped, found beside the
/// source tree: the tests run in `cli/`), against its reference table; with a `--dir` and no
/// `--reference`, the table named after the set beside it (j60 here).
#[test]
fn bench_psplib_runs_the_repositorys_sets_by_default() {
    let o = concerto(&[
        "bench",
        "psplib",
        "--solver",
        "sgs",
        "--work-limit",
        "20",
        "--only",
        "j30*_1.sm",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "every instance has its reference row");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        v["dir"].as_str().unwrap().ends_with("data/psplib/j30"),
        "{v}"
    );
    assert_eq!(v["instances"], 48);
    assert_eq!(v["checked"], 48);
    assert_eq!(v["contradictions"], 0);
    assert!(v["equal_best_known"].as_u64().unwrap() >= 30, "{v}");

    let j60 = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/psplib/j60");
    let o = concerto(&[
        "bench",
        "psplib",
        "--dir",
        j60,
        "--solver",
        "sgs",
        "--work-limit",
        "20",
        "--limit",
        "5",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "every instance has its reference row");

    let o = concerto(&["bench", "psplib", "--data", "/nonexistent/concerto-data"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/concerto-data/psplib/j30"),
        "{}",
        stderr(&o)
    );
    let dir = scratch("bench-no-reference").join("j90");
    std::fs::create_dir_all(&dir).unwrap();
    let o = concerto(&["bench", "psplib", "--dir", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("reference/j90.csv.gz") && stderr(&o).contains("--reference"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bench_checks_every_schedule_against_the_reference() {
    let dir = scratch("bench");
    let reference = dir.join("reference.csv");
    let mut csv = String::from("instance,lower_bound,upper_bound,optimal,critical_path_lb,jobs\n");
    for f in concerto_fixtures::with_prefix("psplib/j30") {
        let stem = f.path.file_stem().unwrap().to_string_lossy().into_owned();
        csv.push_str(&format!(
            "{stem},{},{},{},{},32\n",
            f.lower_bound,
            f.upper_bound,
            if f.optimal { "yes" } else { "no" },
            f.critical_path
        ));
    }
    std::fs::write(&reference, &csv).unwrap();
    let out = dir.join("rows.csv");
    let o = concerto(&[
        "bench",
        "psplib",
        "--dir",
        &fixture("psplib/j30"),
        "--reference",
        reference.to_str().unwrap(),
        "--solver",
        "sgs",
        "--time-limit",
        "0.2",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "--json prints nothing but the JSON");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for key in [
        "solver",
        "dir",
        "time_limit_s",
        "seed",
        "jobs",
        "threads",
        "instances",
        "equal_best_known",
        "contradictions",
        "errors",
        "checked",
        "proven_optimal",
        "mean_pct_above_best_known",
        "mean_pct_above_cpm",
        "median_time_s",
        "max_time_s",
    ] {
        assert!(v.get(key).is_some(), "missing `{key}` in {v}");
    }
    assert_eq!(v["instances"], 4);
    assert_eq!(v["checked"], 4);
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 5);

    // A reference whose best known makespan (30) is below the critical path (38) contradicts
    // our proven bound: exit 1.
    std::fs::write(&reference, csv.replace("j301_1,43,43", "j301_1,30,30")).unwrap();
    let o = concerto(&[
        "bench",
        "psplib",
        "--dir",
        &fixture("psplib/j30"),
        "--reference",
        reference.to_str().unwrap(),
        "--solver",
        "sgs",
        "--time-limit",
        "0.2",
        "--only",
        "j301_1.sm",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("j301_1"), "{}", stderr(&o));
}

/// One run of the repository's table of other solvers' runs, read by [`peer_lines`].
struct PeerLines {
    solver: String,
    run: String,
    limit: f64,
    /// (status, seconds) on the instances asked for.
    rows: Vec<(String, f64)>,
}

/// The repository's table of other solvers' runs, read here on its own (not through the
/// bench's parser): for each run, its solver, limit and the lines of `instances`.
fn peer_lines(instances: &[&str]) -> Vec<PeerLines> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/psplib/reference/solvers_j30_j60.csv.gz"
    );
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()),
        &mut text,
    )
    .unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let (solver, run, instance, status, time, limit) = (
        col("solver"),
        col("run"),
        col("instance"),
        col("status"),
        col("time_s"),
        col("time_limit_s"),
    );
    let mut runs: Vec<PeerLines> = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if !instances.contains(&cells[instance]) {
            continue;
        }
        let k = match runs.iter().position(|r| r.run == cells[run]) {
            Some(k) => k,
            None => {
                runs.push(PeerLines {
                    solver: cells[solver].into(),
                    run: cells[run].into(),
                    limit: cells[limit].parse().unwrap(),
                    rows: Vec::new(),
                });
                runs.len() - 1
            }
        };
        runs[k]
            .rows
            .push((cells[status].into(), cells[time].parse().unwrap()));
    }
    runs
}

/// Proofs among `rows` (status, seconds) within `limit` seconds: `Optimal` (CP-SAT) and
/// `Optimum` (OptalCP) are proofs, `Feasible` and `Solution` are not.
fn proven(rows: &[(String, f64)], limit: f64) -> usize {
    rows.iter()
        .filter(|(s, t)| (s == "Optimal" || s == "Optimum") && *t <= limit)
        .count()
}

/// `--reference-runs` counts the peers of the repository's table on the instances the bench
/// ran (ten of j30 here), within its 1 s limit and within their own; a work-limited run
/// gets the own-limit counts and says there is no same-time comparison; a malformed table is
/// an error naming its file and line, before any solve.
#[test]
fn bench_psplib_reference_runs_counts_the_peers_on_the_same_instances() {
    let ten: Vec<String> = (1..=10).map(|k| format!("j3013_{k}")).collect();
    let ten: Vec<&str> = ten.iter().map(String::as_str).collect();
    let peers = peer_lines(&ten);
    assert_eq!(peers.len(), 2, "CP-SAT and OptalCP");
    let v = common::json(&[
        "bench",
        "psplib",
        "--solver",
        "sgs",
        "--time-limit",
        "1",
        "--jobs",
        "2",
        "--threads",
        "1",
        "--only",
        "j3013_*.sm",
        "--reference-runs",
        "--json",
    ]);
    assert_eq!(v["instances"], 10);
    let r = &v["reference_runs"];
    assert_eq!(r["time_limit_s"], 1.0);
    assert_eq!(r["instances"], 10);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), peers.len(), "{r}");
    for PeerLines {
        solver,
        run,
        limit,
        rows,
    } in &peers
    {
        let got = runs.iter().find(|g| g["run"] == run.as_str()).unwrap();
        assert_eq!(got["solver"], solver.as_str());
        assert_eq!(got["set"], "j30");
        assert_eq!(got["instances"], 10);
        assert_eq!(got["set_instances"], 480);
        assert_eq!(got["proven_within_time_limit"], proven(rows, 1.0), "{run}");
        assert_eq!(
            got["proven_within_own_limit"],
            proven(rows, *limit),
            "{run}"
        );
    }
    let own = &r["concerto"][0];
    assert_eq!(
        (own["set"].as_str(), own["threads"].as_u64()),
        (Some("j30"), Some(1))
    );
    assert_eq!(own["proven"], v["proven_optimal"]);

    // The table, with a work limit: the peers within their own limits only.
    let two = ["j3013_1", "j3013_10"];
    let peers = peer_lines(&two);
    let o = concerto(&[
        "bench",
        "psplib",
        "--solver",
        "sgs",
        "--work-limit",
        "20",
        "--only",
        "j3013_1*.sm",
        "--reference-runs",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for PeerLines {
        solver,
        limit,
        rows,
        ..
    } in &peers
    {
        let line = text
            .lines()
            .find(|l| l.contains(solver.as_str()))
            .unwrap_or_else(|| panic!("no row of {solver} in:\n{text}"));
        let count = format!("{} within {limit} s", proven(rows, *limit));
        assert!(line.contains(&count), "`{count}` not in `{line}`");
    }
    assert!(text.contains("no same-time comparison"), "{text}");
    assert!(text.contains("This run solved a subset"), "{text}");

    let dir = scratch("reference-runs");
    let bad = dir.join("peers.csv");
    std::fs::write(
        &bad,
        "solver,version,run,set,instance,status,makespan,lower_bound,time_s,time_limit_s,workers,hardware\n\
         A,1,a,j30,j301_1,Optimal,43,43,0.1,10,1,x\n\
         A,1,a,j30,j301_2,Optimal,47,47,fast,10,1,x\n",
    )
    .unwrap();
    let o = concerto(&[
        "bench",
        "psplib",
        "--only",
        "j301_1.sm",
        "--reference-runs",
        "--reference-runs-csv",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("{}:3:", bad.display())), "{err}");
    assert_eq!(stdout(&o), "", "no run before the table is read");
}

#[test]
fn bench_scale_json_keeps_its_keys_and_stays_quiet() {
    let o = concerto(&[
        "bench",
        "scale",
        "--sizes",
        "60",
        "--window",
        "10",
        "--rounds",
        "1",
        "--window-time-limit",
        "0.05",
        "--start-schedules",
        "20",
        "--solver",
        "sgs",
        "--threads",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "--json prints nothing but the JSON");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    for key in [
        "solver",
        "window",
        "rounds",
        "window_time_limit_s",
        "threads",
        "sizes",
    ] {
        assert!(v.get(key).is_some(), "missing `{key}` in {v}");
    }
    assert_eq!(v["solver"], "sgs");
    let rows = v["sizes"].as_array().expect("an array of sizes");
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    for key in [
        "n",
        "rounds",
        "time_s",
        "start_makespan",
        "start_time_s",
        "makespan",
        "lower_bound",
        "bound",
        "gap_pct",
        "heuristic_makespan",
        "heuristic_time_s",
        "heuristic_gap_pct",
        "peak_rss_mb",
        "round_reports",
    ] {
        assert!(row.get(key).is_some(), "missing `{key}` in {row}");
    }
    let makespan = row["makespan"].as_i64().unwrap();
    assert!(makespan >= row["lower_bound"].as_i64().unwrap(), "{row}");
    assert!(makespan <= row["start_makespan"].as_i64().unwrap(), "{row}");
    assert_eq!(row["round_reports"].as_array().unwrap().len(), 1);

    let o = concerto(&["bench", "scale", "--sizes", "60", "--channels", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("channels must be 1 or 2, got 3"),
        "{}",
        stderr(&o)
    );
}

/// A loop without a known trip count fails naming the loop, why, and the flags;
/// `--trip-count` unrolls it, and so does `--unknown-trip-count` with a warning; a name that
/// is no loop, or a malformed value, is an error naming it.
#[test]
fn trip_count_names_the_loop_and_unrolls_it() {
    let dir = scratch("trip-count");
    let file = dir.join("decode.hlo");
    // A decode-style loop: its bound is carried in the state from a parameter of the step.
    std::fs::copy(fixture("tiny/decode_loop.hlo"), &file).unwrap();
    let path = file.to_str().unwrap();

    let o = concerto(&["import", path, "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("decode.hlo: line 33, instruction `decode`: while loop `%decode` has no known trip count")
            && e.contains("--trip-count decode=N"),
        "{e}"
    );

    let o = concerto(&["import", path, "--trip-count", "decode=5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    // Per iteration: the counter's add, the all-reduce (one group of 8) and the exponential.
    assert_eq!(v["ops"], 15, "{v}");
    assert_eq!(v["collectives"]["all-reduce"], 5, "{v}");
    // `%decode=` is accepted too, and the same count twice is no conflict.
    let o = concerto(&[
        "import",
        path,
        "--trip-count",
        "%decode=2",
        "--trip-count",
        "decode=2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"ops\":6"), "{}", stdout(&o));

    // The commands built on the optimize options read it too, and check the names.
    let o = concerto(&["decompose", path, "--trip-count", "prefill=3"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("instruction `prefill`: a trip count is given for `%prefill`, which is no instruction of the module (its while loops: `%decode`)"),
        "{e}"
    );
    let o = concerto(&["decompose", path]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("--trip-count decode=N"),
        "{}",
        stderr(&o)
    );

    for (bad, says) in [
        ("decode", "expected NAME=N"),
        ("decode=many", "`many` is not a trip count"),
        ("=3", "no loop name"),
    ] {
        let o = concerto(&["import", path, "--trip-count", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stdout(&o));
        assert!(stderr(&o).contains(says), "{bad}: {}", stderr(&o));
    }
    let o = concerto(&[
        "import",
        path,
        "--trip-count",
        "decode=2",
        "--trip-count",
        "decode=3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("gives loop `decode` two counts, 2 and 3"),
        "{}",
        stderr(&o)
    );
    let o = concerto(&[
        "simulate",
        &fixture("tiny/two_streams.json"),
        "--plan",
        path,
        "--trip-count",
        "decode=2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--trip-count applies to the while loops of an HLO module"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--unknown-trip-count` counts a loop whose count cannot be read, with a warning that says
/// why; `--trip-count` wins over it; a JSON graph refuses it.
#[test]
fn unknown_trip_count_counts_the_loop_and_warns() {
    let dir = scratch("unknown-trip-count");
    let file = dir.join("decode.hlo");
    // A decode-style loop: its bound is carried in the state from a parameter of the step.
    std::fs::copy(fixture("tiny/decode_loop.hlo"), &file).unwrap();
    let path = file.to_str().unwrap();
    let o = concerto(&["import", path, "--unknown-trip-count", "3", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["ops"], 9, "{v}");
    let warning = v["warnings"][0].as_str().unwrap_or_default();
    assert!(
        warning.starts_with(
            "while loop `%decode` has no known trip count (its condition reads state elements 0, 1"
        ) && warning.contains("counted as 3 iteration(s)"),
        "{v}"
    );
    // --trip-count wins over it, and warns of nothing.
    let o = concerto(&[
        "import",
        path,
        "--unknown-trip-count",
        "3",
        "--trip-count",
        "decode=1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["ops"], 3, "{v}");
    assert!(!v["warnings"].to_string().contains("%decode"), "{v}");
    let o = concerto(&[
        "simulate",
        &fixture("tiny/two_streams.json"),
        "--plan",
        path,
        "--unknown-trip-count",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--unknown-trip-count applies to the while loops of an HLO module"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--unbounded-dim-size` sizes the unbounded dimensions `?` of a module (StableHLO's
/// unbounded dynamism); without it they are an error naming the flag; a JSON graph refuses it.
#[test]
fn unbounded_dim_size_sizes_the_unbounded_dimensions() {
    let file = fixture("tiny/unbounded.hlo");
    let path = file.as_str();
    let o = concerto(&["import", path, "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("line 3") && stderr(&o).contains("--unbounded-dim-size"),
        "{}",
        stderr(&o)
    );
    let bytes = |n: &str| -> u64 {
        let o = concerto(&["import", path, "--unbounded-dim-size", n, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
        v["live_out_bytes"]
            .as_u64()
            .unwrap_or_else(|| panic!("{v}"))
    };
    // The step's output: the array, whose bytes grow with the size given.
    assert_eq!(bytes("8"), 8 * 1024 * 4);
    assert_eq!(bytes("64"), 64 * 1024 * 4);
    let o = concerto(&[
        "import",
        &fixture("tiny/two_streams.json"),
        "--unbounded-dim-size",
        "8",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--unbounded-dim-size applies to the shapes of an HLO module"));
}
