//! SPMD split rules: along which [`Axis`] an op can be cut into independent chunks, and the
//! chunk ops themselves.
//!
//! Rows are tokens: GEMM `m`, and every dimension of an activation but the trailing
//! (feature) one; batch is the leading dimension; cols the trailing one.
//!
//! | op | axes |
//! |---|---|
//! | GEMM `(b, m, n, k)` | batch, rows (`m`), cols (`n`); contract (`k`, partial sums) |
//! | attention (`b` = batch x heads, `m` = queries) | batch, rows (queries; keys and values stay whole) |
//! | elementwise | every axis |
//! | norm, reduction | batch, rows (the normalised / reduced trailing axis stays whole) |
//! | other compute | none |
//! | all-reduce | every axis (contract: partial sums reduced chunk by chunk) |
//! | all-gather | batch, cols (not the gathered leading axis) |
//! | reduce-scatter | batch, cols, contract |
//! | all-to-all | batch |
//! | send/recv, broadcast | every axis |
//!
//! A chunk's cost is not the op's divided by a factor: a GEMM chunk keeps its real shape
//! (`m / N` rows, the whole weight), so the hardware profile looks it up in the measured
//! tables like any GEMM, and re-reads the weight once per chunk; every chunk pays the
//! profile's kernel floor (launch overhead). `slowdown` overrides this with a fixed factor
//! for sensitivity sweeps (the paper's alpha). Cost: O(1) per op.

use concerto_graph::{CollectiveKind, ComputeClass, GemmShape, Op, OpKind, Tensor};

use crate::split::Axis;

/// The axes `op` can be split along (see the module docs).
pub fn axes(op: &Op) -> &'static [Axis] {
    use Axis::*;
    match &op.kind {
        OpKind::Compute { class, gemm, .. } => match class {
            ComputeClass::Gemm if gemm.is_some() => &[Batch, Rows, Cols, Contract],
            ComputeClass::Attention if gemm.is_some() => &[Batch, Rows],
            ComputeClass::Elementwise => &[Batch, Rows, Cols],
            ComputeClass::Norm | ComputeClass::Reduction => &[Batch, Rows],
            _ => &[],
        },
        OpKind::Collective { kind, .. } => match kind {
            CollectiveKind::AllReduce => &[Batch, Rows, Cols, Contract],
            CollectiveKind::AllGather => &[Batch, Cols],
            CollectiveKind::ReduceScatter => &[Batch, Cols, Contract],
            CollectiveKind::AllToAll => &[Batch],
            _ => &[Batch, Rows, Cols],
        },
    }
}

/// Whether `op` can be split along `axis` into `n` non-empty chunks.
pub fn can_split(op: &Op, axis: Axis, n: u32) -> bool {
    axes(op).contains(&axis) && extent(op, axis).is_some_and(|e| e >= u64::from(n))
}

/// The size of `axis` in `op`: the GEMM dimension for GEMMs and attention, else the
/// leading (rows, batch) or trailing (cols) dimension of its first output, else its bytes
/// for collectives without a shape.
pub fn extent(op: &Op, axis: Axis) -> Option<u64> {
    if let OpKind::Compute { gemm: Some(g), .. } = &op.kind {
        return Some(match axis {
            Axis::Batch => g.b,
            Axis::Rows => g.m,
            Axis::Cols => g.n,
            Axis::Contract => g.k,
        });
    }
    match op.outputs.first() {
        Some(t) if !t.shape.is_empty() => Some(match axis {
            Axis::Cols => *t.shape.last().expect("non-empty"),
            Axis::Batch | Axis::Contract => t.shape[0],
            // Rows are tokens: every dimension but the trailing (feature) one.
            Axis::Rows if t.shape.len() > 1 => t.shape[..t.shape.len() - 1].iter().product(),
            Axis::Rows => t.shape[0],
        }),
        _ => match &op.kind {
            OpKind::Collective { bytes, .. } => Some(*bytes),
            OpKind::Compute { .. } => None,
        },
    }
}

/// The `i`-th of `n` near-equal parts of `total` (the first `total % n` parts are one larger).
pub fn part(total: u64, n: u32, i: u32) -> u64 {
    let n = u64::from(n.max(1));
    let i = u64::from(i);
    total / n + u64::from(i < total % n)
}

fn scale(x: u64, num: u64, den: u64) -> u64 {
    if den == 0 {
        return x;
    }
    ((u128::from(x) * u128::from(num)) / u128::from(den)) as u64
}

