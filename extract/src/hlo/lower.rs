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
//!   `collective-permute`, `collective-broadcast`, `send`, and their `-start` forms): one
//!   collective op of the result buffer's bytes (an async start's tuple: its last element),
//!   the group size of the first replica group (`{}`: every device of the module), and the
//!   link class from the device ids: intra-node when every group lies in one node of
//!   `gpus_per_node` devices. The `-done` half carries the dependency to the users, so an
//!   async pair is one collective whose consumers wait for it.
//! - **`dot`**: a GEMM of `2 * result elements * contracted size` flops with its (b, m, n, k)
//!   from the batch and contracting dimensions; **`convolution`**: `2 * output elements *
//!   kernel elements / output features` flops.
//! - **`fusion`**: one op costed from the called computation: the flops of its dots and
//!   convolutions (recursively), the bytes of the op's operands and result (a fusion keeps
//!   intermediates on chip), a GEMM when it contains a dot.
//! - **`call`**: inlined, as XLA's `CallInliner` does before it schedules: the callee's
//!   instructions become ops named `<call>.in.<name>` (a `shard_map` step holds all its
//!   collectives in one called computation).
//! - **`while`**: unrolled (iteration `k` of loop `%w` gives ops named `w.itk.<name>`) when
//!   its trip count is known, from
//!   [`ImportOptions::trip_counts`], `backend_config`'s `known_trip_count` or the loop
//!   pattern (the condition compares a tuple element that starts at constant 0 against a
//!   constant with `LT`, and the body adds 1 to it); otherwise an error that names the loop
//!   and says to give its count (`--trip-count NAME=N`). **`conditional`**: one op costed as
//!   its most expensive branch.
//! - **Elementwise** and **data movement** opcodes: memory-bound ops of their operand and
//!   result bytes. **`custom-call`**: attention kernels (target containing `attn` or
//!   `attention`) as attention of `4 b s^2 h d` flops (backward 2.5x), others memory-bound.
//! - **Unknown opcodes** become memory-bound compute ops, with one warning per opcode.
//!
//! Cost: O(instructions * operands), plus the unrolled bodies.

mod collectives;
mod cost;
#[cfg(test)]
mod tests;
mod unroll;

pub(crate) use unroll::trip_count;

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{DType, GemmShape, Graph, GraphBuilder, Op, OpId, Tensor};

use crate::hlo::ast::{Computation, Instruction, Module, Shape};
use crate::hlo::HloError;
use collectives::collective_kind;

/// Options of [`lower`].
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// GPUs per node: decides which replica groups cross nodes.
    pub gpus_per_node: u32,
    /// Devices of the module when the header does not say (`num_partitions`,
    /// `replica_count`) and a collective names no group.
    pub devices: u32,
    /// Most instructions an unrolled `while` may add before it is an error.
    pub max_unrolled: usize,
    /// Trip counts of `while` loops by instruction name (without `%`), for loops whose count
    /// the module does not give (a decode loop, say); a count here also wins over the
    /// loop's `backend_config`. The name applies to every `while` of that name in any
    /// computation; a name that is no `while` of the module is an error.
    pub trip_counts: BTreeMap<String, u64>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            gpus_per_node: 8,
            devices: 8,
            max_unrolled: 2_000_000,
            trip_counts: BTreeMap::new(),
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
    /// One line per unknown opcode or custom-call target costed conservatively.
    pub warnings: Vec<String>,
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

/// The value of an instruction for its users: the ops it depends on.
type Deps = Vec<OpId>;

struct Lowerer<'m> {
    module: &'m Module,
    options: &'m ImportOptions,
    devices: u32,
    builder: GraphBuilder,
    report: ImportReport,
    warned: BTreeSet<String>,
    added: usize,
    /// `while` loops being unrolled around the current instruction.
    depth: usize,
}

/// The cost of a called computation: flops of its dots/convolutions, inner bytes (sum of
/// every costed inner op's operand and result bytes) and its largest GEMM.
#[derive(Default, Clone, Copy)]
struct Inner {
    flops: u64,
    bytes: u64,
    gemm: Option<GemmShape>,
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
        builder: GraphBuilder::new(module.name.clone()),
        report: ImportReport::default(),
        warned: BTreeSet::new(),
        added: 0,
        depth: 0,
    };
    let entry = module.entry();
    l.report.instructions = entry.instructions.len();
    for i in &entry.instructions {
        *l.report.opcodes.entry(i.opcode.clone()).or_default() += 1;
    }
    l.computation(entry, &[], "")?;
    Ok((l.builder.finish(), l.report))
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

    /// Lowers a computation's instructions with `params[k]` the dependencies of parameter k
    /// (all parameters share `params[0]` when only one set is given); returns the root's.
    fn computation(
        &mut self,
        comp: &'m Computation,
        params: &[Deps],
        prefix: &str,
    ) -> Result<Deps, HloError> {
        let mut values: BTreeMap<&str, Deps> = BTreeMap::new();
        let mut shapes: BTreeMap<&str, &Shape> = BTreeMap::new();
        for i in &comp.instructions {
            let mut deps: Deps = Vec::new();
            for o in &i.operands {
                let d = values.get(o.as_str()).ok_or_else(|| {
                    self.error(i, format!("operand `%{o}` is not defined before it"))
                })?;
                deps.extend_from_slice(d);
            }
            deps.sort_unstable();
            deps.dedup();
            shapes.insert(&i.name, &i.shape);
            let op = i.opcode.as_str();
            let value = if op == "parameter" {
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
            } else if FREE.contains(&op) || op.ends_with("-done") || op.ends_with("-update") {
                deps
            } else if let Some((kind, _)) = collective_kind(op) {
                self.collective(i, kind, deps, prefix)?
            } else if op == "while" {
                self.while_loop(i, deps, prefix)?
            } else if op == "call" {
                // Inlined, as XLA's CallInliner does before scheduling: the callee's ops are
                // ops of the step (a `shard_map` body holds the collectives of a whole step).
                let callee = self.called(i, "to_apply")?;
                let params: Vec<Deps> = i
                    .operands
                    .iter()
                    .map(|o| values.get(o.as_str()).cloned().unwrap_or_default())
                    .collect();
                if self.depth >= 64 {
                    return Err(self.error(i, "calls and loops nest more than 64 deep"));
                }
                self.depth += 1;
                let inlined = self.computation(callee, &params, &format!("{prefix}{}.in.", i.name));
                self.depth -= 1;
                inlined?
            } else {
                let (class, flops, bytes, gemm) = self.cost(i, &shapes)?;
                let mut o = Op::compute(format!("{prefix}{}", i.name), class, flops, bytes);
                if let concerto_graph::OpKind::Compute { gemm: g, .. } = &mut o.kind {
                    *g = gemm;
                }
                if let Shape::Array { dims, .. } = &i.shape {
                    o.outputs.push(Tensor::new(dims.clone(), dtype(&i.shape)));
                }
                vec![self.add(o, &deps)?]
            };
            values.insert(&i.name, value);
        }
        let root = comp
            .instructions
            .get(comp.root)
            .map(|r| values.get(r.name.as_str()).cloned().unwrap_or_default())
            .unwrap_or_default();
        Ok(root)
    }

    fn add(&mut self, op: Op, deps: &[OpId]) -> Result<OpId, HloError> {
        self.added += 1;
        let inputs: Vec<(OpId, usize)> = deps.iter().map(|&d| (d, 0)).collect();
        Ok(self.builder.try_add(op, &inputs)?)
    }
}
