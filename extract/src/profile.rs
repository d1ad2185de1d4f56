//! Profile-guided costs: the measured kernel times of a `jax.profiler` trace put on the ops of
//! the HLO module they ran, as PGLE puts them on XLA's latency-hiding scheduler.
//!
//! [`KernelProfile::read`] reads the trace and keeps, for every instruction of one module, its
//! kernels' durations per step. A kernel is a complete event (`"ph": "X"`) with `args.hlo_op`
//! and `args.hlo_module`, on a GPU stream's line (`Stream #...`; the `XLA Ops` line repeats
//! them). The steps are the module's runs on the `XLA Modules` line when the trace has one;
//! otherwise each instruction's kernels are split in start order into as many steps as the
//! greatest common divisor of their counts. The events are read one at a time, keeping only
//! kernels and names, so memory grows with the device events, not the trace. [`KernelProfile::apply`]
//! costs each op of a graph imported from that module at the median over steps of its kernels'
//! summed device time; every op the profile does not name keeps the model's cost. An op of an
//! unrolled loop (`while.3.it2.fusion.1`) is the instruction `fusion.1` of the loop's body,
//! which ran once per iteration: its kernels of a step are split in time order between the
//! iterations. The report says the coverage (ops, and the model's time of the measured ops),
//! which ops kept the model's cost, and which instructions of the profile the module lacks
//! ([`ProfileReport::not_in_module`]; an error under `strict`, as PGLE's accuracy checker
//! makes them one).
//!
//! Cost: linear in the trace's events and the graph's ops, plus a sort of each instruction's
//! kernels by start time. Source of the format: the trace events `jax.profiler.trace` writes
//! (XLA's `xprof` conversion), as in `docs/fidelity-data/step_trace.json.gz`.

mod read;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use concerto_graph::{Graph, Hardware, OpId};
use serde::Serialize;

use crate::hlo::{self, Module};

/// Why a profile could not be read or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The file is not JSON, or an event is malformed (the message names the event).
    #[error("{0}")]
    Json(String),
    /// The trace has no kernel of the module, or its steps cannot be told apart.
    #[error("{0}")]
    Module(String),
    /// The profile names instructions the module lacks (strict mode), or none of its own.
    #[error("{0}")]
    Mismatch(String),
}

/// The measured kernels of one module's instructions (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelProfile {
    /// The module the kernels ran for (`args.hlo_module`).
    pub module: String,
    /// The device whose kernels were read (the trace's process name, or its id).
    pub device: String,
    /// Steps found.
    pub steps: usize,
    /// How the steps were told apart: `XLA Modules line` or `kernel counts`.
    pub steps_from: &'static str,
    /// Per instruction, per step, its kernels' durations (ns) in start order.
    pub kernels: BTreeMap<String, Vec<Vec<u64>>>,
    /// Per step, the sum of every kernel of the module (ns).
    pub step_kernel_ns: Vec<u64>,
}

/// What [`KernelProfile::apply`] did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileReport {
    /// The module of the profile.
    pub module: String,
    /// The device whose kernels were read.
    pub device: String,
    /// Steps of the profile.
    pub steps: usize,
    /// Ops of the graph.
    pub ops: usize,
    /// Ops whose cost came from the profile.
    pub measured_ops: usize,
    /// `100 measured_ops / ops`.
    pub instructions_pct: f64,
    /// The model's time of the measured ops, as a share of the model's time of every op.
    pub time_pct: f64,
    /// The median over steps of the module's summed kernel time (ns).
    pub step_kernel_ns: u64,
    /// Ops that kept the model's cost (graph order).
    pub from_model: Vec<String>,
    /// Instructions the profile names that no op of the graph is.
    pub not_in_module: Vec<String>,
    /// Instructions whose kernels could not be split evenly between their loop iterations
    /// (each got an equal share of the step's sum).
    pub uneven: Vec<String>,
}

