//! The cost model against a measured step: its error per op class, a profile fitted to the
//! measurements, and the contention the step shows.
//!
//! Only ops the cost model has inputs for are compared: GEMM kernels with a recorded shape
//! (`record_shapes=True` and one `aten::mm`/`addmm`/`bmm`/`baddbmm`/`linear` around the
//! launch), device-to-device copies and memsets (bytes), and NCCL kernels with a byte count.
//! Every other kernel has only its measured duration, and the table counts it as unmodelled.
//!
//! The fit ([`Fit`]): per class, the ratio of measured to modelled time summed over the class
//! (GEMMs with at least [`MIN_SAMPLES`] shaped kernels; the memory-bound classes, elementwise,
//! reduction, norm and other, share the ratio of copies and memsets that run longer than twice
//! the base floor, i.e. at bandwidth); the collective ring by least squares of the relative
//! error of `measured = alpha * steps + beta * ring bytes` over collectives with bytes (needs
//! at least [`MIN_SAMPLES`], two distinct sizes, and a positive solution; else bandwidth
//! alone); the kernel floor as the 5th percentile of measured kernel times (with at least
//! [`MIN_FLOOR_SAMPLES`] kernels); the contention as below. Cost: O(ops log ops).
//!
//! Contention: runs of one kernel (same name, grid and block) that overlapped an NCCL kernel
//! for at least half their time are compared with runs of the same kernel that overlapped
//! none; per kernel with at least [`MIN_SAMPLES`] runs on each side, the ratio of the median
//! times; the estimate is their mean weighted by the overlapped runs' total time. A trace
//! without both kinds of runs gives no estimate.

use std::collections::BTreeMap;

use concerto_graph::hardware::{class_name, Fit, FitRing};
use concerto_graph::{CollectiveKind, ComputeClass, Graph, Hardware, Op, OpKind};
use serde::Serialize;

use super::TraceReport;

/// Fewest samples a fitted value or a contention pair rests on.
pub const MIN_SAMPLES: usize = 3;

/// Fewest kernels the kernel floor (a low percentile) is fitted on.
pub const MIN_FLOOR_SAMPLES: usize = 40;

/// One row of the calibration table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassError {
    /// `gemm`, `memory` (copies and memsets), or a collective kind (`all-reduce`, ...).
    pub class: String,
    /// Ops compared.
    pub ops: usize,
    /// Their measured time (ns).
    pub measured_ns: u64,
    /// What the cost model says (ns).
    pub model_ns: u64,
    /// `100 (model - measured) / measured`.
    pub error_pct: f64,
    /// Median over the ops of `model / measured`.
    pub median_ratio: f64,
}

/// The contention estimate (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Contention {
    /// Compute slowdown while an NCCL kernel runs.
    pub factor: f64,
    /// Kernels (name, grid, block) compared.
    pub kernels: usize,
    /// Their runs beside an NCCL kernel.
    pub overlapped_runs: usize,
    /// Their runs alone.
    pub alone_runs: usize,
}

/// The cost model against a measured step (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    /// The profile compared with.
    pub hardware: String,
    /// Per class, the model's error.
    pub rows: Vec<ClassError>,
    /// Ops the model has no inputs for, per compute class.
    pub unmodelled: BTreeMap<String, usize>,
    /// The contention the step shows, when it has runs with and without an NCCL kernel beside.
    pub contention: Option<Contention>,
    /// The profile fitted to this step.
    pub fit: Fit,
}

/// Which row an op belongs to, if the model has inputs for it.
fn row_of(op: &Op) -> Option<String> {
    match &op.kind {
        OpKind::Compute {
            gemm: Some(_),
            class: ComputeClass::Gemm,
            ..
        } => Some("gemm".into()),
        OpKind::Compute { bytes, .. }
            if *bytes > 0
                && (op.name.starts_with("Memcpy_DtoD") || op.name.starts_with("Memset")) =>
        {
            Some("memory".into())
        }
        OpKind::Collective { kind, bytes, .. } if *bytes > 0 => Some(kind.as_str().into()),
        _ => None,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        (v[k - 1] + v[k]) / 2.0
    }
}

