//! The measured `h100` tables (XLA's `sm_90` rows, embedded as CSV): GEMM throughputs on a
//! (b, m, n, k) grid and intra-node collective throughputs by size and group, each with the
//! padding envelope applied at load time. The formulas and sources are in the [`super`]
//! module docs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use super::ring::ring_factor;
use super::NS_PER_S;
use crate::ir::{CollectiveKind, DType, GemmShape};

/// XLA's sm_90 GEMM rows (see the module docs).
const H100_GEMM_CSV: &str = include_str!("h100_gemm.csv");
/// XLA's sm_90 collective rows (see the module docs).
const H100_COLLECTIVES_CSV: &str = include_str!("h100_collectives.csv");

/// Which GEMM table (and tensor peak) a dtype uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GemmType {
    Bf16 = 0,
    F32 = 1,
    F8 = 2,
}

impl GemmType {
    pub(super) fn of(dtype: DType) -> GemmType {
        match dtype {
            DType::F32 => GemmType::F32,
            DType::F8 => GemmType::F8,
            _ => GemmType::Bf16,
        }
    }

    fn from_table_name(types: &str) -> Option<GemmType> {
        match types {
            "bf16xbf16->bf16" => Some(GemmType::Bf16),
            "f32xf32->f32" => Some(GemmType::F32),
            "f8e4m3fnxf8e4m3fn->bf16" => Some(GemmType::F8),
            _ => None,
        }
    }
}

const GEMM_B: [u64; 3] = [1, 2, 4];
const GEMM_DIM: [u64; 5] = [256, 512, 1024, 2048, 4096];
/// Grid points per type: 3 values of b times 5^3 of (m, n, k).
const GEMM_POINTS: usize = 375;
/// One type's grid, flat: point `(b, m, n, k)` (grid indices) at `gemm_index(b, m, n, k)`.
type GemmGrid = [f64; GEMM_POINTS];

fn gemm_index(b: usize, m: usize, n: usize, k: usize) -> usize {
    ((b * 5 + m) * 5 + n) * 5 + k
}

/// The grid indices `[b, m, n, k]` of a flat index.
fn gemm_coords(i: usize) -> [usize; 4] {
    [i / 125, i / 25 % 5, i / 5 % 5, i % 5]
}

/// `2 b m n k` of a grid point.
fn gemm_grid_flops(i: usize) -> f64 {
    let [b, m, n, k] = gemm_coords(i);
    2.0 * (GEMM_B[b] * GEMM_DIM[m] * GEMM_DIM[n] * GEMM_DIM[k]) as f64
}

/// The measured GEMM throughputs (flop/s) per type (`GemmType` order), padding envelope
/// applied.
#[derive(Clone, PartialEq)]
pub(super) struct GemmTables {
    thr: [GemmGrid; 3],
    /// Grid points the envelope lowered, per type.
    pub(super) lowered: [usize; 3],
}

impl fmt::Debug for GemmTables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GemmTables {{ 3 types x 375 points (sm_90), lowered by the envelope: {:?} }}",
            self.lowered
        )
    }
}

/// Where `x` falls on a grid: the two neighbouring indices and the weight of the upper one,
/// interpolating in log2; clamped to the grid's ends.
fn grid_axis(x: u64, grid: &[u64]) -> (usize, usize, f64) {
    let last = grid.len() - 1;
    if x <= grid[0] {
        return (0, 0, 0.0);
    }
    if x >= grid[last] {
        return (last, last, 0.0);
    }
    let i = grid.partition_point(|&g| g <= x) - 1;
    if grid[i] == x {
        return (i, i, 0.0);
    }
    let (lo, hi) = ((grid[i] as f64).log2(), (grid[i + 1] as f64).log2());
    (i, i + 1, ((x as f64).log2() - lo) / (hi - lo))
}

/// Column positions of `names` in a CSV header.
fn columns<const N: usize>(header: &str, names: [&str; N]) -> Result<[usize; N], String> {
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut out = [0; N];
    for (o, name) in out.iter_mut().zip(names) {
        *o = cols
            .iter()
            .position(|c| *c == name)
            .ok_or_else(|| format!("no column `{name}` in header `{header}`"))?;
    }
    Ok(out)
}

/// A CSV data line: its 1-based line number and its fields.
type CsvRow<'a> = (usize, Vec<&'a str>);

