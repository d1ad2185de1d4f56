//! What a [`Pipeline`] is asked and given: its options ([`Config`], with the decomposition,
//! noise and memory-budget choices) and its solvers ([`Solvers`]).

use std::sync::Arc;
use std::time::Instant;

use concerto_decomp::fuse::FuseConfig;
use concerto_decomp::select::SelectConfig;
use concerto_decomp::Axis;
use concerto_graph::{Graph, Hardware, StreamPlan};
use concerto_rcpsp::joint::JointConfig;
use concerto_rcpsp::{ModalSolver, Selector, Solver};

#[cfg(doc)]
use super::Pipeline;
use crate::error::PipelineError;
use crate::schedule::ScheduleConfig;
#[cfg(doc)]
use concerto_decomp::select::select;

/// Whether and how to decompose computation around critical collectives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Decompose {
    /// Schedule only (S).
    #[default]
    Off,
    /// Choose decompositions with the exact selection ([`concerto_decomp::select::select_exact`] with the
    /// [`Solvers::selector`]), then schedule the rewritten graph (S+AD).
    Sequential,
    /// Choose decompositions greedily, re-evaluating after each ([`select`]), then schedule.
    Greedy,
    /// Sequential first, then decide every region's decomposition together with the order
    /// around it (exact windows over the union of all candidates, with
    /// [`Solvers::modal`]).
    Joint,
}

/// Which decomposition families the selection tries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Families {
    /// Both: splits into chunks and collective-matmul rings.
    #[default]
    All,
    /// Concerto's splits into chunks only.
    Split,
    /// Collective-matmul rings only (Wang et al., ASPLOS 2023).
    Ring,
}

impl Families {
    /// The selection options of these families with a split slowdown (`None`: the measured
    /// tables).
    pub fn select_config(self, slowdown: Option<f64>) -> SelectConfig {
        let defaults = SelectConfig::default();
        SelectConfig {
            slowdown,
            axes: match self {
                Families::Ring => Vec::<Axis>::new(),
                _ => defaults.axes.clone(),
            },
            rings: self != Families::Split,
            ..defaults
        }
    }
}

/// Noise re-simulation: every duration scaled by an independent factor in `[1 - pct/100,
/// 1 + pct/100]`, `samples` times.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseConfig {
    /// Half-width of the perturbation, in percent (`0 <= pct < 100`).
    pub pct: f64,
    /// Samples (at least 1).
    pub samples: usize,
}

/// A memory budget: bytes, or a percentage of the peak of the graph's program order
/// (simulated on the configuration's hardware, [`concerto_graph::memory`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum MemoryBudget {
    /// Bytes, resident bytes included.
    Bytes(u64),
    /// Percent of program order's peak (100 = the peak the program order reaches).
    Percent(f64),
}

impl MemoryBudget {
    /// Parses `BYTES`, `BYTES` with a `KiB`/`MiB`/`GiB` suffix, or `PCT%`; the error names the
    /// input.
    ///
    /// ```
    /// use concerto_pipeline::MemoryBudget;
    /// assert_eq!(MemoryBudget::parse("100%"), Ok(MemoryBudget::Percent(100.0)));
    /// assert_eq!(MemoryBudget::parse("2GiB"), Ok(MemoryBudget::Bytes(2 << 30)));
    /// assert!(MemoryBudget::parse("lots").unwrap_err().contains("`lots`"));
    /// ```
    pub fn parse(text: &str) -> Result<MemoryBudget, String> {
        let t = text.trim();
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("memory budget `{text}`: `{p}` is not a number"))?;
            if !(v.is_finite() && v > 0.0) {
                return Err(format!(
                    "memory budget `{text}`: the percentage must be positive"
                ));
            }
            return Ok(MemoryBudget::Percent(v));
        }
        let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
            Some(i) => t.split_at(i),
            None => (t, ""),
        };
        let scale: u64 = match unit.trim() {
            "" | "B" => 1,
            "KiB" => 1 << 10,
            "MiB" => 1 << 20,
            "GiB" => 1 << 30,
            u => {
                return Err(format!(
                    "memory budget `{text}`: unknown unit `{u}` (bytes, KiB, MiB, GiB or PCT%)"
                ))
            }
        };
        let v: u64 = digits
            .parse()
            .map_err(|_| format!("memory budget `{text}`: expected BYTES, BYTES GiB or PCT%"))?;
        v.checked_mul(scale)
            .filter(|b| *b > 0)
            .map(MemoryBudget::Bytes)
            .ok_or_else(|| format!("memory budget `{text}`: must be positive and fit in 64 bits"))
    }

    /// The budget in bytes for `graph` on `hardware` (a percentage of its program order's
    /// peak, rounded down). Cost: one simulation for a percentage.
    pub fn bytes(self, graph: &Graph, hardware: &Hardware) -> Result<u64, PipelineError> {
        match self {
            MemoryBudget::Bytes(b) => Ok(b),
            MemoryBudget::Percent(p) => {
                let plan = StreamPlan::program_order(graph)?;
                let t = concerto_graph::simulate(
                    graph,
                    &plan,
                    &hardware.checked_durations(graph)?,
                    hardware.contention,
                )?;
                Ok((t.peak_memory_bytes(graph) as f64 * p / 100.0).floor() as u64)
            }
        }
    }
}