/// Compares `graph` (imported from a trace, with `report`) with `hardware` and fits a profile
/// to it; `source` names the trace in the fit.
pub fn calibrate(
    graph: &Graph,
    report: &TraceReport,
    hardware: &Hardware,
    source: &str,
) -> Calibration {
    let measured = |i: usize| graph.op(concerto_graph::OpId(i)).duration_ns.unwrap_or(0);
    let mut rows: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    let mut unmodelled: BTreeMap<String, usize> = BTreeMap::new();
    for (i, op) in graph.ops().enumerate() {
        match row_of(op) {
            Some(r) => rows
                .entry(r)
                .or_default()
                .push((measured(i), hardware.model_ns(op))),
            None => *unmodelled.entry(unmodelled_key(op)).or_default() += 1,
        }
    }
    let table = error_rows(&rows);

    let mut fit = Fit::new(base_name(&hardware.name), source);
    if let Some(v) = rows.get("gemm").filter(|v| v.len() >= MIN_SAMPLES) {
        fit.compute_scale.insert("gemm".into(), ratio(v));
    }
    // Copies at bandwidth (well above the floor) say how fast memory-bound kernels run.
    let floor = hardware.memory_bound_ns(0);
    if let Some(v) = rows.get("memory") {
        let at_bandwidth: Vec<(u64, u64)> =
            v.iter().copied().filter(|&(_, p)| p > 2 * floor).collect();
        if at_bandwidth.len() >= MIN_SAMPLES {
            let r = ratio(&at_bandwidth);
            for c in ["elementwise", "reduction", "norm", "other"] {
                fit.compute_scale.insert(c.into(), r);
            }
        }
    }
    fit.collective = fit_ring(graph);
    // Per kind, what the fitted ring misses (all-to-all is not a ring in NCCL).
    if let Some(r) = &fit.collective {
        let ring = FitRing {
            bytes_per_sec: r.bytes_per_sec,
            alpha_ns: r.alpha_ns,
        };
        let mut per_kind: BTreeMap<&'static str, (f64, f64, usize)> = BTreeMap::new();
        for op in graph.ops() {
            if let OpKind::Collective {
                kind, bytes, group, ..
            } = op.kind
            {
                if bytes == 0 {
                    continue;
                }
                let (s, b) = ring_terms(kind, bytes, group);
                let e = per_kind.entry(kind.as_str()).or_default();
                e.0 += op.duration_ns.unwrap_or(0) as f64;
                e.1 += ring.alpha_ns * s + b * 1e9 / ring.bytes_per_sec;
                e.2 += 1;
            }
        }
        for (kind, (m, p, k)) in per_kind {
            let x = m / p.max(1.0);
            if k >= MIN_SAMPLES && !(0.9..=1.1).contains(&x) {
                fit.collective_scale
                    .insert(kind.into(), (x * 1000.0).round() / 1000.0);
            }
        }
    }
    fit.min_kernel_ns = kernel_floor(graph.ops().filter(|op| {
        !op.is_collective() && !op.name.starts_with("Memcpy") && !op.name.starts_with("Memset")
    }));
    let contention = contention(graph, report);
    fit.contention = contention.as_ref().map(|c| c.factor.max(1.0));
    Calibration {
        hardware: hardware.name.clone(),
        rows: table,
        unmodelled,
        contention,
        fit,
    }
}

