//! The S+F step: collectives fused into buckets chosen under concerto's plan, the fused graph
//! scheduled ([`Pipeline::fuse`]).

use std::time::{Duration, Instant};

use concerto_decomp::fuse::{fuse_under, mapped_order};
use concerto_graph::{Graph, OpId, StreamPlan};

use super::{Fusion, Pipeline};
use crate::error::PipelineError;
use crate::policy;
use crate::schedule::Optimized;

impl Pipeline {
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
    pub(super) fn fuse_within(
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
