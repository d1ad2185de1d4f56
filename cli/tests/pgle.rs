//! `concerto optimize COMPILED.gpu.hlo --emit-pgle P.pbtxt --emit-pgle-steer S.pbtxt`: the
//! PGLE profiles of a compiled module (concerto's costs; the plan's overlaps as latencies).

mod common;

use common::{concerto, scratch, stderr, stdout};

#[test]
fn emit_pgle_writes_both_profiles_for_the_modules_names() {
    let dir = scratch("pgle");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/hlo_gpu/gpt_mix2x4_l1_cublas.gpu.hlo");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let (p, s) = (dir.join("costs.pbtxt"), dir.join("steer.pbtxt"));
    let o = concerto(&[
        "optimize",
        &fixture.display().to_string(),
        "--time-limit",
        "2",
        "--json",
        "--emit-pgle",
        &p.display().to_string(),
        "--emit-pgle-steer",
        &s.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("latencies steered"), "{}", stderr(&o));
    // The module's own schedule is the `xla` baseline the profile will be compared with.
    assert!(stdout(&o).contains("\"xla_ns\""), "{}", stdout(&o));
    let (costs, steer) = (
        std::fs::read_to_string(&p).unwrap(),
        std::fs::read_to_string(&s).unwrap(),
    );
    let names = |t: &str| -> Vec<String> {
        t.lines()
            .filter_map(|l| l.strip_prefix("costs { name: \""))
            .map(|l| l.split('"').next().unwrap().to_string())
            .collect()
    };
    // The same instructions in both, each one of the module's.
    assert_eq!(names(&costs), names(&steer));
    assert!(names(&costs).len() > 20);
    for n in names(&costs) {
        assert!(
            text.contains(&format!("%{n} = ")),
            "{n} is no instruction of the module"
        );
    }
    let latencies = |t: &str| t.lines().filter(|l| l.starts_with("latencies {")).count();
    assert!(latencies(&costs) > 0);
    assert_eq!(latencies(&costs), latencies(&steer));
    assert_ne!(
        costs, steer,
        "the plan's overlaps are not the collectives' durations"
    );
}

#[test]
fn emit_pgle_needs_an_hlo_module() {
    let dir = scratch("pgle-json");
    let g = dir.join("g.json");
    let o = concerto(&[
        "model",
        "gpt",
        "--layers",
        "1",
        "-o",
        &g.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = concerto(&[
        "optimize",
        &g.display().to_string(),
        "--time-limit",
        "1",
        "--emit-pgle",
        &dir.join("p.pbtxt").display().to_string(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--emit-pgle needs an XLA HLO text module"),
        "{}",
        stderr(&o)
    );
}
