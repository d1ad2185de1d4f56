//! One call of the whole pipeline: schedule (S), decompositions (S+AD), joint, fusion, noise.
//!
//! [`Pipeline::run`] flows down the floors once: it schedules the graph ([`schedule`]),
//! chooses decompositions around the critical collectives with the [`Selector`] it was given
//! and schedules the rewritten graph (S+AD), decides decompositions and order together with
//! the modal solver it was given (joint), fuses collectives under concerto's plan (S+F), and
//! re-simulates every plan under noise. Each rewrite is kept only by [`policy::keep`], so
//! joint <= S+AD <= S and fused <= S hold in every [`Report`]. Solvers come in as trait objects
//! ([`Solvers`]); this crate depends on no backend.

use std::sync::Arc;
use std::time::{Duration, Instant};

use concerto_decomp::fuse::{fuse_under, mapped_order, FuseConfig, Fused};
use concerto_decomp::joint::{solve_joint, union, Candidate, JointSolveConfig, JointStart};
use concerto_decomp::select::{
    candidates, select, select_among, Decomposition, Scored, SelectConfig, Selected,
};
use concerto_decomp::Axis;
use concerto_graph::lower::schedule_of;
use concerto_graph::{Graph, Hardware, OpId, StreamPlan};
use concerto_rcpsp::joint::JointConfig;
use concerto_rcpsp::{Limits, ModalSolver, Selector, Solver};

use crate::error::PipelineError;
use crate::noise::{noise, NoiseStats};
use crate::policy;
use crate::progress::Progress;
use crate::schedule::{schedule, Optimized, ScheduleConfig, Scheduled};

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
                    &hardware.durations(graph),
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

/// Decomposition candidates measured on a graph ([`candidates`]): its evaluated makespan and
/// every candidate that gains alone.
pub type Measured = (u64, Vec<Scored>);

/// The S+AD step: the decompositions chosen and the rewritten graph's schedule.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug)]
pub struct Decomposed {
    /// The selection (its graph is the rewritten one; the input when nothing was chosen).
    pub selected: Selected,
    /// The rewritten graph's schedule (`None` when nothing was chosen).
    pub schedule: Option<Optimized>,
    /// Whether the rewrite is kept ([`policy::keep`] against S).
    pub kept: bool,
    /// S+AD as reported: the rewritten graph's makespan when kept, else S's.
    pub makespan_ns: u64,
    /// The exact selection's candidates (the input's evaluated makespan and every candidate
    /// that gains alone); `None` after a greedy selection. The joint step builds its union
    /// from them instead of measuring them again.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub candidates: Option<Measured>,
    /// Selection plus scheduling of the rewritten graph.
    pub time: Duration,
}

impl Decomposed {
    /// The decompositions applied in the reported result (none when the rewrite was not kept).
    pub fn applied(&self) -> &[Decomposition] {
        if self.kept {
            &self.selected.decompositions
        } else {
            &[]
        }
    }

    /// When the selection chose decompositions whose schedule is longer than S: that makespan
    /// and how many were dropped.
    pub fn rejected(&self) -> Option<(u64, usize)> {
        match &self.schedule {
            Some(o) if !self.kept => Some((
                o.concerto().makespan_ns(),
                self.selected.decompositions.len(),
            )),
            _ => None,
        }
    }
}

/// The joint step.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug)]
pub struct Joint {
    /// The graph of the joint choice and its schedule (`None` when there was no candidate).
    pub result: Option<(Graph, Optimized)>,
    /// The candidates the joint choice applies (`<collective> <axis>/<n>`).
    pub chosen: Vec<String>,
    /// Regions of the union graph.
    pub regions: usize,
    /// Windows that changed a region's mode.
    pub mode_changes: usize,
    /// Windows the modal solver refused as too large.
    pub skipped: usize,
    /// Whether the joint plan is kept ([`policy::keep`] against the S+AD it started from).
    pub kept: bool,
    /// The joint makespan as reported: the joint plan's when kept, else the start's (S+AD).
    pub makespan_ns: u64,
    /// Why the joint plan is not the result, when it is not.
    pub note: Option<String>,
    /// Candidates, union, windows and the final schedule.
    pub time: Duration,
}

