//! One call of the whole pipeline: schedule (S), decompositions (S+AD), joint, fusion, noise.
//!
//! [`Pipeline::run`] flows down the floors once: it schedules the graph ([`schedule`]),
//! chooses decompositions around the critical collectives with the [`Selector`] it was given
//! and schedules the rewritten graph (S+AD), decides decompositions and order together with
//! the modal solver it was given (joint), fuses collectives under concerto's plan (S+F), and
//! re-simulates every plan under noise. Each rewrite is kept only by [`policy::keep`], so
//! joint <= S+AD <= S and fused <= S hold in every [`Report`]. Solvers come in as trait objects
//! ([`Solvers`]); this crate depends on no backend.

mod config;
mod decompose;
mod fuse;
mod joint;
mod report;

use std::time::{Duration, Instant};

use concerto_graph::{Graph, StreamPlan};

pub use config::{Config, Decompose, Families, MemoryBudget, NoiseConfig, Solvers};
pub use report::{Decomposed, Fusion, Joint, Measured, Report, Row};

#[cfg(doc)]
use concerto_rcpsp::Selector;

use crate::error::PipelineError;
use crate::noise::noise;
use crate::policy;
use crate::progress::Progress;
use crate::schedule::{schedule, Optimized, ScheduleConfig};

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
            // The call's limit, not this step's share of what is left: the bounds' work is
            // then the same in every step and every run (a function of the limit, not the clock).
            bounds_time_limit: self.config.schedule.bounds_limit(),
            ..self.config.schedule.clone()
        };
        schedule(
            graph,
            &self.config.hardware,
            self.solvers.solver.clone(),
            &config,
        )
    }
}