/// Chunk `i` of `n` of `op` split along `axis` (name left to the caller).
///
/// Duration override: with `slowdown = Some((factor, duration))`, `duration` the op's full
/// duration, the chunk gets `ceil(duration * factor / n)` instead of the cost model (the
/// paper's fixed slowdown). Without it, an op that carries its own `duration_ns` (measured,
/// or read with a JSON graph) passes to the chunk the share of it that the chunk does along
/// the axis: `ceil(duration_ns * e_i / e)`, `e_i` the chunk's part of the axis extent `e`
/// ([`extent`], [`part`]), so the chunks of a split add up to the op's measured time (plus
/// at most `n - 1` ns of rounding) rather than each costing all of it. An op without an
/// override leaves its chunks to the cost model.
pub fn chunk(op: &Op, axis: Axis, n: u32, i: u32, slowdown: Option<(f64, u64)>) -> Op {
    let mut c = op.clone();
    let full = extent(op, axis).unwrap_or(u64::from(n)).max(1);
    let mine = part(full, n, i).max(1);
    match &mut c.kind {
        OpKind::Compute {
            flops, bytes, gemm, ..
        } => {
            let elem = op.outputs.first().map_or(2, |t| t.dtype.size());
            if let Some(g) = gemm {
                let orig = *g;
                match axis {
                    Axis::Batch => g.b = mine,
                    Axis::Rows => g.m = mine,
                    Axis::Cols => g.n = mine,
                    Axis::Contract => g.k = mine,
                }
                *flops = scale(*flops, g.flops(), orig.flops());
                let traffic = |s: &GemmShape| s.b * (s.m * s.k + s.k * s.n + s.m * s.n) * elem;
                *bytes = scale(*bytes, traffic(g), traffic(&orig).max(1));
            } else {
                *flops = part(*flops, n, i);
                *bytes = part(*bytes, n, i);
            }
        }
        OpKind::Collective { bytes, .. } => *bytes = part(*bytes, n, i).max(1),
    }
    if axis != Axis::Contract {
        c.outputs = op
            .outputs
            .iter()
            .map(|t| split_tensor(t, axis, n, i, full))
            .collect();
    }
    c.duration_ns = match slowdown {
        Some((factor, duration)) => {
            Some(((duration as f64) * factor / f64::from(n)).ceil().max(1.0) as u64)
        }
        None => op.duration_ns.map(|d| share_ns(d, mine, full)),
    };
    c
}

/// `ceil(d * mine / full)` ns, at least 1: the part of a duration `d` that a chunk doing
/// `mine` of `full` units of work takes.
fn share_ns(d: u64, mine: u64, full: u64) -> u64 {
    let ns = (u128::from(d) * u128::from(mine)).div_ceil(u128::from(full.max(1)));
    u64::try_from(ns).unwrap_or(u64::MAX).max(1)
}

