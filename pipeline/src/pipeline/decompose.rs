//! The S+AD step: decompositions chosen around the critical collectives, the rewritten graph
//! scheduled ([`Pipeline::decompose`]).

use std::time::{Duration, Instant};

use concerto_decomp::select::{candidates, select, select_among, Selected};
use concerto_graph::Graph;

use super::{Decompose, Decomposed, Measured, Pipeline};
use crate::error::PipelineError;
use crate::policy;

impl Pipeline {
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
        // Under a work budget the clock decides nothing: the selection is solved to the end.
        let mut select_config = c.select.clone();
        if c.schedule.work_limit.is_some() {
            select_config.time_limit = None;
        }
        let selected = select_among(
            graph,
            &c.hardware,
            &select_config,
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
    pub(super) fn decompose_within(
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
}
