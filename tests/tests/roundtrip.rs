//! Format round trips: every fixture written as JSON reads back as the same problem (in memory
//! and through files), schedules survive a JSON round trip, and a Patterson `.rcp` translation
//! of a PSPLIB `.sm` instance (one written by hand, the others generated) reads as the same
//! problem.

use std::fmt::Write as _;
use std::path::PathBuf;

use concerto_rcpsp::io::{json, patterson, problem_to_json, read_schedule, schedule_to_json};
use concerto_rcpsp::{check, read_problem, sgs, ActivityList, Problem};

/// Asserts that two problems have the same activities (names, durations, demands), resources
/// and precedences, in the same order.
fn assert_same_problem(a: &Problem, b: &Problem, what: &str) {
    assert_eq!(a.resources(), b.resources(), "{what}: resources");
    assert_eq!(a.activities(), b.activities(), "{what}: activities");
    assert_eq!(a.precedences(), b.precedences(), "{what}: precedences");
    assert_eq!(
        a.topological_order(),
        b.topological_order(),
        "{what}: topological order"
    );
    assert_eq!(a.horizon(), b.horizon(), "{what}: horizon");
}

/// A fresh directory for this test's files, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("concerto-roundtrip-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn every_fixture_survives_json() {
    let dir = TempDir::new("json");
    for f in concerto_fixtures::all() {
        let p = read_problem(&f.path).unwrap_or_else(|e| panic!("{e}"));
        let text = problem_to_json(&p);
        let back = json::parse_problem(&text, &f.name).unwrap_or_else(|e| panic!("{e}"));
        assert_same_problem(&p, &back, &f.name);
        assert_eq!(
            problem_to_json(&back),
            text,
            "{}: writing is not stable",
            f.name
        );

        // Through a file, with the format picked by the extension.
        let path = dir.0.join(f.name.replace('/', "_") + ".json");
        std::fs::write(&path, &text).expect("write the JSON file");
        let from_file = read_problem(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_same_problem(&p, &from_file, &f.name);
    }
}

#[test]
fn fixture_schedules_survive_json_files() {
    let dir = TempDir::new("schedules");
    for f in concerto_fixtures::all() {
        let p = read_problem(&f.path).unwrap_or_else(|e| panic!("{e}"));
        let list = ActivityList::new(&p, p.topological_order().to_vec()).expect("topological");
        let schedule = sgs::serial(&p, &list);
        let makespan = check(&p, &schedule).unwrap_or_else(|v| panic!("{}: {v}", f.name));
        let text = schedule_to_json(&p, &schedule);
        let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(value["format"], "concerto-schedule");
        assert_eq!(value["makespan"], makespan);
        assert_eq!(value["starts"].as_array().map(Vec::len), Some(p.len()));

        let path = dir.0.join(f.name.replace('/', "_") + ".schedule.json");
        std::fs::write(&path, &text).expect("write the schedule file");
        let back = read_schedule(&p, &path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, schedule, "{}", f.name);
    }
}

/// `j301_1.sm` translated by hand to the Patterson layout: activities and resources, the
/// capacities, then per job its duration, its four demands, its successor count and
/// successors.
const J301_1_RCP: &str = "32 4
12 13 4 12
0 0 0 0 0 3 2 3 4
8 4 0 0 0 3 6 11 15
4 10 0 0 0 3 7 8 13
6 0 0 0 3 3 5 9 10
3 3 0 0 0 1 20
8 0 0 0 8 1 30
5 4 0 0 0 1 27
9 0 1 0 0 3 12 19 27
2 6 0 0 0 1 14
7 0 0 0 1 2 16 25
9 0 5 0 0 2 20 26
2 0 7 0 0 1 14
6 4 0 0 0 2 17 18
3 0 8 0 0 1 17
9 3 0 0 0 1 25
10 0 0 0 5 2 21 22
6 0 0 0 8 1 22
5 0 0 0 7 2 20 22
3 0 1 0 0 2 24 29
7 0 10 0 0 2 23 25
2 0 0 0 6 1 28
7 2 0 0 0 1 23
2 3 0 0 0 1 24
3 0 9 0 0 1 30
3 4 0 0 0 1 30
7 0 0 4 0 1 31
8 0 0 0 7 1 28
3 0 8 0 0 1 31
7 0 7 0 0 1 32
2 0 7 0 0 1 32
2 0 0 2 0 1 32
0 0 0 0 0 0
";

