//! Concerto's cost model as an XLA PGLE profile (`ProfiledInstructionsProto`).
//!
//! XLA's latency-hiding scheduler reads a profile of instruction costs and collective
//! latencies when it is given one (`--xla_gpu_pgle_profile_file_or_directory_path`, or the
//! same key in `jax.jit(..., compiler_options=...)` / `lowered.compile({...})`). Its schema is
//! `tsl/profiler/protobuf/profiled_instructions.proto`:
//!
//! ```text
//! message ProfiledInstructionsProto {
//!   message InstructionCost { string name = 1; double cost_us = 2; }
//!   message Latency { string source = 1; string target = 2; double latency_us = 3; }
//!   repeated InstructionCost costs = 1;
//!   repeated Latency latencies = 2;
//! }
//! ```
//!
//! XLA (`gpu_hlo_schedule.cc`) reads a file ending in `.pbtxt` as text format, which is what
//! [`PgleProfile::to_text`] writes. The names are the instruction names of the module at
//! scheduling time: for a compiled module (XLA's after-optimizations dump) that is the module
//! itself, so [`PgleProfile::new`] names exactly its instructions.
//!
//! What XLA looks up (`profile_guided_latency_estimator.cc`):
//! - `NodeCost(instr)`: the cost of every instruction of the entry computation and of every
//!   `while` body and condition, by name, except async collective starts and dones (their
//!   cost is fixed to one cycle) and nops (`parameter`, `constant`, `get-tuple-element`,
//!   `bitcast`, `tuple`, `partition-id`, `replica-id`, `opt-barrier`); a name it misses falls
//!   back to XLA's analytical estimate, or is an error with
//!   `--xla_gpu_pgle_accuracy_checker=PGLE_STRICTNESS_LEVEL_ERROR`;
//! - `GetLatencyBetween(start, done)`: the latency of an async pair from `latencies` (source
//!   the start, target the done), else from the start's `costs` entry.
//!
//! So the profile has:
//! - **costs** of every such instruction: concerto's duration of its op (a fusion, a cuBLAS
//!   custom-call, a copy: [`concerto_graph::Hardware::op_ns`] of the imported op, the
//!   contention-free time), 0 for what concerto costs as free (an instruction with no op:
//!   a `reshape`, a loop condition's compare), and for a `while` the total of its unrolled
//!   body; an instruction inside a loop body costs the mean over its iterations;
//! - **every async pair's latency** (collective starts, `async-start` wrapping a collective,
//!   `copy-start`): the cost of the start and a latency from the start to its done (the
//!   instruction of the same computation whose first operand is the start). The start keeps
//!   concerto's duration of the collective.
//!
//! [`PgleProfile::steer`] replaces every collective's latency by the compute concerto's plan
//! runs under it, so that XLA's scheduler, which fills a collective's latency with
//! independent compute, overlaps about what the plan overlaps.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use concerto_graph::{Graph, OpId, OpKind, Timeline};

use crate::hlo::ast::{Computation, Instruction, Module};

/// Instructions XLA's GPU profile checker skips (`IsNopInstruction` in
/// `gpu_latency_hiding_scheduler.cc`): the profile names none of them.
const NOPS: &[&str] = &[
    "parameter",
    "constant",
    "get-tuple-element",
    "bitcast",
    "tuple",
    "partition-id",
    "replica-id",
    "opt-barrier",
];

/// Opcodes that start an async pair (the collective starts, `async-start`, `copy-start`).
fn is_start(opcode: &str) -> bool {
    opcode.ends_with("-start")
}

/// Opcodes that end an async pair.
fn is_done(opcode: &str) -> bool {
    opcode.ends_with("-done")
}

/// One `latencies` entry: an async pair's latency.
#[derive(Clone, Debug, PartialEq)]
pub struct PgleLatency {
    /// The start's name.
    pub source: String,
    /// The done's name.
    pub target: String,
    /// Microseconds.
    pub latency_us: f64,
}

/// A PGLE profile of one module: [`PgleProfile::to_text`] writes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PgleProfile {
    /// `costs`: instruction name and microseconds, in the module's text order (entry first,
    /// then loop bodies and conditions).
    pub costs: Vec<(String, f64)>,
    /// `latencies`: one per async pair, in the module's text order.
    pub latencies: Vec<PgleLatency>,
    /// Collectives of the graph by the name of their start instruction (the ops behind each
    /// latency, several for a pair inside an unrolled loop body).
    collectives: BTreeMap<String, Vec<OpId>>,
}

