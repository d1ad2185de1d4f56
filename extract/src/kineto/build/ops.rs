//! The op of one GPU activity: a compute op (a GEMM with its recorded shape) or a collective,
//! and the kernel's signature.

use std::collections::BTreeMap;

use concerto_graph::{ComputeClass, DType, GemmShape, Op};

use super::super::classify::{compute_class, dtype_of};
use super::super::events::{Call, GpuCategory, GpuOp, Ns, Span, Thread};

/// A kernel's signature: its name, grid and block.
pub(super) fn signature_of(g: &GpuOp) -> String {
    format!(
        "{}|{}|{}",
        g.name,
        g.args.grid.as_deref().unwrap_or(""),
        g.args.block.as_deref().unwrap_or("")
    )
}

/// Ranks of a collective: the kernel's `Group size` when recorded, else the world size.
pub(super) fn group_of(g: &GpuOp, world: u32) -> u32 {
    g.args
        .nccl
        .as_ref()
        .and_then(|a| a.group_size)
        .and_then(|x| u32::try_from(x).ok())
        .filter(|&x| x >= 2)
        .unwrap_or(world)
}

/// A compute op for a kernel, memcpy or memset; a GEMM kernel under one recorded matrix
/// multiply gets its shape.
pub(super) fn compute_op(
    name: String,
    g: &GpuOp,
    shapes: &ShapeIndex<'_>,
    call: Option<&Call>,
) -> Op {
    let bytes = g.args.bytes.unwrap_or(0);
    let class = match g.category {
        GpuCategory::Kernel => compute_class(&g.name),
        GpuCategory::Memcpy | GpuCategory::Memset => ComputeClass::Other,
    };
    // A device-to-device copy reads and writes its bytes in device memory.
    let bytes = if g.category == GpuCategory::Memcpy && g.name.contains("DtoD") {
        bytes.saturating_mul(2)
    } else {
        bytes
    };
    if let (ComputeClass::Gemm, Some(call)) = (class, call) {
        if let Some(span) = shapes.around(call.thread, call.ts) {
            if let Some((shape, dtype)) = gemm_shape(span) {
                let mut op = Op::gemm(name, shape, dtype);
                // The kernel's result is no tensor of the graph, but its element type still
                // picks the tensor-core rate.
                op.outputs.clear();
                op.operand_dtype = Some(dtype);
                return op;
            }
        }
    }
    Op::compute(name, class, 0, bytes)
}

/// The GEMM of a recorded `aten::mm`, `addmm`, `bmm`, `baddbmm` or `linear`.
pub(super) fn gemm_shape(span: &Span) -> Option<(GemmShape, DType)> {
    let shapes = span.shapes.as_ref()?;
    let d = &shapes.dims;
    let dtype = shapes.types.first().map_or(DType::F32, |t| dtype_of(t));
    let op = &*span.name;
    let (b, m, k, n) = match op {
        "aten::mm" => (
            1,
            *d.first()?.first()?,
            *d.first()?.get(1)?,
            *d.get(1)?.get(1)?,
        ),
        "aten::addmm" => (
            1,
            *d.get(1)?.first()?,
            *d.get(1)?.get(1)?,
            *d.get(2)?.get(1)?,
        ),
        "aten::bmm" => {
            let (x, y) = (d.first()?, d.get(1)?);
            (*x.first()?, *x.get(1)?, *x.get(2)?, *y.get(2)?)
        }
        "aten::baddbmm" => {
            let (x, y) = (d.get(1)?, d.get(2)?);
            (*x.first()?, *x.get(1)?, *x.get(2)?, *y.get(2)?)
        }
        "aten::linear" => {
            let x = d.first()?;
            let w = d.get(1)?;
            let (&k, lead) = x.split_last()?;
            let m = lead.iter().try_fold(1u64, |a, &x| a.checked_mul(x))?;
            (1, m, k, *w.first()?)
        }
        _ => return None,
    };
    // `Op::gemm` counts the operands' bytes, `b * (m*k + k*n + m*n) * size`, in u64: a
    // recorded shape whose count overflows is no shape.
    let elements = [m.checked_mul(k)?, k.checked_mul(n)?, m.checked_mul(n)?]
        .into_iter()
        .try_fold(0u64, u64::checked_add)?;
    b.checked_mul(elements)?.checked_mul(dtype.size())?;
    let shape = GemmShape { b, m, n, k };
    (shape.flops() > 0).then_some((shape, dtype))
}

/// Recorded CPU spans by thread, for "which recorded op launched this".
pub(super) struct ShapeIndex<'t> {
    by_thread: BTreeMap<Thread, Vec<&'t Span>>,
}

impl<'t> ShapeIndex<'t> {
    pub(super) fn new(spans: &'t [Span]) -> Self {
        let mut by_thread: BTreeMap<Thread, Vec<&Span>> = BTreeMap::new();
        for s in spans {
            by_thread.entry(s.thread).or_default().push(s);
        }
        for v in by_thread.values_mut() {
            v.sort_by_key(|s| (s.ts, std::cmp::Reverse(s.dur)));
        }
        ShapeIndex { by_thread }
    }

    /// The innermost recorded span of `thread` around time `t`.
    pub(super) fn around(&self, thread: Thread, t: Ns) -> Option<&'t Span> {
        let v = self.by_thread.get(&thread)?;
        let upto = v.partition_point(|s| s.ts <= t);
        // Spans nest: the latest-starting span that still contains `t` is the innermost.
        v[..upto]
            .iter()
            .rev()
            .take(64)
            .find(|s| t < s.ts + s.dur)
            .copied()
    }
}
