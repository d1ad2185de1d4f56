//! Lowering an HLO module to a [`Graph`].
//!
//! One op per instruction of the entry computation that does work, in text order (XLA's
//! schedule when the module was dumped after scheduling, else its program order):
//!
//! - **Free** instructions (`parameter`, `constant`, `tuple`, `get-tuple-element`, `bitcast`,
//!   `reshape`, `after-all`, `partition-id`, `replica-id`, `opt-barrier`, `add-dependency`,
//!   `domain`, and every `*-done` of an async pair) become no op: they carry their operands'
//!   dependencies to their users.
//! - **Collectives** (`all-reduce`, `all-gather`, `reduce-scatter`, `all-to-all`,
//!   `collective-permute`, `collective-broadcast`, `send`, their `-start` forms, and an
//!   `async-start` whose called computation's root is one of them, as XLA's GPU compiler
//!   wraps `reduce-scatter`, `all-to-all` and some `all-gather`s): one
//!   collective op of the result buffer's bytes (an async start's tuple: its last element),
//!   the group size of the first replica group (`{}`: every device of the module), and the
//!   link class from the device ids: intra-node when every group lies in one node of
//!   `gpus_per_node` devices. The `-done` half carries the dependency to the users, so an
//!   async pair is one collective whose consumers wait for it.
//! - **`dot`**: a GEMM of `2 * result elements * contracted size` flops with its (b, m, n, k)
//!   from the batch and contracting dimensions; **`convolution`**: `2 * output elements *
//!   kernel elements / output features` flops.
//! - **`fusion`**: one kernel costed from the called computation: the flops of its dots and
//!   convolutions (recursively), the bytes of the op's operands and result, read and written
//!   once (a fusion keeps intermediates on chip); a GEMM when it contains a dot or a
//!   convolution (XLA's Triton gemm fusions, cuBLAS epilogue fusions), else a reduction when it
//!   reduces (input fusions), else elementwise (loop fusions). A GEMM or attention op records
//!   the element type it reads ([`Op::operand_dtype`]: XLA's dots read bf16 and often write
//!   f32), which picks the GEMM table and the tensor peak.
//! - **`call`**: inlined, as XLA's `CallInliner` does before it schedules: the callee's
//!   instructions become ops named `<call>.in.<name>` (a `shard_map` step holds all its
//!   collectives in one called computation).
//! - **`while`**: unrolled (iteration `k` of loop `%w` gives ops named `w.itk.<name>`) when
//!   its trip count is known: from [`ImportOptions::trip_counts`], `backend_config`'s
//!   `known_trip_count`, or read from the loop as XLA's `ComputeWhileLoopTripCount` reads it
//!   (an induction variable of constant initial value, a closed form for `i < N` and
//!   `i <= N` counters, else up to 128 evaluated iterations; `constant(false)`: zero). A loop
//!   whose count cannot be read is an error that names it and says why (its initial value or
//!   bound is not a constant, its condition is data-dependent, it never ends, ...), unless
//!   [`ImportOptions::unknown_trip_count`] gives the count of every such loop (with a
//!   warning per loop). A loop too long to unroll ([`ImportOptions::max_unrolled`]) is kept
//!   as one iteration whose ops (`w.body.<name>`) cost `n` times theirs, with a warning.
//!   **`conditional`**: one op costed as
//!   its most expensive branch.
//! - **Elementwise** and **data movement** opcodes: memory-bound ops of their operand and
//!   result bytes. **`custom-call`**: cuBLAS GEMMs (`__cublas$gemm`, `__cublas$lt$matmul*`) as
//!   GEMMs from their operand shapes and `backend_config`'s dot dimension numbers (the
//!   workspace result is no traffic; a GEMM whose config has no dimension numbers is an error
//!   naming it); attention kernels (target containing `attn`, `attention` or `fmha`, as
//!   cuDNN's `__cudnn$fmha*`) as attention of `4 b s^2 h d` flops (backward 2.5x), Q being
//!   `[b, s, h, d]`; others memory-bound, with a warning per target. `copy-start` is a copy on
//!   the compute stream (its `copy-done` is free).
//!
//! # The module's own schedule
//!
//! A module whose header says `is_scheduled=true` prints its entry in schedule order. The
//! import records that order ([`ImportReport::sequence`]: each op's launch and each async
//! collective's `-done`), and [`sequence_plan`] turns it into the stream plan XLA's GPU
//! runtime runs: for a compiled module, the schedule XLA's latency-hiding scheduler chose.
//! - **Unknown opcodes** become memory-bound compute ops, with one warning per opcode.
//!
//! # Dependencies
//!
//! An op depends on every op its operands' values depend on. Values are followed element by
//! element through tuples: a `tuple` keeps its operands' dependencies one per element, and a
//! `get-tuple-element` depends only on the element it picks (nested tuples too), so do a
//! `while` loop's unrolled state (the body's parameter, its root, the loop's result) and an
//! inlined `call`'s parameters and root. A `get-tuple-element` of a tuple built from two
//! independent producers thus depends on one of them only, and what reads it need not wait
//! for (nor keep alive) the other. Coarse, on purpose (every element depends on all of the
//! operands' dependencies): the forwarding instructions (`bitcast`, `reshape`,
//! `opt-barrier`, which orders all its results after all its operands, `add-dependency`,
//! `domain`, every `-done` and `-update`), a collective of one rank, a `get-tuple-element`
//! with `control-predecessors`, and a tuple-shaped op's result (a multi-output fusion, an
//! async start), whose elements are all that op. The exporter
//! ([`mod@crate::hlo::export`]) writes the same dependencies: a `get-tuple-element` of a written
//! `tuple` becomes a read of the element itself.
//!
//! # Memory
//!
//! The graph carries what [`concerto_graph::memory`] needs besides the ops' output tensors
//! (an array result gives its op one output tensor of its per-device shape and element type;
//! a tuple-shaped compute result, such as a multi-output fusion, one byte tensor of all its
//! leaves, the workspace of a cuBLAS GEMM excepted):
//!
//! - **Resident bytes** ([`Graph::resident_bytes`]): the bytes of the entry computation's
//!   parameters (parameters, optimizer state, inputs of the step), each array counted with the
//!   same shape-to-tensor code as the ops' outputs, a tuple-shaped parameter as the sum of its
//!   leaves, tokens as 0. Not counted: constants, and the buffers that XLA's
//!   `input_output_alias` (donation) lets an output share with a parameter, so an updated
//!   parameter counts both as resident and as a step output.
//! - **Step outputs** ([`Op::live_out`]): the ops whose output reaches the entry's `ROOT`,
//!   directly or through free instructions only: `tuple` and `get-tuple-element` (followed
//!   element by element, so a `get-tuple-element` of a tuple reaches only that element),
//!   `bitcast`, `reshape`, `opt-barrier`, `add-dependency`, `domain`, the `-done` and
//!   `-update` of an async pair (the start is the op), a collective of one rank, an inlined
//!   `call`'s root, and an unrolled `while`'s final state (an element the body passes through
//!   unchanged keeps its value from before the loop). A parameter, a constant or an id that
//!   reaches the root is no op's output and marks nothing.
//!
//! Cost: O(instructions * operands), plus the unrolled bodies.

