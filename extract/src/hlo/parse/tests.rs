//! Tests of the HLO parser: well-formed modules, and malformed input named by line and column.

use super::*;
use crate::hlo::{ReplicaGroups, Shape};

/// Parses `text`, panicking with the error on failure.
fn ok(text: &str) -> Module {
    match parse(text) {
        Ok(m) => m,
        Err(e) => panic!("{e}\n--- input:\n{text}"),
    }
}

/// Parses `text`, which must fail; returns the error's line, column and message.
fn err(text: &str) -> (usize, usize, String) {
    match parse(text) {
        Ok(m) => panic!("parsed, expected an error: {m:?}"),
        Err(HloError::Syntax {
            line,
            column,
            message,
        }) => (line, column, message),
        Err(e) => panic!("not a syntax error: {e}"),
    }
}

/// Asserts that `text` fails at `line`:`column` with a message containing `fragment`.
#[track_caller]
fn fails(text: &str, line: usize, column: usize, fragment: &str) {
    let (l, c, m) = err(text);
    assert!(
        (l, c) == (line, column) && m.contains(fragment),
        "got line {l}, column {c}: {m}\nexpected line {line}, column {column}: ..{fragment}.."
    );
}

fn array(dtype: &str, dims: &[u64], layout: Option<&[u64]>) -> Shape {
    Shape::Array {
        dtype: dtype.into(),
        dims: dims.to_vec(),
        layout: layout.map(<[u64]>::to_vec),
    }
}

const SAMPLE: &str = r#"HloModule jit_step, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }, entry_computation_layout={(f32[2]{0}, bf16[2,8]{1,0})->(f32[2]{0}, bf16[16]{0})}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

%fused {
  %p0 = f32[2]{0} parameter(0)
  ROOT %neg = f32[2]{0} negate(f32[2]{0} %p0)
}

ENTRY %main.1_spmd (a: f32[2], b: bf16[2,8]) -> (f32[2], bf16[16]) {
  %a = f32[2]{0} parameter(0), sharding={replicated}
  %b = bf16[2,8]{1,0} parameter(1)
  %ar = f32[2]{0} all-reduce(%a), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %f = f32[2]{0} fusion(%ar), kind=kLoop, calls=%fused, metadata={op_name="jit(step)/neg" source_file="/x/y.py" source_line=3}
  %ags = (bf16[2]{0}, bf16[16]{0}) all-gather-start(%b), channel_id=2, replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}
  %agd = bf16[16]{0} all-gather-done(%ags)
  ROOT %t = (f32[2]{0}, bf16[16]{0}) tuple(%f, /*index=1*/%agd)
}
"#;

#[test]
fn parses_a_module() {
    let m = ok(SAMPLE);
    assert_eq!(m.name, "jit_step");
    let names: Vec<&str> = m.attributes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "is_scheduled",
            "input_output_alias",
            "entry_computation_layout"
        ]
    );
    assert_eq!(
        m.attributes[1].value,
        "{ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }"
    );
    assert_eq!(
        m.attributes[2].value,
        "{(f32[2]{0}, bf16[2,8]{1,0})->(f32[2]{0}, bf16[16]{0})}"
    );
    assert_eq!(
        m.attributes[0].pos,
        Pos {
            line: 1,
            column: 34
        }
    );
    assert_eq!(m.computations.len(), 3);
    assert_eq!(m.entry, 2);
    assert_eq!(m.entry().name, "main.1_spmd");
    assert!(m.entry().is_entry && !m.computations[0].is_entry);
    assert_eq!(
        m.entry().pos,
        Pos {
            line: 14,
            column: 1
        }
    );

    let add = m.computation("add").unwrap();
    assert_eq!(add.root, 2);
    assert_eq!(add.instructions[0].literal.as_deref(), Some("0"));
    assert_eq!(add.instructions[2].operands, ["x", "y"]);
    assert!(add.instructions[2].is_root);

    let fused = m.computation("fused").unwrap();
    assert_eq!(
        fused.instructions[1].operands,
        ["p0"],
        "shape prefix dropped"
    );
    assert_eq!(fused.root, 1);

    let e = m.entry();
    assert_eq!(e.instructions.len(), 7);
    assert_eq!(e.root, 6);
    let ar = &e.instructions[2];
    assert_eq!(ar.opcode, "all-reduce");
    assert_eq!(
        ar.pos,
        Pos {
            line: 17,
            column: 3
        }
    );
    let rg = ar.attribute("replica_groups").unwrap();
    assert_eq!(rg.value, "{{0,1},{2,3}}");
    assert_eq!(
        rg.replica_groups().unwrap(),
        ReplicaGroups::Explicit(vec![vec![0, 1], vec![2, 3]])
    );
    assert_eq!(
        ar.attribute("to_apply").unwrap().computation().unwrap(),
        "add"
    );
    assert_eq!(ar.attribute("channel_id").unwrap().integer().unwrap(), 1);
    let f = &e.instructions[3];
    assert_eq!(f.attribute("kind").unwrap().value, "kLoop");
    assert_eq!(
        f.attribute("calls").unwrap().computation().unwrap(),
        "fused"
    );
    assert_eq!(
        f.attribute("metadata").unwrap().value,
        r#"{op_name="jit(step)/neg" source_file="/x/y.py" source_line=3}"#
    );
    let ags = &e.instructions[4];
    assert_eq!(
        ags.shape,
        Shape::Tuple(vec![
            array("bf16", &[2], Some(&[0])),
            array("bf16", &[16], Some(&[0]))
        ])
    );
    assert_eq!(
        ags.attribute("replica_groups")
            .unwrap()
            .replica_groups()
            .unwrap()
            .expand(),
        vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7]]
    );
    assert_eq!(
        ags.attribute("dimensions").unwrap().dims().unwrap(),
        vec![0]
    );
    let agd = &e.instructions[5];
    assert_eq!(
        (agd.opcode.as_str(), agd.operands.as_slice()),
        ("all-gather-done", &["ags".to_string()][..])
    );
    assert_eq!(e.instructions[6].operands, ["f", "agd"]);
    assert_eq!(
        e.instructions[0].attribute("sharding").unwrap().value,
        "{replicated}"
    );
}