/// The header and the data lines of an embedded CSV (comments `#` and blank lines skipped).
fn csv_lines(text: &str) -> Result<(&str, Vec<CsvRow<'_>>), String> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let (_, header) = lines.next().ok_or("no header")?;
    let rows = lines
        .map(|(i, l)| (i, l.split(',').map(str::trim).collect()))
        .collect();
    Ok((header, rows))
}

fn field<T: std::str::FromStr>(row: &[&str], col: usize, line: usize) -> Result<T, String> {
    let s = row
        .get(col)
        .ok_or_else(|| format!("line {line}: missing column {}", col + 1))?;
    s.parse()
        .map_err(|_| format!("line {line}: cannot read `{s}` in column {}", col + 1))
}

impl GemmTables {
    fn parse(text: &str) -> Result<GemmTables, String> {
        let (header, rows) = csv_lines(text)?;
        let [cb, cm, cn, ck, ct, cf] =
            columns(header, ["b", "m", "n", "k", "types", "flops_per_sec"])?;
        let mut thr = [[f64::NAN; GEMM_POINTS]; 3];
        let index = |grid: &[u64], x: u64, line: usize| {
            grid.iter()
                .position(|&g| g == x)
                .ok_or_else(|| format!("line {line}: {x} is not on the grid {grid:?}"))
        };
        for (line, row) in rows {
            let Some(t) = row.get(ct).and_then(|s| GemmType::from_table_name(s)) else {
                continue;
            };
            let bi = index(&GEMM_B, field(&row, cb, line)?, line)?;
            let mi = index(&GEMM_DIM, field(&row, cm, line)?, line)?;
            let ni = index(&GEMM_DIM, field(&row, cn, line)?, line)?;
            let ki = index(&GEMM_DIM, field(&row, ck, line)?, line)?;
            let f: f64 = field(&row, cf, line)?;
            if !(f.is_finite() && f > 0.0) {
                return Err(format!("line {line}: throughput {f} is not positive"));
            }
            let slot = &mut thr[t as usize][gemm_index(bi, mi, ni, ki)];
            if !slot.is_nan() {
                return Err(format!("line {line}: duplicate grid point"));
            }
            *slot = f;
        }
        let mut lowered = [0; 3];
        for (t, grid) in thr.iter_mut().enumerate() {
            lowered[t] = Self::envelope(grid).map_err(|e| format!("table {t}: {e}"))?;
        }
        Ok(GemmTables { thr, lowered })
    }

    /// Applies the padding envelope to one type's grid; returns how many points it lowered.
    fn envelope(grid: &mut GemmGrid) -> Result<usize, String> {
        if let Some(i) = grid.iter().position(|f| f.is_nan()) {
            let [b, m, n, k] = gemm_coords(i);
            return Err(format!(
                "missing point b={} m={} n={} k={}",
                GEMM_B[b], GEMM_DIM[m], GEMM_DIM[n], GEMM_DIM[k]
            ));
        }
        let raw: Vec<f64> = (0..GEMM_POINTS)
            .map(|i| gemm_grid_flops(i) / grid[i])
            .collect();
        let mut time = raw.clone();
        // Suffix minima along each axis in turn: t(p) = min over q >= p of t(q). Going down
        // the flat order visits p + stride before p.
        for (axis, stride) in [125, 25, 5, 1].into_iter().enumerate() {
            let extent = if axis == 0 { 3 } else { 5 };
            for i in (0..GEMM_POINTS).rev() {
                if gemm_coords(i)[axis] + 1 < extent {
                    time[i] = time[i].min(time[i + stride]);
                }
            }
        }
        let mut lowered = 0;
        for (i, f) in grid.iter_mut().enumerate() {
            if time[i] < raw[i] {
                *f = gemm_grid_flops(i) / time[i];
                lowered += 1;
            }
        }
        Ok(lowered)
    }

    /// Throughput (flop/s) at the clamped shape: multilinear interpolation of log(throughput)
    /// in log2 of each coordinate.
    fn throughput(&self, shape: GemmShape, t: GemmType) -> f64 {
        let grid = &self.thr[t as usize];
        let (b0, b1, wb) = grid_axis(shape.b, &GEMM_B);
        let (m0, m1, wm) = grid_axis(shape.m, &GEMM_DIM);
        let (n0, n1, wn) = grid_axis(shape.n, &GEMM_DIM);
        let (k0, k1, wk) = grid_axis(shape.k, &GEMM_DIM);
        if wb == 0.0 && wm == 0.0 && wn == 0.0 && wk == 0.0 {
            return grid[gemm_index(b0, m0, n0, k0)]; // on the grid: the value, exactly
        }
        let mut log_sum = 0.0;
        for (b, vb) in [(b0, 1.0 - wb), (b1, wb)] {
            for (m, vm) in [(m0, 1.0 - wm), (m1, wm)] {
                for (n, vn) in [(n0, 1.0 - wn), (n1, wn)] {
                    for (k, vk) in [(k0, 1.0 - wk), (k1, wk)] {
                        let w = vb * vm * vn * vk;
                        if w > 0.0 {
                            log_sum += w * grid[gemm_index(b, m, n, k)].ln();
                        }
                    }
                }
            }
        }
        log_sum.exp()
    }