/// The fusion step (S+F).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug)]
pub struct Fusion {
    /// The buckets and the fused graph.
    pub fused: Fused,
    /// The fused graph's schedule.
    pub schedule: Optimized,
    /// Whether the fused graph is kept ([`policy::keep`] against S).
    pub kept: bool,
    /// S+F as reported: the fused graph's makespan when kept, else S's.
    pub makespan_ns: u64,
    /// Bucket search plus scheduling of the fused graph.
    pub time: Duration,
}

impl Fusion {
    /// Why the fused graph is not the result, when it is not kept.
    pub fn note(&self) -> Option<String> {
        (!self.kept).then(|| {
            format!(
                "fusion not kept: {} bucket(s) scheduled to {:.3} ms, longer than unfused",
                self.fused.buckets.len(),
                self.schedule.concerto().makespan_ns() as f64 / 1e6
            )
        })
    }

    /// Collective calls of the reported result: the fused graph's when kept, else `unfused`'s.
    pub fn calls_after(&self, unfused: &Optimized) -> usize {
        if self.kept {
            self.schedule.collectives
        } else {
            unfused.collectives
        }
    }
}

/// A row of the report whose plan is a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Row {
    /// Schedule only.
    S,
    /// Schedule plus decompositions.
    Decomposed,
    /// Decompositions and order decided together.
    Joint,
    /// Collectives fused.
    Fused,
}

impl Row {
    /// `S`, `S+AD`, `joint` or `S+F`.
    pub fn as_str(self) -> &'static str {
        match self {
            Row::S => "S",
            Row::Decomposed => "S+AD",
            Row::Joint => "joint",
            Row::Fused => "S+F",
        }
    }
}

/// What [`Pipeline::run`] found.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Clone, Debug)]
pub struct Report {
    /// The input graph.
    pub graph: Graph,
    /// The hardware profile's name.
    pub hardware: String,
    /// S: the baselines and concerto's schedule of the input graph.
    pub schedule: Optimized,
    /// S+AD, when decompositions were asked for.
    pub decomposed: Option<Decomposed>,
    /// Joint, when asked for.
    pub joint: Option<Joint>,
    /// S+F, when fusion was asked for.
    pub fusion: Option<Fusion>,
    /// Mean and worst makespan under noise of each S plan (in [`Optimized::results`]
    /// order), when asked for.
    pub noise: Option<Vec<NoiseStats>>,
    /// The noise measured, when asked for.
    pub noise_config: Option<NoiseConfig>,
    /// The row whose plan is the result (the shortest kept row; on a tie the later one).
    pub kept: Row,
    /// Wall time of the call.
    pub time: Duration,
}

impl Report {
    /// S's simulated makespan (concerto's plan of the input graph).
    pub fn s_ns(&self) -> u64 {
        self.schedule.concerto().makespan_ns()
    }

    /// The graph and concerto's plan of `row` when that row ran and its rewrite is kept (S
    /// always).
    pub fn row(&self, row: Row) -> Option<(&Graph, &Scheduled)> {
        match row {
            Row::S => Some((&self.graph, self.schedule.concerto())),
            Row::Decomposed => self.decomposed.as_ref().and_then(|d| {
                let o = d.schedule.as_ref().filter(|_| d.kept)?;
                Some((&d.selected.graph, o.concerto()))
            }),
            Row::Joint => self.joint.as_ref().and_then(|j| {
                let (g, o) = j.result.as_ref().filter(|_| j.kept)?;
                Some((g, o.concerto()))
            }),
            Row::Fused => self
                .fusion
                .as_ref()
                .filter(|f| f.kept)
                .map(|f| (&f.fused.graph, f.schedule.concerto())),
        }
    }

    /// The result: the graph and plan of [`Report::kept`].
    pub fn result(&self) -> (&Graph, &Scheduled) {
        self.row(self.kept).expect("the kept row always ran")
    }
}