#[test]
fn async_pair_and_iota_replica_groups() {
    let m = ok("HloModule m\nENTRY %e (p: bf16[2]) -> bf16[16] {\n  %p = bf16[2]{0} parameter(0)\n  %ags = (bf16[2]{0}, bf16[16]{0}) all-gather-start(%p), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}\n  ROOT %agd = bf16[16]{0} all-gather-done(%ags)\n}\n");
    let e = m.entry();
    let ags = &e.instructions[1];
    assert_eq!(ags.opcode, "all-gather-start");
    let rg = ags.attribute("replica_groups").unwrap();
    assert_eq!(rg.value, "[1,8]<=[8]");
    assert_eq!(
        rg.pos,
        Pos {
            line: 4,
            column: 87
        }
    );
    assert_eq!(
        rg.replica_groups().unwrap(),
        ReplicaGroups::Iota {
            groups: 1,
            size: 8,
            reshape: vec![8],
            transpose: None
        }
    );
    assert_eq!(e.instructions[2].operands, ["ags"]);
    assert_eq!(e.root, 2);
}

#[test]
fn while_fusion_custom_call_and_constants() {
    let text = r#"HloModule m
%c (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  %k = s32[] constant(4)
  ROOT %lt = pred[] compare(%s, %k), direction=LT
}
%b (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %n = s32[] add(s32[] %s, s32[] %one)
}
%fused (p: f32[2,2]) -> f32[2,2] {
  ROOT %p = f32[2,2]{1,0} parameter(0)
}
ENTRY %main {
  %z = s32[] constant(0)
  %w = s32[] while(%z), condition=%c, body=%b, backend_config={"known_trip_count":{"n":"4"}}
  %v = f32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })
  %inf = f32[] constant(-inf)
  %dots = f32[8]{0} constant({...})
  %io = s32[8]{0} iota(), iota_dimension=0
  %fu = f32[2,2]{1,0} fusion(%v), kind=kLoop, calls=%fused
  %cc = (f32[2,2]{1,0}, u8[48]{0}) custom-call(%fu, %v), custom_call_target="te_fused_attn_forward_ffi", api_version=API_VERSION_TYPED_FFI, backend_config="{\"scale\":\"0.5\",\"name\":\"a, b\"}"
  %conv = f32[1,8,8,4]{3,2,1,0} convolution(%x, %y), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %sl = f32[1,4]{1,0} slice(%v), slice={[0:1], [0:4:2]}
  ROOT %t = () tuple()
}
"#;
    let m = ok(text);
    let e = m.entry();
    assert_eq!(e.name, "main");
    let w = &e.instructions[1];
    assert_eq!(
        w.attribute("condition").unwrap().computation().unwrap(),
        "c"
    );
    assert_eq!(w.attribute("body").unwrap().computation().unwrap(), "b");
    assert_eq!(
        w.attribute("backend_config").unwrap().value,
        r#"{"known_trip_count":{"n":"4"}}"#
    );
    assert_eq!(e.instructions[0].literal.as_deref(), Some("0"));
    assert_eq!(
        e.instructions[2].literal.as_deref(),
        Some("{ { 1, 2 }, { 3, 4 } }")
    );
    assert_eq!(e.instructions[3].literal.as_deref(), Some("-inf"));
    assert_eq!(e.instructions[4].literal.as_deref(), Some("{...}"));
    let io = &e.instructions[5];
    assert_eq!((io.literal.as_deref(), io.operands.len()), (Some(""), 0));
    assert_eq!(
        io.attribute("iota_dimension").unwrap().integer().unwrap(),
        0
    );
    let cc = &e.instructions[7];
    assert_eq!(cc.operands, ["fu", "v"]);
    assert_eq!(
        cc.attribute("custom_call_target")
            .unwrap()
            .string()
            .unwrap(),
        "te_fused_attn_forward_ffi"
    );
    assert_eq!(
        cc.attribute("backend_config").unwrap().string().unwrap(),
        r#"{"scale":"0.5","name":"a, b"}"#
    );
    let conv = &e.instructions[8];
    assert_eq!(
        conv.attribute("window").unwrap().value,
        "{size=3x3 pad=1_1x1_1}"
    );
    assert_eq!(
        conv.attribute("dim_labels").unwrap().value,
        "b01f_01io->b01f"
    );
    assert_eq!(
        e.instructions[9].attribute("slice").unwrap().value,
        "{[0:1], [0:4:2]}"
    );
    let t = &e.instructions[10];
    assert_eq!((&t.shape, t.operands.len()), (&Shape::Tuple(vec![]), 0));
    let b = m.computation("b").unwrap();
    assert_eq!(b.instructions[2].operands, ["s", "one"]);
    assert_eq!(m.computation("fused").unwrap().root, 0);
}