/// Compares `graph`, whose ops carry measured durations (an HLO module costed from one step of
/// a `jax.profiler` trace, [`crate::profile::KernelProfile::apply`]), with `hardware`, per
/// compute class, and fits a profile to it; `source` names the trace in the fit. Unlike a
/// PyTorch trace, every measured instruction has its shapes: GEMMs with a shape form the
/// `gemm` row, every other compute op its class's row (an op with neither flops nor bytes is
/// unmodelled), collectives with bytes their kind's. The fit: per row with at least
/// [`MIN_SAMPLES`] ops, the ratio of measured to modelled time summed over the row; the ring
/// and the kernel floor as for a trace. One step, one stream: no contention estimate.
/// Cost: O(ops log ops).
pub fn calibrate_measured(graph: &Graph, hardware: &Hardware, source: &str) -> Calibration {
    let mut rows: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    let mut unmodelled: BTreeMap<String, usize> = BTreeMap::new();
    for op in graph.ops() {
        let Some(measured) = op.duration_ns else {
            continue;
        };
        if crate::fidelity::shapeless(op) {
            *unmodelled.entry(unmodelled_key(op)).or_default() += 1;
            continue;
        }
        let key = match &op.kind {
            OpKind::Compute { class, .. } => class_name(*class).to_string(),
            OpKind::Collective { kind, .. } => kind.as_str().into(),
        };
        rows.entry(key)
            .or_default()
            .push((measured, hardware.model_ns(op)));
    }
    let table = error_rows(&rows);
    let mut fit = Fit::new(base_name(&hardware.name), source);
    for (class, v) in &rows {
        let compute = [
            "gemm",
            "attention",
            "elementwise",
            "reduction",
            "norm",
            "other",
        ];
        if v.len() >= MIN_SAMPLES && compute.contains(&class.as_str()) {
            fit.compute_scale.insert(class.clone(), ratio(v));
        }
    }
    fit.collective = fit_ring(graph);
    fit.min_kernel_ns = kernel_floor(graph.ops().filter(|op| !op.is_collective()));
    Calibration {
        hardware: hardware.name.clone(),
        rows: table,
        unmodelled,
        contention: None,
        fit,
    }
}

/// The error table of measured and modelled times per row.
fn error_rows(rows: &BTreeMap<String, Vec<(u64, u64)>>) -> Vec<ClassError> {
    rows.iter()
        .map(|(class, v)| {
            let m: u64 = v.iter().map(|x| x.0).sum();
            let p: u64 = v.iter().map(|x| x.1).sum();
            ClassError {
                class: class.clone(),
                ops: v.len(),
                measured_ns: m,
                model_ns: p,
                error_pct: super::error_pct(p, m),
                median_ratio: median(v.iter().map(|&(a, b)| b as f64 / a.max(1) as f64).collect()),
            }
        })
        .collect()
}

/// The row of an op the model has no inputs for: its class, or its collective kind.
fn unmodelled_key(op: &Op) -> String {
    match &op.kind {
        OpKind::Compute { class, .. } => class_name(*class).to_string(),
        OpKind::Collective { kind, .. } => format!("{} (no bytes)", kind.as_str()),
    }
}

/// The kernel floor: the 5th percentile of the measured times of `kernels`, with at least
/// [`MIN_FLOOR_SAMPLES`] of them.
fn kernel_floor<'g>(kernels: impl Iterator<Item = &'g Op>) -> Option<u64> {
    let mut ns: Vec<u64> = kernels.filter_map(|op| op.duration_ns).collect();
    ns.sort_unstable();
    (ns.len() >= MIN_FLOOR_SAMPLES).then(|| ns[(ns.len() - 1) / 20].max(1))
}

/// The built-in profile a (possibly fitted) profile's name stands on.
fn base_name(name: &str) -> String {
    name.trim_end_matches("+fit").to_string()
}

fn ratio(v: &[(u64, u64)]) -> f64 {
    let m: u64 = v.iter().map(|x| x.0).sum();
    let p: u64 = v.iter().map(|x| x.1).sum();
    m as f64 / p.max(1) as f64
}

/// The ring's terms for a collective: (latency steps, bytes through the ring).
fn ring_terms(kind: CollectiveKind, bytes: u64, group: u32) -> (f64, f64) {
    let n = f64::from(group.max(2));
    let (steps, factor) = match kind {
        CollectiveKind::AllReduce => (2.0 * (n - 1.0), 2.0 * (n - 1.0) / n),
        CollectiveKind::AllGather | CollectiveKind::AllToAll => (n - 1.0, (n - 1.0) / n),
        CollectiveKind::ReduceScatter => (n - 1.0, n - 1.0),
        CollectiveKind::SendRecv => (1.0, 1.0),
        CollectiveKind::Broadcast => (n.log2().ceil(), 1.0),
        _ => (n - 1.0, (n - 1.0) / n),
    };
    (steps, factor * bytes as f64)
}