    /// Time (ns) of one GEMM of `shape`: dimensions below the grid raised to it (tile
    /// quantisation), throughput interpolated; 0 for a shape with a zero dimension. A batch
    /// above the grid's (b > 4) costs `max(t(4, m, n, k), flops / saturated throughput)`: see
    /// the module docs of [`super`], "Batched GEMMs".
    pub(super) fn gemm_ns(&self, shape: GemmShape, t: GemmType) -> f64 {
        if shape.b == 0 || shape.m == 0 || shape.n == 0 || shape.k == 0 {
            return 0.0;
        }
        let lo = GEMM_DIM[0];
        let b_max = GEMM_B[GEMM_B.len() - 1];
        let per_batch =
            2.0 * shape.m.max(lo) as f64 * shape.n.max(lo) as f64 * shape.k.max(lo) as f64;
        let batched = GemmShape {
            b: shape.b.min(b_max),
            ..shape
        };
        let edge = batched.b as f64 * per_batch * NS_PER_S / self.throughput(batched, t);
        if shape.b <= b_max {
            return edge;
        }
        let saturated = self.thr[t as usize][GEMM_POINTS - 1];
        edge.max(shape.b as f64 * per_batch * NS_PER_S / saturated)
    }
}

/// One measured collective series: sizes (bytes, ascending) and throughputs (bytes/s),
/// padding envelope applied.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Series {
    pub(super) bytes: Vec<f64>,
    pub(super) thr: Vec<f64>,
}

impl Series {
    /// Builds a series from `elements -> samples` (F32, so 4 bytes each); returns it and how
    /// many sizes the envelope lowered.
    fn new(samples: &BTreeMap<u64, Vec<f64>>) -> (Series, usize) {
        let mut bytes = Vec::with_capacity(samples.len());
        let mut thr = Vec::with_capacity(samples.len());
        for (&e, s) in samples {
            bytes.push(4.0 * e as f64);
            thr.push(median(s));
        }
        let mut lowered = 0;
        for i in (0..bytes.len().saturating_sub(1)).rev() {
            let (t, next) = (bytes[i] / thr[i], bytes[i + 1] / thr[i + 1]);
            if next < t {
                thr[i] = bytes[i] / next;
                lowered += 1;
            }
        }
        (Series { bytes, thr }, lowered)
    }

    /// Time (ns) to move `x` bytes.
    fn ns(&self, x: f64) -> f64 {
        let last = self.bytes.len() - 1;
        if x <= self.bytes[0] {
            return self.bytes[0] * NS_PER_S / self.thr[0];
        }
        if x >= self.bytes[last] {
            return x * NS_PER_S / self.thr[last];
        }
        let i = self.bytes.partition_point(|&b| b <= x) - 1;
        if self.bytes[i] == x {
            return x * NS_PER_S / self.thr[i];
        }
        let (b0, b1) = (self.bytes[i].ln(), self.bytes[i + 1].ln());
        let w = (x.ln() - b0) / (b1 - b0);
        let thr = ((1.0 - w) * self.thr[i].ln() + w * self.thr[i + 1].ln()).exp();
        x * NS_PER_S / thr
    }
}

pub(super) fn median(samples: &[f64]) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let h = s.len() / 2;
    if s.len() % 2 == 1 {
        s[h]
    } else {
        (s[h - 1] + s[h]) / 2.0
    }
}

/// Table opcodes with group columns, in `CollectiveTables::grouped` order.
const GROUPED_OPCODES: [&str; 4] = ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"];
const TABLE_GROUPS: [u32; 3] = [2, 4, 8];

/// The measured intra-node collective tables.
#[derive(Clone, PartialEq)]
pub(super) struct CollectiveTables {
    /// `[opcode][group index]`, opcodes as `GROUPED_OPCODES`, groups as `TABLE_GROUPS`.
    pub(super) grouped: [[Series; 3]; 4],
    pub(super) permute: Series,
    /// Size steps the envelope lowered, over every series.
    pub(super) lowered: usize,
}

