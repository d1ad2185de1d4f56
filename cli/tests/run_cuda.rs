//! `concerto run-cuda` end to end: without a GPU, exit 2 with a message naming CUDA; with one,
//! the comparison table.

mod common;

use common::{concerto, scratch, stderr, stdout};

/// A GPT with 8-way tensor parallelism, written to `dir/gpt.json`.
fn gpt_tp8(dir: &std::path::Path) -> String {
    let path = dir.join("gpt.json").display().to_string();
    let o = concerto(&[
        "model", "gpt", "--layers", "2", "--hidden", "1024", "--heads", "16", "--seq", "1024",
        "--tp", "8", "-o", &path,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    path
}

#[test]
fn run_cuda_needs_a_gpu_or_prints_the_comparison() {
    let dir = scratch("run-cuda");
    let graph = gpt_tp8(&dir);
    let o = concerto(&["run-cuda", &graph, "--time-limit", "2", "--repeats", "2"]);
    let (out, err) = (stdout(&o), stderr(&o));
    if o.status.success() {
        // A GPU is present.
        for word in ["scheduler", "simulated_ms", "measured_ms", "diff"] {
            assert!(out.contains(word), "`{word}` not in:\n{out}");
        }
        assert!(
            out.contains("program-order") && out.contains("concerto"),
            "{out}"
        );
    } else {
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("error: no CUDA driver/GPU: "), "{err}");
        assert!(err.contains("CUDA"), "{err}");
    }
}

#[test]
fn run_cuda_rejects_bad_input_before_looking_for_a_gpu() {
    let dir = scratch("run-cuda-bad");
    let graph = gpt_tp8(&dir);
    let o = concerto(&["run-cuda", &graph, "--repeats", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--repeats"), "{}", stderr(&o));
    let missing = dir.join("missing.json").display().to_string();
    let o = concerto(&["run-cuda", &graph, "--plan", &missing]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing.json"), "{}", stderr(&o));
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"format\": \"concerto-plan\"}").unwrap();
    let o = concerto(&["run-cuda", &graph, "--plan", &bad.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("reading plan"), "{}", stderr(&o));
    let o = concerto(&["run-cuda", "--help"]);
    assert!(o.status.success());
    for flag in [
        "--plan",
        "--comm",
        "--device",
        "--repeats",
        "--trace",
        "--json",
        "--hardware",
        "--time-limit",
    ] {
        assert!(stdout(&o).contains(flag), "`{flag}` not in the help");
    }
}
