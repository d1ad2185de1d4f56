//! Writing a plan back as a scheduled HLO module that XLA itself accepts.
//!
//! [`export`] takes the module a graph was imported from, the graph, a [`StreamPlan`] for it
//! and the plan's simulated [`Timeline`], and writes the module again with:
//!
//! - **the header `is_scheduled=true`**: XLA's parser then takes every non-fusion
//!   computation's instruction order as its schedule, and XLA's GPU compiler keeps a schedule
//!   it is given (reference: `ScheduleFromInstructionOrder` in `xla/hlo/parser/hlo_parser.cc`;
//!   `HloSchedule::Verify` checks that every instruction comes once and after its operands and
//!   control predecessors);
//! - **the entry computation in the plan's order**: one sequence that merges the streams'
//!   FIFO orders and respects every dependency, each collective launched as early as the plan
//!   lets it (a communication stream's next op is placed as soon as its dependencies, the
//!   plan's waits for it and its stream predecessor are placed; otherwise the compute
//!   stream's next op). XLA's GPU runtime makes a collective's stream wait for the compute
//!   stream at the start's place in the sequence, so the start goes right after the last
//!   compute op it waits for, where the plan launches it, not after compute ops the plan
//!   overlaps it with. Each stream's order is the plan's, so the module replayed in program
//!   order is the plan;
//! - **every collective as its async pair**, the start where the plan launches it and the done
//!   right before its first user (or the first compute op the plan makes wait for it):
//!   `all-reduce-start`/`-done`, `all-gather-start`/`-done`
//!   (start shape `(operand, result)`), `collective-permute-start`/`-done` (start shape
//!   `(operand, result)`), and for reduce-scatter, all-to-all and collective-broadcast the
//!   `<op>-start`/`<op>-done` form of XLA's generic async ops (start shape
//!   `((operands...), result)`), which XLA's printer writes and its parser reads as an
//!   `async-start`/`async-done` wrapping the op. The start keeps the collective's name and
//!   attributes; the done is called `<name>.done` and its users read it. Collectives that
//!   already are async pairs keep their form; a collective of one device (no op in the graph)
//!   stays as it is;
//! - **instructions that carry only dependencies** (parameters, constants, tuples,
//!   `get-tuple-element`, bitcasts, every `-done`, and anything else that is not an op of the
//!   graph) placed just before their first user, so that none of them forces a collective's
//!   done earlier than a consumer needs it; what nothing uses comes before the root;
//! - **`get-tuple-element`s of a `tuple` written as reads of the element**: the import's
//!   dependencies are element-exact (a `get-tuple-element` depends only on its element's
//!   producer; see [`mod@crate::hlo::lower`]), so the plan may run a user of element 0 before
//!   element 1's producer, while a `tuple` can only be written after all its elements. Such a
//!   `get-tuple-element` (one of a loop iteration's state, say) is not written: its users
//!   read the element's instruction, which has the same shape. The tuple itself stays (read
//!   by what reads the whole tuple, else placed before the root, where XLA removes it as
//!   dead code);
//! - **`call`s inlined**, as the import inlines them (and XLA's `CallInliner` before it
//!   schedules): the callee's instructions named `<call>.in.<name>`, reading the call's
//!   operands where the callee reads its parameters;
//! - **`while` loops unrolled**, exactly as the import unrolled them: an XLA loop body has one
//!   schedule for every iteration, while Concerto's plan orders each iteration's ops on its
//!   own (a gradient reduction of layer `k` overlaps the backward pass of layer `k - 1`, across
//!   the iteration boundary). Iteration `k` of loop `%w` becomes the body's instructions named
//!   `w.itk.<name>` (the op names of the import), reading the previous iteration's root tuple
//!   where the body reads its parameter; collectives of iterations after the first get fresh
//!   `channel_id`s. The body and condition computations stay in the module, unused;
//! - **a clone of each fused or async wrapped computation per copy that calls it**: XLA lets
//!   only one instruction (one async chain) call such a computation (`calls=`), and a loop
//!   body or callee that stays in the module still calls the original, so the copy
//!   `w.itk.<name>` of a fusion calls `%w.itk.<computation>`, a clone whose instructions (and
//!   nested fusions) are renamed the same way, written before the entry (see the `clones`
//!   submodule for XLA's rules). Shared computations (`to_apply=` reducers, loop conditions
//!   and bodies, branches) are not cloned.
//!
//! Every other computation (fusions, reducers, branches, loop bodies) is written as it was
//! read, in its text order, which XLA's printer made a valid schedule. Operands are written
//! without their shapes (XLA's parser accepts both), result shapes and attribute values as the
//! source text had them.
//!
//! # Compiled modules
//!
//! [`export_verbatim`] writes into the module's own text instead: for XLA's after-optimizations
//! module (fusions, cuBLAS custom-calls, `all-reduce-start`/`-done`, `all-gather-start`/`-done`,
//! `collective-permute-start`/`-done`, `async-start`/`-done` wrapping reduce-scatter and
//! all-to-all, `copy-start`/`-done`, XLA's own schedule) nothing is rewritten but the entry's
//! order: every instruction line, fusion body, `backend_config`, `metadata` and wrapped
//! computation is copied byte for byte. The import made one op per costed entry instruction,
//! named like it, and an async pair one collective named after its start, so the plan places
//! the starts and the dones follow the rules above. The one byte-level change is the
//! `is_sync` flag in a start's `backend_config`, which XLA's GPU backend reads to run a pair
//! synchronously on the compute stream: it is set as XLA's own post-scheduling pass
//! (`GpuConvertAsyncCollectivesToSync`) would set it for the written sequence (true when only
//! `parameter`, `constant`, `bitcast`, `get-tuple-element` or other async collective starts and
//! dones lie between the start and its done), so a pair the plan overlaps with work is
//! `is_sync=false`. `python/concerto_jax/pjrt_gpu.py` compiles such a module with XLA's GPU
//! backend (deviceless, through the CUDA plugin's PJRT C API) and checks that the thunks come
//! out in the written order.
//!
//! [`check_export`] reads the written text back with Concerto's own parser and importer and
//! checks that it gives the same ops, with the same costs and the same dependencies, as the
//! graph the plan was made for.
//!
//! Cost: O(instructions + operands) after unrolling, plus a heap merge of the plan's ops:
//! O(ops log streams).

