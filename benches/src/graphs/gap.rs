//! Where the gap is: per row of `bench graphs`, the gap between the plan the exact windows
//! started from and the graph's own bound, split into what the windows closed on the plan
//! side, what the final choice closed (a baseline or hint shorter than the solver's plan),
//! what the solver's bound closed on the bound side, and what is left.
//!
//! With `S` the start (the best portfolio plan, polished), `P` the solver's plan, `F`
//! concerto's plan, `Bg` the best of the graph's own bounds and `B` the final bound (the
//! largest of `Bg` and the solver's), `S - Bg = (S - P) + (P - F) + (B - Bg) + (F - B)`: each
//! term is shown as a share of `S - Bg`. All makespans are simulated (with the row's
//! contention), so the shares say where the remaining gap sits, not how a GPU would run.

use std::fmt;

use super::table::ms;
use super::GraphsRowSummary;
use concerto_pipeline::table::Table;

/// The gap table of rows' summaries (see the module docs).
#[derive(Clone, Copy, Debug)]
pub(super) struct GapTable<'a>(pub &'a [GraphsRowSummary]);

/// The four parts of a row's start gap, in ns (signed: the windows may end above their start
/// under contention, where the choice then keeps a shorter plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GapParts {
    /// `S - Bg`.
    start_gap: i128,
    /// `S - P`: closed by the windows' plan.
    windows: i128,
    /// `P - F`: closed by a baseline or hint shorter than the solver's plan.
    choice: i128,
    /// `B - Bg`: closed by the solver's bound above the graph's.
    bound: i128,
    /// `F - B`: left.
    left: i128,
}

impl GapParts {
    /// The parts of row `r`'s gap.
    fn of(r: &GraphsRowSummary) -> GapParts {
        let c = &r.comparison;
        let (s, p, f) = (
            r.start_ns as i128,
            r.solver_plan_ns as i128,
            c.optimized_ns as i128,
        );
        let (bg, b) = (r.graph_bound_ns as i128, c.lower_bound_ns as i128);
        GapParts {
            start_gap: s - bg,
            windows: s - p,
            choice: p - f,
            bound: b - bg,
            left: f - b,
        }
    }

    /// `part` as a share of the start gap, or `-` where there was none.
    fn share(&self, part: i128) -> String {
        if self.start_gap <= 0 {
            return "-".into();
        }
        format!("{:.1}%", part as f64 / self.start_gap as f64 * 100.0)
    }
}

impl fmt::Display for GapTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut t = Table::new(&[
            "config",
            "start_ms",
            "graph_bound_ms",
            "start_gap",
            "by_windows",
            "by_choice",
            "by_solver_bound",
            "left",
        ]);
        for r in self.0 {
            let g = GapParts::of(r);
            t.row(vec![
                r.config.clone(),
                ms(r.start_ns),
                ms(r.graph_bound_ns),
                format!(
                    "{:.2}%",
                    (r.start_ns as f64 / r.graph_bound_ns.max(1) as f64 - 1.0) * 100.0
                ),
                g.share(g.windows),
                g.share(g.choice),
                g.share(g.bound),
                g.share(g.left),
            ]);
        }
        writeln!(f)?;
        f.write_str(&t.render())?;
        writeln!(
            f,
            "where the gap is: start = the plan the exact windows started from (best portfolio \
             plan, polished); graph_bound = the best of the graph's own bounds; start_gap = \
             start above it; of that gap, by_windows = closed by the windows' plan, by_choice \
             = by a baseline or hint shorter than the solver's plan, by_solver_bound = by the \
             solver's bound on the lowered problem above the graph's, left = concerto above \
             the final bound (the four sum to 100%; simulated makespans)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_sum_to_the_start_gap_and_print_as_shares() {
        let mut r = crate::graphs::json::tests::full_row();
        // S 16, P 16, F 15, Bg 9, B 10: windows 0, choice 1, bound 1, left 5 of 7.
        let g = GapParts::of(&r);
        assert_eq!(
            g,
            GapParts {
                start_gap: 7,
                windows: 0,
                choice: 1,
                bound: 1,
                left: 5
            }
        );
        assert_eq!(g.windows + g.choice + g.bound + g.left, g.start_gap);
        let text = GapTable(std::slice::from_ref(&r)).to_string();
        let row = text.lines().find(|l| l.starts_with("gpt-tp8")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            ["gpt-tp8", "0.000", "0.000", "77.78%", "0.0%", "14.3%", "14.3%", "71.4%"]
        );
        // No gap at the start: nothing to share.
        r.graph_bound_ns = r.start_ns;
        let text = GapTable(std::slice::from_ref(&r)).to_string();
        let row = text.lines().find(|l| l.starts_with("gpt-tp8")).unwrap();
        assert_eq!(
            row.split_whitespace().filter(|c| *c == "-").count(),
            4,
            "{row}"
        );
    }
}