mod collectives;
#[cfg(test)]
mod compiled_tests;
mod cost;
#[cfg(test)]
mod loop_tests;
mod sequence;
#[cfg(test)]
mod sinking_tests;
#[cfg(test)]
mod tests;
mod trip_count;
mod unroll;

pub use sequence::sequence_plan;
pub(crate) use unroll::{keeps_loop, trip_count};

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{ComputeClass, DType, GemmShape, Graph, GraphBuilder, Op, OpId, Tensor};

use crate::hlo::ast::{Computation, Instruction, Module, Shape};
use crate::hlo::HloError;

/// Options of [`lower`].
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// GPUs per node: decides which replica groups cross nodes.
    pub gpus_per_node: u32,
    /// Devices of the module when the header does not say (`num_partitions`,
    /// `replica_count`) and a collective names no group.
    pub devices: u32,
    /// Most instructions unrolled `while` loops may add: a loop that would pass it is kept
    /// as one iteration whose ops cost its trip count times theirs (a warning names it), and
    /// the exporter refuses to write it.
    pub max_unrolled: usize,
    /// Trip counts of `while` loops by instruction name (without `%`), for loops whose count
    /// the module does not give (a decode loop, say); a count here also wins over the
    /// loop's `backend_config`. The name applies to every `while` of that name in any
    /// computation; a name that is no `while` of the module is an error.
    pub trip_counts: BTreeMap<String, u64>,
    /// The trip count of every `while` loop whose count is neither given
    /// ([`ImportOptions::trip_counts`], `backend_config`) nor read from the loop; each such
    /// loop gets a warning in [`ImportReport::warnings`] that names it and says why its count
    /// could not be read. `None` (the default): such a loop is an error. XLA's own cost
    /// analysis (`HloCostAnalysis`) costs a loop as one iteration of its body whatever its
    /// count, which `Some(1)` reproduces.
    pub unknown_trip_count: Option<u64>,
    /// The size every unbounded dynamic dimension (`f32[?]`) is read as
    /// ([`ParseOptions::unbounded_dim_size`]); `None` (the default): such a dimension is an
    /// error.
    ///
    /// [`ParseOptions::unbounded_dim_size`]: crate::hlo::ParseOptions::unbounded_dim_size
    pub unbounded_dim_size: Option<u64>,
    /// For a profiler trace read through [`crate::read`]: which `ProfilerStep#N` to import;
    /// `None` the median step ([`crate::kineto::TraceOptions::step`]). HLO modules ignore it.
    pub trace_step: Option<u64>,
    /// For a profiler trace: whether ops get release times from their CPU launches
    /// ([`crate::kineto::TraceOptions::launch_times`]; default true).
    pub trace_launch_times: bool,
}

