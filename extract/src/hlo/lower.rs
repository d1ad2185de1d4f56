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
//! - **`fusion`** and **`call`**: one op costed from the called computation: the flops of its
//!   dots and convolutions (recursively), the bytes of the op's operands and result (a
//!   fusion keeps intermediates on chip; a call is charged each inner op's bytes), a GEMM when
//!   it contains a dot.
//! - **`while`**: unrolled when its trip count is known, from `backend_config`'s
//!   `known_trip_count` or from the loop pattern (the condition compares a tuple element that
//!   starts at constant 0 against a constant with `LT`, and the body adds 1 to it); otherwise
//!   an error that says so. **`conditional`**: one op costed as its most expensive branch.
//! - **Elementwise** and **data movement** opcodes: memory-bound ops of their operand and
//!   result bytes. **`custom-call`**: attention kernels (target containing `attn` or
//!   `attention`) as attention of `4 b s^2 h d` flops (backward 2.5x), others memory-bound.
//! - **Unknown opcodes** become memory-bound compute ops, with one warning per opcode.
//!
//! Cost: O(instructions * operands), plus the unrolled bodies.

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{
    CollectiveKind, ComputeClass, DType, GemmShape, Graph, GraphBuilder, LinkClass, Op, OpId,
    Tensor,
};

use crate::hlo::ast::{Computation, Instruction, Module, ReplicaGroups, Shape};
use crate::hlo::HloError;

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
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            gpus_per_node: 8,
            devices: 8,
            max_unrolled: 2_000_000,
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

const ELEMENTWISE: &[&str] = &[
    "abs",
    "add",
    "and",
    "atan2",
    "cbrt",
    "ceil",
    "clamp",
    "compare",
    "complex",
    "convert",
    "cosine",
    "divide",
    "erf",
    "exponential",
    "exponential-minus-one",
    "floor",
    "imag",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "or",
    "popcnt",
    "power",
    "real",
    "reduce-precision",
    "remainder",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "select",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "sign",
    "sine",
    "sqrt",
    "subtract",
    "tan",
    "tanh",
    "xor",
    "stochastic-convert",
    "map",
];

const MOVEMENT: &[&str] = &[
    "broadcast",
    "concatenate",
    "copy",
    "copy-start",
    "dynamic-slice",
    "dynamic-update-slice",
    "gather",
    "iota",
    "pad",
    "reverse",
    "scatter",
    "slice",
    "sort",
    "transpose",
    "rng",
    "rng-bit-generator",
    "rng-get-and-update-state",
    "select-and-scatter",
    "fft",
    "cholesky",
    "triangular-solve",
    "batch-norm-training",
    "batch-norm-inference",
    "batch-norm-grad",
    "top-k",
    "infeed",
    "outfeed",
    "recv",
];

const REDUCTIONS: &[&str] = &["reduce", "reduce-window", "all-reduce-scatter"];