#[test]
fn shapes() {
    let text = "HloModule m\nENTRY %e {\n  %a = (f32[2], (s32[], pred[]), ()) parameter(0)\n  %b = bf16[2,8192,4096]{2,1,0} parameter(1)\n  %c = f32[8,128]{1,0:T(8,128)(2,1)S(1)} parameter(2)\n  %d = f32[<=10,3] parameter(3)\n  %t = token[] after-all()\n  %e = f8e4m3fn[4]{0} parameter(4)\n  %f = s4[3]{0:E(4)} parameter(5)\n  %g = c128[] parameter(6)\n  ROOT %h = f32[ 2 , 3 ]{ 1 , 0 } parameter(7)\n}\n";
    let m = ok(text);
    let s: Vec<&Shape> = m.entry().instructions.iter().map(|i| &i.shape).collect();
    assert_eq!(
        *s[0],
        Shape::Tuple(vec![
            array("f32", &[2], None),
            Shape::Tuple(vec![array("s32", &[], None), array("pred", &[], None)]),
            Shape::Tuple(vec![]),
        ])
    );
    assert_eq!(*s[1], array("bf16", &[2, 8192, 4096], Some(&[2, 1, 0])));
    assert_eq!(*s[2], array("f32", &[8, 128], Some(&[1, 0])));
    assert_eq!(*s[3], array("f32", &[10, 3], None));
    assert_eq!(*s[4], Shape::Token);
    assert_eq!(*s[5], array("f8e4m3fn", &[4], Some(&[0])));
    assert_eq!(*s[6], array("s4", &[3], Some(&[0])));
    assert_eq!(*s[7], array("c128", &[], None));
    assert_eq!(*s[8], array("f32", &[2, 3], Some(&[1, 0])));
    assert_eq!(s[1].bytes(), 2 * 8192 * 4096 * 2);
}

#[test]
fn header_shapes_and_layout_versus_body() {
    // A return shape without a layout, followed by the body's `{`.
    let m = ok("HloModule m\n\nENTRY %e (p: f32[2]{0}, q: (s32[], f32[2])) -> f32[2] {\n  ROOT %p = f32[2] parameter(0)\n}\n");
    assert_eq!(m.entry().instructions[0].shape, array("f32", &[2], None));
    let m = ok("HloModule m\nENTRY e () -> f32[2]{0} {\nROOT p = f32[2]{0} parameter(0)}");
    assert_eq!(m.entry().name, "e");
    assert_eq!(m.entry().instructions[0].name, "p");
    let m = ok("HloModule m\nENTRY %e () -> f32[] {ROOT %p = f32[] parameter(0)}");
    assert_eq!(m.entry().instructions[0].shape, array("f32", &[], None));
}

#[test]
fn comments_whitespace_and_odd_layout() {
    let text = "// leading comment\r\nHloModule m /* c */, a=1 // trailing\r\n/* block\n comment */\r\nENTRY %e {\r\n  ROOT %t = (f32[], /*index=1*/ s32[]) tuple(/*index=0*/ %x,\n      /*index=1*/ %y), frontend_attributes={a=\"b\"} // done\r\n}, execution_thread=\"main\"\r\n";
    let m = ok(text);
    assert_eq!(m.attributes[0].value, "1");
    let t = &m.entry().instructions[0];
    assert_eq!(t.operands, ["x", "y"]);
    assert_eq!(t.attributes.len(), 1);
    assert_eq!(
        t.attribute("frontend_attributes").unwrap().value,
        "{a=\"b\"}"
    );
    assert_eq!(t.pos, Pos { line: 6, column: 3 });
}

#[test]
fn bare_names_multiline_values_and_tables() {
    let text = "HloModule m\nENTRY main {\n  x = f32[] parameter(0)\n  ROOT y = f32[] negate(x), backend_config={\n    \"a\": [1,\n 2]}\n}\n\nFileNames\n1 \"a.py\"\nFunctionNames\n1 \"f\"\nFileLocations\n1 {file_name_id=1 function_name_id=1 line=2}\nStackFrames\n1 {file_location_id=1 parent_frame_id=0}\n";
    let m = ok(text);
    let y = &m.entry().instructions[1];
    assert_eq!(y.operands, ["x"]);
    assert_eq!(
        y.attribute("backend_config").unwrap().value,
        "{\n    \"a\": [1,\n 2]}"
    );
    // A computation may be called like a table keyword.
    let m = ok("HloModule m\nFileNames {\n ROOT a = f32[] constant(0)\n}\nENTRY e {\n ROOT b = f32[] call(), to_apply=FileNames\n}\n");
    assert_eq!(m.computations[0].name, "FileNames");
    // An instruction may be called `ROOT`.
    let m = ok("HloModule m\nENTRY e {\n ROOT = f32[] constant(0)\n}\n");
    assert!(!m.entry().instructions[0].is_root);
    assert_eq!(m.entry().instructions[0].name, "ROOT");
}

#[test]
fn unicode_columns() {
    let (line, column, message) =
        err("HloModule m\nENTRY e {\n  %a = f32[] custom-call(), metadata={op_name=\"é→ü\"} ?\n}");
    assert_eq!((line, column), (3, 54), "{message}");
    let m = ok("\u{feff}HloModule m, k=\"ä\", j=2\nENTRY e {\n ROOT a = f32[] constant(0)\n}");
    assert_eq!(
        m.attributes[1].pos,
        Pos {
            line: 1,
            column: 23
        }
    );
}

// ----------------------------------------------------------------- malformed input

