//! Result shapes the text leaves out: `ROOT t = tuple(a, b)`, `g = get-tuple-element(t),
//! index=0`, `c = copy(x)`. XLA's parser infers them with its shape inference for the opcodes
//! that `CanInferShape` lists (`xla/hlo/parser/hlo_parser.cc`); this module does the same for
//! those opcodes, from the operands' shapes, the attributes and the roots of the computations
//! called (defined earlier in the text, as XLA requires). Layouts of new arrays are left
//! unset (XLA gives them its default layout); a shape taken whole from an operand or a
//! called computation keeps its layout.

use std::collections::BTreeMap;

use super::MAX_DEPTH;
use crate::hlo::ast::{Attribute, Computation, Instruction, Shape};
use crate::hlo::HloError;

mod layout;
mod reductions;

/// Whether XLA's parser infers the result shape of `opcode` when the text leaves it out
/// (`CanInferShape` in `xla/hlo/parser/hlo_parser.cc`).
pub(super) fn can_infer(opcode: &str) -> bool {
    matches!(
        opcode,
        "abs"
            | "acos"
            | "acosh"
            | "asin"
            | "asinh"
            | "add"
            | "add-dependency"
            | "after-all"
            | "atan2"
            | "atanh"
            | "batch-norm-grad"
            | "batch-norm-inference"
            | "batch-norm-training"
            | "broadcast"
            | "call"
            | "ceil"
            | "cholesky"
            | "clamp"
            | "count-leading-zeros"
            | "compare"
            | "complex"
            | "concatenate"
            | "conditional"
            | "convolution"
            | "copy"
            | "cosine"
            | "cosh"
            | "opt-barrier"
            | "divide"
            | "domain"
            | "dot"
            | "erf"
            | "exponential"
            | "exponential-minus-one"
            | "fft"
            | "floor"
            | "gather"
            | "get-dimension-size"
            | "set-dimension-size"
            | "get-tuple-element"
            | "imag"
            | "is-finite"
            | "log"
            | "log-plus-one"
            | "logistic"
            | "and"
            | "not"
            | "or"
            | "xor"
            | "map"
            | "maximum"
            | "minimum"
            | "multiply"
            | "mulhi"
            | "negate"
            | "pad"
            | "partition-id"
            | "popcnt"
            | "power"
            | "ragged-dot"
            | "real"
            | "reduce"
            | "remainder"
            | "replica-id"
            | "reverse"
            | "round-nearest-afz"
            | "round-nearest-even"
            | "rsqrt"
            | "scan"
            | "scaled-dot"
            | "scatter"
            | "select"
            | "shift-left"
            | "shift-right-arithmetic"
            | "shift-right-logical"
            | "sign"
            | "sine"
            | "sinh"
            | "sqrt"
            | "cbrt"
            | "reduce-window"
            | "select-and-scatter"
            | "sort"
            | "subtract"
            | "tan"
            | "tanh"
            | "transpose"
            | "triangular-solve"
            | "tuple"
            | "while"
            | "topk"
    )
}

/// Results of inferring one shape: the message says why it could not be inferred.
type IResult<T> = Result<T, String>;

/// Fills in the shapes of `instructions[k]` for every `k` with `pending[k]`, in text order,
/// from the shapes of their operands (instructions of the same computation written before
/// them) and the computations defined before (`earlier`).
pub(super) fn infer_shapes(
    instructions: &mut [Instruction],
    pending: &[bool],
    earlier: &Earlier<'_>,
    budget: &mut usize,
) -> Result<(), HloError> {
    if !pending.iter().any(|&p| p) {
        return Ok(());
    }
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for k in 0..instructions.len() {
        if pending.get(k).copied().unwrap_or(false) {
            let i = &instructions[k];
            let mut shapes = Vec::with_capacity(i.operands.len());
            for o in &i.operands {
                match index.get(o.as_str()) {
                    Some(&j) => shapes.push(&instructions[j].shape),
                    None => {
                        return Err(error(
                            i,
                            &format!("operand `%{o}` is not defined before it"),
                        ))
                    }
                }
            }
            // Only a tuple of the operands (`tuple`, a variadic `sort`) can hold more nodes
            // than its largest operand: those are counted before they are built.
            let mut within = 1usize;
            if matches!(i.opcode.as_str(), "tuple" | "sort") {
                for s in &shapes {
                    within = within.saturating_add(nodes_within(s, *budget));
                }
            }
            if within > *budget {
                return Err(error(
                    i,
                    "the inferred shapes of the module hold too many elements (tuples of \
                     tuples growing with each instruction)",
                ));
            }
            let shape = infer(i, &shapes, earlier).map_err(|why| error(i, &why))?;
            *budget -= nodes_within(&shape, *budget).min(*budget);
            if depth(&shape) > MAX_DEPTH {
                return Err(error(i, "the inferred shape nests tuples too deeply"));
            }
            let i = &mut instructions[k];
            i.shape_text = text(&shape);
            i.shape = shape;
        }
        index.insert(instructions[k].name.clone(), k);
    }
    Ok(())
}