fn collective_kind(opcode: &str) -> Option<(CollectiveKind, bool)> {
    let (base, start) = match opcode.strip_suffix("-start") {
        Some(b) => (b, true),
        None => (opcode, false),
    };
    let kind = match base {
        "all-reduce" => CollectiveKind::AllReduce,
        "all-gather" => CollectiveKind::AllGather,
        "reduce-scatter" => CollectiveKind::ReduceScatter,
        "all-to-all" | "ragged-all-to-all" => CollectiveKind::AllToAll,
        "collective-permute" | "send" => CollectiveKind::SendRecv,
        "collective-broadcast" => CollectiveKind::Broadcast,
        _ => return None,
    };
    Some((kind, start))
}

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

    fn collective(
        &mut self,
        i: &Instruction,
        kind: CollectiveKind,
        deps: Deps,
        prefix: &str,
    ) -> Result<Deps, HloError> {
        let shape = match &i.shape {
            Shape::Tuple(v) if i.opcode.ends_with("-start") => v.last().unwrap_or(&i.shape),
            s => s,
        };
        let groups: Vec<Vec<u64>> = if let Some(a) = i.attribute("source_target_pairs") {
            match a.replica_groups()? {
                ReplicaGroups::Explicit(pairs) => pairs,
                other => other.expand(),
            }
        } else if let Some(a) = i.attribute("replica_groups") {
            let g = a.replica_groups()?.expand();
            if g.is_empty() {
                vec![(0..u64::from(self.devices)).collect()]
            } else {
                g
            }
        } else {
            vec![(0..u64::from(self.devices)).collect()]
        };
        let group = groups.first().map_or(1, Vec::len) as u32;
        let group = if kind == CollectiveKind::SendRecv {
            group.max(2)
        } else {
            group
        };
        if group < 2 {
            // A group of one moves nothing: the value is the operand's.
            return Ok(deps);
        }
        let per_node = u64::from(self.options.gpus_per_node.max(1));
        let inter = groups.iter().any(|g| {
            g.first()
                .is_some_and(|f| g.iter().any(|d| d / per_node != f / per_node))
        });
        let link = if inter {
            LinkClass::InterNode
        } else {
            LinkClass::IntraNode
        };
        let mut op = Op::collective(
            format!("{prefix}{}", i.name),
            kind,
            shape.bytes().max(1),
            group,
            link,
        );
        if let Shape::Array { dims, .. } = shape {
            op.outputs.push(Tensor::new(dims.clone(), dtype(shape)));
        }
        Ok(vec![self.add(op, &deps)?])
    }

    fn while_loop(&mut self, i: &Instruction, deps: Deps, prefix: &str) -> Result<Deps, HloError> {
        let body = self.called(i, "body")?;
        let cond = self.called(i, "condition")?;
        let n = match known_trip_count(i) {
            Some(n) => n,
            None => loop_pattern_trip_count(self.module, i, cond, body).ok_or_else(|| {
                self.error(
                    i,
                    "while loop without a known trip count (no backend_config \
                     known_trip_count and no `i < N` counter pattern); unroll it before export",
                )
            })?,
        };
        let per_iter = body.instructions.len().max(1);
        if (n as usize)
            .saturating_mul(per_iter)
            .saturating_add(self.added)
            > self.options.max_unrolled
        {
            return Err(self.error(
                i,
                format!("unrolling {n} iterations of {per_iter} instructions is too large"),
            ));
        }
        if self.depth >= 64 {
            return Err(self.error(
                i,
                "while loops nest more than 64 deep (or a body calls itself)",
            ));
        }
        self.depth += 1;
        let mut state = deps;
        for it in 0..n {
            let p = format!("{prefix}{}.it{it}/", i.name);
            match self.computation(body, std::slice::from_ref(&state), &p) {
                Ok(s) => state = s,
                Err(e) => {
                    self.depth -= 1;
                    return Err(e);
                }
            }
        }
        self.depth -= 1;
        Ok(state)
    }

    /// Class, flops, bytes and GEMM shape of a compute instruction.
    fn cost(
        &mut self,
        i: &Instruction,
        shapes: &BTreeMap<&str, &Shape>,
    ) -> Result<(ComputeClass, u64, u64, Option<GemmShape>), HloError> {
        let operand_bytes: u64 = i
            .operands
            .iter()
            .filter_map(|o| shapes.get(o.as_str()))
            .map(|s| s.bytes())
            .sum();
        let io = operand_bytes.saturating_add(i.shape.bytes());
        let op = i.opcode.as_str();
        Ok(match op {
            "dot" => {
                let (flops, g) = dot_cost(i, shapes)?;
                (ComputeClass::Gemm, flops, io, Some(g))
            }
            "convolution" => {
                let rhs = i.operands.get(1).and_then(|o| shapes.get(o.as_str()));
                let out_features = conv_output_features(i).unwrap_or(1).max(1);
                let kernel = rhs.map_or(1, |s| s.elements());
                let flops = 2u64
                    .saturating_mul(i.shape.elements())
                    .saturating_mul(kernel)
                    / out_features;
                (ComputeClass::Gemm, flops, io, None)
            }
            "fusion" | "call" | "async-start" => {
                let attr = if op == "fusion" { "calls" } else { "to_apply" };
                let attr = if i.attribute(attr).is_some() {
                    attr
                } else {
                    "calls"
                };
                let comp = self.called(i, attr)?;
                let inner = self.inner_cost(comp, 0)?;
                let bytes = if op == "call" {
                    inner.bytes.max(io)
                } else {
                    io
                };
                let class = if inner.gemm.is_some() || inner.flops > 0 {
                    ComputeClass::Gemm
                } else {
                    ComputeClass::Elementwise
                };
                (class, inner.flops, bytes, inner.gemm)
            }
            "conditional" => {
                let branches: Vec<&str> = match i.attribute("branch_computations") {
                    Some(a) => a.computations()?,
                    None => ["true_computation", "false_computation"]
                        .iter()
                        .filter_map(|k| i.attribute(k))
                        .map(|a| a.computation())
                        .collect::<Result<_, _>>()?,
                };
                let mut best = Inner::default();
                for b in branches {
                    let comp = self.module.computation(b).ok_or_else(|| {
                        self.error(i, format!("branch `%{b}` is not in the module"))
                    })?;
                    let c = self.inner_cost(comp, 0)?;
                    if (c.flops, c.bytes) > (best.flops, best.bytes) {
                        best = c;
                    }
                }
                (
                    ComputeClass::Other,
                    best.flops,
                    best.bytes.max(io),
                    best.gemm,
                )
            }
            "custom-call" => {
                let target = i
                    .attribute("custom_call_target")
                    .map(|a| a.string())
                    .transpose()?
                    .unwrap_or_default();
                let t = target.to_ascii_lowercase();
                if t.contains("attn") || t.contains("attention") {
                    // Q is the first operand: [b, s, h, d].
                    let q = i.operands.first().and_then(|o| shapes.get(o.as_str()));
                    let dims = q.map_or(&[][..], |s| s.dims());
                    let (b, s, h, d) = match dims {
                        [b, s, h, d] => (*b, *s, *h, *d),
                        _ => (1, 1, 1, 1),
                    };
                    let fwd = 4u64
                        .saturating_mul(b)
                        .saturating_mul(s)
                        .saturating_mul(s)
                        .saturating_mul(h)
                        .saturating_mul(d);
                    let flops = if t.contains("backward") || t.contains("bwd") {
                        fwd.saturating_mul(5) / 2
                    } else {
                        fwd
                    };
                    let g = GemmShape {
                        b: b.saturating_mul(h).max(1),
                        m: s.max(1),
                        n: s.max(1),
                        k: d.max(1),
                    };
                    (ComputeClass::Attention, flops, io, Some(g))
                } else {
                    self.warn(
                        &format!("custom-call:{target}"),
                        format!(
                            "custom-call target `{target}` (first at line {}) is costed as memory-bound: {} bytes",
                            i.pos.line, io
                        ),
                    );
                    (ComputeClass::Other, 0, io, None)
                }
            }
            _ if ELEMENTWISE.contains(&op) => {
                (ComputeClass::Elementwise, i.shape.elements(), io, None)
            }
            _ if REDUCTIONS.contains(&op) => (ComputeClass::Reduction, operand_bytes / 2, io, None),
            _ if MOVEMENT.contains(&op) => (ComputeClass::Other, 0, io, None),
            _ => {
                self.warn(
                    op,
                    format!(
                        "unknown opcode `{op}` (first at line {}) is costed as memory-bound",
                        i.pos.line
                    ),
                );
                (ComputeClass::Other, 0, io, None)
            }
        })
    }

    /// The cost of a called computation (see [`Inner`]).
    fn inner_cost(&mut self, comp: &'m Computation, depth: usize) -> Result<Inner, HloError> {
        if depth > 64 {
            return Err(HloError::Lowering {
                line: comp.pos.line,
                instruction: comp.name.clone(),
                message: "computations call each other more than 64 deep".into(),
            });
        }
        let mut shapes: BTreeMap<&str, &Shape> = BTreeMap::new();
        let mut total = Inner::default();
        for i in &comp.instructions {
            shapes.insert(&i.name, &i.shape);
            let op = i.opcode.as_str();
            if FREE.contains(&op) {
                continue;
            }
            let (flops, bytes, gemm) = match op {
                "dot" => {
                    let (f, g) = dot_cost(i, &shapes)?;
                    (f, 0, Some(g))
                }
                "fusion" | "call" => {
                    let attr = if op == "fusion" { "calls" } else { "to_apply" };
                    let c = self.called(i, attr)?;
                    let inner = self.inner_cost(c, depth + 1)?;
                    (inner.flops, inner.bytes, inner.gemm)
                }
                _ => {
                    let (_, f, b, g) = self.cost(i, &shapes)?;
                    (f, b, g)
                }
            };
            total.flops = total.flops.saturating_add(flops);
            total.bytes = total.bytes.saturating_add(bytes);
            if let Some(g) = gemm {
                if total.gemm.is_none_or(|b| g.flops() > b.flops()) {
                    total.gemm = Some(g);
                }
            }
        }
        Ok(total)
    }
}

