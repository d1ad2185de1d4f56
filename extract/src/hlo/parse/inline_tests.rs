//! Tests of the grammar XLA's own test modules use and the printer never writes: computations
//! written inline, operands that are a bare shape, and unbounded dimensions with a size given.
//! Each module here is one of XLA's (`xla/service/call_inliner_test.cc`,
//! `xla/hlo/transforms/simplifiers/hlo_dce_test.cc`, `xla/hlo/parser/hlo_parser_test.cc`,
//! `xla/hlo/separate_compilation/hlo_module_splitting_test.cc`), cut down.

use super::*;
use crate::hlo::{lower, ImportOptions, Shape};

/// Parses `text`, panicking with the error on failure.
fn ok(text: &str) -> Module {
    parse(text).unwrap_or_else(|e| panic!("{e}\n--- input:\n{text}"))
}

/// An async call whose computation is written inline, with an instruction of the same name
/// as one of the caller's and a shape left to infer.
const ASYNC_CALL: &str = r#"HloModule m

ENTRY main {
  arg.0 = s32[] parameter(0)
  call-start.0 = ((s32[]), s32[], s32[]) call-start(arg.0), to_apply={
    arg.0 = s32[] parameter(0)
    ROOT abs.0 = abs(arg.0)
  }, async_execution_thread="thread"
  ROOT call-done.0 = s32[] call-done(call-start.0)
}
"#;

#[test]
fn a_computation_written_inline_becomes_one_of_the_module_before_its_caller() {
    let m = ok(ASYNC_CALL);
    let names: Vec<&str> = m.computations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["call-start.0.to_apply", "main"]);
    assert!(m.computations[1].is_entry);
    let inner = &m.computations[0];
    assert!(!inner.is_entry);
    assert_eq!(inner.instructions.len(), 2);
    assert_eq!(inner.instructions[inner.root].name, "abs.0");
    // The shape left out is inferred from the inline computation's own parameter.
    assert_eq!(inner.instructions[1].shape.dims(), &[] as &[u64]);
    assert!(matches!(&inner.instructions[1].shape, Shape::Array { dtype, .. } if dtype == "s32"));
    let start = &m.computations[1].instructions[1];
    assert_eq!(
        start.attribute("to_apply").unwrap().value,
        "%call-start.0.to_apply"
    );
    assert_eq!(
        start.attribute("async_execution_thread").unwrap().value,
        "\"thread\""
    );
    // The line and column of the inline computation are its `{`.
    assert_eq!((inner.pos.line, inner.pos.column), (5, 70));
}

#[test]
fn calls_nested_inline_infer_their_shapes_and_import() {
    // `call_inliner_test.cc`: a call whose inline computation holds a call written inline.
    let text = r#"HloModule test
ENTRY main {
  c.0 = s32[] constant(1)
  c.1 = s32[] constant(2)
  t = (s32[], s32[]) tuple(c.0, c.1)
  ROOT call.0 = call(t), to_apply={
    arg.0 = (s32[], s32[]) parameter(0)
    ROOT call.0 = call(arg.0), to_apply={
      arg.0 = (s32[], s32[]) parameter(0)
      gte.0 = get-tuple-element(arg.0), index=0
      gte.1 = get-tuple-element(arg.0), index=1
      ROOT add.0 = add(gte.0, gte.1)
    }
  }
}
"#;
    let m = ok(text);
    let names: Vec<&str> = m.computations.iter().map(|c| c.name.as_str()).collect();
    // The innermost is complete first, so it comes first.
    assert_eq!(
        names,
        ["call.0.to_apply.1", "call.0.to_apply", "main"],
        "the inner one is named apart from the outer one's name"
    );
    let root = &m.computations[2].instructions[m.computations[2].root];
    assert!(
        matches!(&root.shape, Shape::Array { dtype, dims, .. } if dtype == "s32" && dims.is_empty())
    );
    lower(&m, &ImportOptions::default()).unwrap();
}