impl ImportOptions {
    /// The parser's options these import options imply.
    pub fn parse_options(&self) -> crate::hlo::ParseOptions {
        crate::hlo::ParseOptions {
            unbounded_dim_size: self.unbounded_dim_size,
        }
    }
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            gpus_per_node: 8,
            devices: 8,
            max_unrolled: 2_000_000,
            trip_counts: BTreeMap::new(),
            unknown_trip_count: None,
            unbounded_dim_size: None,
            trace_step: None,
            trace_launch_times: true,
        }
    }
}

/// What [`lower`] did besides building the graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Instructions in the entry computation.
    pub instructions: usize,
    /// Instructions of the entry computation per opcode.
    pub opcodes: BTreeMap<String, usize>,
    /// One line per unknown opcode or custom-call target costed conservatively, per loop
    /// counted with [`ImportOptions::unknown_trip_count`], and per loop kept rather than
    /// unrolled ([`ImportOptions::max_unrolled`]).
    pub warnings: Vec<String>,
    /// The module's own schedule, when its header says `is_scheduled=true` (XLA's
    /// after-optimizations dumps): every op's launch and every async collective's end
    /// (`*-done`) in the order of the entry's text, calls inlined and loops unrolled. A
    /// collective without a `-done` (a synchronous one) ends where it starts.
    /// [`sequence_plan`] turns it into the stream plan a GPU runs.
    pub sequence: Option<Vec<SeqEvent>>,
}

/// One step of a module's own schedule ([`ImportReport::sequence`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqEvent {
    /// The op is launched here: a compute kernel, or the start of a collective.
    Launch(OpId),
    /// The collective's `-done`: what follows on the compute stream waits for it.
    Done(OpId),
}

/// Opcodes that do no work: their value is their operands' dependencies.
const FREE: &[&str] = &[
    "parameter",
    "constant",
    "tuple",
    "get-tuple-element",
    "bitcast",
    "reshape",
    "after-all",
    "partition-id",
    "replica-id",
    "opt-barrier",
    "add-dependency",
    "domain",
    "get-dimension-size",
];

/// The graph dtype of an HLO element type (`f32` for a tuple or token).
fn dtype(shape: &Shape) -> DType {
    match shape.dtype().unwrap_or("f32") {
        "f32" => DType::F32,
        "bf16" => DType::Bf16,
        "f16" => DType::F16,
        "f64" => DType::F64,
        "s32" | "u32" => DType::S32,
        "s64" | "u64" => DType::S64,
        "pred" => DType::Pred,
        t if t.starts_with("f8") => DType::F8,
        _ => DType::S8,
    }
}