/// The pipeline: a configuration and the solvers (see the module docs).
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// Options.
    pub config: Config,
    /// Solvers.
    pub solvers: Solvers,
}

impl Pipeline {
    /// A pipeline with `config` and `solvers`.
    pub fn new(config: Config, solvers: Solvers) -> Self {
        Self { config, solvers }
    }

    /// Runs every step the configuration asks for on `graph` (see the module docs), telling
    /// `progress` which step runs. The time limit ([`ScheduleConfig::time_limit`]) covers the
    /// whole call from [`Config::started`]: each search step (S, S+AD, joint, S+F) gets an
    /// equal share of what is left when it begins.
    pub fn run(&self, graph: &Graph, progress: &dyn Progress) -> Result<Report, PipelineError> {
        if let Some(resolved) = self.resolved(graph)? {
            return resolved.run(graph, progress);
        }
        let began = self.config.started.unwrap_or_else(Instant::now);
        let deadline = self.config.schedule.time_limit.map(|t| began + t);
        let searches = 1
            + u32::from(self.config.decompose != Decompose::Off)
            + u32::from(self.config.decompose == Decompose::Joint)
            + u32::from(self.config.fuse);
        let mut done = 0u32;
        let mut share = || {
            let left = searches - done;
            done += 1;
            deadline.map(|d| d.saturating_duration_since(Instant::now()) / left.max(1))
        };
        if self.config.decompose == Decompose::Joint && self.solvers.modal.is_none() {
            return Err(PipelineError::InvalidConfig {
                reason: "joint mode needs a modal solver (Solvers::with_modal)".into(),
            });
        }
        let steps = 1
            + u64::from(self.config.decompose != Decompose::Off)
            + u64::from(self.config.decompose == Decompose::Joint)
            + u64::from(self.config.fuse)
            + u64::from(self.config.noise.is_some());
        progress.start(graph.name(), Some(steps));
        let s = self.schedule_within(graph, Vec::new(), share())?;
        progress.advance(1, "S");
        let s_ns = s.concerto().makespan_ns();
        let decomposed = match self.config.decompose {
            Decompose::Off => None,
            _ => {
                let d = self.decompose_within(graph, s_ns, share())?;
                progress.advance(1, "S+AD");
                Some(d)
            }
        };
        let joint = match (&decomposed, self.config.decompose) {
            (Some(d), Decompose::Joint) => {
                let j = self.joint_among(
                    graph,
                    d.candidates.clone(),
                    d.applied(),
                    d.makespan_ns,
                    share(),
                )?;
                progress.advance(1, "joint");
                Some(j)
            }
            _ => None,
        };
        let fusion = if self.config.fuse {
            let f = self.fuse_within(graph, &s, share())?;
            progress.advance(1, "S+F");
            Some(f)
        } else {
            None
        };
        let noise = match self.config.noise {
            Some(n) => {
                let plans: Vec<_> = s.results.iter().map(|r| &r.plan).collect();
                let stats = noise(
                    graph,
                    &plans,
                    &s.durations,
                    s.contention,
                    n.pct,
                    n.samples,
                    self.config.schedule.seed,
                )?;
                progress.advance(1, "noise");
                Some(stats)
            }
            None => None,
        };
        progress.finish();
        let mut report = Report {
            graph: graph.clone(),
            hardware: self.config.hardware.name.clone(),
            noise_config: self.config.noise,
            schedule: s,
            decomposed,
            joint,
            fusion,
            noise,
            kept: Row::S,
            time: Duration::ZERO,
        };
        let mut best = report.s_ns();
        for row in [Row::Decomposed, Row::Joint, Row::Fused] {
            if let Some((_, p)) = report.row(row) {
                if policy::keep(p.makespan_ns(), best) {
                    best = p.makespan_ns();
                    report.kept = row;
                }
            }
        }
        report.time = began.elapsed();
        Ok(report)
    }