#[test]
fn empty_input() {
    fails("", 1, 1, "empty input");
    fails("  \n /* c */ \n", 3, 1, "empty input");
    fails(
        "HloModul m",
        1,
        1,
        "expected `HloModule` at the start of the module, found `HloModul`",
    );
}

#[test]
fn unterminated_string() {
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %c = f32[] custom-call(), custom_call_target=\"abc\n}\n",
        3,
        53,
        "unterminated string",
    );
    fails("HloModule m, a=\"x\\\"", 1, 16, "unterminated string");
}

#[test]
fn missing_equals() {
    fails(
        "HloModule m\nENTRY %e {\n  %x f32[] parameter(0)\n}\n",
        3,
        6,
        "expected `=` after instruction name `%x`, found `f32`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  %x (f32[] parameter(0)\n}\n",
        3,
        6,
        "expected `=` after instruction name `%x`, found `(`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[] parameter(0), dimensions\n}\n",
        3,
        43,
        "expected `=` after attribute name `dimensions`, found end of line",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[] parameter(0), k=\n}\n",
        3,
        35,
        "expected a value for attribute `k`, found end of line",
    );
}

#[test]
fn unbalanced_brackets() {
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{0} reverse(%p), dimensions={0\n}",
        3,
        47,
        "unbalanced `{`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{0} reverse(%p), dimensions={0)\n}",
        3,
        49,
        "mismatched `)`: expected `}` to close the `{` at line 3, column 47",
    );
    // An unclosed `{` in the middle swallows the computation's `}`.
    fails(
            "HloModule m\nENTRY %e {\n  %x = f32[2]{0} reverse(%p), dimensions={0\n  ROOT %y = f32[2]{0} negate(%x)\n}\n",
            3,
            42,
            "unbalanced `{`: this value runs on over several lines",
        );
    let (line, _, message) = err("HloModule m\n%c {\n  %x = f32[2]{0} reverse(%p), dimensions={0\n  ROOT %y = f32[2]{0} negate(%x)\n}\nENTRY %e {\n  ROOT %z = f32[] constant(0)\n}\n");
    assert_eq!(line, 6, "{message}");
    assert!(
        message.contains("is a bracket unbalanced there?"),
        "{message}"
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %c = f32[] constant({1, 2)\n}",
        3,
        33,
        "mismatched `)`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %c = f32[] constant(1",
        3,
        27,
        "unbalanced `(`",
    );
    fails("HloModule m, a={\"}\"", 1, 16, "unbalanced `{`");
}

#[test]
fn bad_shapes() {
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[2,x] parameter(0)\n}\n",
        3,
        19,
        "expected a dimension size in shape `f32[...]`, found `x`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = F32[2] parameter(0)\n}\n",
        3,
        13,
        "unknown element type `F32` in shape",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f_32[2] parameter(0)\n}\n",
        3,
        13,
        "unknown element type `f_32`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = parameter(0)\n}\n",
        3,
        13,
        "expected a shape such as",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[?] parameter(0)\n}\n",
        3,
        17,
        "unbounded dynamic dimension",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{0,x} parameter(0)\n}\n",
        3,
        22,
        "expected a dimension number, `:` or `}` in a layout, found `x`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{0 1} parameter(0)\n}\n",
        3,
        22,
        "expected `,`, `:` or `}` in a layout, found `1`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = (f32[2] s32[]) parameter(0)\n}\n",
        3,
        21,
        "expected `,` or `)` in a tuple shape, found `s32`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = token[1] after-all()\n}\n",
        3,
        19,
        "`token[]` has no dimensions",
    );
}

#[test]
fn integer_overflow() {
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[2,18446744073709551616] parameter(0)\n}\n",
        3,
        19,
        "dimension size `18446744073709551616` does not fit in 64 bits",
    );
    // u64::MAX parses, but the size in bytes overflows.
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[18446744073709551615] parameter(0)\n}\n",
        3,
        13,
        "shape is too large",
    );
    fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = (u8[4294967296,4294967295], u8[4294967296,4294967295]) parameter(0)\n}\n",
            3,
            13,
            "tuple shape is too large",
        );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{99999999999999999999} parameter(0)\n}\n",
        3,
        20,
        "layout dimension",
    );
}

#[test]
fn entry_checks() {
    fails(
        "HloModule m",
        1,
        12,
        "no computation: a module needs an `ENTRY` computation",
    );
    fails(
            "HloModule m\n\n\nENTRY %a {\n  ROOT %x = f32[] parameter(0)\n}\n\n\nENTRY %b {\n  ROOT %x = f32[] parameter(0)\n}\n",
            9,
            1,
            "two ENTRY computations (line 4 and line 9)",
        );
    fails(
            "HloModule m\n%a {\n ROOT %x = f32[] parameter(0)\n}\nENTRY %a {\n ROOT %x = f32[] parameter(0)\n}\n",
            5,
            7,
            "duplicate computation `%a` (first at line 2)",
        );
}

#[test]
fn instruction_checks() {
    fails(
            "HloModule m\nENTRY %e {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %a = f32[] add(%a, %b)\n}\n",
            5,
            8,
            "duplicate instruction `%a` (first at line 3)",
        );
    fails(
            "HloModule m\nENTRY %e {\n  ROOT %a = f32[] parameter(0)\n  ROOT %b = f32[] parameter(1)\n}\n",
            4,
            8,
            "two ROOT instructions in computation `%e` (line 3 and line 4)",
        );
    fails(
        "HloModule m\nENTRY %e {\n}\n",
        2,
        10,
        "computation `%e` has no instructions",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %a = f32[] parameter(0)\n",
        4,
        1,
        "computation `%e` (line 2) is not closed",
    );
    fails(
        "HloModule m\nENTRY %e {\n  %a = f32[] parameter(0)}\n  ROOT %b = f32[] negate(%a)\n}\n",
        4,
        8,
        "instruction `%b` outside any computation",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %a = f32[] 1parameter(0)\n}\n",
        3,
        19,
        "expected an opcode after the shape of `%a`, found `1parameter`",
    );
}