/// Least squares of `measured = alpha * steps + bytes / bandwidth` over the collectives with
/// bytes (the ring model of [`concerto_graph::hardware`]); `None` without enough distinct
/// samples or without a positive bandwidth.
fn fit_ring(graph: &Graph) -> Option<FitRing> {
    let samples: Vec<(f64, f64, f64)> = graph
        .ops()
        .filter_map(|op| match op.kind {
            OpKind::Collective {
                kind, bytes, group, ..
            } if bytes > 0 => {
                let (s, b) = ring_terms(kind, bytes, group);
                Some((s, b, op.duration_ns? as f64))
            }
            _ => None,
        })
        .collect();
    let distinct = {
        let mut b: Vec<u64> = samples.iter().map(|x| x.1 as u64).collect();
        b.sort_unstable();
        b.dedup();
        b.len()
    };
    if samples.len() < MIN_SAMPLES || distinct < 2 {
        return None;
    }
    // Normal equations of y = a s + c b (c = 1e9 / bandwidth, ns per byte), each sample
    // weighted by 1 / y: least squares of the *relative* error, so that a 40 us broadcast
    // counts as much as a 2 ms all-reduce.
    let (mut ss, mut sb, mut bb, mut sy, mut by) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(s, b, y) in &samples {
        let (s, b, y) = (s / y.max(1.0), b / y.max(1.0), 1.0);
        ss += s * s;
        sb += s * b;
        bb += b * b;
        sy += s * y;
        by += b * y;
    }
    let det = ss * bb - sb * sb;
    let (a, c) = if det.abs() > f64::EPSILON * ss * bb {
        ((sy * bb - by * sb) / det, (ss * by - sb * sy) / det)
    } else {
        (f64::NAN, f64::NAN)
    };
    let (a, c) = if a.is_finite() && c.is_finite() && a >= 0.0 && c > 0.0 {
        (a, c)
    } else {
        // No latency term: bandwidth alone through the origin.
        (0.0, by / bb)
    };
    (c.is_finite() && c > 0.0).then(|| FitRing {
        bytes_per_sec: 1e9 / c,
        alpha_ns: a,
    })
}

/// The contention estimate (see the module docs).
fn contention(graph: &Graph, report: &TraceReport) -> Option<Contention> {
    let n = graph.len();
    if report.measured.len() != n || report.signature.len() != n {
        return None;
    }
    let mut comm: Vec<(u64, u64)> = graph
        .ids()
        .filter(|v| graph.op(*v).is_collective())
        .map(|v| report.measured[v.0])
        .collect();
    comm.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in comm {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    if merged.is_empty() {
        return None;
    }
    let overlap = |a: u64, b: u64| -> u64 {
        let first = merged.partition_point(|iv| iv.1 <= a);
        merged[first..]
            .iter()
            .take_while(|iv| iv.0 < b)
            .map(|iv| iv.1.min(b) - iv.0.max(a))
            .sum()
    };
    let mut runs: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for v in graph.ids() {
        let op = graph.op(v);
        if op.is_collective() {
            continue;
        }
        let (a, b) = report.measured[v.0];
        if b <= a {
            continue;
        }
        let o = overlap(a, b);
        let e = runs.entry(report.signature[v.0].as_str()).or_default();
        if 2 * o >= b - a {
            e.0.push((b - a) as f64);
        } else if o == 0 {
            e.1.push((b - a) as f64);
        }
    }
    let (mut weighted, mut weight) = (0.0, 0.0);
    let (mut kernels, mut with, mut without) = (0, 0, 0);
    for (with_nccl, alone) in runs.into_values() {
        if with_nccl.len() < MIN_SAMPLES || alone.len() < MIN_SAMPLES {
            continue;
        }
        let w: f64 = with_nccl.iter().sum();
        kernels += 1;
        with += with_nccl.len();
        without += alone.len();
        weighted += w * median(with_nccl) / median(alone);
        weight += w;
    }
    (kernels > 0).then(|| Contention {
        factor: (weighted / weight * 1000.0).round() / 1000.0,
        kernels,
        overlapped_runs: with,
        alone_runs: without,
    })
}
