//! Tests of the HLO lowering: free ops, collectives, unrolled loops and costs.

use super::*;
use crate::hlo::parse;
use concerto_graph::{CollectiveKind, ComputeClass, LinkClass, OpKind};

fn import(text: &str) -> (Graph, ImportReport) {
    let m = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    lower(&m, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn find(g: &Graph, name: &str) -> OpId {
    g.find(name).unwrap_or_else(|| {
        panic!(
            "no op `{name}` in {:?}",
            g.ops().map(|o| o.name.clone()).collect::<Vec<_>>()
        )
    })
}

#[test]
fn async_pairs_are_one_collective_and_free_ops_carry_dependencies() {
    let (g, _) = import(
        r#"HloModule m

ENTRY %main (p: bf16[2,4]) -> bf16[16,4] {
  %p = bf16[2,4]{1,0} parameter(0)
  %t = (bf16[2,4]{1,0}, s32[]) tuple(%p, %p)
  %x = bf16[2,4]{1,0} get-tuple-element(%t), index=0
  %ags = (bf16[2,4]{1,0}, bf16[16,4]{1,0}) all-gather-start(%x), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}
  %e = bf16[2,4]{1,0} negate(%x)
  %agd = bf16[16,4]{1,0} all-gather-done(%ags)
  ROOT %y = bf16[16,4]{1,0} multiply(%agd, %agd)
}
"#,
    );
    assert_eq!(
        g.len(),
        3,
        "{:?}",
        g.ops().map(|o| &o.name).collect::<Vec<_>>()
    );
    let ag = find(&g, "ags");
    assert!(matches!(
        g.op(ag).kind,
        OpKind::Collective {
            kind: CollectiveKind::AllGather,
            bytes: 128,
            group: 8,
            link: LinkClass::IntraNode
        }
    ));
    assert_eq!(g.predecessors(find(&g, "y")), vec![ag]);
    assert!(g.predecessors(find(&g, "e")).is_empty());
}

#[test]
fn while_with_a_known_trip_count_is_unrolled() {
    let text = r#"HloModule m

%body (s: (s32[], f32[8])) -> (s32[], f32[8]) {
  %s = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %n = s32[] add(%i, %one)
  %v = f32[8]{0} get-tuple-element(%s), index=1
  %ar = f32[8]{0} all-reduce(%v), replica_groups={{0,1,2,3}}, to_apply=%sum
  %w = f32[8]{0} exponential(%ar)
  ROOT %r = (s32[], f32[8]{0}) tuple(%n, %w)
}

%cond (s: (s32[], f32[8])) -> pred[] {
  %s = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %k = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %k), direction=LT
}

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}

ENTRY %main (p: f32[8]) -> (s32[], f32[8]) {
  %p = f32[8]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{0}) tuple(%zero, %p)
  ROOT %loop = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body, BACKEND_CONFIG
}
"#;
    let known = text.replace(
        "BACKEND_CONFIG",
        r#"backend_config={"known_trip_count":{"n":"3"}}"#,
    );
    let (g, _) = import(&known);
    // Per iteration: add, all-reduce, exponential.
    assert_eq!(g.len(), 9);
    assert_eq!(g.collective_count(), 3);
    let ar2 = find(&g, "loop.it2.ar");
    // Iteration 2's all-reduce waits for iteration 1's results (the state tuple).
    assert!(g.predecessors(ar2).contains(&find(&g, "loop.it1.w")));
    assert!(matches!(
        g.op(ar2).kind,
        OpKind::Collective { group: 4, .. }
    ));
    // The same loop without the config: the `i < 3` counter pattern gives the count.
    let pattern = text.replace(", BACKEND_CONFIG", "");
    let (g2, _) = import(&pattern);
    assert_eq!(g2.len(), 9);
    // A loop whose bound is not a constant is an error that says why.
    let unknown = pattern.replace(
        "%k = s32[] constant(3)",
        "%k = s32[] get-tuple-element(%s), index=0",
    );
    let m = parse(&unknown).unwrap();
    let e = lower(&m, &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("line 31, instruction `loop`: while loop `%loop` has no known trip count"),
        "{e}"
    );
    assert!(e.contains("`--trip-count loop=N`"), "{e}");
    // The count given by name unrolls it.
    let with = |counts: &[(&str, u64)]| ImportOptions {
        trip_counts: counts.iter().map(|&(n, k)| (n.to_string(), k)).collect(),
        ..ImportOptions::default()
    };
    let (g3, _) = lower(&m, &with(&[("loop", 2)])).unwrap();
    assert_eq!(g3.len(), 6);
    assert!(g3.find("loop.it1.ar").is_some() && g3.find("loop.it2.ar").is_none());
    // Zero iterations: the loop passes its state through.
    assert_eq!(lower(&m, &with(&[("loop", 0)])).unwrap().0.len(), 0);
    // A given count wins over backend_config's.
    let m = parse(&known).unwrap();
    assert_eq!(lower(&m, &with(&[("loop", 1)])).unwrap().0.len(), 3);
    // A name that is no while loop of the module is an error naming it.
    let e = lower(&m, &with(&[("loop", 1), ("decode", 4)]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "instruction `decode`: a trip count is given for `%decode`, which is no \
                    instruction of the module (its while loops: `%loop`)"
        ),
        "{e}"
    );
    let e = lower(&m, &with(&[("ar", 4)])).unwrap_err().to_string();
    assert!(
        e.starts_with("line 9, instruction `ar`:")
            && e.contains("which is `all-reduce`, not `while`"),
        "{e}"
    );
}