#[test]
fn garbage_after_header() {
    fails(
        "HloModule m foo\nENTRY %e {\n  ROOT %a = f32[] parameter(0)\n}\n",
        1,
        16,
        "expected `{` to open the body of computation `%foo`, found end of line",
    );
    fails(
        "HloModule m ]\nENTRY %e {\n  ROOT %a = f32[] parameter(0)\n}\n",
        1,
        13,
        "expected `,` or the end of the line after the module header, found `]`",
    );
    fails(
        "HloModule m, \nENTRY %e {\n}",
        2,
        7,
        "expected `=` after attribute name `ENTRY`, found `%e`",
    );
    fails(
        "HloModule m,",
        1,
        13,
        "expected an attribute name after `,`, found end of input",
    );
    fails(
        "HloModule\nENTRY",
        1,
        10,
        "expected a module name after `HloModule`, found end of line",
    );
    fails(
        "HloModule m\nENTRY %e (p: f32[]) f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n",
        2,
        21,
        "expected `->` after the parameters of computation `%e`, found `f32`",
    );
    fails(
        "HloModule m\nENTRY %e (p = f32[]) -> f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n",
        2,
        13,
        "expected `:` after parameter `p`, found `=`",
    );
    fails("HloModule m\n$ {\n}\n", 2, 1, "expected a computation");
    fails(
        "HloModule m\nHloModule n\n",
        2,
        1,
        "a second `HloModule` header",
    );
}

#[test]
fn missing_parenthesis() {
    fails(
            "HloModule m\nENTRY %e {\n  %a = f32[] parameter(0)\n  %b = f32[] add(%a, %a\n  ROOT %c = f32[] negate(%b)\n}\n",
            4,
            24,
            "expected `,` or `)` after operand `%a`, found end of line",
        );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %b = f32[] add %a\n}\n",
        3,
        23,
        "expected `(` after opcode `add`, found `%a`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT %b = f32[] add(%a,)\n}\n",
        3,
        26,
        "expected an operand name, found `)`",
    );
}

#[test]
fn deep_nesting() {
    let deep = format!(
        "HloModule m\nENTRY %e {{\n  ROOT %x = {}f32[]{} parameter(0)\n}}\n",
        "(".repeat(300),
        ")".repeat(300)
    );
    fails(
        &deep,
        3,
        13 + MAX_DEPTH,
        "tuple shapes nested deeper than 256",
    );
    let ok_depth = format!(
        "HloModule m\nENTRY %e {{\n  ROOT %x = {}f32[]{} parameter(0)\n}}\n",
        "(".repeat(MAX_DEPTH),
        ")".repeat(MAX_DEPTH)
    );
    ok(&ok_depth);
    let brackets = format!(
        "HloModule m, a={}{}\n",
        "{".repeat(100_000),
        "}".repeat(100_000)
    );
    fails(
        &brackets,
        1,
        16 + MAX_DEPTH,
        "brackets nested deeper than 256",
    );
}

#[test]
fn unterminated_comment() {
    fails(
        "HloModule m\nENTRY %e { /* never\n closed",
        2,
        12,
        "unterminated comment",
    );
}

