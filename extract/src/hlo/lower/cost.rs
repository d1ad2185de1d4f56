//! Costing compute instructions: dots and convolutions from their shapes, fusions and calls
//! from their called computations, elementwise and data-movement opcodes from their bytes.

use std::collections::BTreeMap;

use concerto_graph::{ComputeClass, GemmShape};

use super::{Inner, Lowerer, FREE};
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
