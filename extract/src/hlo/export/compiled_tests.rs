//! Tests of writing plans into compiled modules ([`export_verbatim`]): XLA's after-optimizations
//! form, with fusions, backend configs, metadata and async collective pairs.

use std::path::PathBuf;

use concerto_graph::{simulate, Graph, OpId, Stream, StreamPlan, Timeline};

use super::*;
use crate::hlo::parse;

/// A compiled-style module: loop and gemm fusions with backend configs and metadata, an
/// all-reduce pair XLA made sync (nothing between start and done), a reduce-scatter as an
/// `async-start` wrapper, a `/*index=5*/` comment and a control predecessor.
const SMALL: &str = r#"HloModule small, is_scheduled=true, entry_computation_layout={(f32[64,64]{1,0}, f32[64,64]{1,0})->(f32[64,64]{1,0}, f32[64,64]{1,0}, f32[8,64]{1,0}, f32[64,64]{1,0})}, num_partitions=8

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%fused_a (p.0: f32[64,64]) -> f32[64,64] {
  %p.0 = f32[64,64]{1,0} parameter(0)
  ROOT %m = f32[64,64]{1,0} multiply(%p.0, %p.0)
}

%fused_b (p.1: f32[64,64]) -> f32[64,64] {
  %p.1 = f32[64,64]{1,0} parameter(0)
  ROOT %e = f32[64,64]{1,0} exponential(%p.1)
}

