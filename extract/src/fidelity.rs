//! The cost model against measured kernels: per kernel class, per instruction and for the
//! whole step ([`Fidelity`], which `concerto fidelity` prints).
//!
//! Two sources of measurements:
//!
//! - an HLO module and a `jax.profiler` trace of it ([`Fidelity::of_module`]): each
//!   instruction's measured time is what [`KernelProfile::apply`] gives it (the median over
//!   steps of its kernels' summed device time), and its class is read from the module, as XLA
//!   emits it: cuBLAS calls and GEMM fusions (batched when b > 1), Triton block-level fusions
//!   (`"kind":"__triton"`: softmax, normalisation), loop and input fusions (`kind=kLoop`,
//!   `kind=kInput`), other fusions by kind, collectives, and everything else by opcode. The
//!   step's measured time is the median over steps of the module's summed kernel time;
//! - a graph whose ops carry measured durations, such as a PyTorch profiler trace's import
//!   ([`Fidelity::of_measured_graph`]): classes are concerto's own (GEMMs split by batch
//!   where the op has a shape, "GEMM, no shape" where it has none), and the step is the
//!   measured ops' summed time against the model's sum for them.
//!
//! Only measured ops enter the class rows, so each row compares the same kernels. For a
//! module, the model's step is the caller's simulated makespan of its own schedule. Error % is
//! `100 (modelled - measured) / measured`. Cost: O(ops + instructions).

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{CollectiveKind, ComputeClass, Graph, Hardware, Op, OpKind};
use serde::Serialize;

use crate::hlo::{self, Instruction, Module};
use crate::profile::{KernelProfile, ProfileError};

/// The step's time, measured and modelled.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepFidelity {
    /// Measured (ns): see the module docs.
    pub measured_ns: u64,
    /// Modelled (ns): the simulated makespan of the module's own schedule.
    pub modelled_ns: u64,
    /// `100 (modelled - measured) / measured`.
    pub error_pct: f64,
}

/// One kernel class: its measured instructions' summed times.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassFidelity {
    /// The class (see the module docs).
    pub class: String,
    /// Measured instructions (ops) of the class.
    pub instructions: usize,
    /// Their measured time (ns).
    pub measured_ns: u64,
    /// Their modelled time (ns).
    pub modelled_ns: u64,
    /// `100 (modelled - measured) / measured`.
    pub error_pct: f64,
}

/// One measured op.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpFidelity {
    /// The op (the instruction's name, for an HLO module).
    pub name: String,
    /// Its class.
    pub class: String,
    /// Measured (ns).
    pub measured_ns: u64,
    /// Modelled (ns).
    pub modelled_ns: u64,
    /// `100 (modelled - measured) / measured`.
    pub error_pct: f64,
}

/// How much of the step was measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coverage {
    /// Measured ops as a share of all ops (%).
    pub instructions_pct: f64,
    /// The model's time of the measured ops as a share of the model's time of all ops (%).
    pub time_pct: f64,
}

/// The model against the measurements (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fidelity {
    /// The step.
    pub step: StepFidelity,
    /// Per class, largest measured time first.
    pub classes: Vec<ClassFidelity>,
    /// Coverage of the measurements.
    pub coverage: Coverage,
    /// Every measured op, largest absolute difference first.
    pub ops: Vec<OpFidelity>,
    /// Measured ops that carry neither flops nor bytes (a profiler trace without shapes): the
    /// model can give them only the kernel floor or a collective's latency.
    pub shapeless: usize,
}

/// Whether `op` carries nothing the model can cost from: a compute op with neither flops nor
/// bytes, a collective without bytes.
pub(crate) fn shapeless(op: &Op) -> bool {
    match op.kind {
        OpKind::Compute { flops, bytes, .. } => flops == 0 && bytes == 0,
        OpKind::Collective { bytes, .. } => bytes == 0,
    }
}

/// `100 (model - measured) / measured`, 0 when nothing was measured.
fn error_pct(model: u64, measured: u64) -> f64 {
    if measured == 0 {
        0.0
    } else {
        100.0 * (model as f64 - measured as f64) / measured as f64
    }
}

/// The GEMM class of an op with a shape: batched when b > 1.
fn gemm_class(op: &Op) -> Option<&'static str> {
    match op.kind {
        OpKind::Compute { gemm: Some(g), .. } if g.b > 1 => Some("GEMM, batched"),
        OpKind::Compute { gemm: Some(_), .. } => Some("GEMM"),
        _ => None,
    }
}

/// The class of a collective: `collectives (<kind>)`.
fn collective_class(kind: CollectiveKind) -> String {
    format!("collectives ({kind:?})").to_lowercase()
}

/// The class of the kernel XLA emits for instruction `i` of a module (see the module docs);
/// `op` is its graph op.
fn hlo_class(i: &Instruction, op: &Op) -> String {
    if let OpKind::Collective { kind, .. } = op.kind {
        return collective_class(kind);
    }
    if let Some(g) = gemm_class(op) {
        return g.to_string();
    }
    let raw = |name: &str| i.attribute(name).map(|a| a.value.as_str()).unwrap_or("");
    if i.opcode == "fusion" {
        if raw("backend_config").contains("\"kind\":\"__triton\"") {
            return "Triton block-level fusions".into();
        }
        return match raw("kind") {
            "kLoop" => "loop fusions".into(),
            "kInput" => "input fusions".into(),
            k => format!("other fusions ({k})"),
        };
    }
    format!("other ({})", i.opcode)
}