/// The error for an instruction whose shape cannot be inferred.
fn error(i: &Instruction, why: &str) -> HloError {
    HloError::Syntax {
        line: i.pos.line,
        column: i.pos.column,
        message: format!(
            "cannot infer the result shape of `%{}` ({}): {why}; write the shape after `=`",
            i.name, i.opcode
        ),
    }
}

/// The computations before the one being parsed, and their indices by name.
pub(super) struct Earlier<'c> {
    /// The computations, in text order.
    pub(super) computations: &'c [Computation],
    /// Index in `computations` by name.
    pub(super) by_name: &'c BTreeMap<String, usize>,
}

/// The number of nodes (arrays, tokens, tuples) of `shape`, or more than `limit` when it
/// has more (counting stops there). Time O(min(nodes, limit)).
fn nodes_within(shape: &Shape, limit: usize) -> usize {
    fn walk(s: &Shape, left: &mut usize) -> bool {
        if *left == 0 {
            return false;
        }
        *left -= 1;
        match s {
            Shape::Tuple(v) => v.iter().all(|e| walk(e, left)),
            _ => true,
        }
    }
    let mut left = limit.saturating_add(1);
    walk(shape, &mut left);
    limit.saturating_add(1) - left
}

/// How deeply tuples nest in `shape`.
fn depth(shape: &Shape) -> usize {
    match shape {
        Shape::Tuple(v) => 1 + v.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// `shape` as HLO text: `f32[2,3]{1,0}`, `(s32[], token[])`.
pub(super) fn text(shape: &Shape) -> String {
    match shape {
        Shape::Array {
            dtype,
            dims,
            layout,
        } => {
            let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
            match layout {
                Some(l) => format!("{dtype}[{}]{{{}}}", join(dims), join(l)),
                None => format!("{dtype}[{}]", join(dims)),
            }
        }
        Shape::Tuple(v) => format!("({})", v.iter().map(text).collect::<Vec<_>>().join(", ")),
        Shape::Token => "token[]".to_string(),
    }
}

/// An array without a layout.
fn array(dtype: &str, dims: Vec<u64>) -> Shape {
    Shape::Array {
        dtype: dtype.to_string(),
        dims,
        layout: None,
    }
}

/// The element type and dimensions of an array operand.
fn arr<'s>(s: &'s Shape, what: &str) -> IResult<(&'s str, &'s [u64])> {
    match s {
        Shape::Array { dtype, dims, .. } => Ok((dtype, dims)),
        _ => Err(format!("{what} is not an array")),
    }
}

/// Exactly `n` operands.
fn count(ops: &[&Shape], n: usize) -> IResult<()> {
    if ops.len() == n {
        Ok(())
    } else {
        Err(format!("expected {n} operand(s), found {}", ops.len()))
    }
}

/// Attribute `name` of `i`.
fn attr<'i>(i: &'i Instruction, name: &str) -> IResult<&'i Attribute> {
    i.attribute(name)
        .ok_or_else(|| format!("attribute `{name}` is missing"))
}

/// Attribute `name` of `i` as a list of non-negative integers (empty when absent).
fn dims_attr(i: &Instruction, name: &str) -> IResult<Vec<usize>> {
    let Some(a) = i.attribute(name) else {
        return Ok(Vec::new());
    };
    a.dims()
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|d| usize::try_from(d).map_err(|_| format!("`{name}` holds a negative number")))
        .collect()
}

/// The root shape of the computation called through attribute `name`.
fn called<'c>(i: &Instruction, name: &str, earlier: &Earlier<'c>) -> IResult<&'c Shape> {
    let a = attr(i, name)?;
    let c = a.computation().map_err(|e| e.to_string())?;
    root_of(c, earlier)
}

/// The root shape of computation `name`, which must be defined before.
fn root_of<'c>(name: &str, earlier: &Earlier<'c>) -> IResult<&'c Shape> {
    earlier
        .by_name
        .get(name)
        .and_then(|&k| earlier.computations.get(k))
        .and_then(|c| c.instructions.get(c.root))
        .map(|r| &r.shape)
        .ok_or_else(|| format!("computation `%{name}` is not defined before it"))
}