/// The ops an op depends on.
type Deps = Vec<OpId>;

/// Whose outputs an instruction's value is, element by element: a tuple keeps one entry per
/// element, so `get-tuple-element` can pick one; any other value is the outputs of a set of
/// ops (none for a parameter or a constant; the op itself for a costed instruction). What
/// reaches the entry's root decides [`Op::live_out`] (see the module docs).
#[derive(Clone, Debug)]
enum Held {
    /// The outputs of these ops.
    Ops(Vec<OpId>),
    /// A tuple, one entry per element.
    Tuple(Vec<Held>),
}

impl Default for Held {
    fn default() -> Self {
        Held::Ops(Vec::new())
    }
}

impl Held {
    /// Every op of the value, each leaf's in order (repeats possible).
    fn ops(&self, out: &mut Vec<OpId>) {
        match self {
            Held::Ops(v) => out.extend_from_slice(v),
            Held::Tuple(v) => v.iter().for_each(|h| h.ops(out)),
        }
    }

    /// Element `index` of a tuple; the whole value when it is not a tuple (an op whose result
    /// is a tuple, say) or has no such element.
    fn element(&self, index: Option<usize>) -> Held {
        match (self, index) {
            (Held::Tuple(v), Some(k)) if k < v.len() => v[k].clone(),
            _ => self.flattened(),
        }
    }

    /// The value as one set of ops.
    fn flattened(&self) -> Held {
        match self {
            Held::Ops(_) => self.clone(),
            Held::Tuple(_) => {
                let mut v = Vec::new();
                self.ops(&mut v);
                v.sort_unstable();
                v.dedup();
                Held::Ops(v)
            }
        }
    }
}

/// An instruction's value: the ops it depends on and whose outputs it is, both element by
/// element (see the module docs, "Dependencies").
#[derive(Clone, Debug, Default)]
struct Value {
    deps: Held,
    held: Held,
}

impl Value {
    /// The value of a new op: it depends on the op and is its outputs.
    fn op(id: OpId) -> Value {
        Value {
            deps: Held::Ops(vec![id]),
            held: Held::Ops(vec![id]),
        }
    }

    /// A value that depends on `deps` as a whole and is no op's output.
    fn opaque(deps: &[OpId]) -> Value {
        Value {
            deps: Held::Ops(deps.to_vec()),
            held: Held::default(),
        }
    }
}

/// Opcodes whose value is their first operand's, element by element (see the module docs).
const FORWARDING: &[&str] = &[
    "bitcast",
    "reshape",
    "opt-barrier",
    "add-dependency",
    "domain",
];

/// The per-device tensor of an array shape (`None` for a tuple or a token): what an op
/// declares as its output, and how a parameter's bytes are counted.
fn tensor(shape: &Shape) -> Option<Tensor> {
    match shape {
        Shape::Array { dims, .. } => Some(Tensor::new(dims.clone(), dtype(shape))),
        _ => None,
    }
}

/// The output tensor a compute instruction declares: its array result's [`tensor`]; for a
/// tuple result (a multi-output fusion, a custom-call's results), one byte tensor covering
/// every leaf, so that the buffers live until the last reader of any of them (an
/// over-estimate by the leaves whose readers end earlier); for a cuBLAS GEMM only the product
/// (element 0): its workspace is scratch, gone when the kernel ends.
fn output_tensor(i: &Instruction) -> Option<Tensor> {
    match &i.shape {
        Shape::Tuple(v) => {
            let cublas = i
                .attribute("custom_call_target")
                .and_then(|a| a.string().ok())
                .is_some_and(|t| cost::is_cublas_gemm(&t));
            let bytes = if cublas {
                v.first().map_or(0, leaf_bytes)
            } else {
                v.iter().map(leaf_bytes).sum()
            };
            (bytes > 0).then(|| Tensor::new(vec![bytes], DType::S8))
        }
        s => tensor(s),
    }
}