use std::collections::BTreeMap;

use concerto_graph::{Graph, OpId, Stream, StreamPlan, Timeline};

use crate::hlo::ast::{Attribute, Instruction, Module};
use crate::hlo::lower::{lower, ImportOptions};
use crate::hlo::HloError;

mod clones;
#[cfg(test)]
mod compiled_tests;
mod expand;
#[cfg(test)]
mod tests;
mod verbatim;
mod write;

use expand::Expander;
use verbatim::{role, set_is_sync, sync_starts, AsyncRole, EntryText};
use write::{module_text, write_inst};

/// Why a plan could not be written back as HLO. Every message names the op, instruction or
/// graph at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The graph is not the one this module imports to (another module, other import
    /// options, or a graph rewritten by decomposition or fusion).
    #[error(
        "the plan's graph `{graph}` (fingerprint {graph_fingerprint}) is not the graph module \
         `{module}` imports to (fingerprint {module_fingerprint}); a plan can only be written \
         into the module its graph was imported from, with the same import options"
    )]
    OtherGraph {
        /// The plan's graph.
        graph: String,
        /// Its fingerprint.
        graph_fingerprint: String,
        /// The module.
        module: String,
        /// The fingerprint of the module's graph.
        module_fingerprint: String,
    },
    /// The plan or timeline does not fit the graph.
    #[error("the plan does not fit graph `{graph}`: {reason}")]
    Plan {
        /// The graph.
        graph: String,
        /// Why.
        reason: String,
    },
    /// An instruction the exporter cannot write in async form.
    #[error("instruction `%{instruction}`: {reason}")]
    Unsupported {
        /// The instruction.
        instruction: String,
        /// Why.
        reason: String,
    },
    /// Reading or importing the module (or, in [`check_export`], the written text) failed.
    #[error(transparent)]
    Hlo(#[from] HloError),
    /// [`check_export`]: the written module imports to a graph that differs from the plan's.
    #[error("the written module differs from the plan's graph: {0}")]
    Mismatch(String),
}

