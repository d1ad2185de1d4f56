//! Reading a [`GraphsRowSummary`] back from the JSON it serialises to, so that `bench merge`
//! re-serialises the rows of `bench graphs` shards to the same bytes.
//!
//! The row flattens [`Comparison`] and holds [`DecompositionSummary`]s, which only serialise:
//! a flat mirror of every key reads the row, unknown keys are refused (a key this mirror
//! lacks would otherwise be dropped from the merged JSON), and every field is moved into the
//! real types by name, so a field added to them and not here fails to compile.

use concerto_decomp::select::Decomposition;
use concerto_decomp::{Axis, Family};
use serde::{Deserialize, Deserializer};

use super::{GraphsRowSummary, MemorySummary};
use concerto_pipeline::schedule::Origin;
use concerto_pipeline::summary::{Comparison, DecompositionSummary};

/// Every key of a [`GraphsRowSummary`]'s JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    config: String,
    ops: usize,
    collectives: usize,
    lower_bound_ns: u64,
    bound_kind: String,
    program_order_ns: u64,
    xla_ns: Option<u64>,
    lhs_ns: u64,
    inductor_ns: u64,
    list_ns: u64,
    optimized_ns: u64,
    exposed_comm_ns: u64,
    peak_memory_bytes: u64,
    gain_vs_best_baseline_pct: f64,
    gap_to_bound_pct: f64,
    origin: String,
    solver_plan_ns: u64,
    portfolio_ns: u64,
    start_ns: u64,
    start: String,
    graph_bound_ns: u64,
    solver_bound_ns: Option<u64>,
    solver_status: String,
    trace_events: usize,
    time_s: f64,
    memory: Option<MemorySummary>,
    decomposed_ns: Option<u64>,
    ad_gain_pct: Option<f64>,
    decompositions: Option<Vec<Decomp>>,
    ad_note: Option<String>,
    ad_time_s: Option<f64>,
    joint_ns: Option<u64>,
    joint_decompositions: Option<Vec<String>>,
    joint_time_s: Option<f64>,
    joint_note: Option<String>,
    fused_ns: Option<u64>,
    fuse_gain_pct: Option<f64>,
    collective_calls: Option<(usize, usize)>,
    fuse_note: Option<String>,
    fuse_time_s: Option<f64>,
}

/// Every key of a [`DecompositionSummary`]'s JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Decomp {
    collective: String,
    family: String,
    axis: String,
    n: u32,
    context_size: usize,
}

