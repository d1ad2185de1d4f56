//! The bench matrices as library code: the PSPLIB bench on the fixtures' j30 instances and the
//! scale bench at a tiny size, with the built-in heuristic as the solver.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use concerto_benches::psplib::{self, Finding, PsplibConfig};
use concerto_benches::scale::{self, ScaleConfig};
use concerto_benches::BenchError;
use concerto_pipeline::{Progress, Silent};
use concerto_rcpsp::io::psplib::Reference;
use concerto_rcpsp::{Heuristic, Limits};

/// Records every call, to check what the bench reports and when.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Progress for Recorder {
    fn start(&self, phase: &str, total: Option<u64>) {
        self.0
            .lock()
            .unwrap()
            .push(format!("start {phase} {total:?}"));
    }
    fn advance(&self, done: u64, message: &str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("advance {done} {message}"));
    }
    fn finish(&self) {
        self.0.lock().unwrap().push("finish".into());
    }
}

fn j30_dir() -> PathBuf {
    concerto_fixtures::path("psplib/j30")
}

/// The fixtures' known bounds as a reference table.
fn j30_reference() -> BTreeMap<String, Reference> {
    concerto_fixtures::with_prefix("psplib/j30")
        .into_iter()
        .map(|f| {
            let instance = f.path.file_stem().unwrap().to_string_lossy().into_owned();
            let r = Reference {
                instance: instance.clone(),
                lower_bound: f.lower_bound,
                upper_bound: f.upper_bound,
                optimal: f.optimal,
                critical_path: Some(f.critical_path),
            };
            (instance, r)
        })
        .collect()
}

fn config(instances: Vec<PathBuf>, reference: BTreeMap<String, Reference>) -> PsplibConfig {
    PsplibConfig {
        limits: Limits {
            time_limit: Some(Duration::from_millis(200)),
            seed: 1,
            ..Limits::default()
        },
        jobs: 2,
        ..PsplibConfig::new(instances, reference)
    }
}