/// The real element type of a complex one (`c64` -> `f32`), others unchanged.
fn real_type(dtype: &str) -> &str {
    match dtype {
        "c64" => "f32",
        "c128" => "f64",
        t => t,
    }
}

/// `shape` with element type `dtype` (its layout kept).
fn retyped(shape: &Shape, dtype: &str) -> Shape {
    match shape {
        Shape::Array { dims, layout, .. } => Shape::Array {
            dtype: dtype.to_string(),
            dims: dims.clone(),
            layout: layout.clone(),
        },
        other => other.clone(),
    }
}

/// One dimension of a windowed op: `(size + pad_lo + pad_hi, base- and window-dilated)`
/// strided by `stride`, as XLA's `InferWindowOutputShape` computes it.
fn window_dim(input: u64, w: &WindowDim) -> IResult<u64> {
    let dilated = |n: u64, d: u64| if n == 0 { 0 } else { (n - 1) * d + 1 };
    let base = i128::from(dilated(input, w.base_dilation)) + i128::from(w.pad_lo + w.pad_hi);
    let window = i128::from(dilated(w.size, w.window_dilation));
    if w.stride == 0 {
        return Err("a window stride is 0".into());
    }
    let out = if base < window {
        0
    } else {
        (base - window) / i128::from(w.stride) + 1
    };
    u64::try_from(out).map_err(|_| "a window dimension is out of range".to_string())
}

/// One dimension of a `window={size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=..}`.
#[derive(Clone, Debug)]
struct WindowDim {
    size: u64,
    stride: u64,
    pad_lo: i64,
    pad_hi: i64,
    base_dilation: u64,
    window_dilation: u64,
}

/// The dimensions of a `window` attribute; `rank` of them (the sizes default to `sizes`
/// when the attribute is absent or gives none).
fn window(i: &Instruction, rank: usize, sizes: &[u64]) -> IResult<Vec<WindowDim>> {
    let mut dims: Vec<WindowDim> = (0..rank)
        .map(|k| WindowDim {
            size: sizes.get(k).copied().unwrap_or(1),
            stride: 1,
            pad_lo: 0,
            pad_hi: 0,
            base_dilation: 1,
            window_dilation: 1,
        })
        .collect();
    let Some(a) = i.attribute("window") else {
        return Ok(dims);
    };
    let v = a.value.trim();
    let inner = v
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .ok_or_else(|| format!("`window` is not `{{...}}`: `{v}`"))?;
    let num = |s: &str| -> IResult<i64> {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("`{s}` in `window` is not an integer"))
    };
    let unsigned = |s: &str| -> IResult<u64> {
        u64::try_from(num(s)?).map_err(|_| format!("`{s}` in `window` is negative"))
    };
    for field in inner.split_whitespace() {
        let Some((key, value)) = field.split_once('=') else {
            continue; // `window_reversal`-like flags
        };
        let parts: Vec<&str> = value.split('x').collect();
        if parts.len() != rank {
            return Err(format!(
                "`window` field `{key}` has {} dimensions, expected {rank}",
                parts.len()
            ));
        }
        for (d, p) in dims.iter_mut().zip(&parts) {
            match key {
                "size" => d.size = unsigned(p)?,
                "stride" => d.stride = unsigned(p)?,
                "lhs_dilate" => d.base_dilation = unsigned(p)?,
                "rhs_dilate" => d.window_dilation = unsigned(p)?,
                "pad" => {
                    // `lo_hi`, each possibly negative (`-1_2`).
                    let (lo, hi) = split_pair(p).ok_or_else(|| format!("bad pad `{p}`"))?;
                    d.pad_lo = num(lo)?;
                    d.pad_hi = num(hi)?;
                }
                _ => {}
            }
        }
    }
    Ok(dims)
}

/// `lo_hi` (either may start with `-`) split at the `_` between them.
fn split_pair(p: &str) -> Option<(&str, &str)> {
    let skip = usize::from(p.starts_with('-'));
    let cut = p.get(skip..)?.find('_')? + skip;
    Some((p.get(..cut)?, p.get(cut + 1..)?))
}