#[test]
fn loops_and_lists_of_computations_written_inline() {
    let text = r#"HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY e {
  p = s32[] parameter(0)
  i = s32[] constant(0)
  t = (s32[]) tuple(i)
  w = (s32[]) while(t), condition={
    s = (s32[]) parameter(0)
    g = s32[] get-tuple-element(s), index=0
    n = s32[] constant(3)
    ROOT lt = pred[] compare(g, n), direction=LT
  }, body={
    s = (s32[]) parameter(0)
    g = s32[] get-tuple-element(s), index=0
    one = s32[] constant(1)
    next = s32[] add(g, one)
    ROOT r = (s32[]) tuple(next)
  }
  f = f32[] constant(1)
  ROOT c = f32[] conditional(p, f, f), branch_computations={{
    a = f32[] parameter(0)
    ROOT n = f32[] negate(a)
  }, %add.1}
}
"#;
    // `%add.1` is not defined: the list is read, the name checked where it is used.
    let m = ok(&text.replace("%add.1}", "%add}"));
    let w = &m.computations.last().unwrap().instructions[3];
    assert_eq!(w.attribute("condition").unwrap().value, "%w.condition");
    assert_eq!(w.attribute("body").unwrap().value, "%w.body");
    let c = m.computations.last().unwrap().instructions.last().unwrap();
    assert_eq!(
        c.attribute("branch_computations").unwrap().value,
        "{%c.branch_computations.0, %add}"
    );
    // The loop's trip count is read from the computations written inline.
    let (g, _) = lower(&m, &ImportOptions::default()).unwrap();
    assert!(g.len() >= 3, "{}", g.len());
}

#[test]
fn errors_inside_a_computation_written_inline_name_their_place() {
    let broken = ASYNC_CALL.replace("ROOT abs.0 = abs(arg.0)", "ROOT abs.0 = abs(arg.0");
    let e = parse(&broken).unwrap_err().to_string();
    assert!(e.contains("line 7"), "{e}");
    let empty = "HloModule m\nENTRY e {\n  p = s32[] parameter(0)\n  ROOT c = s32[] call(p), to_apply={ x = s32[] parameter(0) }\n}\n";
    ok(empty);
    let unclosed = "HloModule m\nENTRY e {\n  p = s32[] parameter(0)\n  ROOT c = s32[] call(p), to_apply={\n    x = s32[] parameter(0)\n";
    let e = parse(unclosed).unwrap_err().to_string();
    assert!(e.contains("c.to_apply") && e.contains("not closed"), "{e}");
    // A later computation may not take the name an inline one was given.
    let clash = format!(
        "{}\n%call-start.0.to_apply (x: s32[]) -> s32[] {{\n  ROOT %x = s32[] parameter(0)\n}}\n",
        ASYNC_CALL.replace("ENTRY main", "main")
    );
    let e = parse(&clash).unwrap_err().to_string();
    assert!(e.contains("written inline at line 5"), "{e}");
    // Nesting is bounded: no stack overflow.
    let mut deep =
        String::from("HloModule m\nENTRY e {\n  p = s32[] parameter(0)\n  ROOT c = s32[] call(p)");
    for _ in 0..40 {
        deep.push_str(", to_apply={\n x = s32[] parameter(0)\n ROOT c = s32[] call(x)");
    }
    let e = parse(&deep).unwrap_err().to_string();
    assert!(e.contains("nested deeper than 32"), "{e}");
}

/// XLA's parser skips an operand that is a shape with no name (it records an error it never
/// reports): `hlo_module_splitting_test.cc` has `add(f32[] %fusion, f32[], %res.23)`, which
/// XLA reads as `add(%fusion, %res.23)`.
#[test]
fn an_operand_that_is_a_bare_shape_is_skipped_as_xla_skips_it() {
    for ops in [
        "f32[] %a, f32[], %b",
        "f32[], %a, %b",
        "%a, %b, f32[]",
        "%a, s32[] , %b",
    ] {
        let text = format!(
            "HloModule m\nENTRY e {{\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT r = f32[] add({ops})\n}}\n"
        );
        let m = ok(&text);
        let r = &m.computations[0].instructions[2];
        assert_eq!(r.operands, ["a", "b"], "{ops}");
    }
}

#[test]
fn an_unbounded_dimension_takes_the_size_given() {
    let text = "HloModule m\nENTRY e {\n  %a = f32[?,8] parameter(0)\n  ROOT %r = f32[?,8]{1,0} negate(%a)\n}\n";
    let e = parse(text).unwrap_err().to_string();
    assert!(
        e.contains("unbounded") && e.contains("--unbounded-dim-size"),
        "{e}"
    );
    let options = ParseOptions {
        unbounded_dim_size: Some(16),
    };
    let m = parse_with(text, &options).unwrap();
    let r = &m.computations[0].instructions[1];
    assert_eq!(r.shape.dims(), &[16, 8]);
    assert_eq!(r.shape_text, "f32[?,8]{1,0}", "the text keeps the `?`");
    let import = ImportOptions {
        unbounded_dim_size: Some(16),
        ..ImportOptions::default()
    };
    assert_eq!(import.parse_options(), options);
}