#[test]
fn never_panics_on_truncations() {
    // Every prefix of a valid module either parses or fails with a syntax error.
    for (cut, _) in SAMPLE.char_indices() {
        match parse(&SAMPLE[..cut]) {
            Ok(_) | Err(HloError::Syntax { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
}

/// Parses the real Llama 3.1 8B module of the repository's data folder (`data/hlo`, 3 MB of
/// text); `--nocapture` prints how long it took.
#[test]
fn real_module() {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/hlo"))
        .join("llama31_8b_bf16_1x8.hlo.gz");
    let text = crate::read::read_text(&path).unwrap_or_else(|e| panic!("{e}"));
    let start = std::time::Instant::now();
    let module = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let elapsed = start.elapsed();
    let instructions: usize = module
        .computations
        .iter()
        .map(|c| c.instructions.len())
        .sum();
    eprintln!(
        "parsed {} ({} bytes): {} computations, {} instructions ({} in the entry) in {:.1} ms",
        path.display(),
        text.len(),
        module.computations.len(),
        instructions,
        module.entry().instructions.len(),
        elapsed.as_secs_f64() * 1e3
    );
    assert_eq!(module.name, "jit_train_step");
    assert!(module.entry().instructions.len() > 10_000);
}

/// The mesh form of replica groups that jax 0.10 writes (`fixtures/hlo/`): the value runs
/// through the axis list, `device_ids=` included, and is kept as written.
#[test]
fn mesh_replica_groups() {
    let text = "HloModule m, num_partitions=8\n\n%add (x: f32[], y: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n\nENTRY %e (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n  %a = f32[4]{0} all-reduce(%p), channel_id=1, replica_groups=mesh['axis_0'=8,'axis_1'=1] {'axis_0'}, use_global_device_ids=true, to_apply=%add, metadata={op_name=\"jit(step)/psum\" stack_frame_id=4}\n  %b = f32[4]{0} all-reduce(%a), channel_id=2, replica_groups=mesh['axis_0'=4,'axis_1'=2], device_ids=([2,4]T(1,0)) {'axis_1'}, use_global_device_ids=true, to_apply=%add\n  %c = f32[4]{0} all-reduce(%b), replica_groups=mesh['a'=2,'b'=4]\n    {'b':(1)2}, to_apply=%add\n  ROOT %d = f32[4]{0} all-reduce(%c), replica_groups=maximal_mesh[device_id=3] {}, to_apply=%add\n}\n";
    let m = ok(text);
    let e = m.entry();
    let value = |k: usize| e.instructions[k].attribute("replica_groups").unwrap();
    assert_eq!(value(1).value, "mesh['axis_0'=8,'axis_1'=1] {'axis_0'}");
    assert_eq!(
        value(1).pos,
        Pos {
            line: 11,
            column: 63
        }
    );
    assert_eq!(
        value(2).value,
        "mesh['axis_0'=4,'axis_1'=2], device_ids=([2,4]T(1,0)) {'axis_1'}"
    );
    assert_eq!(value(3).value, "mesh['a'=2,'b'=4]\n    {'b':(1)2}");
    assert_eq!(value(4).value, "maximal_mesh[device_id=3] {}");
    // The attributes after the value are read as usual.
    let names: Vec<&str> = e.instructions[1]
        .attributes
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "channel_id",
            "replica_groups",
            "use_global_device_ids",
            "to_apply",
            "metadata"
        ]
    );
    assert_eq!(
        e.instructions[2].attribute("to_apply").unwrap().value,
        "%add"
    );
    let groups = |k: usize| value(k).replica_groups().unwrap().expand();
    assert_eq!(groups(1), [(0..8).collect::<Vec<u64>>()]);
    // device_ids = iota(8).reshape(2,4).transpose(1,0): rows (0,4), (1,5), (2,6), (3,7).
    assert_eq!(groups(2), [[0, 4], [1, 5], [2, 6], [3, 7]]);
    assert_eq!(groups(3), [[0, 2], [1, 3], [4, 6], [5, 7]]);
    assert_eq!(groups(4), [[3]]);
    assert!(matches!(
        value(1).replica_groups().unwrap(),
        ReplicaGroups::Mesh { ref axes, devices: None, ref over }
            if axes.len() == 2 && over.len() == 1
    ));
}

#[test]
fn malformed_mesh_replica_groups() {
    let module = |groups: &str| {
        format!("HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {{\n  ROOT %a = f32[4]{{0}} all-reduce(%p), replica_groups={groups}, to_apply=%add\n}}\n")
    };
    // An unterminated axis name, or an axis list that is not closed, is a syntax error at
    // its quote or bracket.
    for (groups, line, column, message) in [
        (
            "mesh['axis_0=8] {'axis_0'}",
            4,
            78,
            "unterminated name: `'`",
        ),
        ("mesh['x'=8] {'x}", 4, 67, "unterminated name"),
        ("mesh['x'=8] {'x']", 4, 70, "mismatched `]`"),
        (
            "mesh['x'=8], device_ids=(0,1 {'x'}",
            5,
            1,
            "to close the `(` at line 4",
        ),
        // The axis list swallows the computation's `}`: the hint names the value.
        (
            "mesh['x'=8] {'x'",
            4,
            66,
            "unbalanced `{`: this value runs on",
        ),
    ] {
        fails(&module(groups), line, column, message);
    }
    // Without an axis list, the value ends after the mesh: the accessor says what is missing,
    // at the value's line and column.
    let m = ok(&module("mesh['x'=8]"));
    let a = m.entry().instructions[0]
        .attribute("replica_groups")
        .unwrap();
    assert_eq!(a.value, "mesh['x'=8]");
    let e = a.replica_groups().unwrap_err().to_string();
    assert!(
        e.starts_with("line 4, column 54:") && e.contains("expected `{`"),
        "{e}"
    );
    // `mesh` not followed by `[` is an ordinary value.
    let m = ok(&module("mesh"));
    let a = m.entry().instructions[0]
        .attribute("replica_groups")
        .unwrap();
    assert_eq!(a.value, "mesh");
    assert!(a.replica_groups().is_err());
}

// ---------------------------------------------------------------- XLA's test grammar

/// The shape text of instruction `name` of the entry.
fn shape_of(m: &Module, name: &str) -> String {
    let i = m.entry().instructions.iter().find(|i| i.name == name);
    i.unwrap_or_else(|| panic!("no `{name}`"))
        .shape_text
        .clone()
}

#[test]
fn inferred_result_shapes() {
    let m = ok(r#"HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = add(%x, %y)
}

ENTRY %e {
  p = f32[2,3]{1,0} parameter(0)
  q = f32[] parameter(1)
  w = f32[4,3] parameter(2)
  img = f32[1,8,8,3] parameter(3)
  k = f32[3,3,3,16] parameter(4)
  c = copy(p)
  n = negate(c)
  sum = add(p, n)
  cmp = compare(p, n), direction=LT
  t = tuple(p, q, cmp)
  g = get-tuple-element(t), index=2
  tr = transpose(p), dimensions={1,0}
  pd = pad(p, q), padding=1_2x0_0_1
  d = dot(p, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  cat = concatenate(p, p), dimensions={0}
  r = reduce(p, q), dimensions={1}, to_apply=%add
  rw = reduce-window(p, q), window={size=1x2 stride=1x2}, to_apply=%add
  conv = convolution(img, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  cl = call(q, q), to_apply=%add
  b = broadcast(q), dimensions={}
  tok = after-all()
  ROOT out = tuple(g, tr, pd, d, cat, r, rw, conv, cl, b, tok, sum)
}
"#);
    for (name, shape) in [
        ("c", "f32[2,3]{1,0}"),
        ("sum", "f32[2,3]"),
        ("cmp", "pred[2,3]"),
        ("t", "(f32[2,3]{1,0}, f32[], pred[2,3])"),
        ("g", "pred[2,3]"),
        ("tr", "f32[3,2]"),
        ("pd", "f32[5,5]"),
        ("d", "f32[2,4]"),
        ("cat", "f32[4,3]"),
        ("r", "f32[2]"),
        ("rw", "f32[2,1]"),
        ("conv", "f32[1,8,8,16]"),
        ("cl", "f32[]"),
        ("b", "f32[]"),
        ("tok", "token[]"),
    ] {
        assert_eq!(shape_of(&m, name), shape, "{name}");
    }
    let e = m.entry();
    // pred 6, transpose 24, pad 100, dot 32, concatenate 48, reduce 8, reduce-window 8,
    // convolution 4096, call 4, broadcast 4, token 0, add 24.
    assert_eq!(e.instructions[e.root].shape.bytes(), 4354);
    assert_eq!(m.computations[0].instructions[2].shape_text, "f32[]");
}

#[test]
fn shapes_that_cannot_be_inferred() {
    // XLA infers no shape for a collective: the error says so, at the opcode.
    fails(
        "HloModule m\nENTRY %e {\n  p = f32[4] parameter(0)\n  ROOT a = all-reduce(p)\n}\n",
        4,
        12,
        "found `all-reduce` (XLA infers no result shape for this opcode)",
    );
    // An inferable opcode whose operands do not allow it: the instruction's line and column.
    fails(
        "HloModule m\nENTRY %e {\n  p = f32[4] parameter(0)\n  ROOT g = get-tuple-element(p), index=0\n}\n",
        4,
        3,
        "cannot infer the result shape of `%g` (get-tuple-element): the operand is not a tuple",
    );
    fails(
        "HloModule m\nENTRY %e {\n  p = (f32[4]) parameter(0)\n  ROOT g = get-tuple-element(p), index=3\n}\n",
        4,
        3,
        "index 3 is out of the operand's 1 elements",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT t = tuple(later)\n  later = f32[] parameter(0)\n}\n",
        3,
        3,
        "operand `%later` is not defined before it",
    );
    fails(
        "HloModule m\nENTRY %e {\n  p = f32[] parameter(0)\n  ROOT c = call(p), to_apply=%nowhere\n}\n",
        4,
        3,
        "computation `%nowhere` is not defined before it",
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT c = constant(1)\n}\n",
        3,
        12,
        "expected a shape such as `f32[2,3]{1,0}` or `(s32[], pred[])` after `%c =`, found `constant`",
    );
}

#[test]
fn last_computation_is_the_entry_without_entry() {
    let m = ok("HloModule m\n%a {\n  ROOT %x = f32[] parameter(0)\n}\n%b {\n  ROOT %y = f32[2] parameter(0)\n}\n");
    assert_eq!(m.entry, 1);
    assert_eq!(m.entry().name, "b");
    assert!(m.entry().is_entry && !m.computations[0].is_entry);
}

#[test]
fn nested_instruction_operands() {
    let m = ok(r#"HloModule m
ENTRY %e {
  x = bf16[] parameter(0)
  maximum.anon = bf16[] parameter(1)
  ROOT r = bf16[] add(maximum(x, bf16[] constant(-448)), f32[] convert(maximum(x, x)))
}
"#);
    let e = m.entry();
    let names: Vec<&str> = e.instructions.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "x",
            "maximum.anon",
            "constant.anon",
            "maximum.anon.1",
            "maximum.anon.2",
            "convert.anon",
            "r"
        ]
    );
    let i = |n: &str| e.instructions.iter().find(|i| i.name == n).unwrap();
    assert_eq!(i("constant.anon").literal.as_deref(), Some("-448"));
    assert_eq!(i("constant.anon").shape_text, "bf16[]");
    assert_eq!(i("maximum.anon.1").operands, ["x", "constant.anon"]);
    assert_eq!(i("maximum.anon.1").shape_text, "bf16[]");
    assert_eq!(i("convert.anon").operands, ["maximum.anon.2"]);
    assert_eq!(i("r").operands, ["maximum.anon.1", "convert.anon"]);
    assert_eq!(e.root, 6);
    // A nested instruction takes no attributes; its errors name line and column.
    fails(
        "HloModule m\nENTRY %e {\n  x = f32[] parameter(0)\n  ROOT r = f32[] add(x, negate(x), foo=1)\n}\n",
        4,
        39,
        "expected `,` or `)` after operand `%foo`, found `=`",
    );
    fails(
        "HloModule m\nENTRY %e {\n  x = f32[] parameter(0)\n  ROOT r = f32[] add(x, negate(x x))\n}\n",
        4,
        34,
        "expected `,` or `)` after operand `%x`, found `x`",
    );
    // Deep nesting is bounded, not a stack overflow.
    let deep = format!(
        "HloModule m\nENTRY %e {{\n  x = f32[] parameter(0)\n  ROOT r = {}x{}\n}}\n",
        "negate(".repeat(5000),
        ")".repeat(5000)
    );
    let (_, _, message) = err(&deep);
    assert!(message.contains("nested deeper than"), "{message}");
}

#[test]
fn header_attributes_over_several_lines() {
    let m = ok("HloModule t,\n    entry_computation_layout={(f32[2]{0})->f32[2]{0}},\n    replica_count=2\n\nENTRY %e {\n  ROOT p = f32[2] parameter(0)\n}\n");
    let names: Vec<&str> = m.attributes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["entry_computation_layout", "replica_count"]);
    // `HloModule name:` and a computation on the header's line, as XLA's tests write them.
    let m = ok("HloModule m:\nENTRY %e {\n  ROOT p = f32[2] parameter(0)\n}\n");
    assert_eq!(m.name, "m");
    let m = ok("HloModule m ENTRY e { ROOT c = f16[] constant(1) }");
    assert_eq!(m.entry().name, "e");
}

