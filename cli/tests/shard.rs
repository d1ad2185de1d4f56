//! `--shard I/N` on `bench psplib`, `bench graphs` and `bench scale`, and `bench merge`: the
//! shards of a run merge into what the unsharded run prints, and files that do not belong
//! together are refused, each error naming the file.
//!
//! Runs are deterministic (work limits, one thread), so the merged output equals the
//! unsharded one byte for byte, except for what the clock measures (solve times, peak
//! memory): those are the shards' own measurements, masked in the comparison and checked
//! against the shards' rows instead.

mod common;

use std::path::{Path, PathBuf};

use common::{concerto, scratch, stderr, stdout};

fn fixture(name: &str) -> String {
    concerto_fixtures::path(name).display().to_string()
}

/// `text` with the number after each `"key":` of `keys` replaced by `T`.
fn mask(text: &str, keys: &[&str]) -> String {
    let mut out = text.to_string();
    for key in keys {
        let pat = format!("\"{key}\":");
        let mut masked = String::new();
        let mut rest = out.as_str();
        while let Some(k) = rest.find(&pat) {
            let (head, tail) = rest.split_at(k + pat.len());
            masked.push_str(head);
            let end = tail
                .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
                .unwrap_or(tail.len());
            masked.push('T');
            rest = &tail[end..];
        }
        masked.push_str(rest);
        out = masked;
    }
    out
}

/// A table with every cell that looks like a time (`0.1`, `12.3`; the benches print times
/// with one decimal) replaced by `T`, cells split on runs of spaces.
fn mask_table_times(table: &str, time_decimals: usize) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(|cell| {
                    let is_time = cell.split_once('.').is_some_and(|(a, b)| {
                        !a.is_empty()
                            && a.bytes().all(|c| c.is_ascii_digit())
                            && b.len() == time_decimals
                            && b.bytes().all(|c| c.is_ascii_digit())
                    });
                    if is_time {
                        "T".to_string()
                    } else {
                        cell.to_string()
                    }
                })
                .collect()
        })
        .collect()
}