/// Splits the dimension of `t` that holds the axis: the trailing one for cols, else the
/// leading dimension of size `full` (the axis extent), else the first one at least `n`.
fn split_tensor(t: &Tensor, axis: Axis, n: u32, i: u32, full: u64) -> Tensor {
    let mut t = t.clone();
    let last = t.shape.len().saturating_sub(1);
    let k = match axis {
        Axis::Cols => last,
        _ => t.shape[..last]
            .iter()
            .position(|&d| d == full)
            .or_else(|| t.shape[..last].iter().position(|&d| d >= u64::from(n)))
            .unwrap_or(0),
    };
    if let Some(d) = t.shape.get_mut(k) {
        *d = part(*d, n, i).max(1);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::rewrite;
    use crate::split::{Context, Family};
    use concerto_graph::{DType, GraphBuilder, Hardware, LinkClass};

    #[test]
    fn gemm_chunks_keep_their_real_shape_and_cost_more_in_total() {
        let g = GemmShape {
            b: 1,
            m: 4096,
            n: 4096,
            k: 4096,
        };
        let op = Op::gemm("fc", g, DType::Bf16);
        assert!(can_split(&op, Axis::Rows, 4));
        let c = chunk(&op, Axis::Rows, 4, 0, None);
        let OpKind::Compute {
            gemm: Some(cg),
            flops,
            ..
        } = c.kind
        else {
            panic!()
        };
        assert_eq!(cg.m, 1024);
        assert_eq!(flops, g.flops() / 4);
        // Measured tables: four quarter GEMMs take longer than the whole.
        let hw = Hardware::h100();
        let whole = hw.op_ns(&op);
        let parts: u64 = (0..4)
            .map(|i| hw.op_ns(&chunk(&op, Axis::Rows, 4, i, None)))
            .sum();
        assert!(parts >= whole, "{parts} < {whole}");
        assert_eq!(c.outputs[0].shape, vec![1, 1024, 4096]);
    }

    #[test]
    fn rules_follow_the_table() {
        let ag = Op::collective(
            "ag",
            CollectiveKind::AllGather,
            1 << 20,
            8,
            LinkClass::IntraNode,
        );
        assert!(!can_split(&ag, Axis::Rows, 2));
        assert!(can_split(&ag, Axis::Cols, 2));
        let norm = Op::compute("ln", ComputeClass::Norm, 10, 10)
            .with_output(Tensor::new(vec![8, 16], DType::Bf16));
        assert!(can_split(&norm, Axis::Rows, 8));
        assert!(!can_split(&norm, Axis::Rows, 16));
        assert!(!can_split(&norm, Axis::Cols, 2));
        let c = chunk(&norm, Axis::Rows, 3, 0, Some((1.2, 1000)));
        assert_eq!(c.duration_ns, Some(400));
        assert_eq!(c.outputs[0].shape, vec![3, 16]);
        assert_eq!((0..3).map(|i| part(8, 3, i)).sum::<u64>(), 8);
    }

    /// `op` with a measured duration of `ns`.
    fn timed(mut op: Op, ns: u64) -> Op {
        op.duration_ns = Some(ns);
        op
    }

    #[test]
    fn chunks_share_a_measured_duration_instead_of_each_costing_all_of_it() {
        // A JSON graph with measured durations: a GEMM of 4096 rows (9 ms), its all-reduce
        // (4 ms) and a norm of 8 rows (800 ns) that reads it.
        let g = GemmShape {
            b: 1,
            m: 4096,
            n: 1024,
            k: 1024,
        };
        let mut b = GraphBuilder::new("measured");
        let fc = b.add(timed(Op::gemm("fc", g, DType::Bf16), 9_000_000), &[]);
        let ar = b.add(
            timed(
                Op::collective(
                    "ar",
                    CollectiveKind::AllReduce,
                    4096 * 1024 * 2,
                    8,
                    LinkClass::IntraNode,
                )
                .with_output(Tensor::new(vec![4096, 1024], DType::Bf16)),
                4_000_000,
            ),
            &[fc],
        );
        b.add(
            timed(
                Op::compute("ln", ComputeClass::Norm, 10, 10)
                    .with_output(Tensor::new(vec![8, 16], DType::Bf16)),
                800,
            ),
            &[ar],
        );
        let graph = b.finish();
        let ctx = Context {
            collective: ar,
            axis: Axis::Rows,
            ops: vec![fc, ar],
            n: 4,
            family: Family::Split,
        };
        let r = rewrite(&graph, &ctx, &|op, i| chunk(op, Axis::Rows, 4, i, None)).unwrap();
        let hw = Hardware::h100();
        for (name, whole) in [("fc", 9_000_000), ("ar", 4_000_000)] {
            let parts: Vec<u64> = (0..4)
                .map(|i| {
                    let c = r.graph.find(&format!("{name}/chunk{i}of4")).unwrap();
                    hw.op_ns(r.graph.op(c))
                })
                .collect();
            assert_eq!(parts, vec![whole / 4; 4], "{name}");
        }
        // Untouched ops keep their override.
        let ln = r.graph.find("ln").unwrap();
        assert_eq!(r.graph.op(ln).duration_ns, Some(800));
        // An uneven split: 8 rows in 3 chunks of 3, 3 and 2 rows share 800 ns as 300, 300
        // and 200.
        let ln_op = graph.op(graph.find("ln").unwrap());
        let d: Vec<_> = (0..3)
            .map(|i| chunk(ln_op, Axis::Rows, 3, i, None).duration_ns)
            .collect();
        assert_eq!(d, vec![Some(300), Some(300), Some(200)]);
        // Rounding goes up, never to 0.
        let tiny = timed(
            Op::compute("t", ComputeClass::Elementwise, 1, 1)
                .with_output(Tensor::new(vec![3, 4], DType::Bf16)),
            1,
        );
        assert_eq!(chunk(&tiny, Axis::Rows, 3, 2, None).duration_ns, Some(1));
        // A fixed slowdown replaces the override; without an override the cost model decides.
        assert_eq!(
            chunk(ln_op, Axis::Rows, 3, 0, Some((1.5, 800))).duration_ns,
            Some(400)
        );
        let free = Op::compute("f", ComputeClass::Norm, 10, 10)
            .with_output(Tensor::new(vec![8, 16], DType::Bf16));
        assert_eq!(chunk(&free, Axis::Rows, 2, 0, None).duration_ns, None);
    }
}
