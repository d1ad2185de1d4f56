//! The XLA round trip, checked by XLA's own code: the scheduled modules that
//! `optimize --emit-hlo` writes are parsed by XLA's HLO parser and their schedules verified
//! (jaxlib's bindings, `python/concerto_jax/xla_check.py`); for JAX-generated train steps, the
//! original and the rescheduled module compile and run on 8 CPU devices with the same inputs
//! and give identical outputs (`python/concerto_jax/compare.py`).
//!
//! Plans for compiled H100 modules (`fixtures/hlo_gpu_export`) are also compiled by XLA's GPU
//! backend, deviceless (`python/concerto_jax/pjrt_gpu.py`), their thunks checked to come out
//! in the plan's order.
//!
//! These tests need the JAX virtual environment that `scripts/pyenv` creates (its python in
//! `CONCERTO_PYTHON`), for the compiled modules the one `scripts/pyenv-xla-gpu` creates (its
//! python in `CONCERTO_PYTHON_XLA_GPU`); the real train steps are the repository's
//! (`data/hlo`). They are `#[ignore]`d in a plain `cargo test`; `scripts/test` (the README's
//! test command) installs the environment and runs them with `--ignored`. Run that way, a
//! missing environment is a failure, never a skip.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use concerto_extract::hlo::{self, ImportOptions};
use concerto_graph::Hardware;
use concerto_pipeline::{schedule, ScheduleConfig};
use concerto_rcpsp::Solver;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The python of the JAX environment; a failure naming the setup when it is not there.
fn python() -> PathBuf {
    let p = std::env::var_os("CONCERTO_PYTHON").unwrap_or_else(|| {
        panic!(
            "CONCERTO_PYTHON is not set: these tests need the JAX environment; run \
             `CONCERTO_PYTHON=$(scripts/pyenv | tail -n 1) cargo test -p concerto-tests --test xla -- --ignored` \
             or scripts/test"
        )
    });
    let p = PathBuf::from(p);
    assert!(p.exists(), "CONCERTO_PYTHON={} does not exist", p.display());
    p
}

/// The real XLA train steps of the repository's data folder (`data/hlo/<name>.hlo.gz`).
fn xla_step(name: &str) -> PathBuf {
    root().join("data/hlo").join(format!("{name}.hlo.gz"))
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("concerto-xla-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `python -m concerto_jax.<module> args`; returns stdout, failing with its output.
fn jax(module: &str, args: &[&str]) -> String {
    let o = Command::new(python())
        .args(["-m", &format!("concerto_jax.{module}")])
        .args(args)
        .env("PYTHONPATH", root().join("python"))
        .output()
        .expect("python runs");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(
        o.status.success(),
        "concerto_jax.{module} {args:?} failed ({}):\n{out}\n{err}",
        o.status
    );
    out
}

/// Checks with XLA: every file parses with `is_scheduled=true` and its schedule verifies.
fn xla_verifies(files: &[PathBuf]) {
    let args: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = jax("xla_check", &args);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), files.len(), "{out}");
    for v in &lines {
        assert_eq!(v["parsed"], true, "{v}");
        assert_eq!(v["scheduled"], true, "{v}");
        assert_eq!(v["verified"], true, "{v}");
    }
}

fn pumpkin() -> Arc<dyn Solver> {
    concerto_backends::registry().get("pumpkin").unwrap().into()
}

