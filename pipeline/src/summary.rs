//! Flat, serialisable summaries of the report's parts, for tables and JSON.

use concerto_decomp::select::Decomposition;
use serde::Serialize;

/// One decomposition applied, as reports list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DecompositionSummary {
    /// The collective's name in the graph it was chosen in.
    pub collective: String,
    /// `split` or `collective-matmul`.
    pub family: &'static str,
    /// The axis (`rows`, `batch`, `cols`).
    pub axis: &'static str,
    /// Chunks (a ring's: its ranks).
    pub n: u32,
    /// Ops in the context (the collective included).
    pub context_size: usize,
    /// `rows/4` for a split, `ring/8` for a collective matmul (tables only).
    #[serde(skip)]
    pub label: String,
}

impl DecompositionSummary {
    /// The summary of `d`.
    pub fn of(d: &Decomposition) -> Self {
        Self {
            collective: d.collective.clone(),
            family: d.family.as_str(),
            axis: d.axis.as_str(),
            n: d.n,
            context_size: d.context_ops,
            label: d.label(),
        }
    }

    /// The summaries of `ds`, in order.
    pub fn all(ds: &[Decomposition]) -> Vec<Self> {
        ds.iter().map(Self::of).collect()
    }
}

/// `count x label`, e.g. `6x rows/4, 16x cols/2, 2x ring/8`, or `-` when empty.
pub fn count_labels(decompositions: &[DecompositionSummary]) -> String {
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for d in decompositions {
        match groups.iter_mut().find(|(k, _)| *k == d.label) {
            Some((_, c)) => *c += 1,
            None => groups.push((&d.label, 1)),
        }
    }
    if groups.is_empty() {
        return "-".to_string();
    }
    groups
        .iter()
        .map(|(label, c)| format!("{c}x {label}"))
        .collect::<Vec<_>>()
        .join(", ")
}