#[test]
fn attribute_value_on_the_next_line() {
    let m = ok("HloModule m\n%c {\n  ROOT p = f32[] parameter(0)\n}\nENTRY %e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=\n    %c\n}\n");
    let a = m.entry().instructions[1].attribute("to_apply").unwrap();
    assert_eq!(a.value, "%c");
    assert_eq!((a.pos.line, a.pos.column), (8, 5));
}

#[test]
fn loose_shape_syntax() {
    let m = ok(r#"HloModule m
ENTRY %conv (input f32[1,3]{1,0}, k: s32 [4]) -> f32[3,1] {
  input = f32[1,3]{1,0} parameter(0)
  k = s32 [4] parameter(1)
  buf = b(f32[2,4]) custom-call(), custom_call_target="CreateBuffer"
  cc = f32[2,3] custom-call(input), custom_call_target="SetBound", literal=s32[] 1
  cc2 = f32[2,3] custom-call(input), custom_call_target="x", literal=s32[2]{0} {1, 2}
  ROOT bitcast = f32[3, 1] {0, 1} bitcast(input)
}
"#);
    let e = m.entry();
    assert_eq!(e.signature, "(input f32[1,3]{1,0}, k: s32 [4]) -> f32[3,1]");
    assert_eq!(e.instructions[1].shape, array("s32", &[4], None));
    assert_eq!(e.instructions[2].shape, array("f32", &[2, 4], None));
    assert_eq!(e.instructions[2].shape_text, "b(f32[2,4])");
    assert_eq!(
        e.instructions[3].attribute("literal").unwrap().value,
        "s32[] 1"
    );
    assert_eq!(
        e.instructions[4].attribute("literal").unwrap().value,
        "s32[2]{0} {1, 2}"
    );
    assert_eq!(
        e.instructions[5].shape,
        array("f32", &[3, 1], Some(&[0, 1]))
    );
    fails(
        "HloModule m\nENTRY %e {\n  ROOT b = b(f32[2] custom-call()\n}\n",
        3,
        21,
        "expected `)` to close a buffer shape `b(...)`, found `custom-call`",
    );
}

#[test]
fn inferred_shapes_cannot_grow_exponentially() {
    let mut text = String::from("HloModule m\nENTRY %e {\n  t0 = f32[] parameter(0)\n");
    for k in 1..80 {
        text.push_str(&format!("  t{k} = tuple(t{0}, t{0})\n", k - 1));
    }
    text.push_str("}\n");
    let (line, _, message) = err(&text);
    assert!(
        line < 30 && message.contains("too many elements"),
        "{line}: {message}"
    );
}

#[test]
fn tuple_element_shorthand_is_a_get_tuple_element() {
    // Newer XLA prints `%t#k` for element k of a tuple-shaped operand (a cuBLAS call's result
    // and workspace) instead of a get-tuple-element instruction.
    let m = ok(r#"HloModule m
ENTRY %e {
  %a = bf16[4,8]{1,0} parameter(0)
  %cc = (bf16[4,4]{1,0}, s8[1024]{0}) custom-call(%a, %a), custom_call_target="__cublas$lt$matmul"
  %f = bf16[4,4]{1,0} negate(%cc#0)
  ROOT %r = (bf16[4,4]{1,0}, s8[1024]{0}) tuple(%f, %cc#1)
}
"#);
    let e = m.entry();
    let names: Vec<&str> = e.instructions.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "a",
            "cc",
            "get-tuple-element.anon",
            "f",
            "get-tuple-element.anon.1",
            "r"
        ]
    );
    let i = |n: &str| e.instructions.iter().find(|i| i.name == n).unwrap();
    assert_eq!(i("f").operands, ["get-tuple-element.anon"]);
    assert_eq!(i("get-tuple-element.anon").operands, ["cc"]);
    assert_eq!(i("get-tuple-element.anon").shape_text, "bf16[4,4]{1,0}");
    assert_eq!(i("get-tuple-element.anon.1").shape_text, "s8[1024]{0}");
    assert_eq!(i("r").operands, ["f", "get-tuple-element.anon.1"]);
    // A `#` without an index, and an index past the tuple, name the place.
    fails(
        "HloModule m\nENTRY %e {\n  x = (f32[], f32[]) parameter(0)\n  ROOT r = f32[] negate(x#)\n}\n",
        4,
        27,
        "expected a tuple index after `%x#`, found `)`",
    );
    let (line, _, message) = err(
        "HloModule m\nENTRY %e {\n  x = (f32[], f32[]) parameter(0)\n  ROOT r = f32[] negate(x#2)\n}\n",
    );
    assert_eq!(line, 4, "{message}");
    assert!(message.contains("index 2"), "{message}");
}