#[test]
fn replica_groups_decide_group_size_and_link_class() {
    let text = |groups: &str| {
        format!(
                "HloModule m\n\nENTRY %main (p: f32[4]) -> f32[4] {{\n  %p = f32[4]{{0}} parameter(0)\n  ROOT %ar = f32[4]{{0}} all-reduce(%p), replica_groups={groups}, to_apply=%add\n}}\n\n%add (a: f32[], b: f32[]) -> f32[] {{\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %c = f32[] add(%a, %b)\n}}\n"
            )
    };
    let kind = |groups: &str| import(&text(groups)).0.op(OpId(0)).kind.clone();
    assert!(matches!(
        kind("{{0,1},{2,3}}"),
        OpKind::Collective {
            group: 2,
            link: LinkClass::IntraNode,
            ..
        }
    ));
    assert!(matches!(
        kind("[2,8]<=[16]"),
        OpKind::Collective {
            group: 8,
            link: LinkClass::IntraNode,
            ..
        }
    ));
    assert!(matches!(
        kind("[8,2]<=[2,8]T(1,0)"),
        OpKind::Collective {
            group: 2,
            link: LinkClass::InterNode,
            ..
        }
    ));
    assert!(matches!(
        kind("{{0,8}}"),
        OpKind::Collective {
            group: 2,
            link: LinkClass::InterNode,
            ..
        }
    ));
    // The mesh form: a 2x8 mesh, groups along `y` stay in a node, along `x` they cross.
    assert!(matches!(
        kind("mesh['x'=2,'y'=8] {'y'}"),
        OpKind::Collective {
            group: 8,
            link: LinkClass::IntraNode,
            ..
        }
    ));
    assert!(matches!(
        kind("mesh['x'=2,'y'=8] {'x'}"),
        OpKind::Collective {
            group: 2,
            link: LinkClass::InterNode,
            ..
        }
    ));
    assert!(matches!(
        kind("mesh['x'=2,'y'=8], device_ids=([8,2]T(1,0)) {'y'}"),
        OpKind::Collective {
            group: 8,
            link: LinkClass::InterNode,
            ..
        }
    ));
    // A group of one moves nothing.
    assert_eq!(import(&text("{{0},{1}}")).0.len(), 0);
    assert_eq!(import(&text("mesh['x'=8,'y'=1] {'y'}")).0.len(), 0);
    assert_eq!(import(&text("maximal_mesh[device_id=0] {}")).0.len(), 0);
    // A malformed mesh form is an error at the attribute.
    let m = parse(&text("mesh['x'=2,'y'=8] {'z'}")).unwrap();
    let e = lower(&m, &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("line 5, column ") && e.contains("'z' is not an axis"),
        "{e}"
    );
}

