//! Profiles fitted from measurements: a built-in profile adjusted by what a profiler trace
//! measured ([`Fit`]), written to and read from a JSON file that `--hardware FILE` takes.
//!
//! A fit changes four things of its base profile and nothing else: a factor per compute class
//! on the roofline terms of the modelled duration (not on the kernel floor; GEMMs from shaped GEMM kernels; the memory-bound classes from
//! device copies and memsets), the intra-node collective model (an alpha-beta ring whose
//! bandwidth and per-step latency are fitted by least squares to the NCCL kernels with byte
//! counts, and a factor per collective kind on top), the kernel floor (the smallest kernels measured), and the contention factor (from
//! kernels measured with and without an NCCL kernel beside them). Fields left out keep the
//! base profile's value. The file:
//!
//! ```json
//! {"format": "concerto-hardware-fit", "version": 1, "base": "a100",
//!  "source": "a100_2rank_rank0.json.gz ProfilerStep#4",
//!  "compute_scale": {"gemm": 1.8, "elementwise": 2.1},
//!  "collective": {"bytes_per_sec": 9.1e10, "alpha_ns": 6200},
//!  "collective_scale": {"all-to-all": 5.6},
//!  "min_kernel_ns": 2400, "contention": 1.05}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::profile::class_index;
use super::ring::Ring;
use super::Hardware;
use crate::error::GraphError;
use crate::ir::{CollectiveKind, ComputeClass};

/// The fitted collective ring.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitRing {
    /// Bus bandwidth per GPU, bytes/s.
    pub bytes_per_sec: f64,
    /// Latency per ring step, ns.
    pub alpha_ns: f64,
}

/// Adjustments of a built-in profile fitted from measurements (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fit {
    /// Always `concerto-hardware-fit`.
    pub format: String,
    /// Always 1.
    pub version: u32,
    /// The built-in profile it adjusts ([`Hardware::NAMES`]).
    pub base: String,
    /// What it was fitted on (a trace and its step).
    pub source: String,
    /// Factor on the modelled duration per compute class (`gemm`, `attention`, `elementwise`,
    /// `reduction`, `norm`, `other`).
    #[serde(default)]
    pub compute_scale: BTreeMap<String, f64>,
    /// The intra-node collectives' ring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collective: Option<FitRing>,
    /// Factor on the modelled duration per collective kind (`all-reduce`, `all-to-all`, ...):
    /// what one ring does not capture (NCCL runs an all-to-all as send/recv pairs, not a ring).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub collective_scale: BTreeMap<String, f64>,
    /// The kernel floor (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_kernel_ns: Option<u64>,
    /// The compute slowdown while a collective runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<f64>,
}

/// The file format's name of a compute class (the native JSON format's: `gemm`, `attention`,
/// `elementwise`, `reduction`, `norm`, `other`).
pub fn class_name(class: ComputeClass) -> &'static str {
    crate::fingerprint::class_name(class)
}

/// Every compute class, in the per-class arrays' order.
const CLASSES: [ComputeClass; 6] = [
    ComputeClass::Gemm,
    ComputeClass::Attention,
    ComputeClass::Elementwise,
    ComputeClass::Reduction,
    ComputeClass::Norm,
    ComputeClass::Other,
];

impl Fit {
    /// The file format's name.
    pub const FORMAT: &'static str = "concerto-hardware-fit";

    /// An empty fit of `base` (every value the base profile's).
    pub fn new(base: impl Into<String>, source: impl Into<String>) -> Fit {
        Fit {
            format: Fit::FORMAT.into(),
            version: 1,
            base: base.into(),
            source: source.into(),
            compute_scale: BTreeMap::new(),
            collective: None,
            collective_scale: BTreeMap::new(),
            min_kernel_ns: None,
            contention: None,
        }
    }

    /// The JSON file (pretty-printed).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a fit serialises")
    }

    /// Reads a fit file; errors say which field is wrong.
    pub fn from_json(text: &str) -> Result<Fit, GraphError> {
        let fit: Fit = serde_json::from_str(text).map_err(|e| GraphError::InvalidModel {
            reason: format!("hardware fit file: {e}"),
        })?;
        if fit.format != Fit::FORMAT || fit.version != 1 {
            return Err(GraphError::InvalidModel {
                reason: format!(
                    "hardware fit file: format `{}` version {} (expected `{}` version 1)",
                    fit.format,
                    fit.version,
                    Fit::FORMAT
                ),
            });
        }
        Ok(fit)
    }
}