/// Options of a [`Pipeline`].
#[derive(Clone, Debug)]
pub struct Config {
    /// The hardware profile: durations, links and contention.
    pub hardware: Hardware,
    /// The S step's options (also used for every rewritten graph).
    pub schedule: ScheduleConfig,
    /// Whether and how to decompose.
    pub decompose: Decompose,
    /// The decomposition selection's options ([`Families::select_config`]).
    pub select: SelectConfig,
    /// The joint windows' options.
    pub joint: JointConfig,
    /// Whether to fuse collectives (the S+F row).
    pub fuse: bool,
    /// The fusion's options.
    pub fuse_config: FuseConfig,
    /// Noise re-simulation of every S plan, when given.
    pub noise: Option<NoiseConfig>,
    /// A memory budget that every step keeps (S, and the rewritten graphs of S+AD, joint and
    /// S+F), resolved against the graph given to [`Pipeline::run`] (or to the step called);
    /// it replaces [`ScheduleConfig::memory_budget`]. A rewrite whose graph has no plan within
    /// it is not kept (S+AD, joint); fusion fails with the error. Default none.
    pub memory_budget: Option<MemoryBudget>,
    /// When the call's time limit ([`ScheduleConfig::time_limit`]) began: set it before
    /// reading the graph so that the import counts too. `None`: when [`Pipeline::run`] is
    /// called.
    pub started: Option<Instant>,
}

impl Config {
    /// The defaults on `hardware`: schedule only, no fusion, no noise.
    pub fn new(hardware: Hardware) -> Self {
        Self {
            hardware,
            schedule: ScheduleConfig::default(),
            decompose: Decompose::Off,
            select: SelectConfig::default(),
            joint: JointConfig::default(),
            fuse: false,
            fuse_config: FuseConfig::default(),
            noise: None,
            memory_budget: None,
            started: None,
        }
    }
}

/// The solvers a pipeline uses, as trait objects (from `concerto_backends::registry()`, or
/// your own).
#[derive(Clone)]
pub struct Solvers {
    /// The exact solver inside the odd-even windows of every schedule.
    pub solver: Arc<dyn Solver>,
    /// The modal solver of the joint windows (needed by [`Decompose::Joint`] only).
    pub modal: Option<Arc<dyn ModalSolver>>,
    /// The decomposition choice of [`Decompose::Sequential`] and [`Decompose::Joint`].
    pub selector: Arc<dyn Selector>,
}

impl Solvers {
    /// `solver` for the windows, no modal solver, exact selection by enumeration.
    pub fn new(solver: Arc<dyn Solver>) -> Self {
        Self {
            solver,
            modal: None,
            selector: Arc::new(concerto_rcpsp::Enumeration),
        }
    }

    /// With `modal` for the joint windows.
    pub fn with_modal(mut self, modal: Arc<dyn ModalSolver>) -> Self {
        self.modal = Some(modal);
        self
    }

    /// With `selector` for the decomposition choice.
    pub fn with_selector(mut self, selector: Arc<dyn Selector>) -> Self {
        self.selector = selector;
        self
    }
}

impl std::fmt::Debug for Solvers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Solvers")
            .field("solver", &self.solver.name())
            .field("modal", &self.modal.as_ref().map(|m| m.name().to_string()))
            .field("selector", &self.selector.name())
            .finish()
    }
}