/// Flops and (b, m, n, k) of a `dot`.
fn dot_cost(
    i: &Instruction,
    shapes: &BTreeMap<&str, &Shape>,
) -> Result<(u64, GemmShape), HloError> {
    let lhs = i.operands.first().and_then(|o| shapes.get(o.as_str()));
    let rhs = i.operands.get(1).and_then(|o| shapes.get(o.as_str()));
    let dims_of = |name: &str| -> Result<Vec<usize>, HloError> {
        Ok(match i.attribute(name) {
            Some(a) => a.dims()?.into_iter().map(|d| d.max(0) as usize).collect(),
            None => Vec::new(),
        })
    };
    let lc = dims_of("lhs_contracting_dims")?;
    let lb = dims_of("lhs_batch_dims")?;
    let rc = dims_of("rhs_contracting_dims")?;
    let rb = dims_of("rhs_batch_dims")?;
    let ld = lhs.map_or(&[][..], |s| s.dims());
    let rd = rhs.map_or(&[][..], |s| s.dims());
    let prod = |dims: &[u64], idx: &[usize]| -> u64 {
        idx.iter()
            .filter_map(|&k| dims.get(k))
            .product::<u64>()
            .max(1)
    };
    let rest = |dims: &[u64], a: &[usize], b: &[usize]| -> u64 {
        dims.iter()
            .enumerate()
            .filter(|(k, _)| !a.contains(k) && !b.contains(k))
            .map(|(_, d)| *d)
            .product::<u64>()
            .max(1)
    };
    let k = prod(ld, &lc);
    let b = prod(ld, &lb);
    let m = rest(ld, &lc, &lb);
    let n = rest(rd, &rc, &rb);
    let flops = 2u64
        .saturating_mul(i.shape.elements().max(1))
        .saturating_mul(k);
    Ok((flops, GemmShape { b, m, n, k }))
}