/// The result shape of `i`, whose operands have shapes `ops`.
fn infer(i: &Instruction, ops: &[&Shape], earlier: &Earlier<'_>) -> IResult<Shape> {
    let op = i.opcode.as_str();
    match op {
        "tuple" => Ok(Shape::Tuple(ops.iter().map(|s| (*s).clone()).collect())),
        "get-tuple-element" => tuple_element(i, ops),
        "after-all" => Ok(Shape::Token),
        "add-dependency" | "while" | "opt-barrier" | "set-dimension-size" => first_operand(ops),
        "partition-id" | "replica-id" => Ok(array("u32", Vec::new())),
        "get-dimension-size" => Ok(array("s32", Vec::new())),
        "abs" | "real" | "imag" => {
            count(ops, 1)?;
            let (t, _) = arr(ops[0], "the operand")?;
            Ok(retyped(ops[0], real_type(t)))
        }
        "is-finite" => {
            count(ops, 1)?;
            arr(ops[0], "the operand")?;
            Ok(retyped(ops[0], "pred"))
        }
        "select" | "clamp" => {
            count(ops, 3)?;
            Ok(ops[1].clone())
        }
        "triangular-solve" => {
            count(ops, 2)?;
            Ok(ops[1].clone())
        }
        "call" => called(i, "to_apply", earlier).cloned(),
        "conditional" => conditional(i, earlier),
        "map" => map(i, ops, earlier),
        "sort" => match ops {
            [] => Err("no operand".into()),
            [one] => Ok((*one).clone()),
            many => Ok(Shape::Tuple(many.iter().map(|s| (*s).clone()).collect())),
        },
        "topk" => topk(i, ops),
        "transpose" => layout::transpose(i, ops),
        "broadcast" => layout::broadcast(i, ops),
        "concatenate" => layout::concatenate(i, ops),
        "pad" => layout::pad(i, ops),
        "dot" => reductions::dot(i, ops),
        "reduce" => reductions::reduce(i, ops),
        "reduce-window" => reductions::reduce_window(i, ops),
        "select-and-scatter" => first_operand(ops),
        "convolution" => convolution(i, ops),
        _ => elementwise(op, ops)
            .unwrap_or_else(|| Err("concerto does not infer this opcode's shape".into())),
    }
}

/// The shape of the first operand (ops that pass it through).
fn first_operand(ops: &[&Shape]) -> IResult<Shape> {
    ops.first()
        .map(|s| (*s).clone())
        .ok_or_else(|| "no operand".to_string())
}

/// The shape of `get-tuple-element`: the `index`-th element of the operand tuple.
fn tuple_element(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    count(ops, 1)?;
    let k = attr(i, "index")?.integer().map_err(|e| e.to_string())?;
    match ops[0] {
        Shape::Tuple(v) => usize::try_from(k)
            .ok()
            .and_then(|k| v.get(k))
            .cloned()
            .ok_or_else(|| format!("index {k} is out of the operand's {} elements", v.len())),
        _ => Err("the operand is not a tuple".into()),
    }
}

/// The shape of `conditional`: its first branch's root.
fn conditional(i: &Instruction, earlier: &Earlier<'_>) -> IResult<Shape> {
    let first = match i.attribute("branch_computations") {
        Some(a) => a
            .computations()
            .map_err(|e| e.to_string())?
            .first()
            .map(|s| s.to_string())
            .ok_or_else(|| "`branch_computations` is empty".to_string())?,
        None => attr(i, "true_computation")?
            .computation()
            .map_err(|e| e.to_string())?
            .to_string(),
    };
    root_of(&first, earlier).cloned()
}

/// The shape of `map`: the operand's dimensions, the mapped computation's element type.
fn map(i: &Instruction, ops: &[&Shape], earlier: &Earlier<'_>) -> IResult<Shape> {
    let root = called(i, "to_apply", earlier)?;
    let (t, _) = arr(root, "the mapped computation's root")?;
    let first = ops.first().ok_or("no operand")?;
    let (_, dims) = arr(first, "the operand")?;
    Ok(array(t, dims.to_vec()))
}

/// The shape of `topk`: the values and their `s32` indices, the last dimension cut to `k`.
fn topk(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    count(ops, 1)?;
    let (t, dims) = arr(ops[0], "the operand")?;
    let k = attr(i, "k")?.integer().map_err(|e| e.to_string())?;
    let k = u64::try_from(k).map_err(|_| "`k` is negative".to_string())?;
    let mut d = dims.to_vec();
    let last = d.last_mut().ok_or("the operand is a scalar")?;
    *last = k;
    Ok(Shape::Tuple(vec![array(t, d.clone()), array("s32", d)]))
}

