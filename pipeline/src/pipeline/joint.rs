//! The joint step: decompositions and order decided together ([`Pipeline::joint`]).

use std::time::{Duration, Instant};

use concerto_decomp::joint::{solve_joint, union, Candidate, JointSolveConfig, JointStart, Union};
use concerto_decomp::select::{candidates, Decomposition};
use concerto_graph::lower::schedule_of;
use concerto_graph::Graph;
use concerto_rcpsp::Limits;

use super::{Joint, Measured, Pipeline};
use crate::error::PipelineError;
use crate::policy;
use crate::schedule::Optimized;

impl Pipeline {
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
    /// configuration ([`super::Decomposed::candidates`]), or measured here when `None`,
    /// within `time_limit`: a quarter of it for the start's schedule, half for the joint
    /// windows, the rest for the final schedule.
    pub(super) fn joint_among(
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
        // The joint plan is not the result: S+AD stays, and `note` says why.
        let not_kept = |regions: usize, windows: Option<(usize, usize)>, note: &str| Joint {
            result: None,
            chosen: Vec::new(),
            regions,
            mode_changes: windows.map_or(0, |w| w.0),
            skipped: windows.map_or(0, |w| w.1),
            kept: false,
            makespan_ns: sad_ns,
            note: Some(note.into()),
            time: began.elapsed(),
        };
        let modal = self
            .solvers
            .modal
            .as_ref()
            .ok_or_else(|| PipelineError::InvalidConfig {
                reason: "joint mode needs a modal solver (Solvers::with_modal)".into(),
            })?;
        let (list, start) = self.joint_candidates(graph, measured, sequential)?;
        if list.is_empty() {
            return Ok(not_kept(
                0,
                None,
                "no candidate decomposition: joint = S+AD",
            ));
        }
        let u = self.union_of(graph, &list, &start)?;
        let modes = u.modes_of(&start);
        let (g0, _) = u.graph_of(&modes)?;
        let first = match self.schedule_within(&g0, Vec::new(), left(0.25)) {
            Err(PipelineError::MemoryBudget { .. }) => {
                let note = "no plan of the joint start within the memory budget";
                return Ok(not_kept(u.regions.len(), None, note));
            }
            r => r?,
        };
        let starts = schedule_of(&first.concerto().timeline).starts().to_vec();
        let windows_limit = left(2.0 / 3.0);
        if windows_limit.is_some_and(|t| t.is_zero()) {
            // The start's schedule spent the call's time: the windows get none, and a time
            // limit covers the whole call, so S+AD stands.
            let note = "the time limit was spent before the joint windows: joint = S+AD";
            return Ok(not_kept(u.regions.len(), None, note));
        }
        let limits = Limits {
            time_limit: windows_limit,
            work_limit: self.config.schedule.work_limit,
            seed: self.config.schedule.seed,
            ..Limits::default()
        };
        let solved = solve_joint(
            &u,
            &list,
            &self.config.hardware,
            &JointStart {
                modes: modes.clone(),
                starts,
            },
            modal.as_ref(),
            &JointSolveConfig {
                windows: self.config.joint.clone(),
                limits,
            },
        )?;
        let mut hints = vec![solved.plan.clone()];
        if solved.modes == modes {
            hints.push(first.concerto().plan.clone());
        }
        let windows = (solved.report.mode_changes, solved.report.skipped);
        let optimized: Optimized = match self.schedule_within(&solved.graph, hints, left(1.0)) {
            Err(PipelineError::MemoryBudget { .. }) => {
                let note = "no plan of the joint graph within the memory budget";
                return Ok(not_kept(u.regions.len(), Some(windows), note));
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
            mode_changes: windows.0,
            skipped: windows.1,
            kept,
            makespan_ns: if kept { ns } else { sad_ns },
            note,
            result: Some((solved.graph, optimized)),
            time: began.elapsed(),
        })
    }

    /// The candidates of the joint step, from `measured` or measured here (every one that
    /// gains alone, labelled `<collective> <axis>/<n>`), and the positions among them of the
    /// `sequential` decompositions (the start).
    fn joint_candidates(
        &self,
        graph: &Graph,
        measured: Option<Measured>,
        sequential: &[Decomposition],
    ) -> Result<(Vec<Candidate>, Vec<usize>), PipelineError> {
        let c = &self.config;
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
        Ok((list, start))
    }

    /// The union graph of `graph` with every candidate of `list` a mode of its region
    /// ([`union`]), chunks costed like the selection's (the split slowdown when set).
    fn union_of(
        &self,
        graph: &Graph,
        list: &[Candidate],
        start: &[usize],
    ) -> Result<Union, PipelineError> {
        let hardware = self.config.hardware.clone();
        let slowdown = self.config.select.slowdown;
        let chunk = move |ctx: &concerto_decomp::Context, op: &concerto_graph::Op, i: u32| {
            let slow = slowdown.map(|f| (f, hardware.op_ns(op)));
            concerto_decomp::rules::chunk(op, ctx.axis, ctx.n, i, slow)
        };
        Ok(union(graph, list, &chunk, start)?)
    }
}