/// A module written by [`export`].
#[derive(Clone, Debug)]
pub struct Exported {
    /// The module's text.
    pub text: String,
    /// Collectives written as async pairs (converted, or already pairs in the input).
    pub async_pairs: usize,
    /// Iterations of `while` loops written unrolled.
    pub unrolled_iterations: usize,
    /// Instructions in the written entry computation.
    pub entry_instructions: usize,
    /// Of those, the ones copied byte for byte from the module's text ([`export_verbatim`];
    /// 0 for [`export`]).
    pub verbatim_instructions: usize,
    /// The written entry computation's instruction names, in order (the schedule).
    pub sequence: Vec<String>,
    /// Async collective starts written `is_sync=true` (XLA's rule: nothing but nops and other
    /// async collective starts and dones between the start and its done).
    pub sync_starts: usize,
    /// Starts whose `is_sync` flag the written order changed (their only changed byte).
    pub is_sync_changed: Vec<String>,
    /// Computations written as clones for the copies of instructions that call them (a fused
    /// or async wrapped computation, which XLA lets only one instruction call), each copy of a
    /// loop body's fusion calling its own.
    pub cloned_computations: usize,
}

/// Opcodes of synchronous collectives and the async form each is written in.
fn async_form(opcode: &str) -> Option<AsyncForm> {
    Some(match opcode {
        "all-reduce" => AsyncForm::SameShape,
        "all-gather" | "collective-permute" => AsyncForm::OperandResult,
        "reduce-scatter" | "all-to-all" | "collective-broadcast" | "ragged-all-to-all" => {
            AsyncForm::Wrapped
        }
        _ => return None,
    })
}

/// The start shape of an async collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AsyncForm {
    /// `all-reduce-start`: the result's shape.
    SameShape,
    /// `all-gather-start`, `collective-permute-start`: `(operand, result)`, operands as a tuple
    /// when there are several.
    OperandResult,
    /// Generic async op (`reduce-scatter-start`, ...): `((operands...), result)`.
    Wrapped,
}

/// One instruction of the written entry computation.
#[derive(Clone, Debug)]
pub(super) struct Inst<'m> {
    instr: &'m Instruction,
    /// Its name in the written module.
    name: String,
    /// Its operands' names in the written module.
    operands: Vec<String>,
    /// Its control predecessors' names in the written module.
    control: Vec<String>,
    /// The graph op it is, if any.
    op: Option<OpId>,
    /// What to write.
    kind: Kind,
    /// Whether it is the entry's root.
    root: bool,
    /// A fresh channel id (an unrolled collective after the first iteration).
    channel: Option<u64>,
    /// The `calls=` value naming the clones this copy calls (see `clones`).
    calls: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// The instruction as read (renamed operands).
    Plain,
    /// A synchronous collective written as the start of its async pair.
    Start(AsyncForm),
    /// The done of a converted collective: reads the start (the operand).
    Done,
}

/// Writes `plan` (for `graph`, simulated as `timeline`) into `module` as a scheduled module
/// (see the module docs). `graph` must be what [`lower`] makes of `module` with `options`.
/// Every instruction is written from the syntax tree (operands without their shapes); see
/// [`export_verbatim`] to keep the module's own text.
pub fn export(
    module: &Module,
    graph: &Graph,
    plan: &StreamPlan,
    timeline: &Timeline,
    options: &ImportOptions,
) -> Result<Exported, ExportError> {
    export_with(module, None, graph, plan, timeline, options)
}

/// [`export`] into the module's own `text` (the module is parsed from it): every computation
/// other than the entry, the header, the tables and every entry instruction the plan does not
/// rewrite are copied byte for byte (fusion bodies, `backend_config`, `metadata`,
/// `frontend_attributes`, async wrapped computations, comments), only the entry's instruction
/// order changes, and the `is_sync` flag of an async collective start where the written
/// sequence changes whether the pair overlaps work (see [`mod@self`] and the rule in the
/// `verbatim` submodule). This is the export for compiled modules (XLA's after-optimizations
/// module), where nothing is rewritten but the order: `Exported::verbatim_instructions` then
/// equals `Exported::entry_instructions`. Instructions the exporter does rewrite (a sync
/// collective split into a pair, an unrolled loop, an inlined call, a `get-tuple-element` of
/// a `tuple` read as its element) are written as [`export`] writes them, and so is the whole
/// module when its entry is not laid out one instruction after another on lines of their own
/// (`verbatim_instructions` is then 0); the clones that unrolled copies of fusions call are
/// written from the syntax tree between the module's last computation and the entry. The
/// header gains `is_scheduled=true` when it lacks
/// it. Errors name the instruction or op at fault.
pub fn export_verbatim(
    text: &str,
    graph: &Graph,
    plan: &StreamPlan,
    timeline: &Timeline,
    options: &ImportOptions,
) -> Result<Exported, ExportError> {
    let module = crate::hlo::parse(text)?;
    export_with(&module, Some(text), graph, plan, timeline, options)
}

