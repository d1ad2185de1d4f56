//! What a [`Pipeline`] reports: a result per step ([`Decomposed`], [`Joint`], [`Fusion`]),
//! the rows whose plan is a result ([`Row`]), and the whole call ([`Report`]).

use std::time::Duration;

use concerto_decomp::fuse::Fused;
use concerto_decomp::select::{Decomposition, Scored, Selected};
use concerto_graph::Graph;

use super::NoiseConfig;
#[cfg(doc)]
use super::Pipeline;
use crate::noise::NoiseStats;
#[cfg(doc)]
use crate::policy;
use crate::schedule::{Optimized, Scheduled};
#[cfg(doc)]
use concerto_decomp::select::candidates;

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

    /// The plan to write back into the input's own format (an HLO module): the kept one when
    /// it is a plan of the input graph, else S, with the row it stands in for. A decomposed,
    /// joint or fused graph has no form in the input's format here.
    pub fn exported(&self) -> (&Graph, &Scheduled, Option<Row>) {
        let (kept_graph, kept) = self.result();
        if kept_graph.fingerprint() == self.graph.fingerprint() {
            (kept_graph, kept, None)
        } else {
            (&self.graph, self.schedule.concerto(), Some(self.kept))
        }
    }
}