#[test]
fn dots_and_fusions_are_costed_from_shapes() {
    let (g, report) = import(
        r#"HloModule m

%fused (a: bf16[4,64,32], b: bf16[32,16]) -> bf16[4,64,16] {
  %a = bf16[4,64,32]{2,1,0} parameter(0)
  %b = bf16[32,16]{1,0} parameter(1)
  %d = bf16[4,64,16]{2,1,0} dot(%a, %b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT %r = bf16[4,64,16]{2,1,0} tanh(%d)
}

ENTRY %main (a: bf16[4,64,32], b: bf16[32,16]) -> bf16[4,64,16] {
  %a = bf16[4,64,32]{2,1,0} parameter(0)
  %b = bf16[32,16]{1,0} parameter(1)
  %dot = bf16[4,64,64]{2,1,0} dot(%a, %a), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  %f = bf16[4,64,16]{2,1,0} fusion(%a, %b), kind=kOutput, calls=%fused
  ROOT %z = bf16[4,64,16]{2,1,0} frobnicate(%f)
  %z2 = bf16[4,64,16]{2,1,0} frobnicate(%f)
}
"#,
    );
    let OpKind::Compute {
        class, flops, gemm, ..
    } = g.op(find(&g, "dot")).kind.clone()
    else {
        panic!()
    };
    assert_eq!(class, ComputeClass::Gemm);
    assert_eq!(flops, 2 * 4 * 64 * 64 * 32);
    assert_eq!(
        gemm,
        Some(GemmShape {
            b: 4,
            m: 64,
            n: 64,
            k: 32
        })
    );
    let OpKind::Compute {
        class,
        flops,
        bytes,
        ..
    } = g.op(find(&g, "f")).kind.clone()
    else {
        panic!()
    };
    assert_eq!(class, ComputeClass::Gemm);
    // The dot's flops plus one per element of the tanh.
    assert_eq!(flops, 2 * 4 * 64 * 16 * 32 + 4 * 64 * 16);
    // The fusion reads its operands and writes its result; the dot's output stays on chip.
    assert_eq!(bytes, (4 * 64 * 32 + 32 * 16 + 4 * 64 * 16) * 2);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(report.warnings[0].contains("frobnicate"));
}

#[test]
fn a_body_that_calls_itself_is_an_error_not_a_stack_overflow() {
    let text = r#"HloModule m

%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  ROOT %t = pred[] constant(true)
}

%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %x = s32[] negate(%s)
  ROOT %w = s32[] while(%x), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"1"}}
}

ENTRY %main (p: s32[]) -> s32[] {
  %p = s32[] parameter(0)
  ROOT %loop = s32[] while(%p), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"1"}}
}
"#;
    let m = parse(text).unwrap();
    let e = lower(&m, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("more than 64 deep"), "{e}");
}

/// A collective op: name, kind, bytes, group size and link class.
type Collective = (String, CollectiveKind, u64, u32, LinkClass);