fn stems(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn instances_come_in_natural_order_and_a_pattern_selects() {
    let all = psplib::list_instances(&j30_dir(), None, None).unwrap();
    assert_eq!(stems(&all), ["j301_1", "j305_1", "j3013_1", "j3046_3"]);
    let ones = psplib::list_instances(&j30_dir(), Some("j30*_1.sm"), Some(2)).unwrap();
    assert_eq!(stems(&ones), ["j301_1", "j305_1"]);
    let err = psplib::list_instances(&j30_dir(), Some("j99*.sm"), None).unwrap_err();
    assert!(matches!(err, BenchError::NoInstances { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("psplib/j30") && text.contains("j99*.sm"),
        "{text}"
    );
    let missing = Path::new("/nonexistent/concerto-psplib");
    let err = psplib::list_instances(missing, None, None).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/concerto-psplib"),
        "{err}"
    );
}

#[test]
fn the_heuristic_solves_and_checks_every_j30_fixture() {
    let instances = psplib::list_instances(&j30_dir(), None, None).unwrap();
    let reference = j30_reference();
    let progress = Recorder::default();
    let report = psplib::run(
        &config(instances, reference.clone()),
        &Heuristic::default(),
        &progress,
    )
    .unwrap();

    assert_eq!(report.rows.len(), 4);
    assert_eq!(
        report
            .rows
            .iter()
            .map(|r| r.instance.as_str())
            .collect::<Vec<_>>(),
        ["j301_1", "j305_1", "j3013_1", "j3046_3"]
    );
    for row in &report.rows {
        let known = &reference[&row.instance];
        assert!(row.checked, "{row:?}");
        assert!(row.findings.is_empty(), "{row:?}");
        assert_eq!(row.jobs, 32, "{row:?}");
        assert!(
            matches!(row.status.as_str(), "optimal" | "feasible"),
            "{row:?}"
        );
        let makespan = row.makespan.expect("a schedule");
        assert!(makespan >= known.upper_bound, "{row:?}");
        assert_eq!(row.critical_path, known.critical_path.unwrap());
        assert!(row.lower_bound.unwrap() <= known.upper_bound, "{row:?}");
        assert_eq!(row.best_known, Some(known.upper_bound));
        assert_eq!(row.best_known_optimal, Some(true));
        assert!(row.pct_above_best_known.unwrap() >= 0.0);
        assert!(row.pct_above_cpm.unwrap() >= row.pct_above_best_known.unwrap());
        if row.status == "optimal" {
            assert_eq!(row.makespan, row.lower_bound, "{row:?}");
        }
    }
    let s = &report.summary;
    assert_eq!(
        (s.instances, s.checked, s.contradictions, s.errors),
        (4, 4, 0, 0)
    );
    assert!(s.passed());
    assert_eq!(report.missing_reference(), 0);
    assert!(s.max_time_s >= s.median_time_s);
    assert_eq!(
        s.equal_best_known,
        report
            .rows
            .iter()
            .filter(|r| r.makespan == r.best_known)
            .count()
    );

    let calls = progress.0.into_inner().unwrap();
    assert_eq!(
        calls.first().map(String::as_str),
        Some("start psplib Some(4)")
    );
    assert_eq!(calls.last().map(String::as_str), Some("finish"));
    assert_eq!(
        calls.iter().filter(|c| c.starts_with("advance 1 ")).count(),
        4
    );
}

#[test]
fn a_reference_below_the_critical_path_is_a_contradiction() {
    let instances = psplib::list_instances(&j30_dir(), Some("j301_1.sm"), None).unwrap();
    let mut reference = j30_reference();
    let r = reference.get_mut("j301_1").unwrap();
    // The critical path is 38: a best known makespan of 30 contradicts the proven bound.
    r.lower_bound = 30;
    r.upper_bound = 30;
    r.critical_path = Some(37);
    let report = psplib::run(
        &config(instances, reference),
        &Heuristic::default(),
        &Silent,
    )
    .unwrap();
    let row = &report.rows[0];
    assert!(row.checked, "the schedule itself is fine: {row:?}");
    assert!(!row.is_error());
    assert!(row.is_contradiction());
    assert!(row.findings.contains(&Finding::CriticalPathDiffers {
        ours: 38,
        reference: 37
    }));
    assert!(row
        .findings
        .iter()
        .any(|f| matches!(f, Finding::BoundAboveBestKnown { best_known: 30, .. })));
    let problem = row.problem().unwrap();
    assert!(
        problem.contains("above the best known makespan 30"),
        "{problem}"
    );
    assert_eq!(report.summary.contradictions, 1);
    assert!(!report.summary.passed());
}

#[test]
fn an_unreadable_instance_is_an_error_row_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("concerto-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("broken.sm");
    std::fs::write(&bad, "not a PSPLIB file\n").unwrap();
    let good = j30_dir().join("j305_1.sm");
    let report = psplib::run(
        &config(vec![bad.clone(), good], j30_reference()),
        &Heuristic::default(),
        &Silent,
    )
    .unwrap();
    let row = &report.rows[0];
    assert!(row.is_error(), "{row:?}");
    assert!(!row.checked);
    assert!(matches!(row.findings[..], [Finding::Unreadable { .. }]));
    assert!(row.problem().unwrap().contains("broken.sm"), "{row:?}");
    assert!(report.rows[1].checked);
    assert_eq!(report.summary.errors, 1);
    assert_eq!(report.summary.contradictions, 0);
    assert_eq!(report.missing_reference(), 1);
    assert!(!report.summary.passed());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn impossible_configurations_are_errors() {
    let instances = psplib::list_instances(&j30_dir(), None, Some(1)).unwrap();
    let mut c = config(instances, BTreeMap::new());
    c.jobs = 0;
    let err = psplib::run(&c, &Heuristic::default(), &Silent).unwrap_err();
    assert!(err.to_string().contains("jobs"), "{err}");

    let tiny = ScaleConfig {
        channels: 3,
        ..ScaleConfig::default()
    };
    let err = scale::run(&tiny, Arc::new(Heuristic::default()), &Silent).unwrap_err();
    assert!(matches!(err, BenchError::InvalidConfig { .. }), "{err}");
    assert!(err.to_string().contains("got 3"), "{err}");
}

#[test]
fn the_scale_bench_checks_both_schedules_at_tiny_sizes() {
    let config = ScaleConfig {
        sizes: vec![60, 120],
        block: 10,
        rounds: 1,
        window_time_limit: Duration::from_millis(50),
        start_schedules: 20,
        seed: 3,
        ..ScaleConfig::default()
    };
    let progress = Recorder::default();
    let report = scale::run(&config, Arc::new(Heuristic::default()), &progress).unwrap();
    assert_eq!(report.solver, "sgs");
    assert_eq!(report.rows.len(), 2);
    for row in &report.rows {
        assert!(row.n > 0);
        assert_eq!(row.rounds, 1, "{row:?}");
        assert_eq!(row.round_reports.len(), 1);
        assert!(row.round_reports[0].windows > 0, "{row:?}");
        assert_eq!(row.round_reports[0].makespan, row.makespan);
        // The driver never ends above its start; both makespans are checked and bounded.
        assert!(row.makespan <= row.start_makespan, "{row:?}");
        assert!(row.makespan >= row.lower_bound, "{row:?}");
        assert!(row.heuristic_makespan >= row.lower_bound, "{row:?}");
        assert!(row.gap_pct >= 0.0 && row.heuristic_gap_pct >= 0.0);
        assert!(row.time_s > 0.0);
    }
    assert!(report.rows[1].n > report.rows[0].n);
    let calls = progress.0.into_inner().unwrap();
    assert_eq!(calls.len(), 4, "{calls:?}");
    assert_eq!(calls[0], "start scale Some(2)");
    assert!(calls[1].starts_with(&format!("advance 1 n = {}:", report.rows[0].n)));
    assert_eq!(calls[3], "finish");
}