#[test]
fn hand_written_rcp_of_j301_1_equals_the_sm() {
    let sm = read_problem(concerto_fixtures::path("psplib/j30/j301_1.sm")).expect("valid .sm");
    let rcp = patterson::parse(J301_1_RCP, "j301_1.rcp").expect("valid .rcp");
    assert_same_problem(&sm, &rcp, "j301_1");
    // A few values read off the .sm file, so that a reader bug shared by both formats shows.
    assert_eq!(sm.len(), 32);
    let capacities: Vec<u32> = sm.resources().iter().map(|r| r.capacity).collect();
    assert_eq!(capacities, [12, 13, 4, 12]);
    let names: Vec<&str> = sm.resources().iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["R1", "R2", "R3", "R4"]);
    let job3 = sm.activity(sm.find("3").expect("job 3"));
    assert_eq!(
        (job3.duration, job3.demands.as_slice()),
        (4, &[10, 0, 0, 0][..])
    );
    let succ_of_1: Vec<&str> = sm
        .successors(sm.find("1").expect("job 1"))
        .iter()
        .map(|arc| sm.activity(arc.activity).name.as_str())
        .collect();
    assert_eq!(succ_of_1, ["2", "3", "4"]);
    assert_eq!(sm.precedences().len(), 48);
}

/// Writes a problem whose activities are named `1..=n` and resources `R1..` in order (as the
/// PSPLIB reader names them) in the Patterson layout, one record per line.
fn to_rcp(p: &Problem) -> String {
    let mut text = format!("{} {}\n", p.len(), p.resources().len());
    let caps: Vec<String> = p
        .resources()
        .iter()
        .map(|r| r.capacity.to_string())
        .collect();
    text.push_str(&caps.join(" "));
    text.push('\n');
    for a in p.ids() {
        let activity = p.activity(a);
        write!(text, "{}", activity.duration).expect("write to a string");
        for q in &activity.demands {
            write!(text, " {q}").expect("write to a string");
        }
        write!(text, " {}", p.successors(a).len()).expect("write to a string");
        for arc in p.successors(a) {
            assert_eq!(arc.lag, 0, "the Patterson layout has no lags");
            write!(text, " {}", arc.activity.index() + 1).expect("write to a string");
        }
        text.push('\n');
    }
    text
}

#[test]
fn every_psplib_fixture_reads_the_same_as_rcp() {
    let fixtures = concerto_fixtures::with_prefix("psplib");
    assert!(fixtures.len() >= 8);
    for f in fixtures {
        let sm = read_problem(&f.path).unwrap_or_else(|e| panic!("{e}"));
        let rcp = patterson::parse(&to_rcp(&sm), &f.name).unwrap_or_else(|e| panic!("{e}"));
        assert_same_problem(&sm, &rcp, &f.name);
    }
}

#[test]
fn rcp_fixture_rewritten_reads_the_same() {
    // packing.rcp wraps its records across lines; the rewrite puts one record per line.
    let path = concerto_fixtures::path("tiny/packing.rcp");
    let p = read_problem(&path).expect("valid .rcp");
    let again = patterson::parse(&to_rcp(&p), "packing.rcp").expect("valid .rcp");
    assert_same_problem(&p, &again, "packing.rcp");
    assert_eq!(p.len(), 6);
    let durations: Vec<i64> = p.activities().iter().map(|a| a.duration).collect();
    assert_eq!(durations, [0, 3, 3, 3, 3, 0]);
}