fn export_with(
    module: &Module,
    source: Option<&str>,
    graph: &Graph,
    plan: &StreamPlan,
    timeline: &Timeline,
    options: &ImportOptions,
) -> Result<Exported, ExportError> {
    let (imported, _) = lower(module, options)?;
    if imported.fingerprint() != graph.fingerprint() {
        return Err(ExportError::OtherGraph {
            graph: graph.name().to_string(),
            graph_fingerprint: format!("{:016x}", graph.fingerprint()),
            module: module.name.clone(),
            module_fingerprint: format!("{:016x}", imported.fingerprint()),
        });
    }
    let plan_error = |reason: String| ExportError::Plan {
        graph: graph.name().to_string(),
        reason,
    };
    plan.validate(graph)
        .map_err(|e| plan_error(e.to_string()))?;
    if timeline.start.len() != graph.len() {
        return Err(plan_error(format!(
            "the timeline has {} ops, the graph {}",
            timeline.start.len(),
            graph.len()
        )));
    }
    let mut x = Expander::new(module, graph, options);
    let entry = module.entry();
    x.expand(entry, "", None)?;
    if let Some(missing) = x.by_op.iter().position(Option::is_none) {
        return Err(plan_error(format!(
            "op `{}` is no instruction of module `{}`",
            graph.op(OpId(missing)).name,
            module.name
        )));
    }
    let order = launch_order(graph, plan).map_err(|op| {
        plan_error(format!(
            "op `{}` is never ready to launch",
            graph.op(op).name
        ))
    })?;
    let before = wait_dones(module, graph, plan, &x);
    let sequence = x.sequence(&order, &before)?;
    let source = source.and_then(|t| EntryText::new(t, module));
    let (mut lines, verbatim_instructions) = entry_lines(module, source.as_ref(), &x, &sequence);
    let (sync, is_sync_changed) = patch_is_sync(module, &x, &sequence, &mut lines);
    let text = module_text(module, source.as_ref(), &x.clones.written, &lines);
    let async_pairs = x
        .insts
        .iter()
        .filter(|i| {
            matches!(i.kind, Kind::Start(_))
                || (i.op.is_some() && i.instr.opcode.ends_with("-start"))
        })
        .count();
    Ok(Exported {
        text,
        async_pairs,
        unrolled_iterations: x.iterations,
        entry_instructions: sequence.len(),
        verbatim_instructions,
        sequence: sequence.iter().map(|&k| x.insts[k].name.clone()).collect(),
        sync_starts: sync.len(),
        is_sync_changed,
        cloned_computations: x.clones.written.len(),
    })
}

/// The entry's lines in `sequence` order: each unchanged instruction copied from the source
/// when there is one, the others written; and how many were copied.
fn entry_lines(
    module: &Module,
    source: Option<&EntryText<'_>>,
    x: &Expander<'_>,
    sequence: &[usize],
) -> (Vec<String>, usize) {
    let mut verbatim_instructions = 0;
    let mut lines = Vec::with_capacity(sequence.len());
    for &k in sequence {
        let inst = &x.insts[k];
        match source
            .filter(|_| unchanged(module, inst))
            .and_then(|s| s.line(&inst.name))
        {
            Some(line) => {
                verbatim_instructions += 1;
                lines.push(line);
            }
            None => {
                let mut line = String::new();
                write_inst(&mut line, inst, &x.shapes);
                lines.push(line);
            }
        }
    }
    (lines, verbatim_instructions)
}