/// The per-op rows as they are gathered.
struct Rows {
    ops: Vec<OpFidelity>,
    shapeless: usize,
    all_model_ns: u64,
    total_ops: usize,
}

impl Rows {
    fn new(total_ops: usize) -> Rows {
        Rows {
            ops: Vec::new(),
            shapeless: 0,
            all_model_ns: 0,
            total_ops,
        }
    }

    /// Counts `model` ns of the model's time, and `op` as a row when it was measured.
    fn add(&mut self, op: &Op, class: impl FnOnce() -> String, model: u64, measured: Option<u64>) {
        self.all_model_ns += model;
        let Some(measured_ns) = measured else {
            return;
        };
        self.shapeless += usize::from(shapeless(op));
        self.ops.push(OpFidelity {
            name: op.name.clone(),
            class: class(),
            measured_ns,
            modelled_ns: model,
            error_pct: error_pct(model, measured_ns),
        });
    }
}

impl Fidelity {
    /// The model of `graph` (imported from `module`) on `hardware`, durations the graph carries
    /// included (profile-guided costs), against `profile`'s kernels; `modelled_step_ns` is the
    /// simulated makespan of the module's own schedule. A profile of another module is an
    /// error ([`KernelProfile::apply`]).
    pub fn of_module(
        graph: &Graph,
        module: &Module,
        profile: &KernelProfile,
        hardware: &Hardware,
        modelled_step_ns: u64,
    ) -> Result<Fidelity, ProfileError> {
        let (measured, report) = profile.apply(graph, module, hardware, false)?;
        let unmeasured: BTreeSet<&str> = report.from_model.iter().map(String::as_str).collect();
        let containers = hlo::pgle::containers(module);
        let instructions: BTreeMap<&str, &Instruction> = module
            .computations
            .iter()
            .flat_map(|c| &c.instructions)
            .map(|i| (i.name.as_str(), i))
            .collect();
        let mut rows = Rows::new(graph.len());
        for (op, m) in graph.ops().zip(measured.ops()) {
            // The model's graph may carry durations of its own (profile-guided costs).
            let taken = !unmeasured.contains(op.name.as_str());
            let class = || {
                let (name, _) = hlo::pgle::split_name(&op.name, &containers);
                match instructions.get(name) {
                    Some(i) => hlo_class(i, op),
                    None => "other".into(),
                }
            };
            let measured_ns = m.duration_ns.unwrap_or(0);
            rows.add(op, class, hardware.op_ns(op), taken.then_some(measured_ns));
        }
        Ok(rows.into_fidelity(report.step_kernel_ns, modelled_step_ns))
    }

    /// The model of `graph` on `hardware` against the measured durations its ops carry (ops
    /// without one are left out). The step is their summed measured time against the model's
    /// sum for the same ops: a trace's own schedule carries the host's launch gaps.
    pub fn of_measured_graph(graph: &Graph, hardware: &Hardware) -> Fidelity {
        let mut rows = Rows::new(graph.len());
        for op in graph.ops() {
            let class = || match (gemm_class(op), &op.kind) {
                (Some(g), _) => g.to_string(),
                (None, OpKind::Collective { kind, .. }) => collective_class(*kind),
                (None, OpKind::Compute { class, .. }) if *class == ComputeClass::Gemm => {
                    "GEMM, no shape".to_string()
                }
                (None, OpKind::Compute { class, .. }) => {
                    concerto_graph::hardware::class_name(*class).to_string()
                }
            };
            rows.add(op, class, hardware.model_ns(op), op.duration_ns);
        }
        let measured: u64 = rows.ops.iter().map(|o| o.measured_ns).sum();
        let modelled: u64 = rows.ops.iter().map(|o| o.modelled_ns).sum();
        rows.into_fidelity(measured, modelled)
    }
}

impl Rows {
    /// The class rows, coverage and sorted ops.
    fn into_fidelity(mut self, measured_step_ns: u64, modelled_step_ns: u64) -> Fidelity {
        let mut by_class: BTreeMap<&str, (usize, u64, u64)> = BTreeMap::new();
        let mut measured_model_ns = 0u64;
        for o in &self.ops {
            let e = by_class.entry(o.class.as_str()).or_default();
            e.0 += 1;
            e.1 += o.measured_ns;
            e.2 += o.modelled_ns;
            measured_model_ns += o.modelled_ns;
        }
        let mut classes: Vec<ClassFidelity> = by_class
            .into_iter()
            .map(|(class, (n, meas, model))| ClassFidelity {
                class: class.to_string(),
                instructions: n,
                measured_ns: meas,
                modelled_ns: model,
                error_pct: error_pct(model, meas),
            })
            .collect();
        classes.sort_by(|a, b| {
            b.measured_ns
                .cmp(&a.measured_ns)
                .then(a.class.cmp(&b.class))
        });
        let coverage = Coverage {
            instructions_pct: 100.0 * self.ops.len() as f64 / self.total_ops.max(1) as f64,
            time_pct: 100.0 * measured_model_ns as f64 / self.all_model_ns.max(1) as f64,
        };
        self.ops.sort_by(|a, b| {
            let d = |o: &OpFidelity| o.modelled_ns.abs_diff(o.measured_ns);
            d(b).cmp(&d(a)).then(a.name.cmp(&b.name))
        });
        Fidelity {
            step: StepFidelity {
                measured_ns: measured_step_ns,
                modelled_ns: modelled_step_ns,
                error_pct: error_pct(modelled_step_ns, measured_step_ns),
            },
            classes,
            coverage,
            ops: self.ops,
            shapeless: self.shapeless,
        }
    }
}

#[cfg(test)]
mod tests;
