//! `concerto import`: the memory line and its JSON fields (resident bytes, step outputs, the
//! program order's peak and the lower bound), exact on a small module.

mod common;

use common::{concerto, scratch, stderr, stdout};

/// Two parameters (4 KiB + 1 KiB resident); `b` and `c` reach the root (8 KiB of step
/// outputs); `c` runs with `a`, `b`, the all-reduce's buffer and its own output live.
const MODULE: &str = r#"HloModule m, num_partitions=8

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (p: f32[1024], q: f32[256]) -> (f32[1024], f32[1024]) {
  %p = f32[1024]{0} parameter(0)
  %q = f32[256]{0} parameter(1)
  %a = f32[1024]{0} exponential(%p)
  %b = f32[1024]{0} negate(%a)
  %ar = f32[1024]{0} all-reduce(%b), replica_groups={}, to_apply=%sum
  %c = f32[1024]{0} multiply(%ar, %a)
  ROOT %t = (f32[1024]{0}, f32[1024]{0}) tuple(%c, %b)
}
"#;

#[test]
fn import_reports_the_memory_of_the_module() {
    let dir = scratch("import-memory");
    let file = dir.join("m.hlo");
    std::fs::write(&file, MODULE).unwrap();
    let path = file.to_str().unwrap();

    let o = concerto(&["import", path, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(v["ops"], 4, "{v}");
    assert_eq!(v["resident_bytes"], 4096 + 1024, "{v}");
    assert_eq!(v["live_out_bytes"], 2 * 4096, "{v}");
    // While `c` runs: `a`, `b`, the all-reduce's result and `c`, on top of the parameters.
    assert_eq!(v["peak_memory_bytes"], 5120 + 4 * 4096, "{v}");
    // `c` with its three inputs' tensors: its own, the all-reduce's and `a`.
    assert_eq!(v["peak_lower_bound_bytes"], 5120 + 3 * 4096, "{v}");

    let o = concerto(&["import", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(
            "memory        resident 0.00 GiB, step outputs 0.00 GiB, peak 0.00 GiB in program \
             order (lower bound 0.00 GiB)\n"
        ),
        "{text}"
    );
    // The lines before it are unchanged.
    for line in ["module        m\n", "ops           4 (1 collectives)\n"] {
        assert!(text.contains(line), "`{line}` not in:\n{text}");
    }
}

#[test]
fn import_reads_a_native_graph_json_too() {
    let dir = scratch("import-native");
    let path = dir.join("gpt.json").display().to_string();
    let o = concerto(&[
        "model", "gpt", "--layers", "1", "--hidden", "512", "--heads", "8", "--seq", "256", "--dp",
        "2", "-o", &path,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = concerto(&["import", &path]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("format        native graph JSON"), "{text}");
    assert!(text.contains("all-reduce"), "{text}");
    let o = concerto(&["import", &path, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        v.get("instructions").is_none(),
        "no HLO instructions for a native graph"
    );
    let graph: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        v["ops"].as_u64().unwrap() as usize,
        graph["ops"].as_array().unwrap().len()
    );
    assert!(v["resident_bytes"].as_u64().unwrap() > 0);
}

/// A reader that stops early (`concerto import TRACE | head -1`) ends the command quietly
/// with exit status 0, for the text report and for JSON: no panic message, no error.
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    use std::process::{Command, Stdio};
    let trace = format!(
        "{}/../fixtures/kineto/ddp_3steps.json",
        env!("CARGO_MANIFEST_DIR")
    );
    for args in [
        vec!["import", trace.as_str()],
        vec!["import", trace.as_str(), "--json"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_concerto"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the pipe before the command writes (it reads and imports the trace first),
        // as a reader that has all it wants does.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    }
}