/// Runs `args` with `--shard i/n --json` for every `i`, writing `dir/shard-i.json`; returns
/// the files, in the order `order` gives (a merge takes them in any order).
fn run_shards(dir: &Path, args: &[&str], n: usize, order: &[usize]) -> Vec<PathBuf> {
    let files: Vec<PathBuf> = (0..n)
        .map(|i| dir.join(format!("shard-{i}.json")))
        .collect();
    for (i, file) in files.iter().enumerate() {
        let shard = format!("{i}/{n}");
        let mut a = args.to_vec();
        a.extend(["--shard", &shard, "--json"]);
        let o = concerto(&a);
        assert!(o.status.success(), "shard {shard}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "--json prints nothing but the JSON");
        std::fs::write(file, o.stdout).unwrap();
    }
    order.iter().map(|&i| files[i].clone()).collect()
}

/// `bench merge` of `files`, with `extra` arguments.
fn merge(files: &[PathBuf], extra: &[&str]) -> std::process::Output {
    let mut a = vec!["bench", "merge"];
    a.extend(files.iter().map(|f| f.to_str().unwrap()));
    a.extend(extra);
    concerto(&a)
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("one JSON value")
}

/// The rows of the shard files, in the unsharded order.
fn shard_rows(files: &[PathBuf]) -> Vec<serde_json::Value> {
    let mut rows: Vec<(u64, serde_json::Value)> = files
        .iter()
        .flat_map(|f| {
            let v = json(&std::fs::read_to_string(f).unwrap());
            v["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| (r["index"].as_u64().unwrap(), r["row"].clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    rows.sort_by_key(|(k, _)| *k);
    rows.into_iter().map(|(_, r)| r).collect()
}

fn j30_args() -> Vec<String> {
    let dir = fixture("psplib/j30_sample");
    let reference = fixture("psplib/j30_sample/reference.csv");
    [
        "bench",
        "psplib",
        "--dir",
        &dir,
        "--reference",
        &reference,
        "--solver",
        "pumpkin",
        "--work-limit",
        "200",
        "--threads",
        "1",
        "--jobs",
        "2",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn psplib_j30_split_four_ways_merges_to_the_unsharded_summary() {
    let dir = scratch("shard-psplib");
    let args = j30_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut whole = args.clone();
    whole.push("--json");
    let o = concerto(&whole);
    assert!(o.status.success(), "{}", stderr(&o));
    let unsharded = stdout(&o);

    let files = run_shards(&dir, &args, 4, &[2, 0, 3, 1]);
    // 11 instances in natural order: shard 1/4 holds instances 1, 5 and 9.
    let one = json(&std::fs::read_to_string(dir.join("shard-1.json")).unwrap());
    assert_eq!(one["shard"], "1/4");
    assert_eq!(one["bench"], "psplib");
    assert_eq!(one["items"].as_array().unwrap().len(), 11);
    let names: Vec<_> = one["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["row"]["instance"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["j301_2", "j3010_1", "j3046_3"]);

    let o = merge(&files, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let merged = stdout(&o);
    let times = ["median_time_s", "max_time_s"];
    assert_eq!(mask(&merged, &times), mask(&unsharded, &times));
    assert_eq!(json(&merged)["instances"], 11);

    // The times are the summary of the shards' rows: their median and maximum.
    let mut t: Vec<f64> = shard_rows(&files)
        .iter()
        .map(|r| r["time_s"].as_f64().unwrap())
        .collect();
    t.sort_by(f64::total_cmp);
    let m = json(&merged);
    assert_eq!(m["median_time_s"].as_f64(), Some(t[5]));
    assert_eq!(m["max_time_s"].as_f64(), Some(t[10]));

    // The table too (its last two columns are times, printed with three decimals).
    let o = merge(&files, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let w = concerto(&args);
    assert!(w.status.success(), "{}", stderr(&w));
    assert_eq!(
        mask_table_times(&stdout(&o), 3),
        mask_table_times(&stdout(&w), 3)
    );
}

#[test]
fn a_psplib_run_that_fails_fails_the_same_after_the_merge() {
    let dir = scratch("shard-psplib-fails");
    // A reference whose best known makespan of j301_1 (30) is below its critical path (38).
    let csv = std::fs::read_to_string(fixture("psplib/j30_sample/reference.csv")).unwrap();
    let reference = dir.join("reference.csv");
    std::fs::write(&reference, csv.replace("j301_1,43,43", "j301_1,30,30")).unwrap();
    let args = [
        "bench",
        "psplib",
        "--dir",
        &fixture("psplib/j30_sample"),
        "--reference",
        reference.to_str().unwrap(),
        "--solver",
        "sgs",
        "--work-limit",
        "20",
        "--threads",
        "1",
    ];
    let whole = concerto(&[&args[..], &["--json"]].concat());
    assert_eq!(whole.status.code(), Some(1), "{}", stderr(&whole));
    let files: Vec<PathBuf> = (0..2)
        .map(|i| {
            let shard = format!("{i}/2");
            let o = concerto(&[&args[..], &["--shard", &shard, "--json"]].concat());
            // Shard 0 holds j301_1: it fails, and still writes its file.
            assert_eq!(o.status.code(), Some(if i == 0 { 1 } else { 0 }), "{shard}");
            let file = dir.join(format!("s{i}.json"));
            std::fs::write(&file, o.stdout).unwrap();
            file
        })
        .collect();
    let o = merge(&files, &["--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&o), stderr(&whole));
    assert!(stderr(&o).contains("j301_1"), "{}", stderr(&o));
    let times = ["median_time_s", "max_time_s"];
    assert_eq!(mask(&stdout(&o), &times), mask(&stdout(&whole), &times));
}

#[test]
fn graphs_split_three_ways_merge_to_the_unsharded_rows_and_table() {
    let dir = scratch("shard-graphs");
    let mut owned: Vec<String> = ["bench", "graphs"].map(String::from).to_vec();
    for f in [
        "dp.opt",
        "dp.spmd",
        "fsdp.opt",
        "fsdp.spmd",
        "scan.spmd",
        "tp.opt",
        "tp.spmd",
    ] {
        owned.push("--graph".into());
        owned.push(fixture(&format!("hlo/{f}.hlo")));
    }
    // `.` is in the files' names only: no built-in configuration runs. Every optional step
    // runs, so every optional key of a row goes through the merge.
    for a in [
        "--only",
        ".",
        "--work-limit",
        "100",
        "--decompose",
        "joint",
        "--fuse",
        "on",
        "--memory-budget",
        "200%",
    ] {
        owned.push(a.into());
    }
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let whole = concerto(&[&args[..], &["--json"]].concat());
    assert!(whole.status.success(), "{}", stderr(&whole));
    let unsharded = stdout(&whole);
    let files = run_shards(&dir, &args, 3, &[1, 2, 0]);
    let o = merge(&files, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let times = ["time_s", "ad_time_s", "joint_time_s", "fuse_time_s"];
    assert_eq!(mask(&stdout(&o), &times), mask(&unsharded, &times));
    let rows = json(&stdout(&o));
    assert_eq!(rows.as_array().unwrap().len(), 7);
    assert!(rows[0].get("memory").is_some() && rows[0].get("joint_ns").is_some());
    assert_eq!(
        rows.as_array().unwrap(),
        &shard_rows(&files)
            .into_iter()
            .map(|r| r["summary"].clone())
            .collect::<Vec<_>>()
    );

    let o = merge(&files, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let w = concerto(&args);
    assert!(w.status.success(), "{}", stderr(&w));
    // Times are printed with one decimal.
    assert_eq!(
        mask_table_times(&stdout(&o), 1),
        mask_table_times(&stdout(&w), 1)
    );
}

fn scale_args() -> Vec<&'static str> {
    vec![
        "bench",
        "scale",
        "--sizes",
        "40,60,80",
        "--window",
        "10",
        "--rounds",
        "1",
        "--window-time-limit",
        "1",
        "--start-schedules",
        "20",
        "--solver",
        "pumpkin",
        "--threads",
        "1",
    ]
}

#[test]
fn scale_split_two_ways_merges_to_the_unsharded_rows() {
    let dir = scratch("shard-scale");
    let args = scale_args();
    let whole = concerto(&[&args[..], &["--json"]].concat());
    assert!(whole.status.success(), "{}", stderr(&whole));
    let files = run_shards(&dir, &args, 2, &[1, 0]);
    let o = merge(&files, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The clock's measurements, and the heuristic given the driver's wall time. The windows
    // are solved exactly (pumpkin proves each 20-activity window well within its second), so
    // the rest does not depend on the clock.
    let measured = [
        "time_s",
        "start_time_s",
        "heuristic_time_s",
        "heuristic_makespan",
        "heuristic_gap_pct",
        "peak_rss_mb",
    ];
    assert_eq!(
        mask(&stdout(&o), &measured),
        mask(&stdout(&whole), &measured)
    );
    let sizes = json(&stdout(&o))["sizes"].clone();
    assert_eq!(sizes.as_array().unwrap().len(), 3);
    assert_eq!(sizes.as_array().unwrap(), &shard_rows(&files));

    let o = merge(&files, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert_eq!(table.lines().count(), 2 + 3, "{table}");
    assert!(table.starts_with("n "), "{table}");
}

/// The `n` shard files of a quick `bench psplib` run (`extra` arguments added: at least a
/// work limit), in `dir/name`.
fn quick_psplib_shards(dir: &Path, name: &str, n: usize, extra: &[&str]) -> Vec<PathBuf> {
    let dir_arg = fixture("psplib/j30_sample");
    let reference = fixture("psplib/j30_sample/reference.csv");
    let mut args = vec![
        "bench",
        "psplib",
        "--dir",
        &dir_arg,
        "--reference",
        &reference,
        "--solver",
        "sgs",
        "--threads",
        "1",
    ];
    args.extend(extra);
    let sub = dir.join(name);
    std::fs::create_dir_all(&sub).unwrap();
    run_shards(&sub, &args, n, &(0..n).collect::<Vec<_>>())
}

/// Asserts that `o` failed with exit 2 and an error containing every one of `needles`.
fn assert_error(o: &std::process::Output, needles: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    assert_eq!(stdout(o), "");
    for n in needles {
        assert!(stderr(o).contains(n), "`{n}` not in: {}", stderr(o));
    }
}

#[test]
fn merge_refuses_shards_of_different_runs_missing_or_repeated_shards_and_malformed_files() {
    let dir = scratch("shard-errors");
    let a = quick_psplib_shards(&dir, "a", 2, &["--work-limit", "10"]);
    assert!(merge(&a, &["--json"]).status.success());

    // Another work limit: another configuration, named with both values.
    let b = quick_psplib_shards(&dir, "b", 2, &["--work-limit", "11"]);
    let o = merge(&[a[0].clone(), b[1].clone()], &[]);
    let b1 = b[1].display().to_string();
    assert_error(
        &o,
        &[
            &b1,
            "configuration differs",
            "`run.work_limit` is 11 here, 10 there",
        ],
    );

    // Another instance selection.
    let c = quick_psplib_shards(&dir, "c", 2, &["--work-limit", "10", "--only", "j30*_1.sm"]);
    let o = merge(&[a[0].clone(), c[1].clone()], &[]);
    assert_error(&o, &[&c[1].display().to_string(), "`only`"]);

    // Another bench.
    let s = dir.join("scale.json");
    let o = concerto(&[&scale_args()[..], &["--shard", "1/2", "--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(&s, o.stdout).unwrap();
    let o = merge(&[a[0].clone(), s.clone()], &[]);
    assert_error(
        &o,
        &[
            &s.display().to_string(),
            "a `bench scale` shard",
            "`bench psplib` shard",
        ],
    );

    // A missing shard.
    let o = merge(&a[..1], &[]);
    assert_error(&o, &["missing shard(s) 1/2 of a split in 2"]);

    // A repeated shard, from two files.
    let copy = dir.join("copy.json");
    std::fs::copy(&a[0], &copy).unwrap();
    let o = merge(&[a[0].clone(), copy.clone(), a[1].clone()], &[]);
    let a0 = a[0].display().to_string();
    assert_error(
        &o,
        &["shard 0/2 is given twice", &a0, &copy.display().to_string()],
    );

    // Another split.
    let four = quick_psplib_shards(&dir, "d", 4, &["--work-limit", "10"]);
    let o = merge(&[a[0].clone(), four[3].clone()], &[]);
    assert_error(
        &o,
        &[&four[3].display().to_string(), "split in 4", "split in 2"],
    );

    // Malformed files: cut short, not JSON, JSON of another shape, a bad shard.
    let text = std::fs::read_to_string(&a[1]).unwrap();
    let bad = dir.join("bad.json");
    for (content, needle) in [
        (&text[..text.len() / 2], "EOF while parsing"),
        ("shard 1", "expected value"),
        (r#"{"format":1,"bench":"psplib"}"#, "missing field"),
        (
            &text.replacen("\"1/2\"", "\"2/2\"", 1)[..],
            "shard index 2 is out of range",
        ),
        (
            &text.replacen("\"bench\":\"psplib\"", "\"bench\":\"solve\"", 1)[..],
            "unknown variant `solve`",
        ),
    ] {
        std::fs::write(&bad, content).unwrap();
        let o = merge(&[a[0].clone(), bad.clone()], &[]);
        assert_error(
            &o,
            &[&bad.display().to_string(), "not a shard file", needle],
        );
    }
    let o = merge(&[a[0].clone(), dir.join("no-such.json")], &[]);
    assert_error(&o, &["no-such.json"]);
    // No file at all.
    let o = concerto(&["bench", "merge"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn the_shard_flag_is_validated_on_every_bench() {
    let psplib = [
        "bench",
        "psplib",
        "--dir",
        &fixture("psplib/j30_sample"),
        "--reference",
        &fixture("psplib/j30_sample/reference.csv"),
    ]
    .map(String::from)
    .to_vec();
    let graphs = ["bench", "graphs", "--only", "nothing"]
        .map(String::from)
        .to_vec();
    let scale = ["bench", "scale", "--sizes", "40"]
        .map(String::from)
        .to_vec();
    for bench in [psplib, graphs, scale] {
        for (value, needle) in [
            (
                "4/4",
                "shard index 4 is out of range: shards of a split in 4 are numbered 0 to 3",
            ),
            ("0/0", "the shard count must be at least 1"),
            ("1", "expected I/N"),
            ("-1/4", "expected I/N"),
            ("a/b", "expected I/N"),
        ] {
            let flag = format!("--shard={value}");
            let mut args: Vec<&str> = bench.iter().map(String::as_str).collect();
            args.push(&flag);
            let o = concerto(&args);
            assert_error(&o, &["--shard", needle]);
        }
    }
}

#[test]
fn more_shards_than_instances_leave_empty_shards_that_still_merge() {
    let dir = scratch("shard-empty");
    let files = quick_psplib_shards(&dir, "p", 4, &["--work-limit", "10", "--limit", "2"]);
    let empty = json(&std::fs::read_to_string(&files[3]).unwrap());
    assert_eq!(empty["rows"], serde_json::json!([]));
    let o = merge(&files, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let whole = concerto(&[
        "bench",
        "psplib",
        "--dir",
        &fixture("psplib/j30_sample"),
        "--reference",
        &fixture("psplib/j30_sample/reference.csv"),
        "--solver",
        "sgs",
        "--threads",
        "1",
        "--work-limit",
        "10",
        "--limit",
        "2",
        "--json",
    ]);
    assert!(whole.status.success(), "{}", stderr(&whole));
    let times = ["median_time_s", "max_time_s"];
    assert_eq!(mask(&stdout(&o), &times), mask(&stdout(&whole), &times));
    assert_eq!(json(&stdout(&o))["instances"], 2);

    // The same for graphs: one graph in two shards.
    let args = [
        "bench",
        "graphs",
        "--graph",
        &fixture("hlo/tp.opt.hlo"),
        "--only",
        ".",
        "--work-limit",
        "100",
    ];
    let files = run_shards(&dir, &args, 2, &[0, 1]);
    let o = merge(&files, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&stdout(&o)).as_array().unwrap().len(), 1);
}