/// The computations whose instructions XLA's scheduler costs: the entry, and every `while`
/// body and condition reachable from it (through loops and `call`s), in module order.
fn scheduled_computations(module: &Module) -> Vec<&Computation> {
    let mut want = BTreeSet::new();
    let mut stack = vec![module.entry().name.clone()];
    while let Some(name) = stack.pop() {
        if !want.insert(name.clone()) {
            continue;
        }
        let Some(c) = module.computation(&name) else {
            continue;
        };
        for i in &c.instructions {
            let keys: &[&str] = match i.opcode.as_str() {
                "while" => &["body", "condition"],
                "call" => &["to_apply"],
                _ => &[],
            };
            for k in keys {
                if let Some(callee) = i.attribute(k).and_then(|a| a.computation().ok()) {
                    stack.push(callee.to_string());
                }
            }
        }
    }
    module
        .computations
        .iter()
        .filter(|c| want.contains(&c.name))
        .collect()
}

/// The names of `module`'s `while` and `call` instructions: the prefixes the import gives the
/// ops of an unrolled loop or an inlined call ([`split_name`]).
pub(crate) fn containers(module: &Module) -> BTreeSet<&str> {
    module
        .computations
        .iter()
        .flat_map(|c| &c.instructions)
        .filter(|i| i.opcode == "while" || i.opcode == "call")
        .map(|i| i.name.as_str())
        .collect()
}

/// The instruction name of a graph op and the loop instances around it: the import names an
/// op of an unrolled `while` `w` as `w.it<k>.<name>` and one of an inlined `call` `c` as
/// `c.in.<name>` (nested: prefixes chained). Returns `(name, [(loop, prefix before it)])`.
pub(crate) fn split_name<'a>(
    mut s: &'a str,
    containers: &BTreeSet<&str>,
) -> (&'a str, Vec<(String, String)>) {
    let full = s;
    let mut loops = Vec::new();
    'strip: loop {
        for c in containers {
            let Some(rest) = s.strip_prefix(c) else {
                continue;
            };
            if let Some(rest) = rest.strip_prefix(".in.") {
                s = rest;
                continue 'strip;
            }
            if let Some(it) = rest.strip_prefix(".it") {
                let digits = it.bytes().take_while(u8::is_ascii_digit).count();
                if digits > 0 && it[digits..].starts_with('.') {
                    let before = &full[..full.len() - s.len()];
                    loops.push((c.to_string(), before.to_string()));
                    s = &it[digits + 1..];
                    continue 'strip;
                }
            }
        }
        return (s, loops);
    }
}

fn us(ns: f64) -> f64 {
    ns / 1000.0
}

impl PgleProfile {
    /// The profile of `module` with concerto's `durations` (by op, contention-free, ns) of
    /// `graph`, the graph imported from `module` ([`crate::hlo::lower()`]).
    pub fn new(module: &Module, graph: &Graph, durations: &[u64]) -> PgleProfile {
        let containers = containers(module);
        // Durations by instruction name (every unrolled instance), and each loop instance's
        // total.
        let mut by_name: BTreeMap<&str, Vec<OpId>> = BTreeMap::new();
        let mut loop_total: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for id in graph.ids() {
            let (name, loops) = split_name(graph.op(id).name.as_str(), &containers);
            by_name.entry(name).or_default().push(id);
            for (w, instance) in loops {
                *loop_total
                    .entry(w)
                    .or_default()
                    .entry(instance)
                    .or_default() += durations[id.0];
            }
        }
        let mean = |ids: &[OpId]| {
            ids.iter().map(|o| durations[o.0] as f64).sum::<f64>() / ids.len().max(1) as f64
        };
        let mut p = PgleProfile::default();
        for comp in scheduled_computations(module) {
            let done_of: BTreeMap<&str, &Instruction> = comp
                .instructions
                .iter()
                .filter(|i| is_done(&i.opcode))
                .filter_map(|i| i.operands.first().map(|o| (o.as_str(), i)))
                .collect();
            for i in &comp.instructions {
                let op = i.opcode.as_str();
                if NOPS.contains(&op) || is_done(op) {
                    continue;
                }
                let ids = by_name.get(i.name.as_str()).map_or(&[][..], Vec::as_slice);
                let ns = if op == "while" {
                    let t = loop_total.get(&i.name);
                    t.map_or(0.0, |t| t.values().sum::<u64>() as f64 / t.len() as f64)
                } else {
                    mean(ids)
                };
                p.costs.push((i.name.clone(), us(ns)));
                if is_start(op) {
                    if let Some(done) = done_of.get(i.name.as_str()) {
                        p.latencies.push(PgleLatency {
                            source: i.name.clone(),
                            target: done.name.clone(),
                            latency_us: us(ns),
                        });
                    }
                    let colls: Vec<OpId> = ids
                        .iter()
                        .copied()
                        .filter(|o| graph.op(*o).is_collective())
                        .collect();
                    if !colls.is_empty() {
                        p.collectives.insert(i.name.clone(), colls);
                    }
                }
            }
        }
        p
    }