/// Imports `input`, schedules it (S) with a short time limit, writes the plan as a scheduled
/// module to `out` (checked: same ops and dependencies, replay = plan) and returns what the
/// exporter says.
fn emit(input: &Path, out: &Path) -> hlo::Checked {
    let text = concerto_extract::read::read_text(input).unwrap_or_else(|e| panic!("{e}"));
    let module = hlo::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    let options = ImportOptions::default();
    let (graph, _) = hlo::lower(&module, &options).unwrap();
    let config = ScheduleConfig {
        time_limit: Some(Duration::from_secs(3)),
        ..ScheduleConfig::default()
    };
    let s = schedule(&graph, &Hardware::h100(), pumpkin(), &config).unwrap();
    let c = s.concerto();
    let checked = hlo::export_checked(
        &module,
        &graph,
        &c.plan,
        &c.timeline,
        &s.durations,
        s.contention,
        &options,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    assert_eq!(
        checked.replay.makespan,
        c.makespan_ns(),
        "{}",
        input.display()
    );
    std::fs::write(out, &checked.exported.text).unwrap();
    checked
}

#[test]
#[ignore = "needs the JAX environment (scripts/pyenv): scripts/test runs it"]
fn xla_parses_and_verifies_the_real_train_steps_concerto_schedules() {
    let dir = scratch("xla-steps");
    let mut written = Vec::new();
    for m in [
        "llama31_8b_bf16_1x8",
        "llama31_70b_bf16_32x8",
        "mixtral_8x7b_bf16_2x8",
    ] {
        let out = dir.join(format!("{m}.scheduled.hlo"));
        let c = emit(&xla_step(m), &out);
        assert!(
            c.exported.async_pairs > 400,
            "{m}: {} async pairs",
            c.exported.async_pairs
        );
        written.push(out);
    }
    xla_verifies(&written);
}

/// Runs `python -m concerto_jax.dump` for one train step into `dir`; returns its name.
fn dump(dir: &Path, parallel: &str, scan: bool) -> String {
    let name = format!("gpt_{parallel}{}", if scan { "_scan" } else { "" });
    let out = dir.display().to_string();
    let mut args = vec![
        "--parallel",
        parallel,
        "--out",
        &out,
        "--name",
        &name,
        "--layers",
        "2",
        "--d-model",
        "64",
        "--heads",
        "8",
        "--seq",
        "32",
        "--batch",
        "16",
        "--vocab",
        "128",
    ];
    if scan {
        args.push("--scan");
    }
    jax("dump", &args);
    name
}

/// Data, tensor, FSDP-style and mixed parallelism (and a `lax.scan` loop), dumped by JAX on 8
/// CPU devices: Concerto imports every file (after SPMD partitioning and after XLA's
/// optimisations), writes its plan back (same ops and dependencies, replay = plan), XLA
/// verifies every written schedule, and the rescheduled SPMD modules compute exactly what the
/// originals compute.
#[test]
#[ignore = "needs the JAX environment (scripts/pyenv): scripts/test runs it"]
fn generated_train_steps_round_trip_through_xla() {
    let dir = scratch("generated");
    let mut written = Vec::new();
    let mut same_numbers = Vec::new();
    for (parallel, scan) in [
        ("dp", false),
        ("tp", false),
        ("fsdp", false),
        ("mix", false),
        ("dp", true),
    ] {
        let name = dump(&dir, parallel, scan);
        for stage in ["spmd", "opt"] {
            let input = dir.join(format!("{name}.{stage}.hlo"));
            let out = dir.join(format!("{name}.{stage}.scheduled.hlo"));
            let c = emit(&input, &out);
            assert!(c.exported.async_pairs > 0, "{name}.{stage}: no collective");
            if scan && stage == "spmd" {
                assert!(
                    c.exported.unrolled_iterations >= 2,
                    "{name}: no loop unrolled"
                );
            }
            if stage == "spmd" && !scan {
                same_numbers.push((input, out.clone()));
            }
            written.push(out);
        }
    }
    xla_verifies(&written);
    for (original, rescheduled) in &same_numbers {
        let out = jax(
            "compare",
            &[
                &original.display().to_string(),
                &rescheduled.display().to_string(),
            ],
        );
        let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(v["identical"], true, "{v}");
        assert!(v["outputs"].as_u64().unwrap() > 0, "{v}");
    }
}

/// The python of the XLA GPU environment (`scripts/pyenv-xla-gpu`: jax with the CUDA plugin),
/// from `CONCERTO_PYTHON_XLA_GPU`; a failure naming the setup when it is not there.
fn python_xla_gpu() -> PathBuf {
    let p = std::env::var_os("CONCERTO_PYTHON_XLA_GPU").unwrap_or_else(|| {
        panic!(
            "CONCERTO_PYTHON_XLA_GPU is not set: this test needs XLA's GPU compiler; run \
             `CONCERTO_PYTHON_XLA_GPU=$(scripts/pyenv-xla-gpu | tail -n 1) cargo test -p concerto-tests --test xla -- --ignored` \
             or scripts/test"
        )
    });
    let p = PathBuf::from(p);
    assert!(
        p.exists(),
        "CONCERTO_PYTHON_XLA_GPU={} does not exist",
        p.display()
    );
    p
}

/// Runs `python -m concerto_jax.<module> args` with the XLA GPU environment; returns the
/// exit status and stdout.
fn jax_gpu(module: &str, args: &[&str]) -> (bool, String, String) {
    let o = Command::new(python_xla_gpu())
        .args(["-m", &format!("concerto_jax.{module}")])
        .args(args)
        .env("PYTHONPATH", root().join("python"))
        .output()
        .expect("python runs");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Concerto's plan for each compiled H100 module of `fixtures/hlo_gpu_export` (XLA's
/// after-optimizations modules: fusions, cuBLAS custom-calls, async collectives, XLA's own
/// schedule) is written into the module's own text (every line but the entry's order kept),
/// checked (same ops and dependencies, replay = plan), parsed and schedule-verified by XLA,
/// and compiled by XLA's GPU backend deviceless (the CUDA plugin's PJRT C API): the thunks
/// come out in the plan's order, and XLA's buffer assignment of the plan is reported.
#[test]
#[ignore = "needs XLA's GPU compiler (scripts/pyenv-xla-gpu): scripts/test runs it"]
fn concerto_plans_for_compiled_modules_compile_with_xla_gpu_in_order() {
    let dir = scratch("compiled");
    let fixtures = root().join("fixtures/hlo_gpu_export");
    let mut written = Vec::new();
    let mut lines = Vec::new();
    for name in [
        "gpt_mix2x4_l2_triton",
        "gpt_mix2x4_l2_cublas",
        "gpt_fsdp8_l1_cublas",
    ] {
        let input = fixtures.join(format!("{name}.hlo"));
        let text = std::fs::read_to_string(&input).unwrap();
        let module = hlo::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let options = ImportOptions::default();
        let (graph, _) = hlo::lower(&module, &options).unwrap();
        let config = ScheduleConfig {
            time_limit: Some(Duration::from_secs(3)),
            ..ScheduleConfig::default()
        };
        let s = schedule(&graph, &Hardware::h100(), pumpkin(), &config).unwrap();
        let c = s.concerto();
        let checked = hlo::export_verbatim_checked(
            &text,
            &graph,
            &c.plan,
            &c.timeline,
            &s.durations,
            s.contention,
            &options,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let e = &checked.exported;
        assert_eq!(checked.replay.makespan, c.makespan_ns(), "{name}");
        assert_eq!(e.verbatim_instructions, e.entry_instructions, "{name}");
        let out = dir.join(format!("{name}.concerto.hlo"));
        let order = dir.join(format!("{name}.concerto.order"));
        std::fs::write(&out, &e.text).unwrap();
        std::fs::write(&order, e.sequence.join("\n")).unwrap();
        let (ok, stdout, stderr) = jax_gpu(
            "pjrt_gpu",
            &[
                &out.display().to_string(),
                "--expect-order",
                &order.display().to_string(),
                "--json",
            ],
        );
        let v: serde_json::Value = stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .unwrap_or_else(|| panic!("{name}: no JSON from pjrt_gpu\n{stdout}\n{stderr}"));
        assert!(ok, "{name}: {v}");
        assert_eq!(v["error"], serde_json::Value::Null, "{name}: {v}");
        assert_eq!(v["order_equal"], true, "{name}: {v}");
        assert!(v["compared"].as_u64().unwrap() > 50, "{name}: {v}");
        assert!(v["peak_bytes"].as_u64().unwrap() > 0, "{name}: {v}");
        // XLA's own schedule, compiled the same way, for its buffer assignment.
        let (ok, xla_out, xla_err) = jax_gpu("pjrt_gpu", &[&input.display().to_string(), "--json"]);
        let x: serde_json::Value = xla_out
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .unwrap_or_else(|| panic!("{name}: no JSON from pjrt_gpu\n{xla_out}\n{xla_err}"));
        assert!(ok, "{name} (XLA's order): {x}");
        let model = concerto_graph::memory::profile(&graph, &c.timeline).unwrap();
        let xla_plan = concerto_graph::StreamPlan::program_order(&graph).unwrap();
        let xla_timeline =
            concerto_graph::simulate(&graph, &xla_plan, &s.durations, s.contention).unwrap();
        let xla_model = concerto_graph::memory::profile(&graph, &xla_timeline).unwrap();
        lines.push(format!(
            "{name}: {} instructions ({} is_sync flags changed), {} thunks in the plan's order, \
             compiled in {} s; makespan concerto {} ns / program order {} ns; memory of \
             concerto's plan: XLA's buffer assignment {} B (temp {} B), concerto's model {} B \
             (transient {} B); of XLA's order: XLA {} B (temp {} B), model {} B (transient {} B)",
            e.entry_instructions,
            e.is_sync_changed.len(),
            v["compared"],
            v["compile_s"],
            c.makespan_ns(),
            xla_timeline.makespan,
            v["peak_bytes"],
            v["temp_bytes"],
            model.peak_bytes,
            model.transient_peak_bytes(),
            x["peak_bytes"],
            x["temp_bytes"],
            xla_model.peak_bytes,
            xla_model.transient_peak_bytes(),
        ));
        written.push(out);
    }
    // XLA's parser and schedule verifier, as for every other written module.
    let args: Vec<String> = written.iter().map(|f| f.display().to_string()).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out, err) = jax_gpu("xla_check", &args);
    assert!(ok, "xla_check failed:\n{out}\n{err}");
    for l in out.lines().filter(|l| l.starts_with('{')) {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["verified"], true, "{v}");
    }
    for l in &lines {
        eprintln!("{l}");
    }
}
