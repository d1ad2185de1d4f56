//! GEMMs on a GPU without a measured table: XLA's analytical dot model, tile and wave
//! quantisation over the SMs (see the module docs, "Tiled GEMMs").

use crate::ir::GemmShape;

/// Smallest and largest output tile side XLA's model tries (`kMinBlockDim`, `kMaxBlockDim`).
const MIN_TILE: u64 = 32;
const MAX_TILE: u64 = 256;
/// A tile's accumulators must fit in this many bytes: 0.8 of the 65 536 registers a block may
/// hold (`TileFitsInRegisters`, `kFractionOfRegistersAvailableForAccumulators`), compared with
/// the tile's output bytes as XLA compares them.
const ACCUMULATOR_BUDGET: f64 = 0.8 * 65_536.0;

/// The tile-and-wave model of one GPU: how many SMs run output tiles at once, and how fast
/// the L2 cache feeds them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct TiledGemm {
    /// Streaming multiprocessors: the tiles of one wave.
    pub(super) sms: u64,
    /// L2 read bandwidth, bytes/s.
    pub(super) l2_bytes_per_sec: f64,
}

impl TiledGemm {
    /// Compute time (ns, unrounded) of one GEMM of `shape` whose elements take `size` bytes,
    /// on tensor cores of `peak` flop/s: the least, over the output tiles `tm x tn` (powers of
    /// two from 32 to 256) whose accumulators fit, of `max(ceil(tiles / sms) · sms · 2 tm tn k
    /// / peak, tiles · (tm + tn) k · size / L2 bandwidth)`, tiles = `b · ceil(m / tm) · ceil(n
    /// / tn)`. A GEMM of fewer tiles than SMs leaves SMs idle, the last wave of a larger one
    /// runs partly empty, and small tiles re-read their operands from L2 more often. 0 for a
    /// shape with a zero dimension. O(16).
    pub(super) fn compute_ns(&self, shape: GemmShape, size: u64, peak: f64) -> f64 {
        if shape.flops() == 0 || peak <= 0.0 {
            return 0.0;
        }
        let sms = self.sms.max(1) as f64;
        let mut best = f64::INFINITY;
        for tm in tiles() {
            for tn in tiles() {
                if (tm * tn * size.max(1)) as f64 > ACCUMULATOR_BUDGET {
                    continue;
                }
                let count =
                    shape.b as f64 * shape.m.div_ceil(tm) as f64 * shape.n.div_ceil(tn) as f64;
                let waves = (count / sms).ceil();
                let flops = waves * sms * 2.0 * (tm * tn) as f64 * shape.k as f64;
                let l2_bytes = count * ((tm + tn) * shape.k * size) as f64;
                let ns = (flops / peak).max(l2_bytes / self.l2_bytes_per_sec);
                best = best.min(ns * super::NS_PER_S);
            }
        }
        best
    }
}

/// The tile sides XLA's model tries: 32, 64, 128, 256.
fn tiles() -> impl Iterator<Item = u64> {
    std::iter::successors(Some(MIN_TILE), |t| Some(t * 2)).take_while(|t| *t <= MAX_TILE)
}
