//! Costing compute instructions: dots and convolutions from their shapes, fusions and calls
//! from their called computations, elementwise and data-movement opcodes from their bytes.

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{ComputeClass, DType, GemmShape};

use super::{dtype, Inner, Lowerer, FREE};
use crate::hlo::ast::{Computation, Instruction, Shape};
use crate::hlo::HloError;

/// Elementwise opcodes: memory-bound, a few flops per element.
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

/// Data-movement opcodes: memory-bound, no flops.
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

/// Reduction opcodes.
const REDUCTIONS: &[&str] = &["reduce", "reduce-window", "all-reduce-scatter"];

/// A compute instruction's class, flops, bytes and GEMM shape.
type Cost = (ComputeClass, u64, u64, Option<GemmShape>);

impl<'m> Lowerer<'m> {
    /// Class, flops, bytes and GEMM shape of a compute instruction.
    pub(super) fn cost(
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
            "convolution" => (ComputeClass::Gemm, conv_flops(i, shapes), io, None),
            "fusion" | "call" | "async-start" => self.called_cost(i, shapes, io)?,
            "conditional" => self.conditional_cost(i, io)?,
            "custom-call" => self.custom_call_cost(i, shapes, operand_bytes, io)?,
            _ if ELEMENTWISE.contains(&op) => {
                (ComputeClass::Elementwise, i.shape.elements(), io, None)
            }
            _ if REDUCTIONS.contains(&op) => (ComputeClass::Reduction, operand_bytes / 2, io, None),
            // Scatter and gather touch what their updates and results hold, not their whole
            // operand (XLA's `HloCostAnalysis::HandleScatter` and `HandleGather`).
            "scatter" if i.operands.len() == 3 => {
                (ComputeClass::Other, 0, scatter_bytes(i, shapes), None)
            }
            "gather" => (ComputeClass::Other, 0, gather_bytes(i, shapes), None),
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

    /// The cost of a `fusion`, `call` or `async-start`: the called computation's, its bytes
    /// those of the instruction's operands and result as the computation reads and writes them.
    fn called_cost(
        &mut self,
        i: &Instruction,
        shapes: &BTreeMap<&str, &Shape>,
        io: u64,
    ) -> Result<Cost, HloError> {
        let op = i.opcode.as_str();
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
            fused_bytes(i, comp, shapes, io)
        };
        let class = match inner.class() {
            ComputeClass::Reduction if normalises(comp) => ComputeClass::Norm,
            c => c,
        };
        Ok((class, inner.flops, bytes, inner.gemm))
    }

    /// The cost of a `conditional`: its costliest branch's (by flops, then bytes).
    fn conditional_cost(&mut self, i: &Instruction, io: u64) -> Result<Cost, HloError> {
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
            let comp = self
                .module
                .computation(b)
                .ok_or_else(|| self.error(i, format!("branch `%{b}` is not in the module")))?;
            let c = self.inner_cost(comp, 0)?;
            if (c.flops, c.bytes) > (best.flops, best.bytes) {
                best = c;
            }
        }
        Ok((
            ComputeClass::Other,
            best.flops,
            best.bytes.max(io),
            best.gemm,
        ))
    }

    /// The cost of a `custom-call`: a cuBLAS GEMM, an attention kernel, or else memory-bound
    /// (with a warning).
    fn custom_call_cost(
        &mut self,
        i: &Instruction,
        shapes: &BTreeMap<&str, &Shape>,
        operand_bytes: u64,
        io: u64,
    ) -> Result<Cost, HloError> {
        let target = i
            .attribute("custom_call_target")
            .map(|a| a.string())
            .transpose()?
            .unwrap_or_default();
        let t = target.to_ascii_lowercase();
        Ok(if let Some(dims) = cublas_dims(i, shapes)? {
            // A cuBLAS GEMM (`__cublas$gemm`, `__cublas$lt$matmul`, ...): result
            // element 0 is the product, element 1 the workspace (not counted).
            let out = match &i.shape {
                Shape::Tuple(v) => v.first().unwrap_or(&i.shape),
                s => s,
            };
            let lhs = i.operands.first().and_then(|o| shapes.get(o.as_str()));
            let rhs = i.operands.get(1).and_then(|o| shapes.get(o.as_str()));
            let (flops, g) = gemm_cost(lhs, rhs, out, &dims);
            let bytes = operand_bytes.saturating_add(out.bytes());
            (ComputeClass::Gemm, flops, bytes, Some(g))
        } else if t.contains("attn") || t.contains("attention") || t.contains("fmha") {
            attention_cost(i, shapes, &t, io)
        } else {
            self.warn(
                &format!("custom-call:{target}"),
                format!(
                    "custom-call target `{target}` (first at line {}) is costed as memory-bound: {} bytes",
                    i.pos.line, io
                ),
            );
            (ComputeClass::Other, 0, io, None)
        })
    }
}