/// The variant of `known` named `name` by `as_str`, or an error listing the names.
fn named<T: Copy, E: serde::de::Error>(
    what: &str,
    name: &str,
    known: &[T],
    as_str: fn(T) -> &'static str,
) -> Result<T, E> {
    known
        .iter()
        .copied()
        .find(|&k| as_str(k) == name)
        .ok_or_else(|| {
            E::custom(format!(
                "unknown {what} `{name}` (known: {})",
                known
                    .iter()
                    .map(|&k| as_str(k))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

impl Decomp {
    fn summary<E: serde::de::Error>(self) -> Result<DecompositionSummary, E> {
        let family = named(
            "decomposition family",
            &self.family,
            &[Family::Split, Family::Ring],
            Family::as_str,
        )?;
        let axis = named(
            "axis",
            &self.axis,
            &[Axis::Batch, Axis::Rows, Axis::Cols, Axis::Contract],
            Axis::as_str,
        )?;
        // Through the decomposition itself, so that the table label is the one it makes.
        Ok(DecompositionSummary::of(&Decomposition {
            collective: self.collective,
            family,
            axis,
            n: self.n,
            context_ops: self.context_size,
            before_ns: 0,
            after_ns: 0,
        }))
    }
}

impl<'de> Deserialize<'de> for GraphsRowSummary {
    /// From the JSON a [`GraphsRowSummary`] serialises to (every key known, none unknown).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = Row::deserialize(d)?;
        let origin = named("plan origin", &r.origin, &Origin::all(), Origin::as_str)?.as_str();
        Ok(GraphsRowSummary {
            config: r.config,
            comparison: Comparison {
                ops: r.ops,
                collectives: r.collectives,
                lower_bound_ns: r.lower_bound_ns,
                bound_kind: r.bound_kind,
                program_order_ns: r.program_order_ns,
                xla_ns: r.xla_ns,
                lhs_ns: r.lhs_ns,
                inductor_ns: r.inductor_ns,
                list_ns: r.list_ns,
                optimized_ns: r.optimized_ns,
                exposed_comm_ns: r.exposed_comm_ns,
                peak_memory_bytes: r.peak_memory_bytes,
            },
            gain_vs_best_baseline_pct: r.gain_vs_best_baseline_pct,
            gap_to_bound_pct: r.gap_to_bound_pct,
            origin,
            solver_plan_ns: r.solver_plan_ns,
            portfolio_ns: r.portfolio_ns,
            start_ns: r.start_ns,
            start: r.start,
            graph_bound_ns: r.graph_bound_ns,
            solver_bound_ns: r.solver_bound_ns,
            solver_status: r.solver_status,
            trace_events: r.trace_events,
            time_s: r.time_s,
            memory: r.memory,
            decomposed_ns: r.decomposed_ns,
            ad_gain_pct: r.ad_gain_pct,
            decompositions: r
                .decompositions
                .map(|ds| ds.into_iter().map(Decomp::summary).collect())
                .transpose()?,
            ad_note: r.ad_note,
            ad_time_s: r.ad_time_s,
            joint_ns: r.joint_ns,
            joint_decompositions: r.joint_decompositions,
            joint_time_s: r.joint_time_s,
            joint_note: r.joint_note,
            fused_ns: r.fused_ns,
            fuse_gain_pct: r.fuse_gain_pct,
            collective_calls: r.collective_calls,
            fuse_note: r.fuse_note,
            fuse_time_s: r.fuse_time_s,
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use concerto_pipeline::Scheduler;

    /// A row with every optional key set; its floats print and parse exactly with any float
    /// parser.
    pub(in crate::graphs) fn full_row() -> GraphsRowSummary {
        GraphsRowSummary {
            config: "gpt-tp8".into(),
            comparison: Comparison {
                ops: 254,
                collectives: 40,
                lower_bound_ns: 10,
                bound_kind: "jackson".into(),
                program_order_ns: 20,
                xla_ns: Some(19),
                lhs_ns: 18,
                inductor_ns: 17,
                list_ns: 16,
                optimized_ns: 15,
                exposed_comm_ns: 3,
                peak_memory_bytes: 1 << 30,
            },
            gain_vs_best_baseline_pct: 6.25,
            gap_to_bound_pct: 50.0,
            origin: Origin::Baseline(Scheduler::List).as_str(),
            solver_plan_ns: 16,
            portfolio_ns: 17,
            start_ns: 16,
            start: "cp-forward".into(),
            graph_bound_ns: 9,
            solver_bound_ns: Some(10),
            solver_status: "feasible".into(),
            trace_events: 99,
            time_s: 0.5,
            memory: Some(MemorySummary {
                budget_bytes: 100,
                program_peak_bytes: 90,
                unbounded_ns: 14,
                unbounded_peak_bytes: 120,
                unbounded_raises_peak: true,
                concerto_ns: 15,
                concerto_peak_bytes: 95,
                kept_gain_pct: 83.5,
                lhs_ns: 18,
                lhs_peak_bytes: 99,
                lhs_within: true,
                peak_lower_bound_bytes: 80,
            }),
            decomposed_ns: Some(14),
            ad_gain_pct: Some(6.5),
            decompositions: Some(vec![DecompositionSummary::of(&Decomposition {
                collective: "all-reduce.3".into(),
                family: Family::Ring,
                axis: Axis::Rows,
                n: 8,
                context_ops: 5,
                before_ns: 0,
                after_ns: 0,
            })]),
            ad_note: Some("not applied".into()),
            ad_time_s: Some(1.25),
            joint_ns: Some(13),
            joint_decompositions: Some(vec!["ring/8 all-reduce.3".into()]),
            joint_time_s: Some(2.0),
            joint_note: Some("kept S+AD".into()),
            fused_ns: Some(12),
            fuse_gain_pct: Some(20.0),
            collective_calls: Some((40, 10)),
            fuse_note: Some("kept".into()),
            fuse_time_s: Some(0.125),
        }
    }

    #[test]
    fn a_row_reads_back_to_the_same_row_and_the_same_bytes() {
        let row = full_row();
        let json = serde_json::to_string(&row).unwrap();
        let back: GraphsRowSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, row);
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        assert_eq!(back.decompositions.unwrap()[0].label, "ring/8");
        // Without the optional keys too.
        let bare = GraphsRowSummary {
            memory: None,
            decomposed_ns: None,
            decompositions: None,
            ..full_row()
        };
        let json = serde_json::to_string(&bare).unwrap();
        assert!(!json.contains("\"memory\""), "{json}");
        let back: GraphsRowSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
    }

    #[test]
    fn unknown_keys_and_names_are_refused() {
        let json = serde_json::to_string(&full_row()).unwrap();
        let extra = json.replacen('{', r#"{"new_key":1,"#, 1);
        let e = serde_json::from_str::<GraphsRowSummary>(&extra).unwrap_err();
        assert!(e.to_string().contains("unknown field `new_key`"), "{e}");
        let bad = json.replace(r#""origin":"list""#, r#""origin":"guess""#);
        let e = serde_json::from_str::<GraphsRowSummary>(&bad).unwrap_err();
        assert!(e.to_string().contains("unknown plan origin `guess`"), "{e}");
    }
}