    /// Steers XLA's scheduler towards a plan: every collective's latency (its start's cost
    /// and its start-to-done latency) becomes the compute the plan's simulated `timeline`
    /// runs while the collective runs: the contention-free `durations` of the compute ops
    /// that start in `[start, end)` of the collective (the mean over a loop body's
    /// iterations), at least 1 ns. XLA's latency-hiding scheduler then covers about that much
    /// compute under each collective, as the plan does, and no more. Kernel costs stay
    /// concerto's. Returns how many latencies changed.
    pub fn steer(&mut self, graph: &Graph, durations: &[u64], timeline: &Timeline) -> usize {
        let compute: Vec<OpId> = graph
            .ids()
            .filter(|o| matches!(graph.op(*o).kind, OpKind::Compute { .. }))
            .collect();
        let mut steered: BTreeMap<&str, f64> = BTreeMap::new();
        for (name, colls) in &self.collectives {
            let mut total = 0.0;
            for c in colls {
                let (s, e) = (timeline.start[c.0], timeline.end[c.0]);
                total += compute
                    .iter()
                    .filter(|o| timeline.start[o.0] >= s && timeline.start[o.0] < e)
                    .map(|o| durations[o.0] as f64)
                    .sum::<f64>();
            }
            steered.insert(name, us((total / colls.len() as f64).max(1.0)));
        }
        let mut changed = 0;
        for (name, cost) in &mut self.costs {
            if let Some(&v) = steered.get(name.as_str()) {
                *cost = v;
            }
        }
        for l in &mut self.latencies {
            if let Some(&v) = steered.get(l.source.as_str()) {
                if v != l.latency_us {
                    changed += 1;
                }
                l.latency_us = v;
            }
        }
        changed
    }

    /// The profile in protobuf text format (`costs { name: "fusion.12" cost_us: 12.5 }`, one
    /// entry a line), as XLA reads a `.pbtxt` file.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (name, cost) in &self.costs {
            let _ = writeln!(out, "costs {{ name: \"{name}\" cost_us: {cost:.4} }}");
        }
        for l in &self.latencies {
            let _ = writeln!(
                out,
                "latencies {{ source: \"{}\" target: \"{}\" latency_us: {:.4} }}",
                l.source, l.target, l.latency_us
            );
        }
        out
    }
}