%gemm_c (p.2: f32[64,64], p.3: f32[64,64]) -> f32[64,64] {
  %p.2 = f32[64,64]{1,0} parameter(0)
  %p.3 = f32[64,64]{1,0} parameter(1)
  ROOT %d = f32[64,64]{1,0} dot(%p.2, %p.3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%fused_d (p.4: f32[64,64], p.5: f32[64,64]) -> f32[64,64] {
  %p.4 = f32[64,64]{1,0} parameter(0)
  %p.5 = f32[64,64]{1,0} parameter(1)
  ROOT %a = f32[64,64]{1,0} add(%p.4, %p.5)
}

%async_computation (param_0: f32[64,64]) -> f32[8,64] {
  %param_0 = f32[64,64]{1,0} parameter(0)
  ROOT %reduce-scatter.1 = f32[8,64]{1,0} reduce-scatter(%param_0), channel_id=2, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true, to_apply=%add
}

ENTRY %main (p0: f32[64,64], p1: f32[64,64]) -> (f32[64,64], f32[64,64], f32[8,64], f32[64,64]) {
  %p0 = f32[64,64]{1,0} parameter(0), metadata={op_name="p0"}
  %p1 = f32[64,64]{1,0} parameter(1)
  %fa = f32[64,64]{1,0} fusion(%p0), kind=kLoop, calls=%fused_a, metadata={op_name="jit(step)/mul" source_file="a.py" source_line=3}, backend_config={"operation_queue_id":"0","fusion_backend_config":{"kind":"__loop"}}
  %ars = f32[64,64]{1,0} all-reduce-start(%fa), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=%add, backend_config={"operation_queue_id":"0","collective_backend_config":{"is_sync":true,"is_pipelined":false}}
  %ard = f32[64,64]{1,0} all-reduce-done(%ars), backend_config={"operation_queue_id":"0","collective_backend_config":{"is_sync":false,"is_pipelined":false}}
  %fb = f32[64,64]{1,0} fusion(%p1), kind=kLoop, calls=%fused_b, frontend_attributes={_xla_stream_annotation="0"}, backend_config={"operation_queue_id":"0"}
  %fc = f32[64,64]{1,0} fusion(%fb, %p1), kind=kCustom, calls=%gemm_c, backend_config={"operation_queue_id":"0","fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"64"}}}
  %bc = f32[64,64]{1,0} bitcast(%fc)
  %fe = f32[64,64]{1,0} fusion(%p0), kind=kLoop, calls=%fused_b
  %fd = f32[64,64]{1,0} fusion(%ard, %bc), kind=kLoop, calls=%fused_d, control-predecessors={%fe}
  %rss = ((f32[64,64]{1,0}), f32[8,64]{1,0}) async-start(%fb), calls=%async_computation, backend_config={"operation_queue_id":"0","collective_backend_config":{"is_sync":false,"is_pipelined":false}}
  %rsd = f32[8,64]{1,0} async-done(%rss)
  ROOT %t = (f32[64,64]{1,0}, f32[64,64]{1,0}, f32[8,64]{1,0}, f32[64,64]{1,0}) tuple(%fd, /*index=1*/%fb, %rsd, %fe)
}

"#;

fn import(text: &str) -> Graph {
    let module = parse(text).unwrap();
    lower(&module, &ImportOptions::default()).unwrap().0
}

fn durations(graph: &Graph) -> Vec<u64> {
    graph
        .ids()
        .map(|o| {
            if graph.op(o).is_collective() {
                900
            } else {
                100 + 37 * o.0 as u64 % 250
            }
        })
        .collect()
}

fn run(graph: &Graph, plan: &StreamPlan) -> Timeline {
    simulate(graph, plan, &durations(graph), 1.0).unwrap()
}

/// Exports `plan` into `text`, checked (same graph, replay = plan); returns the export.
fn checked(text: &str, graph: &Graph, plan: &StreamPlan) -> Exported {
    let timeline = run(graph, plan);
    let c = export_verbatim_checked(
        text,
        graph,
        plan,
        &timeline,
        &durations(graph),
        1.0,
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(c.replay.makespan, timeline.makespan);
    c.exported
}

/// The entry's lines of `text` (between `ENTRY` and its closing `}`).
fn entry_lines(text: &str) -> Vec<&str> {
    let from = text.find("\nENTRY").unwrap() + 1;
    let body = &text[from..];
    let end = body.find("\n}").unwrap();
    body[..end].lines().skip(1).collect()
}

fn outside_entry(text: &str) -> (String, String) {
    let from = text.find("\nENTRY").unwrap() + 1;
    let end = from + text[from..].find("\n}").unwrap();
    (text[..from].to_string(), text[end..].to_string())
}

fn pos(lines: &[&str], name: &str) -> usize {
    let needle = format!("%{name} = ");
    lines
        .iter()
        .position(|l| {
            l.trim_start()
                .trim_start_matches("ROOT ")
                .starts_with(&needle)
        })
        .unwrap_or_else(|| panic!("{name} not in {lines:#?}"))
}

/// The plan that runs compute in `compute` order and every other stream as in program order.
fn plan_with_compute(graph: &Graph, compute: &[&str]) -> StreamPlan {
    let mut streams = StreamPlan::program_order(graph).unwrap().streams;
    let ids: Vec<OpId> = compute.iter().map(|n| graph.find(n).unwrap()).collect();
    for (s, ops) in &mut streams {
        if *s == Stream::Compute {
            *ops = ids.clone();
        }
    }
    StreamPlan::new(graph, streams).unwrap()
}

#[test]
fn a_compiled_module_keeps_every_line_but_the_entry_order() {
    let graph = import(SMALL);
    let plan = StreamPlan::program_order(&graph).unwrap();
    let out = checked(SMALL, &graph, &plan);
    assert_eq!(out.entry_instructions, out.verbatim_instructions);
    assert_eq!(outside_entry(&out.text), outside_entry(SMALL));
    // Same lines, `is_sync` of the hoisted start aside.
    let mut want: Vec<String> = entry_lines(SMALL).iter().map(|l| l.to_string()).collect();
    let mut got: Vec<String> = entry_lines(&out.text)
        .iter()
        .map(|l| {
            l.replace(
                r#"{"is_sync":false,"is_pipelined":false}}"#,
                r#"{"is_sync":true,"is_pipelined":false}}"#,
            )
        })
        .collect();
    for l in &mut want {
        *l = l.replace(
            r#"{"is_sync":false,"is_pipelined":false}}"#,
            r#"{"is_sync":true,"is_pipelined":false}}"#,
        );
    }
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(out.sequence.len(), entry_lines(SMALL).len());
    assert_eq!(out.sequence.last().map(String::as_str), Some("t"));
}

#[test]
fn a_hoisted_start_becomes_async_and_its_done_sinks_to_its_first_user() {
    let graph = import(SMALL);
    let plan = StreamPlan::program_order(&graph).unwrap();
    let out = checked(SMALL, &graph, &plan);
    let lines = entry_lines(&out.text);
    // XLA had ars; ard adjacent (is_sync=true). The plan overlaps it with fb and fc: the
    // start stays right after fa, the done moves right before fd, its first user.
    assert_eq!(pos(&lines, "ars"), pos(&lines, "fa") + 1);
    assert!(pos(&lines, "fc") < pos(&lines, "ard"));
    // Between the done and fd only the bitcast fd also reads.
    assert_eq!(pos(&lines, "ard") + 2, pos(&lines, "fd"));
    assert_eq!(pos(&lines, "bc") + 1, pos(&lines, "fd"));
    let ars = lines[pos(&lines, "ars")];
    assert!(
        ars.contains(r#""collective_backend_config":{"is_sync":false,"#),
        "{ars}"
    );
    assert_eq!(out.is_sync_changed, ["ars"]);
    // The line changed in that one flag only.
    let original = entry_lines(SMALL)[pos(&entry_lines(SMALL), "ars")];
    assert_eq!(
        ars.replace("\"is_sync\":false", "\"is_sync\":true"),
        original
    );
    // The done's own config is not touched (XLA's pass sets the start's only).
    assert_eq!(
        lines[pos(&lines, "ard")],
        entry_lines(SMALL)[pos(&entry_lines(SMALL), "ard")]
    );
}

#[test]
fn a_start_with_nothing_but_nops_before_its_done_is_written_sync() {
    let graph = import(SMALL);
    let mut plan = StreamPlan::program_order(&graph).unwrap();
    let (fb, ars) = (graph.find("fb").unwrap(), graph.find("ars").unwrap());
    // A plan file may hold a compute op back for a collective its data does not need: here fb
    // waits for the all-reduce, so nothing runs while it is in flight. (The program order's
    // waits stay: the reduce-scatter reads fb.)
    plan.waits.push((ars, fb));
    plan.validate(&graph).unwrap();
    // (Concerto's replay follows data only, so it cannot see this wait: no replay check.)
    let timeline = run(&graph, &plan);
    let out = export_verbatim(SMALL, &graph, &plan, &timeline, &ImportOptions::default()).unwrap();
    check_export(&out.text, &graph, &ImportOptions::default()).unwrap();
    let lines = entry_lines(&out.text);
    // The done comes before fb, which waits for it; the start right after fa.
    assert_eq!(pos(&lines, "ars") + 1, pos(&lines, "ard"));
    assert!(pos(&lines, "ard") < pos(&lines, "fb"));
    let ars_line = lines[pos(&lines, "ars")];
    assert!(ars_line.contains("\"is_sync\":true"), "{ars_line}");
}

#[test]
fn swapped_fusions_are_written_swapped_and_verbatim() {
    let graph = import(SMALL);
    let compute: Vec<String> = StreamPlan::program_order(&graph).unwrap().streams[0]
        .1
        .iter()
        .map(|&o| graph.op(o).name.clone())
        .collect();
    let mut swapped: Vec<&str> = compute.iter().map(String::as_str).collect();
    let (a, b) = (
        swapped.iter().position(|n| *n == "fa").unwrap(),
        swapped.iter().position(|n| *n == "fb").unwrap(),
    );
    swapped.swap(a, b);
    let plan = plan_with_compute(&graph, &swapped);
    let out = checked(SMALL, &graph, &plan);
    let lines = entry_lines(&out.text);
    assert!(pos(&lines, "fb") < pos(&lines, "fa"));
    assert_eq!(out.verbatim_instructions, out.entry_instructions);
    // The control predecessor of fd (fe) is kept, before it.
    assert!(pos(&lines, "fe") < pos(&lines, "fd"));
    assert!(lines[pos(&lines, "fd")].ends_with("control-predecessors={%fe}"));
}

#[test]
fn a_plan_against_a_control_predecessor_names_both_instructions() {
    let graph = import(SMALL);
    let (fe, fd) = (graph.find("fe").unwrap(), graph.find("fd").unwrap());
    // Concerto's graph does not order fd after fe (only XLA's control edge does).
    assert!(!graph.predecessors(fd).contains(&fe));
    let mut streams = StreamPlan::program_order(&graph).unwrap().streams;
    let compute = &mut streams[0].1;
    let at = compute.iter().position(|&o| o == fe).unwrap();
    compute.remove(at);
    compute.push(fe);
    let plan = StreamPlan::new(&graph, streams).unwrap();
    let timeline = run(&graph, &plan);
    let e =
        export_verbatim(SMALL, &graph, &plan, &timeline, &ImportOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("`%fd` needs `%fe` before it"), "{msg}");
}

fn fixture(name: &str) -> Option<String> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/hlo_gpu_export")
        .join(name);
    std::fs::read_to_string(p).ok()
}

/// XLA's H100 modules (fixtures/hlo_gpu_export): program order and a plan that swaps two
/// independent fusions round-trip with every line kept.
#[test]
fn compiled_h100_fixtures_round_trip_verbatim() {
    for name in [
        "gpt_mix2x4_l2_triton.hlo",
        "gpt_mix2x4_l2_cublas.hlo",
        "gpt_fsdp8_l1_cublas.hlo",
    ] {
        let text =
            fixture(name).unwrap_or_else(|| panic!("fixtures/hlo_gpu_export/{name} missing"));
        let graph = import(&text);
        let plan = StreamPlan::program_order(&graph).unwrap();
        let out = checked(&text, &graph, &plan);
        assert_eq!(out.verbatim_instructions, out.entry_instructions, "{name}");
        assert_eq!(outside_entry(&out.text), outside_entry(&text), "{name}");
        let norm = |l: &str| l.replace("\"is_sync\":true", "\"is_sync\":false");
        let mut want: Vec<String> = entry_lines(&text).iter().map(|l| norm(l)).collect();
        let mut got: Vec<String> = entry_lines(&out.text).iter().map(|l| norm(l)).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{name}");
        assert!(out.async_pairs > 0, "{name}");
    }
}

#[test]
fn a_header_without_a_schedule_gains_one_and_nothing_else_changes() {
    let text = SMALL.replacen("HloModule small, is_scheduled=true,", "HloModule small,", 1);
    let graph = import(&text);
    let plan = StreamPlan::program_order(&graph).unwrap();
    let out = checked(&text, &graph, &plan);
    let (head, _) = outside_entry(&out.text);
    let (want, _) = outside_entry(SMALL);
    assert_eq!(head, want);
}

/// A compiled-style scan: a `while` loop (XLA's known trip count, 3) whose body calls loop
/// fusions (one with a nested fusion) and a reduce-scatter wrapped in an `async-start`.
const SCAN: &str = r#"HloModule scan, is_scheduled=true, entry_computation_layout={(f32[32,32]{1,0})->f32[4,32]{1,0}}, num_partitions=8

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%inner (p.0: f32[32,32]) -> f32[32,32] {
  %p.0 = f32[32,32]{1,0} parameter(0)
  ROOT %n = f32[32,32]{1,0} negate(%p.0)
}

%fused_mul (p.1: f32[32,32]) -> f32[32,32] {
  %p.1 = f32[32,32]{1,0} parameter(0)
  %nested = f32[32,32]{1,0} fusion(%p.1), kind=kLoop, calls=%inner
  ROOT %m = f32[32,32]{1,0} multiply(%nested, %p.1)
}

%fused_add (p.2: s32[]) -> s32[] {
  %p.2 = s32[] parameter(0)
  %c1 = s32[] constant(1)
  ROOT %a = s32[] add(%p.2, %c1)
}

%wrapped_rs (p.3: f32[32,32]) -> f32[4,32] {
  %p.3 = f32[32,32]{1,0} parameter(0)
  ROOT %rs = f32[4,32]{1,0} reduce-scatter(%p.3), channel_id=5, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true, to_apply=%add
}

%body (state: (s32[], f32[32,32], f32[4,32])) -> (s32[], f32[32,32], f32[4,32]) {
  %state = (s32[], f32[32,32]{1,0}, f32[4,32]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %w = f32[32,32]{1,0} get-tuple-element(%state), index=1
  %next = s32[] fusion(%i), kind=kLoop, calls=%fused_add, metadata={op_name="jit(step)/while/body/add"}
  %mm = f32[32,32]{1,0} fusion(%w), kind=kLoop, calls=%fused_mul
  %rss = ((f32[32,32]{1,0}), f32[4,32]{1,0}) async-start(%mm), calls=%wrapped_rs, backend_config={"operation_queue_id":"0","collective_backend_config":{"is_sync":false,"is_pipelined":false}}
  %rsd = f32[4,32]{1,0} async-done(%rss), calls=%wrapped_rs
  ROOT %out = (s32[], f32[32,32]{1,0}, f32[4,32]{1,0}) tuple(%next, %mm, %rsd)
}

%cond (cstate: (s32[], f32[32,32], f32[4,32])) -> pred[] {
  %cstate = (s32[], f32[32,32]{1,0}, f32[4,32]{1,0}) parameter(0)
  %ci = s32[] get-tuple-element(%cstate), index=0
  %trips = s32[] constant(3)
  ROOT %lt = pred[] compare(%ci, %trips), direction=LT
}

ENTRY %main (p: f32[32,32]) -> f32[4,32] {
  %p = f32[32,32]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %zf = f32[] constant(0)
  %z = f32[4,32]{1,0} broadcast(%zf), dimensions={}
  %init = (s32[], f32[32,32]{1,0}, f32[4,32]{1,0}) tuple(%zero, %p, %z)
  %loop = (s32[], f32[32,32]{1,0}, f32[4,32]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"3"}}
  ROOT %res = f32[4,32]{1,0} get-tuple-element(%loop), index=2
}

"#;

/// XLA's rules for a written module (see the `clones` module): every fused or async wrapped
/// computation (`calls=`) has one caller (an async chain's start and done are one), and every
/// instruction and computation name is unique. Returns the computation names in text order.
fn assert_one_caller_and_unique_names(text: &str) -> Vec<String> {
    let mut computations = Vec::new();
    let mut instructions = std::collections::BTreeSet::new();
    let mut callers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let l = line.trim_start();
        if let Some(head) = l.strip_prefix('%').filter(|_| line.ends_with('{')) {
            let name = head.split([' ', '(']).next().unwrap().to_string();
            assert!(!computations.contains(&name), "computation %{name} twice");
            computations.push(name);
            continue;
        }
        if line.starts_with("ENTRY ") {
            continue;
        }
        let Some(def) = l.trim_start_matches("ROOT ").strip_prefix('%') else {
            continue;
        };
        let name = def.split(' ').next().unwrap().to_string();
        assert!(
            instructions.insert(name.clone()),
            "instruction %{name} twice"
        );
        if l.contains(" async-done(") || l.contains(" async-update(") {
            continue;
        }
        if let Some(c) = l.split("calls=%").nth(1) {
            let c = c.split([',', ' ']).next().unwrap().to_string();
            callers.entry(c).or_default().push(name);
        }
    }
    for (c, by) in &callers {
        assert_eq!(by.len(), 1, "%{c} is called by {by:?}");
        assert!(computations.contains(c), "%{c} is not defined");
    }
    computations
}

#[test]
fn every_copy_of_a_loop_fusion_calls_its_own_clone() {
    let graph = import(SCAN);
    assert!(graph.find("loop.it2.mm").is_some());
    let plan = StreamPlan::program_order(&graph).unwrap();
    let out = checked(SCAN, &graph, &plan);
    assert_eq!(out.unrolled_iterations, 3);
    // Per iteration: fused_add, fused_mul, the nested inner fusion and the wrapped computation.
    assert_eq!(out.cloned_computations, 12, "{}", out.text);
    let names = assert_one_caller_and_unique_names(&out.text);
    // The module's computations are kept as read, the clones follow them, callees first, and
    // the entry comes last.
    let entry_at = out.text.find("\nENTRY").unwrap() + 1;
    let original_end = SCAN.find("\nENTRY").unwrap() + 1;
    assert_eq!(&out.text[..original_end], &SCAN[..original_end]);
    let at = |n: &str| names.iter().position(|c| c == n).unwrap();
    for it in 0..3 {
        let p = format!("loop.it{it}.");
        assert!(at(&format!("{p}inner")) < at(&format!("{p}fused_mul")));
        for c in ["fused_add", "fused_mul", "inner", "wrapped_rs"] {
            assert!(at(&format!("{p}{c}")) > at("body"), "{p}{c}");
            let def = format!("\n%{p}{c} (");
            assert!(out.text.find(&def).unwrap() < entry_at, "{def}");
        }
        assert!(
            out.text.contains(&format!(
                "%{p}nested = f32[32,32]{{1,0}} fusion(%{p}p.1), kind=kLoop, calls=%{p}inner"
            )),
            "{}",
            out.text
        );
        assert!(out.text.contains(&format!(
            "%{p}fused_mul ({p}p.1: f32[32,32]) -> f32[32,32] {{"
        )));
        let lines = entry_lines(&out.text);
        let start = lines[pos(&lines, &format!("{p}rss"))];
        let done = lines[pos(&lines, &format!("{p}rsd"))];
        assert!(start.contains(&format!("calls=%{p}wrapped_rs,")), "{start}");
        assert!(done.ends_with(&format!("calls=%{p}wrapped_rs")), "{done}");
        let next = lines[pos(&lines, &format!("{p}next"))];
        assert!(
            next.contains(&format!("calls=%{p}fused_add, metadata=")),
            "{next}"
        );
    }
    // Each clone's reduce-scatter has its own channel; the body's keeps 5.
    let mut channels: Vec<&str> = out
        .text
        .lines()
        .filter(|l| l.contains(" reduce-scatter("))
        .map(|l| {
            l.split("channel_id=")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
        })
        .collect();
    channels.sort_unstable();
    channels.dedup();
    assert_eq!(channels.len(), 4, "{channels:?}");
    // The export from the syntax tree writes the same clones.
    let timeline = run(&graph, &plan);
    let module = parse(SCAN).unwrap();
    let c = export_checked(
        &module,
        &graph,
        &plan,
        &timeline,
        &durations(&graph),
        1.0,
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(c.exported.cloned_computations, 12);
    assert_one_caller_and_unique_names(&c.exported.text);
}

/// XLA's H100 module of a 2-layer step under `lax.scan` (fixtures/hlo_gpu_export): two loops
/// of 2 iterations whose bodies call fusions; written back unrolled, each copy of a body's
/// fusion calls its own clone, and the module's own text before the entry is kept.
#[test]
fn a_compiled_scan_round_trips_with_one_caller_per_fusion() {
    let name = "gpt_mix2x4_l2_scan_cublas.hlo";
    let text = fixture(name).unwrap_or_else(|| panic!("fixtures/hlo_gpu_export/{name} missing"));
    let graph = import(&text);
    let plan = StreamPlan::program_order(&graph).unwrap();
    let out = checked(&text, &graph, &plan);
    assert_eq!(out.unrolled_iterations, 4);
    assert!(out.cloned_computations > 4, "{}", out.cloned_computations);
    assert_one_caller_and_unique_names(&out.text);
    let original_end = text.find("\nENTRY").unwrap() + 1;
    assert_eq!(&out.text[..original_end], &text[..original_end]);
}