/// The flops of a convolution: two per output element and kernel element, over the output
/// features.
fn conv_flops(i: &Instruction, shapes: &BTreeMap<&str, &Shape>) -> u64 {
    let rhs = i.operands.get(1).and_then(|o| shapes.get(o.as_str()));
    let out_features = conv_output_features(i).unwrap_or(1).max(1);
    let kernel = rhs.map_or(1, |s| s.elements());
    2u64.saturating_mul(i.shape.elements())
        .saturating_mul(kernel)
        / out_features
}

/// The bytes a fusion moves: its operands' and result's, less what it leaves unread of each
/// operand, an in-place update counted by the slices it touches.
fn fused_bytes(
    i: &Instruction,
    comp: &Computation,
    shapes: &BTreeMap<&str, &Shape>,
    io: u64,
) -> u64 {
    // What the fusion reads of each operand: all of it, unless it reaches the
    // output only through gathers and slices (see `read_fractions`).
    let read = read_fractions(comp);
    let unread: u64 = i
        .operands
        .iter()
        .enumerate()
        .filter_map(|(k, o)| {
            let f = read.get(k).copied().unwrap_or(1.0);
            let b = shapes.get(o.as_str())?.bytes();
            Some(b - (b as f64 * f).ceil().min(b as f64) as u64)
        })
        .sum();
    let io = io.saturating_sub(unread);
    match in_place_update(comp) {
        // An in-place update (XLA's dynamic-update-slice and scatter
        // fusions): the buffer is neither read nor rewritten whole, only the
        // slices the update touches (an update operand's read is in `io`).
        Some(touched) => io
            .saturating_sub(i.shape.bytes().saturating_mul(2))
            .saturating_add(touched),
        None => io,
    }
}

/// The cost of an attention custom-call, from its Q operand `[b, s, h, d]`; a backward pass
/// costs 2.5 times the forward's flops.
fn attention_cost(i: &Instruction, shapes: &BTreeMap<&str, &Shape>, t: &str, io: u64) -> Cost {
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
}

/// The bytes a three-operand scatter moves: its updates read, the slices they update read and
/// written, and its indices.
fn scatter_bytes(i: &Instruction, shapes: &BTreeMap<&str, &Shape>) -> u64 {
    let size = |k: usize| {
        i.operands
            .get(k)
            .and_then(|o| shapes.get(o.as_str()))
            .map_or(0, |s| s.bytes())
    };
    size(2).saturating_mul(3).saturating_add(size(1))
}

/// The bytes a gather moves: its result read and written, and its indices.
fn gather_bytes(i: &Instruction, shapes: &BTreeMap<&str, &Shape>) -> u64 {
    let indices = i
        .operands
        .get(1)
        .and_then(|o| shapes.get(o.as_str()))
        .map_or(0, |s| s.bytes());
    i.shape.bytes().saturating_mul(2).saturating_add(indices)
}