/// Sets `is_sync` on the async starts of the entry's `lines` as XLA's sync conversion would on
/// this sequence; returns the sync starts and the starts whose line changed.
fn patch_is_sync<'x>(
    module: &Module,
    x: &'x Expander<'_>,
    sequence: &[usize],
    lines: &mut [String],
) -> (std::collections::BTreeSet<&'x str>, Vec<String>) {
    let roles: Vec<AsyncRole> = sequence
        .iter()
        .map(|&k| inst_role(module, &x.insts[k]))
        .collect();
    let sync: std::collections::BTreeSet<&str> =
        sync_starts(sequence.iter().zip(&roles).map(|(&k, &r)| {
            let i = &x.insts[k];
            (i.name.as_str(), r, i.operands.first().map(String::as_str))
        }))
        .into_iter()
        .collect();
    let mut is_sync_changed = Vec::new();
    for ((&k, role), line) in sequence.iter().zip(&roles).zip(lines) {
        let name = x.insts[k].name.as_str();
        if *role == AsyncRole::Start {
            if let Some(patched) = set_is_sync(line, sync.contains(name)) {
                *line = patched;
                is_sync_changed.push(name.to_string());
            }
        }
    }
    (sync, is_sync_changed)
}

/// For each written instruction, the dones it must follow beyond its operands: a compute op
/// that the plan makes wait for a collective (a wait its data does not imply, as a plan file
/// may hold) gets that collective's done placed before it, so the GPU's compute stream waits
/// where the plan says. O(instructions + waits).
fn wait_dones(
    module: &Module,
    graph: &Graph,
    plan: &StreamPlan,
    x: &Expander<'_>,
) -> Vec<Vec<usize>> {
    let mut done_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, inst) in x.insts.iter().enumerate() {
        if inst_role(module, inst) == AsyncRole::Done {
            if let Some(start) = inst.operands.first() {
                done_of.insert(start.as_str(), k);
            }
        }
    }
    let mut before = vec![Vec::new(); x.insts.len()];
    for &(p, c) in &plan.waits {
        if !graph.op(p).is_collective() || graph.predecessors(c).contains(&p) {
            continue;
        }
        let (Some(s), Some(k)) = (x.by_op[p.0], x.by_op[c.0]) else {
            continue;
        };
        if let Some(&d) = done_of.get(x.insts[s].name.as_str()) {
            before[k].push(d);
        }
    }
    before
}

/// Whether `inst` is an entry instruction written exactly as read: same name, operands,
/// control predecessors, channel and root mark, and not split into an async pair.
fn unchanged(module: &Module, inst: &Inst<'_>) -> bool {
    let i = inst.instr;
    inst.kind == Kind::Plain
        && inst.channel.is_none()
        && inst.calls.is_none()
        && inst.name == i.name
        && inst.operands == i.operands
        && inst.root == i.is_root
        && i.attribute("control-predecessors")
            .map_or(inst.control.is_empty(), |a| {
                control_names(a) == inst.control
            })
        && module
            .entry()
            .instructions
            .iter()
            .any(|e| std::ptr::eq(e, i))
}

/// The role of a written instruction in XLA's sync conversion.
fn inst_role(module: &Module, inst: &Inst<'_>) -> AsyncRole {
    match inst.kind {
        Kind::Start(_) => AsyncRole::Start,
        Kind::Done => AsyncRole::Done,
        Kind::Plain => role(module, inst.instr),
    }
}

/// The text before the entry with `is_scheduled=true` in the header: as read when it says so,
/// else with the attribute added after the module's name (or its `false` replaced).
fn scheduled_header(before: &str, module: &Module) -> String {
    let scheduled = module
        .attributes
        .iter()
        .find(|a| a.name == "is_scheduled")
        .map(|a| a.value.trim());
    match scheduled {
        Some("true") => before.to_string(),
        Some(_) => before.replacen("is_scheduled=false", "is_scheduled=true", 1),
        None => {
            let Some(at) = before.find("HloModule") else {
                return before.to_string();
            };
            let rest = &before[at + "HloModule".len()..];
            let name_at = at + "HloModule".len() + (rest.len() - rest.trim_start().len());
            let name_end = name_at
                + before[name_at..]
                    .find(|c: char| c.is_whitespace() || c == ',')
                    .unwrap_or(before.len() - name_at);
            format!(
                "{}, is_scheduled=true{}",
                &before[..name_end],
                &before[name_end..]
            )
        }
    }
}