impl fmt::Debug for CollectiveTables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CollectiveTables {{ 13 series (sm_90), lowered by the envelope: {} }}",
            self.lowered
        )
    }
}

impl CollectiveTables {
    fn parse(text: &str) -> Result<CollectiveTables, String> {
        let (header, rows) = csv_lines(text)?;
        let [co, ce, cg, ct] = columns(
            header,
            [
                "opcode",
                "elements",
                "devices_per_group",
                "network_throughput_bytes_per_sec",
            ],
        )?;
        // (opcode index, group) -> elements -> samples; opcode 4 is collective-permute.
        let mut raw: BTreeMap<(usize, u32), BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
        for (line, row) in rows {
            let opcode = row.get(co).copied().unwrap_or("");
            let key = if opcode == "collective-permute" {
                (4, 0)
            } else if let Some(o) = GROUPED_OPCODES.iter().position(|&c| c == opcode) {
                (o, field(&row, cg, line)?)
            } else {
                continue;
            };
            let elements: u64 = field(&row, ce, line)?;
            let t: f64 = field(&row, ct, line)?;
            if elements == 0 || !(t.is_finite() && t > 0.0) {
                return Err(format!(
                    "line {line}: empty size or non-positive throughput"
                ));
            }
            raw.entry(key)
                .or_default()
                .entry(elements)
                .or_default()
                .push(t);
        }
        let mut lowered = 0;
        let mut series = |key: (usize, u32)| -> Result<Series, String> {
            let samples = raw
                .get(&key)
                .filter(|s| s.len() >= 2)
                .ok_or_else(|| format!("no series (or a single size) for {key:?}"))?;
            let (s, l) = Series::new(samples);
            lowered += l;
            Ok(s)
        };
        let mut grouped: [[Option<Series>; 3]; 4] = Default::default();
        for (o, row) in grouped.iter_mut().enumerate() {
            for (g, slot) in row.iter_mut().enumerate() {
                *slot = Some(series((o, TABLE_GROUPS[g]))?);
            }
        }
        let permute = series((4, 0))?;
        let grouped = grouped.map(|row| row.map(|s| s.expect("filled above")));
        Ok(CollectiveTables {
            grouped,
            permute,
            lowered,
        })
    }

    /// Time (ns) of an intra-node collective of `n >= 2` ranks (send-recv: any `n`).
    pub(super) fn ns(&self, kind: CollectiveKind, bytes: u64, n: u32) -> f64 {
        let x = bytes as f64;
        // Broadcast is costed as an all-gather (see the module docs).
        let (kind, opcode) = match kind {
            CollectiveKind::SendRecv => return self.permute.ns(x),
            CollectiveKind::AllReduce => (kind, 0),
            CollectiveKind::AllGather | CollectiveKind::Broadcast => (CollectiveKind::AllGather, 1),
            CollectiveKind::ReduceScatter => (kind, 2),
            CollectiveKind::AllToAll => (kind, 3),
        };
        let table = &self.grouped[opcode];
        let max = TABLE_GROUPS[2];
        if n > max {
            let scale = ring_factor(kind, n as f64) / ring_factor(kind, max as f64);
            return table[2].ns(x) * scale;
        }
        let (g0, g1, w) = grid_axis(
            u64::from(n),
            &TABLE_GROUPS.map(u64::from), // [2, 4, 8]
        );
        let t0 = table[g0].ns(x);
        if w == 0.0 {
            return t0;
        }
        let t1 = table[g1].ns(x);
        ((1.0 - w) * t0.ln() + w * t1.ln()).exp()
    }
}

/// The embedded H100 tables, parsed on first use.
pub(super) fn h100_tables() -> (Arc<GemmTables>, Arc<CollectiveTables>) {
    static TABLES: OnceLock<(Arc<GemmTables>, Arc<CollectiveTables>)> = OnceLock::new();
    TABLES
        .get_or_init(|| {
            let gemm = GemmTables::parse(H100_GEMM_CSV)
                .unwrap_or_else(|e| panic!("embedded h100_gemm.csv is malformed: {e}"));
            let coll = CollectiveTables::parse(H100_COLLECTIVES_CSV)
                .unwrap_or_else(|e| panic!("embedded h100_collectives.csv is malformed: {e}"));
            (Arc::new(gemm), Arc::new(coll))
        })
        .clone()
}