    /// This pipeline with [`Config::memory_budget`] resolved to bytes on `graph` (into
    /// [`ScheduleConfig::memory_budget`]), or `None` when there is none to resolve.
    fn resolved(&self, graph: &Graph) -> Result<Option<Pipeline>, PipelineError> {
        let Some(budget) = self.config.memory_budget else {
            return Ok(None);
        };
        let bytes = budget.bytes(graph, &self.config.hardware)?;
        let mut config = self.config.clone();
        config.memory_budget = None;
        config.schedule.memory_budget = Some(bytes);
        Ok(Some(Pipeline::new(config, self.solvers.clone())))
    }

    /// The S step on `graph` with `hints` competing with concerto's own starts
    /// ([`schedule`]), within the configuration's time limit.
    pub fn schedule(
        &self,
        graph: &Graph,
        hints: Vec<StreamPlan>,
    ) -> Result<Optimized, PipelineError> {
        if let Some(resolved) = self.resolved(graph)? {
            return resolved.schedule(graph, hints);
        }
        self.schedule_within(graph, hints, self.config.schedule.time_limit)
    }

    /// [`Pipeline::schedule`] within `time_limit`.
    fn schedule_within(
        &self,
        graph: &Graph,
        hints: Vec<StreamPlan>,
        time_limit: Option<Duration>,
    ) -> Result<Optimized, PipelineError> {
        let config = ScheduleConfig {
            hints,
            time_limit,
            ..self.config.schedule.clone()
        };
        schedule(
            graph,
            &self.config.hardware,
            self.solvers.solver.clone(),
            &config,
        )
    }

    /// The decompositions the configuration's selection chooses on `graph` (greedy or exact),
    /// not scheduled.
    pub fn select(&self, graph: &Graph) -> Result<Selected, PipelineError> {
        Ok(self.select_measured(graph)?.0)
    }

    /// [`Pipeline::select`], with the candidates the exact selection measured.
    fn select_measured(
        &self,
        graph: &Graph,
    ) -> Result<(Selected, Option<Measured>), PipelineError> {
        let c = &self.config;
        if let Some(x) = c.select.slowdown {
            if !(x.is_finite() && x > 0.0) {
                return Err(PipelineError::InvalidConfig {
                    reason: format!("the split slowdown must be a positive number, got {x}"),
                });
            }
        }
        if c.decompose == Decompose::Greedy {
            return Ok((select(graph, &c.hardware, &c.select)?, None));
        }
        let (before, scored) = candidates(graph, &c.hardware, &c.select)?;
        let selected = select_among(
            graph,
            &c.hardware,
            &c.select,
            before,
            scored.clone(),
            self.solvers.selector.as_ref(),
        )?;
        Ok((selected, Some((before, scored))))
    }

    /// The S+AD step: [`Pipeline::select`], the rewritten graph scheduled, kept against S
    /// (`s_ns`) by [`policy::keep`].
    pub fn decompose(&self, graph: &Graph, s_ns: u64) -> Result<Decomposed, PipelineError> {
        if let Some(resolved) = self.resolved(graph)? {
            return resolved.decompose(graph, s_ns);
        }
        self.decompose_within(graph, s_ns, self.config.schedule.time_limit)
    }

    /// [`Pipeline::decompose`], its schedule within what is left of `time_limit` after the
    /// selection.
    fn decompose_within(
        &self,
        graph: &Graph,
        s_ns: u64,
        time_limit: Option<Duration>,
    ) -> Result<Decomposed, PipelineError> {
        let began = Instant::now();
        let (selected, candidates) = self.select_measured(graph)?;
        let schedule = if selected.decompositions.is_empty() {
            None
        } else {
            let left = time_limit.map(|t| t.saturating_sub(began.elapsed()));
            // A rewritten graph with no plan within the memory budget is not kept.
            match self.schedule_within(&selected.graph, Vec::new(), left) {
                Err(PipelineError::MemoryBudget { .. }) => None,
                r => Some(r?),
            }
        };
        let kept = schedule
            .as_ref()
            .is_some_and(|o| policy::keep(o.concerto().makespan_ns(), s_ns));
        let makespan_ns = match &schedule {
            Some(o) if kept => o.concerto().makespan_ns(),
            _ => s_ns,
        };
        Ok(Decomposed {
            selected,
            schedule,
            kept,
            makespan_ns,
            candidates,
            time: began.elapsed(),
        })
    }