/// The plan's ops in one sequence, each collective launched as early as the plan lets it: a
/// communication stream's next op is taken as soon as its dependencies and the plan's waits
/// are placed (the start goes right after the last compute op it waits for, which is where
/// XLA's GPU runtime makes the collective's stream wait for the compute stream), otherwise the
/// compute stream's next op. Each stream keeps the plan's FIFO order. `Err(op)`: an op that
/// never becomes ready (a plan that deadlocks; validated plans do not).
/// O((ops + dependencies) * streams).
fn launch_order(graph: &Graph, plan: &StreamPlan) -> Result<Vec<OpId>, OpId> {
    let mut placed = vec![false; graph.len()];
    let mut waits: Vec<Vec<OpId>> = vec![Vec::new(); graph.len()];
    for &(p, c) in &plan.waits {
        waits[c.0].push(p);
    }
    let ready = |op: OpId, placed: &[bool]| {
        graph
            .predecessors(op)
            .iter()
            .chain(&waits[op.0])
            .all(|p| placed[p.0])
    };
    let mut next = vec![0usize; plan.streams.len()];
    // Communication streams first: they launch as soon as they can.
    let mut streams: Vec<usize> = (0..plan.streams.len()).collect();
    streams.sort_by_key(|&s| plan.streams[s].0 == Stream::Compute);
    let mut order = Vec::with_capacity(graph.len());
    loop {
        let mut progressed = false;
        for &s in &streams {
            let ops = &plan.streams[s].1;
            if let Some(&op) = ops.get(next[s]) {
                if ready(op, &placed) {
                    next[s] += 1;
                    placed[op.0] = true;
                    order.push(op);
                    progressed = true;
                    break;
                }
            }
        }
        if !progressed {
            break;
        }
    }
    for (s, (_, ops)) in plan.streams.iter().enumerate() {
        if let Some(&op) = ops.get(next[s]) {
            return Err(op);
        }
    }
    Ok(order)
}

/// Every op of `graph` by name. O(ops log ops).
fn by_name(graph: &Graph) -> BTreeMap<&str, OpId> {
    graph
        .ids()
        .map(|o| (graph.op(o).name.as_str(), o))
        .collect()
}