/// The shape of an elementwise op (unary ones keep the operand's shape, binary ones broadcast),
/// or `None` for any other opcode.
fn elementwise(op: &str, ops: &[&Shape]) -> Option<IResult<Shape>> {
    Some(match op {
        "acos"
        | "acosh"
        | "asin"
        | "asinh"
        | "atanh"
        | "cbrt"
        | "ceil"
        | "cholesky"
        | "copy"
        | "cosh"
        | "cosine"
        | "count-leading-zeros"
        | "domain"
        | "erf"
        | "exponential"
        | "exponential-minus-one"
        | "floor"
        | "log"
        | "log-plus-one"
        | "logistic"
        | "negate"
        | "not"
        | "popcnt"
        | "reverse"
        | "round-nearest-afz"
        | "round-nearest-even"
        | "rsqrt"
        | "sign"
        | "sine"
        | "sinh"
        | "sqrt"
        | "tan"
        | "tanh" => count(ops, 1).map(|()| ops[0].clone()),
        "add"
        | "subtract"
        | "multiply"
        | "divide"
        | "remainder"
        | "maximum"
        | "minimum"
        | "power"
        | "atan2"
        | "and"
        | "or"
        | "xor"
        | "shift-left"
        | "shift-right-arithmetic"
        | "shift-right-logical"
        | "mulhi"
        | "complex"
        | "compare" => binary(op, ops),
        _ => return None,
    })
}

/// The shape of a binary elementwise op: the larger operand's dimensions, per dimension the
/// larger size when ranks agree; `pred` for `compare`, complex for `complex`.
fn binary(op: &str, ops: &[&Shape]) -> IResult<Shape> {
    count(ops, 2)?;
    let (t, a) = arr(ops[0], "the first operand")?;
    let (_, b) = arr(ops[1], "the second operand")?;
    let dims = if a.len() == b.len() {
        a.iter().zip(b).map(|(x, y)| *x.max(y)).collect()
    } else if a.len() > b.len() {
        a.to_vec()
    } else {
        b.to_vec()
    };
    let dtype = match op {
        "compare" => "pred",
        "complex" if t == "f64" => "c128",
        "complex" => "c64",
        _ => t,
    };
    Ok(array(dtype, dims))
}

/// The result shape of a convolution, from `dim_labels` (`b01f_01io->b01f`), `window`,
/// `feature_group_count` and `batch_group_count` (XLA's `InferConvolveShape`).
fn convolution(i: &Instruction, ops: &[&Shape]) -> IResult<Shape> {
    count(ops, 2)?;
    let (t, lhs) = arr(ops[0], "the input")?;
    let (_, rhs) = arr(ops[1], "the kernel")?;
    let labels = attr(i, "dim_labels")?.value.trim().to_string();
    let (ins, out) = labels
        .split_once("->")
        .ok_or_else(|| format!("bad `dim_labels` `{labels}`"))?;
    let (lhs_l, rhs_l) = ins
        .split_once('_')
        .ok_or_else(|| format!("bad `dim_labels` `{labels}`"))?;
    let (lhs_l, rhs_l, out_l) = (lhs_l.as_bytes(), rhs_l.as_bytes(), out.as_bytes());
    if lhs_l.len() != lhs.len() || rhs_l.len() != rhs.len() || out_l.len() != lhs.len() {
        return Err(format!(
            "`dim_labels` `{labels}` do not match the operands' ranks"
        ));
    }
    let find = |labels: &[u8], c: u8| labels.iter().position(|&l| l == c);
    let spatial = lhs.len().saturating_sub(2);
    let digit = |k: usize| {
        u8::try_from(k)
            .ok()
            .and_then(|k| b"0123456789".get(usize::from(k)).copied())
    };
    let mut kernel_sizes = Vec::with_capacity(spatial);
    for k in 0..spatial {
        let c = digit(k).ok_or("too many spatial dimensions")?;
        let p = find(rhs_l, c).ok_or("`dim_labels` lack a kernel spatial dimension")?;
        kernel_sizes.push(rhs[p]);
    }
    let w = window(i, spatial, &kernel_sizes)?;
    let batch_groups = match i.attribute("batch_group_count") {
        Some(a) => u64::try_from(a.integer().map_err(|e| e.to_string())?)
            .unwrap_or(1)
            .max(1),
        None => 1,
    };
    let mut dims = vec![0u64; out_l.len()];
    for (p, &c) in out_l.iter().enumerate() {
        dims[p] = match c {
            b'b' => {
                lhs[find(lhs_l, b'b').ok_or("`dim_labels` lack the input batch")?] / batch_groups
            }
            b'f' => rhs[find(rhs_l, b'o').ok_or("`dim_labels` lack the kernel output feature")?],
            c if c.is_ascii_digit() => {
                let k = usize::from(c - b'0');
                let input =
                    lhs[find(lhs_l, c).ok_or("`dim_labels` lack an input spatial dimension")?];
                window_dim(
                    input,
                    w.get(k).ok_or("a spatial dimension is out of the window")?,
                )?
            }
            _ => return Err(format!("bad `dim_labels` `{labels}`")),
        };
    }
    Ok(array(t, dims))
}