/// Bytes of a value of `shape`: its arrays' [`tensor`] bytes (a tuple: the sum of its leaves).
fn leaf_bytes(shape: &Shape) -> u64 {
    match shape {
        Shape::Tuple(v) => v.iter().map(leaf_bytes).sum(),
        s => tensor(s).map_or(0, |t| t.bytes()),
    }
}

struct Lowerer<'m> {
    module: &'m Module,
    options: &'m ImportOptions,
    devices: u32,
    /// The ops so far with their dependencies, added to the graph at the end, once the root
    /// says which are step outputs.
    ops: Vec<(Op, Deps)>,
    report: ImportReport,
    warned: BTreeSet<String>,
    added: usize,
    /// `while` loops being unrolled around the current instruction.
    depth: usize,
    /// Launches and ends in text order (see [`ImportReport::sequence`]).
    events: Vec<SeqEvent>,
}

/// The cost of a called computation: flops of its dots/convolutions, inner bytes (sum of
/// every costed inner op's operand and result bytes), its largest GEMM, and the kinds of work
/// in it, which give a fusion its class ([`Inner::class`]).
#[derive(Default, Clone, Copy)]
struct Inner {
    flops: u64,
    bytes: u64,
    gemm: Option<GemmShape>,
    /// A dot or a convolution.
    matmul: bool,
    /// An attention kernel (a cuDNN attention custom-call).
    attention: bool,
    /// A `reduce` or `reduce-window`.
    reduces: bool,
}

impl Inner {
    /// The class of one kernel doing this work: a GEMM when it multiplies matrices (XLA's
    /// gemm fusions, Triton's or cuBLAS epilogue fusions), attention, a reduction (XLA's
    /// input fusions), else elementwise (loop fusions).
    fn class(&self) -> ComputeClass {
        if self.matmul {
            ComputeClass::Gemm
        } else if self.attention {
            ComputeClass::Attention
        } else if self.reduces {
            ComputeClass::Reduction
        } else {
            ComputeClass::Elementwise
        }
    }
}

/// Lowers `module` (see the module docs).
pub fn lower(module: &Module, options: &ImportOptions) -> Result<(Graph, ImportReport), HloError> {
    let devices = ["num_partitions", "replica_count"]
        .iter()
        .filter_map(|k| module.attributes.iter().find(|a| a.name == *k))
        .filter_map(|a| a.integer().ok())
        .map(|v| v.max(1) as u32)
        .max()
        .unwrap_or(options.devices);
    unroll::check_trip_counts(module, options)?;
    let mut l = Lowerer {
        module,
        options,
        devices,
        ops: Vec::new(),
        report: ImportReport::default(),
        warned: BTreeSet::new(),
        added: 0,
        depth: 0,
        events: Vec::new(),
    };
    let entry = module.entry();
    l.report.instructions = entry.instructions.len();
    for i in &entry.instructions {
        *l.report.opcodes.entry(i.opcode.clone()).or_default() += 1;
    }
    let root = l.computation(entry, &[], "")?;
    let mut live = Vec::new();
    root.held.ops(&mut live);
    for o in live {
        l.ops[o.0].0.live_out = true;
    }
    if module
        .attributes
        .iter()
        .any(|a| a.name == "is_scheduled" && a.value.trim() == "true")
    {
        l.report.sequence = Some(std::mem::take(&mut l.events));
    }
    let mut b = GraphBuilder::new(module.name.clone());
    b.set_resident_bytes(
        entry
            .instructions
            .iter()
            .filter(|i| i.opcode == "parameter")
            .map(|i| leaf_bytes(&i.shape))
            .sum(),
    );
    for (op, deps) in l.ops {
        let inputs: Vec<(OpId, usize)> = deps.iter().map(|&d| (d, 0)).collect();
        b.try_add(op, &inputs)?;
    }
    Ok((b.finish(), l.report))
}

impl<'m> Lowerer<'m> {
    fn error(&self, i: &Instruction, message: impl Into<String>) -> HloError {
        HloError::Lowering {
            line: i.pos.line,
            instruction: i.name.clone(),
            message: message.into(),
        }
    }

    fn warn(&mut self, key: &str, message: String) {
        if self.warned.insert(key.to_string()) {
            self.report.warnings.push(message);
        }
    }

