use concerto_graph::baselines::{lhs, program_order};
use concerto_graph::{simulate, Graph, OpId, StreamPlan, Timeline};

use super::*;
use crate::hlo::parse;

/// A small SPMD-like step: every sync collective kind, compute between them, a tuple root.
const STEP: &str = r#"HloModule step, entry_computation_layout={(f32[64,64]{1,0}, f32[64,64]{1,0})->(f32[64,64]{1,0}, f32[8,64]{1,0})}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p0: f32[64,64], p1: f32[64,64]) -> (f32[64,64], f32[8,64]) {
  %p0 = f32[64,64]{1,0} parameter(0), sharding={replicated}
  %p1 = f32[64,64]{1,0} parameter(1)
  %d0 = f32[64,64]{1,0} dot(f32[64,64]{1,0} %p0, f32[64,64]{1,0} %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %ar = f32[64,64]{1,0} all-reduce(%d0), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add
  %d1 = f32[64,64]{1,0} dot(%p1, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %ag = f32[512,64]{1,0} all-gather(%d1), channel_id=2, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true
  %rs = f32[8,64]{1,0} reduce-scatter(%d1), channel_id=3, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true, to_apply=%add
  %a2a = f32[64,64]{1,0} all-to-all(%d0), channel_id=4, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}
  %cp = f32[64,64]{1,0} collective-permute(%d1), channel_id=5, source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}
  %d2 = f32[64,64]{1,0} dot(%p0, %p0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %sl = f32[64,64]{1,0} slice(%ag), slice={[0:64], [0:64]}
  %e0 = f32[64,64]{1,0} add(%ar, %d2)
  %e1 = f32[64,64]{1,0} add(%e0, %sl)
  %e2 = f32[64,64]{1,0} add(%e1, %a2a)
  %e3 = f32[64,64]{1,0} add(%e2, %cp)
  ROOT %t = (f32[64,64]{1,0}, f32[8,64]{1,0}) tuple(%e3, %rs)
}
"#;