/// The median of `v` (the lower of the two middle values for an even count: a measured time,
/// not an interpolation).
fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl KernelProfile {
    /// Reads the kernels of `module` (its name, `HloModule <name>`) from the trace `text`:
    /// see the module docs. A trace without a kernel of `module` is an error that lists the
    /// modules it has.
    pub fn read(text: &str, module: &str) -> Result<KernelProfile, ProfileError> {
        KernelProfile::read_from(text.as_bytes(), module)
    }

    /// [`KernelProfile::read`] from a stream, gzipped (by its magic number) or not: the trace
    /// is never held whole, only its device events. Cost: O(events) time, O(device events)
    /// memory.
    pub fn read_from<R: std::io::BufRead>(
        input: R,
        module: &str,
    ) -> Result<KernelProfile, ProfileError> {
        let ev = read::events(input)?;
        let is_stream = |pid: &str, tid: &str| {
            ev.threads.is_empty()
                || ev
                    .threads
                    .get(&(pid.to_string(), tid.to_string()))
                    .is_some_and(|n| n.starts_with("Stream #"))
        };
        let mut modules: BTreeMap<&str, usize> = BTreeMap::new();
        let mut devices: BTreeSet<&str> = BTreeSet::new();
        for e in &ev.events {
            if let (Some(m), true) = (&e.hlo_module, is_stream(&e.pid, &e.tid)) {
                *modules.entry(m.as_str()).or_default() += 1;
                if m == module {
                    devices.insert(e.pid.as_str());
                }
            }
        }
        let Some(&pid) = devices.iter().next() else {
            let have: Vec<String> = modules.iter().map(|(m, n)| format!("{m} ({n})")).collect();
            return Err(ProfileError::Module(format!(
                "the profile has no kernel of module `{module}`; it has kernels of {}",
                if have.is_empty() {
                    "no module (no event with `args.hlo_module`)".to_string()
                } else {
                    have.join(", ")
                }
            )));
        };
        let mut mine: Vec<&read::Event> = ev
            .events
            .iter()
            .filter(|e| {
                e.pid == pid && e.hlo_module.as_deref() == Some(module) && is_stream(&e.pid, &e.tid)
            })
            .collect();
        mine.sort_by(|a, b| a.ts_ns.total_cmp(&b.ts_ns).then(a.index.cmp(&b.index)));
        let windows = module_windows(&ev, pid, module);
        let device = ev
            .processes
            .get(pid)
            .cloned()
            .unwrap_or_else(|| pid.to_string());
        let (steps, steps_from, kernels) = match windows {
            Some(w) => (w.len(), "XLA Modules line", by_window(&mine, &w)?),
            None => by_counts(&mine)?,
        };
        let mut step_kernel_ns = vec![0u64; steps];
        for per_step in kernels.values() {
            for (s, k) in per_step.iter().enumerate() {
                step_kernel_ns[s] += k.iter().sum::<u64>();
            }
        }
        Ok(KernelProfile {
            module: module.to_string(),
            device,
            steps,
            steps_from,
            kernels,
            step_kernel_ns,
        })
    }

    /// The profile of its step `k` (0-based, in time order) alone; `None` past the last step.
    pub fn step(&self, k: usize) -> Option<KernelProfile> {
        let step_ns = *self.step_kernel_ns.get(k)?;
        Some(KernelProfile {
            module: self.module.clone(),
            device: self.device.clone(),
            steps: 1,
            steps_from: self.steps_from,
            kernels: self
                .kernels
                .iter()
                .map(|(n, s)| (n.clone(), vec![s.get(k).cloned().unwrap_or_default()]))
                .collect(),
            step_kernel_ns: vec![step_ns],
        })
    }

    /// The index of the step whose summed kernel time is the median (the lower middle one).
    pub fn median_step(&self) -> usize {
        let mut order: Vec<usize> = (0..self.step_kernel_ns.len()).collect();
        order.sort_by_key(|&k| (self.step_kernel_ns[k], k));
        order
            .get(order.len().saturating_sub(1) / 2)
            .copied()
            .unwrap_or(0)
    }

    /// The step a fit on step `fit` is checked on: the next one, else the one before; `None`
    /// for a profile of one step.
    pub fn held_out_step(&self, fit: usize) -> Option<usize> {
        if fit + 1 < self.steps {
            Some(fit + 1)
        } else {
            fit.checked_sub(1)
        }
    }

    /// Costs the ops of `graph`, imported from `module`, from the profile (see the module
    /// docs); `hardware` gives the model's costs for the coverage. Under `strict` an
    /// instruction of the profile that the graph lacks is an error; a profile that names no
    /// op of the graph always is one.
    pub fn apply(
        &self,
        graph: &Graph,
        module: &Module,
        hardware: &Hardware,
        strict: bool,
    ) -> Result<(Graph, ProfileReport), ProfileError> {
        let containers = hlo::pgle::containers(module);
        let mut by_instruction: BTreeMap<&str, Vec<OpId>> = BTreeMap::new();
        for v in graph.ids() {
            let (name, _) = hlo::pgle::split_name(&graph.op(v).name, &containers);
            by_instruction.entry(name).or_default().push(v);
        }
        let mut durations: BTreeMap<OpId, u64> = BTreeMap::new();
        let (mut not_in_module, mut uneven) = (Vec::new(), Vec::new());
        for (instruction, per_step) in &self.kernels {
            let Some(ops) = by_instruction.get(instruction.as_str()) else {
                not_in_module.push(instruction.clone());
                continue;
            };
            let mut even = true;
            let mut samples = vec![Vec::with_capacity(per_step.len()); ops.len()];
            for kernels in per_step {
                let sum: u64 = kernels.iter().sum();
                if kernels.len() % ops.len() == 0 && !kernels.is_empty() {
                    let c = kernels.len() / ops.len();
                    for (j, s) in samples.iter_mut().enumerate() {
                        s.push(kernels[j * c..(j + 1) * c].iter().sum());
                    }
                } else {
                    even = false;
                    samples
                        .iter_mut()
                        .for_each(|s| s.push(sum / ops.len() as u64));
                }
            }
            if !even {
                uneven.push(instruction.clone());
            }
            for (&v, s) in ops.iter().zip(samples) {
                durations.insert(v, median(s));
            }
        }
        if durations.is_empty() {
            return Err(ProfileError::Mismatch(format!(
                "the profile of module `{}` names none of the graph's {} ops (instructions {}): \
                 a profile of another module",
                self.module,
                graph.len(),
                self.kernels
                    .keys()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if strict && !not_in_module.is_empty() {
            return Err(ProfileError::Mismatch(format!(
                "the profile names {} instructions the module lacks: {}",
                not_in_module.len(),
                not_in_module
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let model = hardware.durations(graph);
        let total: u64 = model.iter().sum();
        let measured: u64 = durations.keys().map(|v| model[v.0]).sum();
        let from_model = graph
            .ids()
            .filter(|v| !durations.contains_key(v))
            .map(|v| graph.op(v).name.clone())
            .collect();
        let report = ProfileReport {
            module: self.module.clone(),
            device: self.device.clone(),
            steps: self.steps,
            ops: graph.len(),
            measured_ops: durations.len(),
            instructions_pct: 100.0 * durations.len() as f64 / graph.len().max(1) as f64,
            time_pct: 100.0 * measured as f64 / total.max(1) as f64,
            step_kernel_ns: median(self.step_kernel_ns.clone()),
            from_model,
            not_in_module,
            uneven,
        };
        let overrides: Vec<(OpId, u64)> = durations.into_iter().collect();
        Ok((graph.clone().with_durations(&overrides), report))
    }
}

/// The module's runs on the `XLA Modules` line of device `pid` (start, end in ns), when the
/// trace has that line.
fn module_windows(ev: &read::Events, pid: &str, module: &str) -> Option<Vec<(f64, f64)>> {
    let line = ev
        .threads
        .iter()
        .find(|((p, _), n)| p == pid && n.as_str() == "XLA Modules")
        .map(|((_, t), _)| t.as_str())?;
    let mut w: Vec<(f64, f64)> = ev
        .events
        .iter()
        .filter(|e| e.pid == pid && e.tid == line)
        .filter(|e| {
            e.name == module
                || e.name
                    .strip_prefix(module)
                    .is_some_and(|r| r.starts_with('('))
        })
        .map(|e| (e.ts_ns, e.ts_ns + e.dur_ns as f64))
        .collect();
    w.sort_by(|a, b| a.0.total_cmp(&b.0));
    (!w.is_empty()).then_some(w)
}

type PerStep = BTreeMap<String, Vec<Vec<u64>>>;

/// Kernels by instruction and step, each kernel in the module run that contains its start.
fn by_window(mine: &[&read::Event], windows: &[(f64, f64)]) -> Result<PerStep, ProfileError> {
    let mut out: PerStep = BTreeMap::new();
    for e in mine {
        let Some(s) = windows
            .iter()
            .position(|&(a, b)| e.ts_ns >= a && e.ts_ns <= b)
        else {
            continue;
        };
        let op = e.hlo_op.clone().unwrap_or_default();
        out.entry(op)
            .or_insert_with(|| vec![Vec::new(); windows.len()])[s]
            .push(e.dur_ns);
    }
    if out.is_empty() {
        return Err(ProfileError::Module(
            "no kernel of the module starts inside one of its runs on the `XLA Modules` line"
                .into(),
        ));
    }
    Ok(out)
}

/// Kernels by instruction and step when the trace has no modules line: every instruction's
/// kernels, in start order, split into `g` equal runs, `g` the gcd of their counts.
fn by_counts(mine: &[&read::Event]) -> Result<(usize, &'static str, PerStep), ProfileError> {
    let mut all: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for e in mine {
        all.entry(e.hlo_op.clone().unwrap_or_default())
            .or_default()
            .push(e.dur_ns);
    }
    let steps = all.values().fold(0, |g, k| gcd(g, k.len()));
    if steps == 0 {
        return Err(ProfileError::Module(
            "the profile has no kernel of the module".into(),
        ));
    }
    let out = all
        .into_iter()
        .map(|(op, k)| {
            let c = k.len() / steps;
            let per_step = (0..steps).map(|s| k[s * c..(s + 1) * c].to_vec()).collect();
            (op, per_step)
        })
        .collect();
    Ok((steps, "kernel counts", out))
}

/// [`KernelProfile::read`] and [`KernelProfile::apply`] for an input already read
/// ([`crate::Imported`], from its parsed module, not the file again): `trace` is the
/// `jax.profiler` trace, `path` the file the input was read from. Errors name the files.
pub fn apply_imported(
    imported: &crate::Imported,
    path: &std::path::Path,
    trace: &std::path::Path,
    hardware: &Hardware,
    strict: bool,
) -> Result<(Graph, ProfileReport), String> {
    let Some(source) = &imported.hlo else {
        return Err(not_a_module(path));
    };
    apply_trace_file(
        &imported.graph,
        &source.module,
        path,
        trace,
        hardware,
        strict,
    )
}

/// The error of a profile given for what is no HLO module.
fn not_a_module(path: &std::path::Path) -> String {
    format!(
        "a profile costs the ops of an HLO module (.hlo, .txt), not {}",
        path.display()
    )
}

/// Reads the profile at `trace` and costs `graph`, imported from `m` (read from `module`).
fn apply_trace_file(
    graph: &Graph,
    m: &Module,
    module: &std::path::Path,
    trace: &std::path::Path,
    hardware: &Hardware,
    strict: bool,
) -> Result<(Graph, ProfileReport), String> {
    let file =
        std::fs::File::open(trace).map_err(|e| format!("reading {}: {e}", trace.display()))?;
    let profile = KernelProfile::read_from(std::io::BufReader::new(file), &m.name)
        .map_err(|e| format!("reading profile {}: {e}", trace.display()))?;
    profile.apply(graph, m, hardware, strict).map_err(|e| {
        format!(
            "costing {} from profile {}: {e}",
            module.display(),
            trace.display()
        )
    })
}