    fn called(&self, i: &Instruction, attr: &str) -> Result<&'m Computation, HloError> {
        let a = i
            .attribute(attr)
            .ok_or_else(|| self.error(i, format!("`{}` needs `{attr}=`", i.opcode)))?;
        let name = a.computation()?;
        self.module
            .computation(name)
            .ok_or_else(|| self.error(i, format!("calls `%{name}`, which is not in the module")))
    }

    /// Lowers a computation's instructions with `params[k]` the value of parameter k (all
    /// parameters share `params[0]` when only one is given); returns the root's value.
    fn computation(
        &mut self,
        comp: &'m Computation,
        params: &[Value],
        prefix: &str,
    ) -> Result<Value, HloError> {
        let mut values: BTreeMap<&str, Value> = BTreeMap::new();
        let mut shapes: BTreeMap<&str, &Shape> = BTreeMap::new();
        for i in &comp.instructions {
            let (operands, deps) = self.operands(i, &values)?;
            shapes.insert(&i.name, &i.shape);
            let value = self.value(i, &operands, deps, params, prefix, &shapes)?;
            values.insert(&i.name, value);
        }
        let root = comp
            .instructions
            .get(comp.root)
            .map(|r| values.get(r.name.as_str()).cloned().unwrap_or_default())
            .unwrap_or_default();
        Ok(root)
    }

    /// The values of `i`'s operands, and every op they depend on, all elements (what an op of
    /// `i` reads), sorted.
    fn operands<'v>(
        &self,
        i: &Instruction,
        values: &'v BTreeMap<&str, Value>,
    ) -> Result<(Vec<&'v Value>, Deps), HloError> {
        let mut deps: Deps = Vec::new();
        let mut operands: Vec<&Value> = Vec::with_capacity(i.operands.len());
        for o in &i.operands {
            let v = values
                .get(o.as_str())
                .ok_or_else(|| self.error(i, format!("operand `%{o}` is not defined before it")))?;
            v.deps.ops(&mut deps);
            operands.push(v);
        }
        deps.sort_unstable();
        deps.dedup();
        Ok((operands, deps))
    }

    /// The value of instruction `i`, whose operands' values are `operands` and which depends on
    /// the ops `deps`: a free instruction's says whose outputs it forwards (see the module
    /// docs), a collective's or a compute instruction's is a new op, a loop's or a call's what
    /// its body computes.
    fn value(
        &mut self,
        i: &'m Instruction,
        operands: &[&Value],
        deps: Deps,
        params: &[Value],
        prefix: &str,
        shapes: &BTreeMap<&str, &Shape>,
    ) -> Result<Value, HloError> {
        let op = i.opcode.as_str();
        // Whose outputs a free instruction's value is (see the module docs).
        let first = || operands.first().map(|v| v.held.clone()).unwrap_or_default();
        Ok(if op == "parameter" {
            let k: usize = i
                .literal
                .as_deref()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| self.error(i, "a parameter needs its number"))?;
            params
                .get(k)
                .or(params.first())
                .cloned()
                .unwrap_or_default()
        } else if op == "tuple" {
            // Element by element: a get-tuple-element picks one element's dependencies.
            Value {
                deps: Held::Tuple(operands.iter().map(|v| v.deps.clone()).collect()),
                held: Held::Tuple(operands.iter().map(|v| v.held.clone()).collect()),
            }
        } else if op == "get-tuple-element" {
            tuple_element(i, operands, deps)
        } else if FORWARDING.contains(&op) || op.ends_with("-done") || op.ends_with("-update") {
            if op.ends_with("-done") {
                self.pair_done(operands);
            }
            // Whose outputs: element by element. Dependencies: all of the operands' (an
            // `opt-barrier` orders all its results after all its operands; the exporter
            // writes these instructions reading their whole operands).
            Value {
                deps: Held::Ops(deps),
                held: first(),
            }
        } else if FREE.contains(&op) {
            // A constant, a token, an id: no op's output.
            Value::opaque(&deps)
        } else if let Some((ci, kind)) = self.collective_of(i)? {
            match self.collective(ci, kind, &deps, &format!("{prefix}{}", i.name))? {
                Some(id) => Value::op(id),
                // A group of one moves nothing: the value is the operand's.
                None => Value {
                    deps: Held::Ops(deps),
                    held: match operands {
                        [v] => v.held.clone(),
                        _ => Held::Tuple(operands.iter().map(|v| v.held.clone()).collect())
                            .flattened(),
                    },
                },
            }
        } else if op == "while" {
            // The state element by element: the body's get-tuple-elements pick one
            // element's dependencies, and so do the users of the loop's result.
            let init = match operands {
                [v] => (*v).clone(),
                _ => Value {
                    deps: Held::Ops(deps),
                    held: first(),
                },
            };
            self.while_loop(i, init, prefix)?
        } else if op == "call" {
            self.inline_call(i, operands, prefix)?
        } else {
            self.compute(i, &deps, prefix, shapes)?
        })
    }

    /// Where an async pair ends in the sequence: the compute stream waits for the collective
    /// here (see [`SeqEvent`]).
    fn pair_done(&mut self, operands: &[&Value]) {
        if let Some(Held::Ops(v)) = operands.first().map(|v| &v.held) {
            if let [c] = v[..] {
                if self.ops[c.0].0.is_collective() {
                    self.events.push(SeqEvent::Done(c));
                }
            }
        }
    }

    /// Inlines a `call`, as XLA's CallInliner does before scheduling: the callee's ops are ops
    /// of the step (a `shard_map` body holds the collectives of a whole step).
    fn inline_call(
        &mut self,
        i: &Instruction,
        operands: &[&Value],
        prefix: &str,
    ) -> Result<Value, HloError> {
        let callee = self.called(i, "to_apply")?;
        let params: Vec<Value> = operands.iter().map(|&v| v.clone()).collect();
        if self.depth >= 64 {
            return Err(self.error(i, "calls and loops nest more than 64 deep"));
        }
        self.depth += 1;
        let inlined = self.computation(callee, &params, &format!("{prefix}{}.in.", i.name));
        self.depth -= 1;
        inlined
    }

    /// A compute op for `i`, with its cost, GEMM shape and operand type, reading `deps`.
    fn compute(
        &mut self,
        i: &Instruction,
        deps: &[OpId],
        prefix: &str,
        shapes: &BTreeMap<&str, &Shape>,
    ) -> Result<Value, HloError> {
        let (class, flops, bytes, gemm) = self.cost(i, shapes)?;
        let mut o = Op::compute(format!("{prefix}{}", i.name), class, flops, bytes);
        if let concerto_graph::OpKind::Compute { gemm: g, .. } = &mut o.kind {
            *g = gemm;
        }
        if matches!(class, ComputeClass::Gemm | ComputeClass::Attention) {
            o.operand_dtype = self.operand_dtype(i, shapes, 0);
        }
        o.outputs.extend(output_tensor(i));
        Ok(Value::op(self.add(o, deps)))
    }

    /// Adds `op` reading `deps` (added to the graph at the end of [`lower`]); returns its id.
    fn add(&mut self, op: Op, deps: &[OpId]) -> OpId {
        self.added += 1;
        self.ops.push((op, deps.to_vec()));
        let id = OpId(self.ops.len() - 1);
        self.events.push(SeqEvent::Launch(id));
        id
    }
}

/// The value of a `get-tuple-element` reading `operands`: whose outputs its element is, and
/// only the element's dependencies, unless the instruction orders itself after others
/// (`control-predecessors`): then all of the tuple's, `deps`, as the exporter writes it
/// reading the whole tuple.
fn tuple_element(i: &Instruction, operands: &[&Value], deps: Deps) -> Value {
    let index = i
        .attribute("index")
        .and_then(|a| a.integer().ok())
        .and_then(|k| usize::try_from(k).ok());
    let held = operands
        .first()
        .map(|v| v.held.element(index))
        .unwrap_or_default();
    let exact = operands.len() == 1 && i.attribute("control-predecessors").is_none();
    let deps = match operands.first() {
        Some(v) if exact => v.deps.element(index),
        _ => Held::Ops(deps),
    };
    Value { deps, held }
}