impl Hardware {
    /// The base profile of `fit` with its adjustments (see the module docs). Errors on an
    /// unknown base, an unknown class, or a value that is not positive and finite.
    pub fn fitted(fit: &Fit) -> Result<Hardware, GraphError> {
        let bad = |what: String| GraphError::InvalidModel {
            reason: format!("hardware fit of `{}`: {what}", fit.base),
        };
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let mut hw = Hardware::by_name(&fit.base)?;
        for (name, &x) in &fit.compute_scale {
            let class = CLASSES
                .iter()
                .find(|c| class_name(**c) == name)
                .ok_or_else(|| bad(format!("unknown compute class `{name}`")))?;
            if !positive(x) {
                return Err(bad(format!("compute_scale.{name} = {x} is not positive")));
            }
            hw.compute_scale[class_index(*class)] = x;
        }
        if let Some(r) = &fit.collective {
            if !(positive(r.bytes_per_sec) && r.alpha_ns.is_finite() && r.alpha_ns >= 0.0) {
                return Err(bad(format!(
                    "collective ring {} B/s, alpha {} ns",
                    r.bytes_per_sec, r.alpha_ns
                )));
            }
            hw.intra = super::profile::IntraModel::Ring(Ring {
                bytes_per_sec: r.bytes_per_sec,
                alpha_ns: r.alpha_ns,
            });
        }
        for (name, &x) in &fit.collective_scale {
            let i = CollectiveKind::ALL
                .iter()
                .position(|k| k.as_str() == name)
                .ok_or_else(|| bad(format!("unknown collective kind `{name}`")))?;
            if !positive(x) {
                return Err(bad(format!(
                    "collective_scale.{name} = {x} is not positive"
                )));
            }
            hw.collective_scale[i] = x;
        }
        if let Some(ns) = fit.min_kernel_ns {
            hw.min_kernel_ns = ns;
        }
        if let Some(c) = fit.contention {
            hw = hw.with_contention(c)?;
        }
        hw.name = format!("{}+fit", fit.base);
        Ok(hw)
    }

    /// A built-in profile by name ([`Hardware::by_name`]), or, when `name` is not one and a
    /// file of that name exists, the fitted profile it holds ([`Hardware::fitted`]).
    pub fn load(name: &str) -> Result<Hardware, GraphError> {
        match Hardware::by_name(name) {
            Ok(hw) => Ok(hw),
            Err(e) => {
                let path = std::path::Path::new(name);
                if !path.is_file() {
                    return Err(e);
                }
                let text =
                    std::fs::read_to_string(path).map_err(|io| GraphError::InvalidModel {
                        reason: format!("reading hardware file {name}: {io}"),
                    })?;
                let fit = Fit::from_json(&text).map_err(|e| GraphError::InvalidModel {
                    reason: format!("{name}: {e}"),
                })?;
                Hardware::fitted(&fit)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{LinkClass, Op};

    #[test]
    fn a_fit_scales_classes_and_replaces_the_ring() {
        let mut fit = Fit::new("a100", "test");
        fit.compute_scale.insert("elementwise".into(), 2.0);
        fit.collective = Some(FitRing {
            bytes_per_sec: 1e9,
            alpha_ns: 100.0,
        });
        fit.min_kernel_ns = Some(3_000);
        fit.contention = Some(1.2);
        let back = Fit::from_json(&fit.to_json()).unwrap();
        assert_eq!(back, fit);
        let hw = Hardware::fitted(&fit).unwrap();
        assert_eq!(hw.name, "a100+fit");
        assert_eq!(hw.contention, 1.2);
        let base = Hardware::a100();
        let e = Op::compute("e", ComputeClass::Elementwise, 0, 1 << 30);
        // Twice the roofline time, rounded up once (not twice the rounded time).
        assert!(hw.op_ns(&e).abs_diff(base.op_ns(&e) * 2) <= 1);
        // The floor is the fitted one, and the class factor does not scale it.
        let tiny = Op::compute("t", ComputeClass::Elementwise, 0, 0);
        assert_eq!(hw.op_ns(&tiny), 3_000);
        // All-reduce of 1 GB over 2 ranks: 2 (1/2) 1e9 B / 1e9 B/s + 2 steps of 100 ns.
        let ar = CollectiveKind::AllReduce;
        assert_eq!(
            hw.collective_ns(ar, 1_000_000_000, 2, LinkClass::IntraNode),
            1_000_000_200
        );
    }

    #[test]
    fn bad_fits_are_named_errors() {
        let mut fit = Fit::new("a100", "test");
        fit.compute_scale.insert("gemmm".into(), 2.0);
        assert!(Hardware::fitted(&fit)
            .unwrap_err()
            .to_string()
            .contains("unknown compute class `gemmm`"));
        let mut fit = Fit::new("a100", "test");
        fit.compute_scale.insert("gemm".into(), -1.0);
        assert!(Hardware::fitted(&fit)
            .unwrap_err()
            .to_string()
            .contains("not positive"));
        let fit = Fit::new("tpu", "test");
        assert!(Hardware::fitted(&fit)
            .unwrap_err()
            .to_string()
            .contains("tpu"));
        let e = Fit::from_json(
            "{\"format\": \"x\", \"version\": 1, \"base\": \"a100\", \"source\": \"s\"}",
        )
        .unwrap_err();
        assert!(e.to_string().contains("concerto-hardware-fit"), "{e}");
        let e = Fit::from_json("{\"format\": \"concerto-hardware-fit\", \"version\": 1, \"base\": \"a100\", \"source\": \"s\", \"typo\": 1}").unwrap_err();
        assert!(e.to_string().contains("typo"), "{e}");
        assert!(Hardware::load("no-such-profile").is_err());
        assert_eq!(Hardware::load("v100").unwrap().name, "v100");
    }
}