/// The output feature count of a convolution: the size of the result dimension labelled `f`
/// in `dim_labels` (`b01f_01io->b01f`).
fn conv_output_features(i: &Instruction) -> Option<u64> {
    let labels = &i.attribute("dim_labels")?.value;
    let out = labels.split("->").nth(1)?;
    let f = out.trim().find('f')?;
    i.shape.dims().get(f).copied()
}

fn known_trip_count(i: &Instruction) -> Option<u64> {
    let cfg = i.attribute("backend_config")?;
    let text = cfg.string().ok()?;
    let at = text.find("known_trip_count")?;
    let rest = &text[at..];
    let n_at = rest.find("\"n\"")?;
    let digits: String = rest[n_at + 3..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `i < N` with `i` a tuple element that starts at constant 0 and grows by 1 per iteration.
fn loop_pattern_trip_count(
    module: &Module,
    w: &Instruction,
    cond: &Computation,
    body: &Computation,
) -> Option<u64> {
    let find = |c: &'_ Computation, name: &str| -> Option<usize> {
        c.instructions.iter().position(|x| x.name == name)
    };
    let root = cond.instructions.get(cond.root)?;
    if root.opcode != "compare" || root.attribute("direction")?.value.trim() != "LT" {
        return None;
    }
    let lhs = &cond.instructions[find(cond, root.operands.first()?)?];
    let rhs = &cond.instructions[find(cond, root.operands.get(1)?)?];
    if lhs.opcode != "get-tuple-element" || rhs.opcode != "constant" {
        return None;
    }
    let index = lhs.attribute("index")?.integer().ok()? as usize;
    let limit: u64 = rhs.literal.as_deref()?.trim().parse().ok()?;
    // The initial tuple in the caller: element `index` must be constant 0.
    let caller = module
        .computations
        .iter()
        .find(|c| c.instructions.iter().any(|x| std::ptr::eq(x, w)))?;
    let init = &caller.instructions[find(caller, w.operands.first()?)?];
    if init.opcode != "tuple" {
        return None;
    }
    let start = &caller.instructions[find(caller, init.operands.get(index)?)?];
    if start.opcode != "constant" || start.literal.as_deref()?.trim() != "0" {
        return None;
    }
    // The body's root tuple element `index` must be `gte(param, index) + constant 1`.
    let broot = body.instructions.get(body.root)?;
    let next = &body.instructions[find(body, broot.operands.get(index)?)?];
    if next.opcode != "add" {
        return None;
    }
    let is_one = |name: &str| {
        find(body, name).is_some_and(|k| {
            let x = &body.instructions[k];
            x.opcode == "constant" && x.literal.as_deref().map(str::trim) == Some("1")
        })
    };
    let is_counter = |name: &str| {
        find(body, name).is_some_and(|k| {
            let x = &body.instructions[k];
            x.opcode == "get-tuple-element"
                && x.attribute("index").and_then(|a| a.integer().ok()) == Some(index as i64)
        })
    };
    let (a, b) = (next.operands.first()?, next.operands.get(1)?);
    if (is_counter(a) && is_one(b)) || (is_counter(b) && is_one(a)) {
        Some(limit)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::parse;
    use concerto_graph::OpKind;

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
        let ar2 = find(&g, "loop.it2/ar");
        // Iteration 2's all-reduce waits for iteration 1's results (the state tuple).
        assert!(g.predecessors(ar2).contains(&find(&g, "loop.it1/w")));
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
        let e = lower(&m, &ImportOptions::default()).unwrap_err();
        assert!(e.to_string().contains("known trip count"), "{e}");
        assert!(e.to_string().contains("`loop`"), "{e}");
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
        // A group of one moves nothing.
        assert_eq!(import(&text("{{0},{1}}")).0.len(), 0);
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
}
