//! `concerto optimize FILE.hlo --emit-hlo OUT.hlo`: the plan written back as a scheduled HLO
//! module, read back by `import` and `optimize`.

mod common;

use common::{concerto, scratch, stderr, stdout};

const HLO: &str = r#"HloModule tiny, entry_computation_layout={(bf16[512,1024]{1,0}, bf16[1024,1024]{1,0})->bf16[512,1024]{1,0}}

%add (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %c = bf16[] add(%a, %b)
}

ENTRY %main (x: bf16[512,1024], w: bf16[1024,1024]) -> bf16[512,1024] {
  %x = bf16[512,1024]{1,0} parameter(0)
  %w = bf16[1024,1024]{1,0} parameter(1)
  %y = bf16[512,1024]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %ar = bf16[512,1024]{1,0} all-reduce(%y), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add
  %u = bf16[512,1024]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %v = bf16[512,1024]{1,0} tanh(%u)
  %ag = bf16[4096,1024]{1,0} all-gather(%v), channel_id=2, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true
  %s = bf16[512,1024]{1,0} slice(%ag), slice={[0:512], [0:1024]}
  ROOT %z = bf16[512,1024]{1,0} add(%ar, %s)
}
"#;

#[test]
fn emit_hlo_writes_a_scheduled_module_that_imports_to_the_same_graph() {
    let dir = scratch("emit");
    let input = dir.join("tiny.hlo");
    std::fs::write(&input, HLO).unwrap();
    let (i, out) = (input.display().to_string(), dir.join("out.hlo"));
    let o = concerto(&[
        "optimize",
        &i,
        "--time-limit",
        "2",
        "--emit-hlo",
        &out.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = stdout(&o)
        .lines()
        .find(|l| l.starts_with("hlo "))
        .unwrap_or_else(|| panic!("no hlo line in\n{}", stdout(&o)))
        .to_string();
    assert!(line.contains("2 async collective pairs"), "{line}");
    assert!(line.contains("same 7 ops and dependencies"), "{line}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.starts_with("HloModule tiny, is_scheduled=true,"),
        "{text}"
    );
    assert!(
        text.contains("%ar = bf16[512,1024]{1,0} all-reduce-start(%y)"),
        "{text}"
    );
    assert!(
        text.contains("%ar.done = bf16[512,1024]{1,0} all-reduce-done(%ar)"),
        "{text}"
    );
    assert!(text.contains("all-gather-start(%v)"), "{text}");
    assert!(
        text.contains("ROOT %z = bf16[512,1024]{1,0} add(%ar.done, %s)"),
        "{text}"
    );
    // `import` reads it: the same ops and collectives as the input.
    let count = |path: &str| -> serde_json::Value {
        let o = concerto(&["import", path, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let (a, b) = (count(&i), count(&out.display().to_string()));
    assert_eq!(a["ops"], b["ops"]);
    assert_eq!(a["collectives"], b["collectives"]);
    // And `optimize` on it: its program order is the plan that was written.
    let o = concerto(&["optimize", &i, "--time-limit", "2", "--json"]);
    let first: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let o = concerto(&[
        "optimize",
        &out.display().to_string(),
        "--time-limit",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let again: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        again["program_order_ns"], first["optimized_ns"],
        "{again}\n{first}"
    );
}

#[test]
fn emit_hlo_needs_an_hlo_input() {
    let dir = scratch("emit-json");
    let graph = dir.join("g.json").display().to_string();
    let o = concerto(&["model", "gpt", "--layers", "1", "--tp", "2", "-o", &graph]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.join("out.hlo").display().to_string();
    let o = concerto(&["optimize", &graph, "--time-limit", "1", "--emit-hlo", &out]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--emit-hlo needs an XLA HLO text module as input"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("g.json"), "{}", stderr(&o));
    assert!(!std::path::Path::new(&out).exists());
}