/// A loop of three iterations (known trip count) with a collective in its body.
const LOOP: &str = r#"HloModule looped

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%body (state: (s32[], f32[32,32])) -> (s32[], f32[32,32]) {
  %state = (s32[], f32[32,32]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %w = f32[32,32]{1,0} get-tuple-element(%state), index=1
  %mm = f32[32,32]{1,0} dot(%w, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %ar = f32[32,32]{1,0} all-reduce(%mm), channel_id=7, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add
  ROOT %out = (s32[], f32[32,32]{1,0}) tuple(%next, %ar)
}

%cond (state: (s32[], f32[32,32])) -> pred[] {
  %state = (s32[], f32[32,32]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (p: f32[32,32]) -> f32[32,32] {
  %p = f32[32,32]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[32,32]{1,0}) tuple(%zero, %p)
  %loop = (s32[], f32[32,32]{1,0}) while(%init), condition=%cond, body=%body
  %res = f32[32,32]{1,0} get-tuple-element(%loop), index=1
  %side = f32[32,32]{1,0} dot(%p, %p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %sum = f32[32,32]{1,0} add(%res, %side)
}
"#;

fn import(text: &str) -> (Module, Graph) {
    let module = parse(text).unwrap();
    let (graph, _) = lower(&module, &ImportOptions::default()).unwrap();
    (module, graph)
}

/// Durations that differ per op, so that start times order the merge.
fn durations(graph: &Graph) -> Vec<u64> {
    graph
        .ids()
        .map(|o| {
            if graph.op(o).is_collective() {
                700
            } else {
                100 + 37 * o.0 as u64 % 250
            }
        })
        .collect()
}

fn run(graph: &Graph, plan: &StreamPlan) -> Timeline {
    simulate(graph, plan, &durations(graph), 1.1).unwrap()
}

/// Exports `plan`, checks it with Concerto's importer, and returns the text and the makespan
/// of the written module replayed in program order.
fn round_trip(module: &Module, graph: &Graph, plan: &StreamPlan) -> (String, u64) {
    let timeline = run(graph, plan);
    let out = export(module, graph, plan, &timeline, &ImportOptions::default()).unwrap();
    let back = check_export(&out.text, graph, &ImportOptions::default()).unwrap();
    let replay = replay(&back, graph, &durations(graph), 1.1).unwrap();
    (out.text, replay.makespan)
}

fn line_of_offset(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in\n{text}"))
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in\n{text}"))
}

#[test]
fn every_collective_becomes_an_async_pair_and_the_replay_is_the_plan() {
    let (module, graph) = import(STEP);
    assert_eq!(graph.collective_count(), 5);
    for plan in [
        program_order(&graph).unwrap(),
        lhs(&graph, &durations(&graph)).unwrap(),
    ] {
        let want = run(&graph, &plan).makespan;
        let (text, replay) = round_trip(&module, &graph, &plan);
        assert_eq!(replay, want, "{text}");
        assert!(text.starts_with("HloModule step, is_scheduled=true, entry_computation_layout="));
        for (start, shape) in [
            ("%ar = f32[64,64]{1,0} all-reduce-start(%d0)", ""),
            (
                "%ag = (f32[64,64]{1,0}, f32[512,64]{1,0}) all-gather-start(%d1)",
                "",
            ),
            (
                "%rs = ((f32[64,64]{1,0}), f32[8,64]{1,0}) reduce-scatter-start(%d1)",
                "",
            ),
            (
                "%a2a = ((f32[64,64]{1,0}), f32[64,64]{1,0}) all-to-all-start(%d0)",
                "",
            ),
            (
                "%cp = (f32[64,64]{1,0}, f32[64,64]{1,0}) collective-permute-start(%d1)",
                "",
            ),
        ] {
            assert!(text.contains(start), "{start}{shape} missing in\n{text}");
        }
        for done in [
            "%ar.done = f32[64,64]{1,0} all-reduce-done(%ar)",
            "%ag.done = f32[512,64]{1,0} all-gather-done(%ag)",
            "%rs.done = f32[8,64]{1,0} reduce-scatter-done(%rs)",
            "%a2a.done = f32[64,64]{1,0} all-to-all-done(%a2a)",
            "%cp.done = f32[64,64]{1,0} collective-permute-done(%cp)",
        ] {
            assert!(text.contains(done), "{done} missing in\n{text}");
        }
        // Attributes are kept on the start; users read the done.
        assert!(text.contains("channel_id=3, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true, to_apply=%add"));
        assert!(text.contains("%e0 = f32[64,64]{1,0} add(%ar.done, %d2)"));
        assert!(text.contains("ROOT %t = (f32[64,64]{1,0}, f32[8,64]{1,0}) tuple(%e3, %rs.done)"));
        // Each done comes right before its first user, after the start.
        for (start, done, user) in [
            ("%ar =", "%ar.done =", "%e0 ="),
            ("%ag =", "%ag.done =", "%sl ="),
        ] {
            let (s, d, u) = (
                line_of(&text, start),
                line_of(&text, done),
                line_of(&text, user),
            );
            assert!(
                s < d && d + 1 == u,
                "{start} {s}, {done} {d}, {user} {u}\n{text}"
            );
        }
    }
}

#[test]
fn the_sequence_follows_the_plan_not_the_text() {
    let (module, graph) = import(STEP);
    let id = |n: &str| graph.find(n).unwrap();
    // Compute in reverse program order where the dependencies allow: d2 and d1 first.
    let compute: Vec<OpId> = ["d2", "d1", "d0", "sl", "e0", "e1", "e2", "e3"]
        .iter()
        .map(|n| id(n))
        .collect();
    let mut streams = vec![(Stream::Compute, compute)];
    for (s, ops) in StreamPlan::program_order(&graph)
        .unwrap()
        .streams
        .into_iter()
        .skip(1)
    {
        let mut ops = ops;
        ops.reverse();
        streams.push((s, ops));
    }
    let plan = StreamPlan::new(&graph, streams).unwrap();
    let (text, replay) = round_trip(&module, &graph, &plan);
    assert_eq!(replay, run(&graph, &plan).makespan);
    assert!(line_of(&text, "%d2 =") < line_of(&text, "%d1 ="));
    assert!(line_of(&text, "%d1 =") < line_of(&text, "%d0 ="));
    // The collectives of one channel in the plan's (reversed) order.
    assert!(line_of(&text, "%cp =") < line_of(&text, "%a2a ="));
    assert!(line_of(&text, "%ag =") < line_of(&text, "%ar ="));
}

/// Two independent producers in one (nested) tuple, each element read by its own user.
const TUPLED: &str = r#"HloModule tupled

ENTRY %main (p: f32[16,16], q: f32[16,16]) -> f32[16,16] {
  %p = f32[16,16]{1,0} parameter(0)
  %q = f32[16,16]{1,0} parameter(1)
  %a = f32[16,16]{1,0} dot(%p, %p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %b = f32[16,16]{1,0} dot(%q, %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = (f32[16,16]{1,0}, f32[16,16]{1,0}) tuple(%a, %b)
  %nest = ((f32[16,16]{1,0}, f32[16,16]{1,0}), f32[16,16]{1,0}) tuple(%t, %p)
  %inner = (f32[16,16]{1,0}, f32[16,16]{1,0}) get-tuple-element(%nest), index=0
  %x = f32[16,16]{1,0} get-tuple-element(%inner), index=0
  %u = f32[16,16]{1,0} negate(%x)
  %y = f32[16,16]{1,0} get-tuple-element(%t), index=1
  ROOT %r = f32[16,16]{1,0} add(%u, %y)
}
"#;

#[test]
fn a_user_of_element_0_may_run_before_element_1s_producer() {
    let (module, graph) = import(TUPLED);
    let id = |n: &str| graph.find(n).unwrap();
    assert_eq!(graph.predecessors(id("u")), [id("a")]);
    // The plan runs `u` (reads element 0 of `t`) before `b` (element 1's producer).
    let order: Vec<OpId> = ["a", "u", "b", "r"].iter().map(|n| id(n)).collect();
    let plan = StreamPlan::new(&graph, vec![(Stream::Compute, order)]).unwrap();
    let (text, replay) = round_trip(&module, &graph, &plan);
    assert_eq!(replay, run(&graph, &plan).makespan);
    assert!(line_of(&text, "%u =") < line_of(&text, "%b ="), "{text}");
    // `u` and `r` read the elements themselves; the tuples stay, after their elements.
    assert!(text.contains("%u = f32[16,16]{1,0} negate(%a)"), "{text}");
    assert!(
        text.contains("ROOT %r = f32[16,16]{1,0} add(%u, %b)"),
        "{text}"
    );
    assert!(line_of(&text, "%b =") < line_of(&text, "%t ="), "{text}");
    assert!(line_of(&text, "%t =") < line_of(&text, "%nest ="), "{text}");
    assert!(!text.contains("get-tuple-element"), "{text}");
    // The plan's order is the program order of what the written module imports to.
    let back = check_export(&text, &graph, &ImportOptions::default()).unwrap();
    let names: Vec<&str> = back.ops().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["a", "u", "b", "r"]);
}

#[test]
fn loops_are_unrolled_with_the_import_names_and_fresh_channels() {
    let (module, graph) = import(LOOP);
    assert!(graph.find("loop.it2.ar").is_some());
    let plan = lhs(&graph, &durations(&graph)).unwrap();
    let (text, replay) = round_trip(&module, &graph, &plan);
    assert_eq!(replay, run(&graph, &plan).makespan);
    assert!(!text.contains(" while("), "{text}");
    for it in 0..3 {
        assert!(
            text.contains(&format!(
                "%loop.it{it}.ar = f32[32,32]{{1,0}} all-reduce-start(%loop.it{it}.mm)"
            )),
            "{text}"
        );
    }
    // Iteration 0 reads the loop's operand, iteration k the root tuple of iteration k - 1,
    // element by element: a get-tuple-element of a written tuple is a read of its element.
    assert!(
        text.contains("%loop.it0.mm = f32[32,32]{1,0} dot(%p, %p)"),
        "{text}"
    );
    assert!(
        text.contains("%loop.it1.mm = f32[32,32]{1,0} dot(%loop.it0.ar.done, %loop.it0.ar.done)"),
        "{text}"
    );
    assert!(
        text.contains("%loop.it1.next = s32[] add(%loop.it0.next, %loop.it1.one)"),
        "{text}"
    );
    assert!(
        text.contains("%sum = f32[32,32]{1,0} add(%loop.it2.ar.done, %side)"),
        "{text}"
    );
    let entry = &text[line_of_offset(&text, "ENTRY %main")..];
    let entry = &entry[..line_of_offset(entry, "\n}")];
    assert!(!entry.contains("get-tuple-element("), "{text}");
    assert!(
        entry.lines().last().unwrap().contains("ROOT %sum"),
        "{text}"
    );
    // The state tuples stay, read by nothing: every element of each is written before it.
    for (it, next) in [(0, "%loop.it0.next"), (2, "%loop.it2.next")] {
        let out = line_of(
            &text,
            &format!("%loop.it{it}.out = (s32[], f32[32,32]{{1,0}}) tuple("),
        );
        assert!(line_of(&text, &format!("{next} =")) < out, "{text}");
        assert!(
            line_of(&text, &format!("%loop.it{it}.ar.done =")) < out,
            "{text}"
        );
    }
    let channels: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("all-reduce-start"))
        .map(|l| {
            l.split("channel_id=")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(channels, ["7", "8", "9"], "{text}");
    // The body and condition stay, unused: the module still parses as a whole.
    assert!(text.contains("%body (state: (s32[], f32[32,32])) -> (s32[], f32[32,32]) {"));
}

#[test]
fn a_plan_for_another_graph_is_refused_with_both_fingerprints() {
    let (module, graph) = import(STEP);
    let (_, other) = import(LOOP);
    let plan = program_order(&other).unwrap();
    let timeline = run(&other, &plan);
    let e = export(&module, &other, &plan, &timeline, &ImportOptions::default()).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ExportError::OtherGraph { .. }), "{text}");
    assert!(
        text.contains(&format!("{:016x}", other.fingerprint())),
        "{text}"
    );
    assert!(
        text.contains(&format!("{:016x}", graph.fingerprint())),
        "{text}"
    );
    // Import options are part of the graph: 2 GPUs per node make other link classes.
    let plan = program_order(&graph).unwrap();
    let timeline = run(&graph, &plan);
    let narrow = ImportOptions {
        gpus_per_node: 2,
        ..ImportOptions::default()
    };
    let e = export(&module, &graph, &plan, &timeline, &narrow).unwrap_err();
    assert!(matches!(e, ExportError::OtherGraph { .. }), "{e}");
}

#[test]
fn a_timeline_of_another_size_is_an_error() {
    let (module, graph) = import(STEP);
    let plan = program_order(&graph).unwrap();
    let mut timeline = run(&graph, &plan);
    timeline.start.pop();
    let e = export(&module, &graph, &plan, &timeline, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("the timeline has"), "{e}");
}

#[test]
fn check_export_finds_a_changed_dependency() {
    let (module, graph) = import(STEP);
    let plan = program_order(&graph).unwrap();
    let timeline = run(&graph, &plan);
    let out = export(&module, &graph, &plan, &timeline, &ImportOptions::default()).unwrap();
    let broken = out.text.replace(
        "%e0 = f32[64,64]{1,0} add(%ar.done, %d2)",
        "%e0 = f32[64,64]{1,0} add(%d2, %d2)",
    );
    assert_ne!(broken, out.text);
    let e = check_export(&broken, &graph, &ImportOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains("op `e0`: dependencies differ"),
        "{e}"
    );
}

#[test]
fn a_plan_without_an_op_names_the_op() {
    let (module, graph) = import(STEP);
    let mut plan = program_order(&graph).unwrap();
    let timeline = run(&graph, &plan);
    let dropped = plan.streams[0].1.remove(2);
    let e = export(&module, &graph, &plan, &timeline, &ImportOptions::default()).unwrap_err();
    assert!(matches!(e, ExportError::Plan { .. }), "{e}");
    assert!(e.to_string().contains(&graph.op(dropped).name), "{e}");
}

/// A `shard_map`-like step: the collectives sit in a called computation.
const CALLED: &str = r#"HloModule called

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%shmap_body (a: f32[16,16], b: f32[16,16]) -> (f32[16,16], f32[128,16]) {
  %a = f32[16,16]{1,0} parameter(0)
  %b = f32[16,16]{1,0} parameter(1)
  %mm = f32[16,16]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %ar = f32[16,16]{1,0} all-reduce(%mm), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add
  %ag = f32[128,16]{1,0} all-gather(%b), channel_id=2, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true
  ROOT %t = (f32[16,16]{1,0}, f32[128,16]{1,0}) tuple(%ar, %ag)
}

ENTRY %main (p: f32[16,16], q: f32[16,16]) -> f32[16,16] {
  %p = f32[16,16]{1,0} parameter(0)
  %q = f32[16,16]{1,0} parameter(1)
  %call = (f32[16,16]{1,0}, f32[128,16]{1,0}) call(%p, %q), to_apply=%shmap_body
  %r = f32[16,16]{1,0} get-tuple-element(%call), index=0
  %g = f32[128,16]{1,0} get-tuple-element(%call), index=1
  %h = f32[16,16]{1,0} slice(%g), slice={[0:16], [0:16]}
  ROOT %o = f32[16,16]{1,0} add(%r, %h)
}
"#;

#[test]
fn calls_are_inlined_by_the_import_and_the_export() {
    let (module, graph) = import(CALLED);
    // The import inlines the call: its collectives are ops of the step.
    assert_eq!(graph.collective_count(), 2);
    let mm = graph.find("call.in.mm").unwrap();
    assert_eq!(graph.successors(mm), [graph.find("call.in.ar").unwrap()]);
    let plan = lhs(&graph, &durations(&graph)).unwrap();
    let (text, replay) = round_trip(&module, &graph, &plan);
    assert_eq!(replay, run(&graph, &plan).makespan);
    assert!(!text.contains(" call("), "{text}");
    assert!(
        text.contains("%call.in.mm = f32[16,16]{1,0} dot(%p, %q)"),
        "{text}"
    );
    assert!(
        text.contains("%call.in.ag = (f32[16,16]{1,0}, f32[128,16]{1,0}) all-gather-start(%q)"),
        "{text}"
    );
    // The call's result is read element by element: `%o` reads the all-reduce's done.
    assert!(
        text.contains("%o = f32[16,16]{1,0} add(%call.in.ar.done, %h)"),
        "{text}"
    );
    assert!(
        text.contains("%h = f32[16,16]{1,0} slice(%call.in.ag.done)"),
        "{text}"
    );
}

#[test]
fn async_starts_count_the_bytes_of_their_result() {
    // A variadic all-reduce-start has the results' tuple shape; a collective-permute-start
    // carries two u32[] context elements after (operand, result).
    let text = r#"HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
ENTRY %e (a: f32[1024], b: f32[256]) -> (f32[1024], f32[256], f32[256]) {
  %a = f32[1024]{0} parameter(0)
  %b = f32[256]{0} parameter(1)
  %ars = (f32[1024]{0}, f32[256]{0}) all-reduce-start(%a, %b), replica_groups={{0,1}}, to_apply=%add
  %ard = (f32[1024]{0}, f32[256]{0}) all-reduce-done(%ars)
  %cps = (f32[256]{0}, f32[256]{0}, u32[], u32[]) collective-permute-start(%b), source_target_pairs={{0,1},{1,0}}
  %cpd = f32[256]{0} collective-permute-done(%cps)
  %x = f32[1024]{0} get-tuple-element(%ard), index=0
  %y = f32[256]{0} get-tuple-element(%ard), index=1
  ROOT %t = (f32[1024]{0}, f32[256]{0}, f32[256]{0}) tuple(%x, %y, %cpd)
}
"#;
    let (_, graph) = import(text);
    let bytes = |n: &str| match graph.op(graph.find(n).unwrap()).kind {
        concerto_graph::OpKind::Collective { bytes, .. } => bytes,
        _ => panic!("{n} is no collective"),
    };
    assert_eq!(bytes("ars"), 4 * (1024 + 256));
    assert_eq!(bytes("cps"), 4 * 256);
}