impl<'m> Lowerer<'m> {
    /// The element type a GEMM or attention instruction reads ([`Op::operand_dtype`]): its
    /// first operand's for a `dot`, a `convolution` or a custom-call; for a fusion (or a call),
    /// the first operand's of the first dot or convolution inside, depth first. `None` when
    /// there is none. O(instructions of the called computations).
    ///
    /// [`Op::operand_dtype`]: concerto_graph::Op::operand_dtype
    pub(super) fn operand_dtype(
        &self,
        i: &Instruction,
        shapes: &BTreeMap<&str, &Shape>,
        depth: usize,
    ) -> Option<DType> {
        match i.opcode.as_str() {
            "dot" | "convolution" | "custom-call" => i
                .operands
                .first()
                .and_then(|o| shapes.get(o.as_str()))
                .map(|s| dtype(s)),
            "fusion" | "call" if depth < 64 => {
                let attr = if i.opcode == "fusion" {
                    "calls"
                } else {
                    "to_apply"
                };
                let comp = self
                    .module
                    .computation(i.attribute(attr)?.computation().ok()?)?;
                let mut inner: BTreeMap<&str, &Shape> = BTreeMap::new();
                for x in &comp.instructions {
                    inner.insert(&x.name, &x.shape);
                    if matches!(x.opcode.as_str(), "dot" | "convolution" | "fusion" | "call") {
                        if let Some(t) = self.operand_dtype(x, &inner, depth + 1) {
                            return Some(t);
                        }
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// The cost of a called computation (see [`Inner`]).
    pub(super) fn inner_cost(
        &mut self,
        comp: &'m Computation,
        depth: usize,
    ) -> Result<Inner, HloError> {
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
                    total.matmul = true;
                    (f, 0, Some(g))
                }
                "fusion" | "call" => {
                    let attr = if op == "fusion" { "calls" } else { "to_apply" };
                    let c = self.called(i, attr)?;
                    let inner = self.inner_cost(c, depth + 1)?;
                    total.matmul |= inner.matmul;
                    total.attention |= inner.attention;
                    total.reduces |= inner.reduces;
                    (inner.flops, inner.bytes, inner.gemm)
                }
                _ => {
                    let (class, f, b, g) = self.cost(i, &shapes)?;
                    match class {
                        ComputeClass::Gemm => total.matmul = true,
                        ComputeClass::Attention => total.attention = true,
                        ComputeClass::Reduction => total.reduces = true,
                        _ => {}
                    }
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

/// The bytes an in-place update touches in its buffer when `comp`'s root updates its first
/// operand in place, as XLA runs it (a fusion's buffer is shared with the operand it
/// updates): a `dynamic-update-slice` writes its update's bytes; a `scatter` reads and writes
/// the slices its updates (operand 2) combine into, twice their bytes (as XLA's
/// `HloCostAnalysis::HandleScatter` counts them, `xla/service/hlo_cost_analysis.cc`: "the
/// equivalent of 3N update shapes (input, output, and updates), and the scatter indices").
/// `None` for any other root.
fn in_place_update(comp: &Computation) -> Option<u64> {
    let root = comp.instructions.get(comp.root)?;
    let (update, times) = match root.opcode.as_str() {
        "dynamic-update-slice" => (root.operands.get(1)?, 1),
        "scatter" if root.operands.len() == 3 => (root.operands.get(2)?, 2),
        _ => return None,
    };
    comp.instructions
        .iter()
        .find(|x| &x.name == update)
        .map(|x| x.shape.bytes().saturating_mul(times))
}

/// Per parameter of the fused computation `comp` (by parameter number), the fraction of its
/// elements the fusion reads, as XLA's `HloCostAnalysis` weighs a fusion parameter by its
/// operand utilization: a fused kernel computes each output element from the elements it
/// needs, so a value consumed only through a `gather`, `slice` or `dynamic-slice` is read
/// only where those take it (each takes `its elements / its operand's elements` of it), and
/// elementwise, `bitcast`, `reshape`, `copy`, `convert` and `transpose` pass the fraction of
/// their result on to their operands. Any other use (a reduction, a broadcast, a dot, a
/// concatenation) reads the whole operand. A value used several times takes its largest
/// fraction. One backward pass over the instructions, O(instructions · operands).
fn read_fractions(comp: &Computation) -> Vec<f64> {
    const PASS: &[&str] = &["bitcast", "reshape", "copy", "convert", "transpose"];
    let index: BTreeMap<&str, usize> = comp
        .instructions
        .iter()
        .enumerate()
        .map(|(k, x)| (x.name.as_str(), k))
        .collect();
    let mut frac = vec![0.0f64; comp.instructions.len()];
    if let Some(r) = frac.get_mut(comp.root) {
        *r = 1.0;
    }
    for (k, x) in comp.instructions.iter().enumerate().rev() {
        let f = frac[k];
        if f == 0.0 {
            continue;
        }
        let op = x.opcode.as_str();
        for (j, o) in x.operands.iter().enumerate() {
            let Some(&src) = index.get(o.as_str()) else {
                continue;
            };
            let taken = match op {
                "gather" | "slice" | "dynamic-slice" if j == 0 => {
                    let whole = comp.instructions[src].shape.elements().max(1);
                    f * x.shape.elements() as f64 / whole as f64
                }
                "tuple" => f,
                _ if ELEMENTWISE.contains(&op) || PASS.contains(&op) => f,
                _ => 1.0,
            };
            frac[src] = frac[src].max(taken.min(1.0));
        }
    }
    let mut out = Vec::new();
    for (k, x) in comp.instructions.iter().enumerate() {
        if x.opcode != "parameter" {
            continue;
        }
        let Some(n) = x
            .literal
            .as_deref()
            .and_then(|s| s.trim().parse::<usize>().ok())
        else {
            continue;
        };
        if out.len() <= n {
            out.resize(n + 1, 1.0);
        }
        out[n] = frac[k];
    }
    out
}

/// Whether the fused computation `comp` is a row normalisation (softmax, layer norm and their
/// gradients): a `reduce`'s result, possibly converted or combined elementwise with other
/// reduced values, is broadcast back over the rows it reduced. A fusion that only returns its
/// reductions (XLA's input fusions of bias gradients and statistics) is not one. One pass over
/// the instructions (they are in def-use order), O(instructions · operands).
fn normalises(comp: &Computation) -> bool {
    let mut reduced: BTreeSet<&str> = BTreeSet::new();
    for x in &comp.instructions {
        let from_reduced =
            !x.operands.is_empty() && x.operands.iter().any(|o| reduced.contains(o.as_str()));
        match x.opcode.as_str() {
            "reduce" => {
                reduced.insert(&x.name);
            }
            "broadcast" if from_reduced => return true,
            op if from_reduced && (ELEMENTWISE.contains(&op) || FREE.contains(&op)) => {
                reduced.insert(&x.name);
            }
            _ => {}
        }
    }
    false
}

/// The dimension numbers of a dot: contracting and batch dimensions of each side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct DotDims {
    lhs_contracting: Vec<usize>,
    lhs_batch: Vec<usize>,
    rhs_contracting: Vec<usize>,
    rhs_batch: Vec<usize>,
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
    let dims = DotDims {
        lhs_contracting: dims_of("lhs_contracting_dims")?,
        lhs_batch: dims_of("lhs_batch_dims")?,
        rhs_contracting: dims_of("rhs_contracting_dims")?,
        rhs_batch: dims_of("rhs_batch_dims")?,
    };
    Ok(gemm_cost(lhs, rhs, &i.shape, &dims))
}

/// The custom-call targets of XLA's cuBLAS GEMMs (`__cublas$gemm`, `__cublas$lt$matmul`,
/// `__cublas$lt$matmul$f8`).
pub(super) fn is_cublas_gemm(target: &str) -> bool {
    target.starts_with("__cublas$gemm") || target.starts_with("__cublas$lt$matmul")
}

/// The dot dimension numbers of a cuBLAS GEMM custom-call, from its `backend_config`
/// (`{"gemm_backend_config": {"dot_dimension_numbers": {"lhs_contracting_dimensions":
/// ["1"], ...}}}`, numbers as strings or integers); `None` when `i` is no cuBLAS GEMM.
/// Without a `backend_config` (hand-written modules), those of a plain batched product when
/// the shapes are one (`shapes` holds the operands'). A GEMM whose config cannot be read is
/// an error naming the instruction: costing it as a memory-bound op would hide the step's
/// largest kernels.
fn cublas_dims(
    i: &Instruction,
    shapes: &BTreeMap<&str, &Shape>,
) -> Result<Option<DotDims>, HloError> {
    let target = match i.attribute("custom_call_target") {
        Some(a) => a.string()?,
        None => return Ok(None),
    };
    if !is_cublas_gemm(&target) {
        return Ok(None);
    }
    let bad = |why: &str| HloError::Lowering {
        line: i.pos.line,
        instruction: i.name.clone(),
        message: format!("cuBLAS GEMM `{target}`: {why}"),
    };
    // Hand-written modules (XLA's tests) leave the numbers out; XLA's GEMM rewriter always
    // writes them. Then those of a plain product, when the shapes are one.
    let plain = |why: &str| {
        plain_product_dims(i, shapes).map(Some).ok_or_else(|| {
            bad(&format!(
                "{why}, and the shapes are no plain product `[..., m, k] x [..., k, n] -> \
                 [..., m, n]`"
            ))
        })
    };
    let Some(config) = i.attribute("backend_config") else {
        return plain("no backend_config, so no dot dimension numbers");
    };
    let text = config.string()?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| bad(&format!("backend_config is not JSON: {e}")))?;
    let Some(numbers) = json
        .get("gemm_backend_config")
        .and_then(|g| g.get("dot_dimension_numbers"))
    else {
        return plain("backend_config has no gemm_backend_config.dot_dimension_numbers");
    };
    let list = |key: &str| -> Result<Vec<usize>, HloError> {
        match numbers.get(key) {
            None => Ok(Vec::new()),
            Some(serde_json::Value::Array(v)) => v
                .iter()
                .map(|d| match d {
                    serde_json::Value::String(s) => s.parse::<usize>().ok(),
                    serde_json::Value::Number(n) => n.as_u64().map(|n| n as usize),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(&format!("`{key}` holds a non-number"))),
            Some(_) => Err(bad(&format!("`{key}` is not a list"))),
        }
    };
    Ok(Some(DotDims {
        lhs_contracting: list("lhs_contracting_dimensions")?,
        lhs_batch: list("lhs_batch_dimensions")?,
        rhs_contracting: list("rhs_contracting_dimensions")?,
        rhs_batch: list("rhs_batch_dimensions")?,
    }))
}

/// The dimension numbers of a batched matrix product `[..., m, k] x [..., k, n] ->
/// [..., m, n]` (leading dimensions the batch, lhs's last and rhs's second-to-last
/// contracted), when the shapes of GEMM `i`'s two operands and of its result (or the result
/// tuple's first element: the workspace follows) are those of one; else `None`.
fn plain_product_dims(i: &Instruction, shapes: &BTreeMap<&str, &Shape>) -> Option<DotDims> {
    let [l, r] = [0, 1].map(|k| i.operands.get(k).and_then(|o| shapes.get(o.as_str())));
    let (ld, rd) = (l?.dims(), r?.dims());
    let out = match &i.shape {
        Shape::Tuple(v) => v.first()?.dims(),
        s => s.dims(),
    };
    let rank = ld.len();
    if rank < 2 || rd.len() != rank || out.len() != rank {
        return None;
    }
    let batch = rank - 2;
    let matches = ld[..batch] == rd[..batch]
        && out[..batch] == ld[..batch]
        && ld[rank - 1] == rd[rank - 2]
        && out[rank - 2] == ld[rank - 2]
        && out[rank - 1] == rd[rank - 1];
    matches.then(|| DotDims {
        lhs_contracting: vec![rank - 1],
        lhs_batch: (0..batch).collect(),
        rhs_contracting: vec![rank - 2],
        rhs_batch: (0..batch).collect(),
    })
}

/// Flops (`2 * result elements * contracted size`) and (b, m, n, k) of a product of `lhs`
/// and `rhs` into `out` with dimension numbers `dims`.
fn gemm_cost(
    lhs: Option<&&Shape>,
    rhs: Option<&&Shape>,
    out: &Shape,
    dims: &DotDims,
) -> (u64, GemmShape) {
    let (lc, lb, rc, rb) = (
        &dims.lhs_contracting[..],
        &dims.lhs_batch[..],
        &dims.rhs_contracting[..],
        &dims.rhs_batch[..],
    );
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
    let k = prod(ld, lc);
    let b = prod(ld, lb);
    let m = rest(ld, lc, lb);
    let n = rest(rd, rc, rb);
    let flops = 2u64.saturating_mul(out.elements().max(1)).saturating_mul(k);
    (flops, GemmShape { b, m, n, k })
}

/// The output feature count of a convolution: the size of the result dimension labelled `f`
/// in `dim_labels` (`b01f_01io->b01f`).
fn conv_output_features(i: &Instruction) -> Option<u64> {
    let labels = &i.attribute("dim_labels")?.value;
    let out = labels.split("->").nth(1)?;
    let f = out.trim().find('f')?;
    i.shape.dims().get(f).copied()
}