    /// The joint step: every candidate of the selection becomes a mode of its region in one
    /// union graph ([`concerto_decomp::joint`]), started from `sequential` (the decompositions
    /// S+AD applied, possibly none) scheduled by [`Pipeline::schedule`], improved by exact
    /// windows with the modal solver, and the chosen graph scheduled again with the joint
    /// plan as a hint. Kept against `sad_ns` (the S+AD makespan it started from) by
    /// [`policy::keep`].
    pub fn joint(
        &self,
        graph: &Graph,
        sequential: &[Decomposition],
        sad_ns: u64,
    ) -> Result<Joint, PipelineError> {
        if let Some(resolved) = self.resolved(graph)? {
            return resolved.joint(graph, sequential, sad_ns);
        }
        self.joint_among(
            graph,
            None,
            sequential,
            sad_ns,
            self.config.schedule.time_limit,
        )
    }

    /// [`Pipeline::joint`] from candidates already measured on `graph` with this
    /// configuration ([`Decomposed::candidates`]), or measured here when `None`, within
    /// `time_limit`: a quarter of it for the start's schedule, half for the joint windows,
    /// the rest for the final schedule.
    fn joint_among(
        &self,
        graph: &Graph,
        measured: Option<Measured>,
        sequential: &[Decomposition],
        sad_ns: u64,
        time_limit: Option<Duration>,
    ) -> Result<Joint, PipelineError> {
        let began = Instant::now();
        let left =
            |share: f64| time_limit.map(|t| t.saturating_sub(began.elapsed()).mul_f64(share));
        let c = &self.config;
        let modal = self
            .solvers
            .modal
            .as_ref()
            .ok_or_else(|| PipelineError::InvalidConfig {
                reason: "joint mode needs a modal solver (Solvers::with_modal)".into(),
            })?;
        let scored = match measured {
            Some((_, scored)) => scored,
            None => candidates(graph, &c.hardware, &c.select)?.1,
        };
        let list: Vec<Candidate> = scored
            .iter()
            .map(|s| Candidate {
                label: format!("{} {}", s.decomposition.collective, s.decomposition.label()),
                context: s.context.clone(),
            })
            .collect();
        let start: Vec<usize> = scored
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                sequential.iter().any(|d| {
                    d.collective == s.decomposition.collective
                        && d.label() == s.decomposition.label()
                })
            })
            .map(|(i, _)| i)
            .collect();
        if list.is_empty() {
            return Ok(Joint {
                result: None,
                chosen: Vec::new(),
                regions: 0,
                mode_changes: 0,
                skipped: 0,
                kept: false,
                makespan_ns: sad_ns,
                note: Some("no candidate decomposition: joint = S+AD".into()),
                time: began.elapsed(),
            });
        }
        let hardware = c.hardware.clone();
        let slowdown = c.select.slowdown;
        let chunk = move |ctx: &concerto_decomp::Context, op: &concerto_graph::Op, i: u32| {
            let slow = slowdown.map(|f| (f, hardware.op_ns(op)));
            concerto_decomp::rules::chunk(op, ctx.axis, ctx.n, i, slow)
        };
        let u = union(graph, &list, &chunk, &start)?;
        let modes = u.modes_of(&start);
        let (g0, _) = u.graph_of(&modes)?;
        let first = match self.schedule_within(&g0, Vec::new(), left(0.25)) {
            Err(PipelineError::MemoryBudget { .. }) => {
                return Ok(Joint {
                    result: None,
                    chosen: Vec::new(),
                    regions: u.regions.len(),
                    mode_changes: 0,
                    skipped: 0,
                    kept: false,
                    makespan_ns: sad_ns,
                    note: Some("no plan of the joint start within the memory budget".into()),
                    time: began.elapsed(),
                })
            }
            r => r?,
        };
        let starts = schedule_of(&first.concerto().timeline).starts().to_vec();
        let limits = Limits {
            time_limit: left(2.0 / 3.0),
            work_limit: c.schedule.work_limit,
            seed: c.schedule.seed,
            ..Limits::default()
        };
        let solved = solve_joint(
            &u,
            &list,
            &c.hardware,
            &JointStart {
                modes: modes.clone(),
                starts,
            },
            modal.as_ref(),
            &JointSolveConfig {
                windows: c.joint.clone(),
                limits,
            },
        )?;
        let mut hints = vec![solved.plan.clone()];
        if solved.modes == modes {
            hints.push(first.concerto().plan.clone());
        }
        let optimized = match self.schedule_within(&solved.graph, hints, left(1.0)) {
            Err(PipelineError::MemoryBudget { .. }) => {
                return Ok(Joint {
                    result: None,
                    chosen: Vec::new(),
                    regions: u.regions.len(),
                    mode_changes: solved.report.mode_changes,
                    skipped: solved.report.skipped,
                    kept: false,
                    makespan_ns: sad_ns,
                    note: Some("no plan of the joint graph within the memory budget".into()),
                    time: began.elapsed(),
                })
            }
            r => r?,
        };
        let ns = optimized.concerto().makespan_ns();
        let kept = policy::keep(ns, sad_ns);
        let note = (!kept).then(|| {
            format!(
                "the joint plan simulates to {:.3} ms, {} ns above S+AD {:.3} ms: S+AD kept",
                ns as f64 / 1e6,
                ns - sad_ns,
                sad_ns as f64 / 1e6
            )
        });
        Ok(Joint {
            chosen: if kept {
                solved.chosen.iter().map(|(_, l)| l.clone()).collect()
            } else {
                Vec::new()
            },
            regions: u.regions.len(),
            mode_changes: solved.report.mode_changes,
            skipped: solved.report.skipped,
            kept,
            makespan_ns: if kept { ns } else { sad_ns },
            note,
            result: Some((solved.graph, optimized)),
            time: began.elapsed(),
        })
    }

    /// The S+F step: buckets chosen under `scheduled`'s concerto plan of `graph` (each
    /// candidate keeps that plan's order, [`fuse_under`]); the fused graph is then scheduled
    /// again with that order as a hint, so its row is never behind the plan that chose the
    /// buckets. Kept against S by [`policy::keep`].
    pub fn fuse(&self, graph: &Graph, scheduled: &Optimized) -> Result<Fusion, PipelineError> {
        if let Some(resolved) = self.resolved(graph)? {
            return resolved.fuse(graph, scheduled);
        }
        self.fuse_within(graph, scheduled, self.config.schedule.time_limit)
    }

    /// [`Pipeline::fuse`], its schedule within what is left of `time_limit` after the bucket
    /// search.
    fn fuse_within(
        &self,
        graph: &Graph,
        scheduled: &Optimized,
        time_limit: Option<Duration>,
    ) -> Result<Fusion, PipelineError> {
        let began = Instant::now();
        let timeline = &scheduled.concerto().timeline;
        let fused = fuse_under(
            graph,
            &self.config.hardware,
            timeline,
            &self.config.fuse_config,
        )?;
        let mut order: Vec<OpId> = graph.ids().collect();
        order.sort_by_key(|o| (timeline.start[o.0], o.0));
        let hint = StreamPlan::from_order(
            &fused.graph,
            &mapped_order(&fused.graph, &fused.origin, &order)?,
        )?;
        let left = time_limit.map(|t| t.saturating_sub(began.elapsed()));
        let schedule = self.schedule_within(&fused.graph, vec![hint], left)?;
        let s_ns = scheduled.concerto().makespan_ns();
        let kept = policy::keep(schedule.concerto().makespan_ns(), s_ns);
        Ok(Fusion {
            makespan_ns: if kept {
                schedule.concerto().makespan_ns()
            } else {
                s_ns
            },
            fused,
            schedule,
            kept,
            time: began.elapsed(),
        })
    }
}