/// The names in a `control-predecessors={%a, %b}` value.
fn control_names(a: &Attribute) -> Vec<String> {
    a.value
        .trim_matches(|c| c == '{' || c == '}')
        .split(',')
        .map(|s| s.trim().trim_start_matches('%').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Reads `text` (a module [`export`] wrote) back with Concerto's parser and importer and checks
/// that it imports to `graph`: the same ops, by name, with the same kinds and costs, and the
/// same dependencies. Returns the imported graph, whose op order is the written sequence: its
/// program order ([`StreamPlan::program_order`]) is the plan the module carries.
pub fn check_export(
    text: &str,
    graph: &Graph,
    options: &ImportOptions,
) -> Result<Graph, ExportError> {
    let module = crate::hlo::parse(text)?;
    let (back, _) = lower(&module, options)?;
    let mismatch = |m: String| Err(ExportError::Mismatch(m));
    if back.len() != graph.len() {
        return mismatch(format!(
            "{} ops written, {} in the plan's graph",
            back.len(),
            graph.len()
        ));
    }
    let index = by_name(&back);
    // The written op of every op of `graph`, by name.
    let mut to_back = Vec::with_capacity(graph.len());
    for o in graph.ids() {
        let op = graph.op(o);
        let Some(&b) = index.get(op.name.as_str()) else {
            return mismatch(format!("op `{}` is not in the written module", op.name));
        };
        to_back.push(b);
    }
    for o in graph.ids() {
        let (op, b) = (graph.op(o), to_back[o.0]);
        let written = back.op(b);
        if written.kind != op.kind || written.outputs != op.outputs {
            return mismatch(format!(
                "op `{}` is {:?} in the plan's graph and {:?} written",
                op.name, op.kind, written.kind
            ));
        }
        let mut want: Vec<OpId> = graph.predecessors(o).iter().map(|p| to_back[p.0]).collect();
        let mut got = back.predecessors(b).to_vec();
        want.sort_unstable();
        got.sort_unstable();
        if want != got {
            let name = |x: &OpId| back.op(*x).name.clone();
            let missing: Vec<String> = want
                .iter()
                .filter(|x| !got.contains(x))
                .take(3)
                .map(name)
                .collect();
            let extra: Vec<String> = got
                .iter()
                .filter(|x| !want.contains(x))
                .take(3)
                .map(name)
                .collect();
            return mismatch(format!(
                "op `{}`: dependencies differ (missing {missing:?}, extra {extra:?})",
                op.name
            ));
        }
    }
    Ok(back)
}

/// Simulates `back` (what [`check_export`] returned) in program order, the order of the written
/// sequence, with the durations of `graph` (the plan's graph) taken by op name, and the compute
/// slowdown `contention`. Its makespan is the plan's when the module carries the plan.
pub fn replay(
    back: &Graph,
    graph: &Graph,
    durations: &[u64],
    contention: f64,
) -> Result<Timeline, ExportError> {
    let mismatch = |m: String| ExportError::Mismatch(m);
    if durations.len() != graph.len() {
        return Err(mismatch(format!(
            "{} durations for {} ops",
            durations.len(),
            graph.len()
        )));
    }
    let index = by_name(graph);
    let mapped = back
        .ids()
        .map(|b| {
            let name = &back.op(b).name;
            index
                .get(name.as_str())
                .map(|o| durations[o.0])
                .ok_or_else(|| mismatch(format!("op `{name}` is not in the plan's graph")))
        })
        .collect::<Result<Vec<u64>, _>>()?;
    let plan = StreamPlan::program_order(back).map_err(|e| mismatch(e.to_string()))?;
    concerto_graph::simulate(back, &plan, &mapped, contention).map_err(|e| mismatch(e.to_string()))
}

/// A module written and checked by [`export_checked`].
#[derive(Clone, Debug)]
pub struct Checked {
    /// The module.
    pub exported: Exported,
    /// Its replay in program order ([`replay`]).
    pub replay: Timeline,
    /// The plan's simulated makespan (ns).
    pub plan_ns: u64,
}

/// Largest relative difference between the replayed and the plan's makespan that
/// [`export_checked`] accepts.
pub const REPLAY_TOLERANCE: f64 = 0.001;

/// [`export`], then [`check_export`] and [`replay`] with the plan's contention-free
/// `durations` and `contention`: the written module imports to the same ops and dependencies,
/// and replayed in program order its makespan is within [`REPLAY_TOLERANCE`] of `timeline`'s
/// (it is the same when the simulator's orders are the plan's). This is what `concerto
/// optimize --emit-hlo` runs. Cost: one export, one parse and import, one simulation.
pub fn export_checked(
    module: &Module,
    graph: &Graph,
    plan: &StreamPlan,
    timeline: &Timeline,
    durations: &[u64],
    contention: f64,
    options: &ImportOptions,
) -> Result<Checked, ExportError> {
    let exported = export(module, graph, plan, timeline, options)?;
    finish_checked(exported, graph, timeline, durations, contention, options)
}

/// [`check_export`] and [`replay`] of a written module against the plan's `timeline`.
fn finish_checked(
    exported: Exported,
    graph: &Graph,
    timeline: &Timeline,
    durations: &[u64],
    contention: f64,
    options: &ImportOptions,
) -> Result<Checked, ExportError> {
    let back = check_export(&exported.text, graph, options)?;
    let replay = replay(&back, graph, durations, contention)?;
    let (got, want) = (replay.makespan, timeline.makespan);
    if (got as f64 - want as f64).abs() > REPLAY_TOLERANCE * want.max(1) as f64 {
        return Err(ExportError::Mismatch(format!(
            "replayed in program order the written module takes {got} ns, the plan {want} ns"
        )));
    }
    Ok(Checked {
        exported,
        replay,
        plan_ns: want,
    })
}

/// [`export_verbatim`], then [`check_export`] and [`replay`] as [`export_checked`] does: the
/// written module imports to the same ops and dependencies, and replayed in program order
/// its makespan is within [`REPLAY_TOLERANCE`] of `timeline`'s. For compiled modules
/// (`concerto optimize MODULE --emit-hlo OUT` on XLA's after-optimizations module). Cost: two
/// parses and imports, one export, one simulation.
pub fn export_verbatim_checked(
    text: &str,
    graph: &Graph,
    plan: &StreamPlan,
    timeline: &Timeline,
    durations: &[u64],
    contention: f64,
    options: &ImportOptions,
) -> Result<Checked, ExportError> {
    let exported = export_verbatim(text, graph, plan, timeline, options)?;
    finish_checked(exported, graph, timeline, durations, contention, options)
}