/// The collectives of a graph, by name.
fn collectives(g: &Graph) -> Vec<Collective> {
    let mut out: Vec<_> = g
        .ops()
        .filter_map(|o| match o.kind {
            OpKind::Collective {
                kind,
                bytes,
                group,
                link,
            } => Some((o.name.clone(), kind, bytes, group, link)),
            _ => None,
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Every real jax 0.10 dump of `fixtures/hlo` (see its README) imports through
/// [`crate::read_graph`] with the collectives its text has: one op per collective instruction
/// (three per loop body's one in `scan`, whose loop runs 3 times), group sizes from the mesh,
/// iota and list forms, and link classes that tell the groups apart (4 GPUs per node, so a
/// group within devices 0-3 or 4-7 is intra-node). The `.opt` modules are scheduled and fused.
#[test]
fn real_jax_dumps_import_with_their_collectives() {
    use CollectiveKind::{AllGather, AllReduce};
    use LinkClass::{InterNode as Inter, IntraNode as Intra};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/hlo");
    let loop_ar = |l: &str, k: u32| (format!("{l}.it{k}.all-reduce"), AllReduce, 1024, 8, Inter);
    let expected: Vec<(&str, Vec<Collective>)> = vec![
        (
            "dp.spmd",
            vec![
                ("all-reduce".into(), AllReduce, 2048, 8, Inter),
                ("all-reduce.1".into(), AllReduce, 2048, 8, Inter),
            ],
        ),
        // Both gradients in one tuple all-reduce.
        (
            "dp.opt",
            vec![("all-reduce.2".into(), AllReduce, 4096, 8, Inter)],
        ),
        (
            "tp.spmd",
            vec![
                // `[2,4]<=[8]`: over `model`, devices 0-3 and 4-7.
                ("all-reduce".into(), AllReduce, 2048, 4, Intra),
                // `{{0,4},{1,5},{2,6},{3,7}}`: over `data`.
                ("all-reduce.1".into(), AllReduce, 512, 2, Inter),
                ("all-reduce.2".into(), AllReduce, 512, 2, Inter),
            ],
        ),
        (
            "tp.opt",
            vec![
                ("all-reduce".into(), AllReduce, 2048, 4, Intra),
                ("all-reduce.3".into(), AllReduce, 1024, 2, Inter),
            ],
        ),
        (
            "fsdp.spmd",
            vec![
                ("all-gather".into(), AllGather, 2048, 8, Inter),
                ("all-gather.1".into(), AllGather, 2048, 8, Inter),
                ("all-reduce".into(), AllReduce, 2048, 8, Inter),
                ("all-reduce.1".into(), AllReduce, 2048, 8, Inter),
            ],
        ),
        (
            "fsdp.opt",
            vec![
                ("all-gather".into(), AllGather, 2048, 8, Inter),
                ("all-gather.1".into(), AllGather, 2048, 8, Inter),
                ("all-reduce.2".into(), AllReduce, 4096, 8, Inter),
            ],
        ),
        (
            "scan.spmd",
            (0..3).map(|k| loop_ar("while.25", k)).collect(),
        ),
        (
            "scan.opt",
            (0..3)
                .map(|k| {
                    let (_, kind, bytes, group, link) = loop_ar("", k);
                    (
                        format!("while.29.it{k}.all-reduce.4"),
                        kind,
                        bytes,
                        group,
                        link,
                    )
                })
                .collect(),
        ),
        // `device_ids=([2,4]T(1,0))`: over `axis_0` the groups are devices 0-3 and 4-7 (an
        // iota mesh would give {0,2,4,6}, across nodes), over `axis_1` {0,4}, {1,5}, ...
        (
            "transposed.spmd",
            vec![
                ("all-reduce".into(), AllReduce, 16, 4, Intra),
                ("all-reduce.1".into(), AllReduce, 8, 2, Inter),
            ],
        ),
        (
            "transposed.opt",
            vec![
                ("all-reduce".into(), AllReduce, 16, 4, Intra),
                ("all-reduce.1".into(), AllReduce, 8, 2, Inter),
            ],
        ),
    ];
    let options = ImportOptions {
        gpus_per_node: 4,
        ..ImportOptions::default()
    };
    for (name, want) in expected {
        let path = dir.join(format!("{name}.hlo"));
        let (g, warnings) =
            crate::read_graph(&path, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(warnings.is_empty(), "{name}: {warnings:?}");
        assert_eq!(collectives(&g), want, "{name}");
        let text = std::fs::read_to_string(&path).unwrap();
        let m = parse(&text).unwrap();
        let scheduled = m.attributes.iter().any(|a| a.name == "is_scheduled");
        let fusions = m.entry().instructions.iter().any(|i| i.opcode == "fusion");
        let mesh = text.contains("replica_groups=mesh[");
        assert_eq!(
            (scheduled, fusions),
            (name.ends_with(".opt"), name.ends_with(".opt")),
            "{name}"
        );
        assert_eq!(mesh, !name.starts_with("tp."), "{name}");
    }
}

/// Resident bytes are the entry parameters' (a tuple parameter's leaves, a token 0); step
/// outputs are the ops whose output reaches the root through free instructions only, followed
/// element by element through tuples, an async pair, an inlined call and an unrolled loop.
#[test]
fn resident_bytes_and_step_outputs() {
    let (g, _) = import(
        r#"HloModule m

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = f32[] add(%a, %b)
}

%callee (x: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %n = f32[8]{0} negate(%x)
  %e = f32[8]{0} exponential(%n)
  ROOT %r = (f32[8]{0}, f32[8]{0}) tuple(%e, %x)
}

%body (s: (s32[], f32[8], f32[8])) -> (s32[], f32[8], f32[8]) {
  %s = (s32[], f32[8]{0}, f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %n = s32[] add(%i, %one)
  %v = f32[8]{0} get-tuple-element(%s), index=1
  %w = f32[8]{0} sine(%v)
  %keep = f32[8]{0} get-tuple-element(%s), index=2
  ROOT %r = (s32[], f32[8]{0}, f32[8]{0}) tuple(%n, %w, %keep)
}

%cond (s: (s32[], f32[8], f32[8])) -> pred[] {
  %s = (s32[], f32[8]{0}, f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %k = s32[] constant(2)
  ROOT %lt = pred[] compare(%i, %k), direction=LT
}

ENTRY %main (p: f32[8], q: (bf16[4,4], s32[]), tok: token[]) -> (f32[2,4], f32[8], f32[8], f32[8], f32[8], f32[8], s32[]) {
  %p = f32[8]{0} parameter(0)
  %q = (bf16[4,4]{1,0}, s32[]) parameter(1)
  %tok = token[] parameter(2)
  %a = f32[8]{0} multiply(%p, %p)
  %b = f32[8]{0} add(%a, %p)
  %t = (f32[8]{0}, f32[8]{0}) tuple(%a, %b)
  %tb = f32[8]{0} get-tuple-element(%t), index=1
  %cast = f32[2,4]{1,0} bitcast(%tb)
  %ars = f32[8]{0} all-reduce-start(%a), replica_groups={{0,1,2,3}}, to_apply=%sum
  %ard = f32[8]{0} all-reduce-done(%ars)
  %u = f32[8]{0} negate(%ard)
  %c = (f32[8]{0}, f32[8]{0}) call(%a), to_apply=%callee
  %c0 = f32[8]{0} get-tuple-element(%c), index=0
  %zero = s32[] constant(0)
  %d = f32[8]{0} cosine(%p)
  %init = (s32[], f32[8]{0}, f32[8]{0}) tuple(%zero, %a, %d)
  %loop = (s32[], f32[8]{0}, f32[8]{0}) while(%init), condition=%cond, body=%body
  %lw = f32[8]{0} get-tuple-element(%loop), index=1
  %lk = f32[8]{0} get-tuple-element(%loop), index=2
  ROOT %out = (f32[2,4]{1,0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, f32[8]{0}, s32[]) tuple(%cast, %ard, %c0, %lw, %lk, %p, %zero)
}
"#,
    );
    // f32[8] + (bf16[4,4] + s32[]) + token[] = 32 + 32 + 4 + 0.
    assert_eq!(g.resident_bytes(), 68);
    let mut live: Vec<&str> = g
        .ops()
        .filter(|o| o.live_out)
        .map(|o| o.name.as_str())
        .collect();
    live.sort_unstable();
    // Not `a` (only element 0 of `t`, the call's passed-through element and the loop's start
    // read it), nor `u` (read by nothing), the callee's `n`, iteration 0's `w` or the counter.
    assert_eq!(live, ["ars", "b", "c.in.e", "d", "loop.it1.w"]);
    assert_eq!(
        g.len(),
        11,
        "{:?}",
        g.ops().map(|o| &o.name).collect::<Vec<_>>()
    );
}

/// The real dumps keep their memory information: `scan.opt` holds two parameters
/// (f32[3,16,16] and f32[8,16]) and returns one fusion, after two unrolled loops; every
/// module's parameters are resident and something is returned.
#[test]
fn real_jax_dumps_have_resident_bytes_and_step_outputs() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/hlo");
    let options = ImportOptions {
        gpus_per_node: 4,
        ..ImportOptions::default()
    };
    for name in ["dp", "tp", "fsdp", "scan", "transposed"] {
        for stage in ["spmd", "opt"] {
            let path = dir.join(format!("{name}.{stage}.hlo"));
            let (g, _) = crate::read_graph(&path, &options).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            let m = parse(&text).unwrap();
            let params: u64 = m
                .entry()
                .instructions
                .iter()
                .filter(|i| i.opcode == "parameter")
                .map(|i| i.shape.bytes())
                .sum();
            // Every fixture's parameters are f32 or s32 arrays: the shape's own bytes.
            assert_eq!(g.resident_bytes(), params, "{name}.{stage}");
            assert!(g.ops().any(|o| o.live_out), "{name}.{stage}");
        }
    }
    let (g, _) = crate::read_graph(&dir.join("scan.opt.hlo"), &options).unwrap();
    assert_eq!(g.resident_bytes(), 4 * (3 * 16 * 16 + 8 * 16));
    let live: Vec<&str> = g
        .ops()
        .filter(|o| o.live_out)
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(live, ["multiply_subtract_fusion"]);
}

#[test]
fn a_get_tuple_element_depends_only_on_its_elements_producers() {
    let (g, _) = import(
        r#"HloModule m

%body (s: (s32[], f32[8], f32[8])) -> (s32[], f32[8], f32[8]) {
  %s = (s32[], f32[8]{0}, f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %v = f32[8]{0} get-tuple-element(%s), index=1
  %w = f32[8]{0} get-tuple-element(%s), index=2
  %nv = f32[8]{0} negate(%v)
  ROOT %out = (s32[], f32[8]{0}, f32[8]{0}) tuple(%next, %nv, %w)
}

%cond (s: (s32[], f32[8], f32[8])) -> pred[] {
  %s = (s32[], f32[8]{0}, f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(2)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (p: f32[8], q: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %q = f32[8]{0} parameter(1)
  %a = f32[8]{0} negate(%p)
  %b = f32[8]{0} exponential(%q)
  %t = (f32[8]{0}, f32[8]{0}) tuple(%a, %b)
  %x = f32[8]{0} get-tuple-element(%t), index=0
  %ux = f32[8]{0} sine(%x)
  %nest = ((f32[8]{0}, f32[8]{0}), f32[8]{0}) tuple(%t, %ux)
  %inner = (f32[8]{0}, f32[8]{0}) get-tuple-element(%nest), index=0
  %y = f32[8]{0} get-tuple-element(%inner), index=1
  %uy = f32[8]{0} cosine(%y)
  %whole = f32[8]{0} get-tuple-element(%nest), index=1
  %uw = f32[8]{0} abs(%whole)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{0}, f32[8]{0}) tuple(%zero, %a, %b)
  %loop = (s32[], f32[8]{0}, f32[8]{0}) while(%init), condition=%cond, body=%body
  %lv = f32[8]{0} get-tuple-element(%loop), index=1
  %lw = f32[8]{0} get-tuple-element(%loop), index=2
  %ulv = f32[8]{0} floor(%lv)
  %ulw = f32[8]{0} ceil(%lw)
  %bar = (f32[8]{0}, f32[8]{0}) opt-barrier(%t)
  %bx = f32[8]{0} get-tuple-element(%bar), index=0
  %ubx = f32[8]{0} sqrt(%bx)
  %r0 = f32[8]{0} add(%uy, %ux)
  %r1 = f32[8]{0} add(%ulv, %ulw)
  %r2 = f32[8]{0} add(%r0, %r1)
  %r3 = f32[8]{0} add(%r2, %uw)
  ROOT %r = f32[8]{0} add(%r3, %ubx)
}
"#,
    );
    let (a, b) = (find(&g, "a"), find(&g, "b"));
    // Element 0 of a tuple of two independent producers: only its own producer.
    assert_eq!(g.predecessors(find(&g, "ux")), vec![a]);
    // Through a nested tuple: element 1 of element 0.
    assert_eq!(g.predecessors(find(&g, "uy")), vec![b]);
    assert_eq!(g.predecessors(find(&g, "uw")), vec![find(&g, "ux")]);
    // Through an unrolled loop: element 1 is negated twice, element 2 passes through.
    assert_eq!(g.predecessors(find(&g, "loop.it0.nv")), vec![a]);
    assert_eq!(
        g.predecessors(find(&g, "loop.it1.nv")),
        vec![find(&g, "loop.it0.nv")]
    );
    assert_eq!(
        g.predecessors(find(&g, "ulv")),
        vec![find(&g, "loop.it1.nv")]
    );
    assert_eq!(g.predecessors(find(&g, "ulw")), vec![b]);
    // An opt-barrier orders all its results after all its operands: coarse.
    let mut barrier = g.predecessors(find(&g, "ubx")).to_vec();
    barrier.sort_unstable();
    assert_eq!(barrier, vec![a, b]);
}