/// The PGLE profile text of `module` with concerto's `durations` of `graph` (see
/// [`PgleProfile::new`]).
pub fn pgle_profile(module: &Module, graph: &Graph, durations: &[u64]) -> String {
    PgleProfile::new(module, graph, durations).to_text()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::{lower, parse, ImportOptions};
    use concerto_graph::Hardware;

    fn fixtures() -> Vec<std::path::PathBuf> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/hlo_gpu");
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".gpu.hlo"))
            .collect();
        v.sort();
        assert!(v.len() >= 3, "{v:?}");
        v
    }

    /// The names XLA's checker costs, read from the module text with a plain scan (not the
    /// parser the profile uses): every instruction of the entry and of the loop bodies and
    /// conditions, but nops and dones.
    fn checked_names(text: &str) -> BTreeSet<String> {
        let mut bodies = BTreeSet::new();
        for line in text.lines() {
            if line.contains(" while(") {
                for key in ["body=", "condition="] {
                    if let Some(at) = line.find(key) {
                        let rest = line[at + key.len()..].trim_start_matches('%');
                        let end = rest.find([',', ' ', '}']).unwrap_or(rest.len());
                        bodies.insert(rest[..end].to_string());
                    }
                }
            }
        }
        let mut names = BTreeSet::new();
        let mut inside = false;
        for line in text.lines() {
            if !line.starts_with(' ') && line.trim_end().ends_with('{') {
                let head = line.split('(').next().unwrap_or("");
                let comp = head
                    .split_whitespace()
                    .last()
                    .unwrap_or("")
                    .trim_start_matches('%');
                inside = line.starts_with("ENTRY") || bodies.contains(comp);
                continue;
            }
            if !inside {
                continue;
            }
            let l = line.trim_start().trim_start_matches("ROOT ");
            let Some((name, rhs)) = l.split_once(" = ") else {
                continue;
            };
            // The opcode: the first word followed by `(` after the shape.
            let opcode = rhs
                .split([' ', '('])
                .zip(rhs.match_indices([' ', '(']))
                .find(|(w, (_, sep))| {
                    *sep == "("
                        && !w.is_empty()
                        && w.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                })
                .map(|(w, _)| w.to_string())
                .unwrap_or_default();
            if NOPS.contains(&opcode.as_str()) || opcode.ends_with("-done") {
                continue;
            }
            names.insert(name.trim_start_matches('%').to_string());
        }
        names
    }

    #[test]
    fn names_are_exactly_the_compiled_modules_instructions() {
        for path in fixtures() {
            let text = std::fs::read_to_string(&path).unwrap();
            let module = parse(&text).unwrap();
            let (graph, _) = lower(&module, &ImportOptions::default()).unwrap();
            let hw = Hardware::h100();
            let durations = hw.durations(&graph);
            let p = PgleProfile::new(&module, &graph, &durations);
            let named: BTreeSet<String> = p.costs.iter().map(|(n, _)| n.clone()).collect();
            assert_eq!(
                named.len(),
                p.costs.len(),
                "{}: a name twice",
                path.display()
            );
            assert_eq!(named, checked_names(&text), "{}", path.display());
            // Every kernel and collective of the graph has its duration in the profile.
            let cost: BTreeMap<&str, f64> = p.costs.iter().map(|(n, c)| (n.as_str(), *c)).collect();
            for id in graph.ids() {
                let op = graph.op(id);
                let c = cost
                    .get(op.name.as_str())
                    .unwrap_or_else(|| panic!("{} missing", op.name));
                assert!(
                    (c - durations[id.0] as f64 / 1000.0).abs() < 1e-9,
                    "{}",
                    op.name
                );
            }
            // One latency per async pair, from the start to the done that reads it.
            let starts = text.matches("-start(").count();
            assert!(!p.latencies.is_empty());
            assert_eq!(p.latencies.len(), starts, "{}", path.display());
            for l in &p.latencies {
                let done = format!("%{} = ", l.target);
                let line = text
                    .lines()
                    .find(|x| x.trim_start().starts_with(&done))
                    .unwrap();
                assert!(line.contains(&format!("-done(%{})", l.source)), "{line}");
                assert!(l.latency_us > 0.0);
            }
            let txt = p.to_text();
            assert_eq!(txt.lines().count(), p.costs.len() + p.latencies.len());
        }
    }

    #[test]
    fn text_format_and_loop_bodies() {
        let text = r#"HloModule m, is_scheduled=true

body {
  p = (s32[], f32[1024,1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x = f32[1024,1024] get-tuple-element(p), index=1
  ars = f32[1024,1024] all-reduce-start(x), replica_groups={}, to_apply=sum
  ard = f32[1024,1024] all-reduce-done(ars)
  ROOT t = (s32[], f32[1024,1024]) tuple(i2, ard)
}

cond {
  p = (s32[], f32[1024,1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[1024,1024] parameter(0)
  y = f32[1024,1024] exponential(x)
  zero = s32[] constant(0)
  t = (s32[], f32[1024,1024]) tuple(zero, y)
  w = (s32[], f32[1024,1024]) while(t), condition=cond, body=body
  ROOT r = f32[1024,1024] get-tuple-element(w), index=1
}
"#;
        let module = parse(text).unwrap();
        let (graph, _) = lower(&module, &ImportOptions::default()).unwrap();
        let durations: Vec<u64> = graph.ids().map(|i| 1000 * (i.0 as u64 + 1)).collect();
        let p = PgleProfile::new(&module, &graph, &durations);
        let cost: BTreeMap<&str, f64> = p.costs.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        let d = |name: &str| durations[graph.find(name).unwrap().0] as f64 / 1000.0;
        let ars: Vec<f64> = (0..3).map(|k| d(&format!("w.it{k}.ars"))).collect();
        assert_eq!(cost["y"], d("y"));
        assert_eq!(
            cost["ars"],
            ars.iter().sum::<f64>() / 3.0,
            "the mean over the iterations"
        );
        let body: f64 = graph
            .ids()
            .filter(|i| graph.op(*i).name.starts_with("w.it"))
            .map(|i| durations[i.0] as f64 / 1000.0)
            .sum();
        assert!(body > ars.iter().sum::<f64>(), "the increments are ops too");
        assert_eq!(cost["w"], body, "the loop's total");
        let i2: f64 = (0..3).map(|k| d(&format!("w.it{k}.i2"))).sum();
        assert_eq!(cost["i2"], i2 / 3.0);
        // The condition's compare is no op of the graph (the trip count is known): 0.
        assert_eq!(cost["lt"], 0.0);
        assert!(!cost.contains_key("ard") && !cost.contains_key("s"));
        assert_eq!(
            p.latencies,
            vec![PgleLatency {
                source: "ars".into(),
                target: "ard".into(),
                latency_us: cost["ars"]
            }]
        );
        let txt = p.to_text();
        let line = format!("costs {{ name: \"ars\" cost_us: {:.4} }}", cost["ars"]);
        assert!(txt.contains(&line), "{txt}");
        assert!(txt.contains("latencies { source: \"ars\" target: \"ard\" latency_us: "));
    }
}
