//! The comparison table of `bench graphs` ([`GraphsTable`]): a column group per step that ran
//! on some row, a line per group that says what its columns mean, under a memory budget a
//! second table of makespans and peaks, and where the gap is ([`super::gap`]).

use std::fmt;

use super::{gap, GraphsRowSummary, MemorySummary};
use concerto_pipeline::summary::gain_pct;
use concerto_pipeline::table::Table;

/// The comparison table of `bench graphs` over rows' summaries, with the S+AD, joint and S+F
/// columns of the steps that ran, and a line per column group that says what it means.
#[derive(Clone, Copy, Debug)]
pub struct GraphsTable<'a>(pub &'a [GraphsRowSummary]);

/// The column groups a [`GraphsTable`] shows: those some row has.
#[derive(Clone, Copy)]
struct Groups {
    /// The module's own schedule (an imported XLA module).
    xla: bool,
    /// S+AD.
    decomposing: bool,
    /// Joint.
    joint: bool,
    /// S+F.
    fusing: bool,
}

/// Milliseconds, three decimals.
pub(super) fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

impl GraphsTable<'_> {
    fn groups(&self) -> Groups {
        let rows = self.0;
        Groups {
            xla: rows.iter().any(|r| r.comparison.xla_ns.is_some()),
            decomposing: rows.iter().any(|r| r.decomposed_ns.is_some()),
            joint: rows.iter().any(|r| r.joint_ns.is_some()),
            fusing: rows.iter().any(|r| r.fused_ns.is_some()),
        }
    }

    /// The header: the S columns, then each group's.
    fn header(g: Groups) -> Vec<&'static str> {
        let mut header = vec!["config", "ops", "program_ms"];
        if g.xla {
            header.push("xla_ms");
        }
        header.extend([
            "lhs_ms",
            "inductor_ms",
            "list_ms",
            "concerto_ms",
            "bound_ms",
            "bound",
            "gap",
            "gain_vs_best",
            "exposed_ms",
            "plan",
            "time_s",
        ]);
        if g.xla {
            header.push("vs_xla");
        }
        if g.decomposing {
            header.extend(["S+AD_ms", "AD_gain", "decomps", "AD_s"]);
        }
        if g.joint {
            header.extend(["joint_ms", "joint_gain", "joint_s"]);
        }
        if g.fusing {
            header.extend(["S+F_ms", "F_gain", "calls", "F_s"]);
        }
        header
    }

    /// The cells of `r`, in [`GraphsTable::header`]'s order (`-` where its row has none).
    fn cells(g: Groups, r: &GraphsRowSummary) -> Vec<String> {
        let c = &r.comparison;
        let mut cells = vec![
            r.config.to_string(),
            c.ops.to_string(),
            ms(c.program_order_ns),
        ];
        if g.xla {
            cells.push(c.xla_ns.map_or("-".into(), ms));
        }
        cells.extend([
            ms(c.lhs_ns),
            ms(c.inductor_ns),
            ms(c.list_ns),
            ms(c.optimized_ns),
            ms(c.lower_bound_ns),
            c.bound_kind.clone(),
            format!("{:.2}%", r.gap_to_bound_pct),
            format!("{:.2}%", r.gain_vs_best_baseline_pct),
            ms(c.exposed_comm_ns),
            r.origin.to_string(),
            format!("{:.1}", r.time_s),
        ]);
        if g.xla {
            cells.push(c.xla_ns.map_or("-".into(), |x| {
                format!("{:.2}%", gain_pct(x, c.optimized_ns))
            }));
        }
        if g.decomposing {
            cells.extend([
                r.decomposed_ns.map_or("-".into(), ms),
                r.ad_gain_pct.map_or("-".into(), |g| format!("{g:.2}%")),
                match (&r.decompositions, &r.ad_note) {
                    (Some(d), None) => d.len().to_string(),
                    (_, Some(_)) => "0 (rejected)".to_string(),
                    (None, None) => "-".to_string(),
                },
                r.ad_time_s.map_or("-".into(), |s| format!("{s:.1}")),
            ]);
        }
        if g.joint {
            cells.extend([
                r.joint_ns.map_or("-".into(), ms),
                match (r.joint_ns, r.decomposed_ns) {
                    (Some(j), Some(d)) => format!("{:.2}%", (1.0 - j as f64 / d as f64) * 100.0),
                    _ => "-".into(),
                },
                r.joint_time_s.map_or("-".into(), |s| format!("{s:.1}")),
            ]);
        }
        if g.fusing {
            cells.extend([
                r.fused_ns.map_or("-".into(), ms),
                r.fuse_gain_pct.map_or("-".into(), |g| format!("{g:.2}%")),
                r.collective_calls
                    .map_or("-".into(), |(a, b)| format!("{a}->{b}")),
                r.fuse_time_s.map_or("-".into(), |s| format!("{s:.1}")),
            ]);
        }
        cells
    }

    /// What the S, xla, S+AD and joint columns mean, with the rows' S+AD and joint notes.
    fn legend(&self, f: &mut fmt::Formatter<'_>, g: Groups) -> fmt::Result {
        writeln!(
            f,
            "list_ms = non-delay list schedule, critical-path priority on every stream; bound = \
             the proven lower bound that binds; gap = concerto above it; gain_vs_best = concerto \
             vs the best baseline; plan = where concerto's plan comes from (solver: its own \
             search); time_s = the S step"
        )?;
        if g.xla {
            writeln!(
                f,
                "xla_ms = the module's own schedule (XLA's latency-hiding scheduler's sequence, \
                 starts and dones where XLA put them), simulated with the same costs; vs_xla = \
                 concerto vs it"
            )?;
        }
        if !g.decomposing {
            return Ok(());
        }
        writeln!(
            f,
            "concerto_ms = S (schedule only); S+AD_ms = concerto on the graph rewritten by \
             the decompositions (decomps of them), kept at S when the rewrite schedules \
             longer; AD_gain = S+AD vs S; AD_s = selection + S+AD scheduling time"
        )?;
        for r in self.0 {
            if let Some(n) = &r.ad_note {
                writeln!(f, "{}: {n}", r.config)?;
            }
        }
        if g.joint {
            writeln!(
                f,
                "joint_ms = every candidate a mode of its region, modes and order decided \
                 together in exact windows from S+AD (never above it); joint_gain = joint \
                 vs S+AD; joint_s = its time (AD_s is the sequential one's)"
            )?;
            for r in self.0 {
                if let Some(n) = &r.joint_note {
                    writeln!(f, "{}: {n}", r.config)?;
                }
                if let Some(d) = r.joint_decompositions.as_ref().filter(|d| !d.is_empty()) {
                    writeln!(f, "{}: joint applied {}", r.config, d.join(", "))?;
                }
            }
        }
        Ok(())
    }

    /// The memory table of the rows run under a budget, and what its columns mean (nothing
    /// when no row was).
    fn memory(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows = self.0;
        let memory: Vec<(&str, &MemorySummary)> = rows
            .iter()
            .filter_map(|r| r.memory.as_ref().map(|m| (r.config.as_str(), m)))
            .collect();
        if memory.is_empty() {
            return Ok(());
        }
        let gib = |b: u64| format!("{:.2}", concerto_pipeline::table::gib(b));
        let mut t = Table::new(&[
            "config",
            "budget_GiB",
            "program_ms",
            "program_GiB",
            "free_ms",
            "free_GiB",
            "concerto_ms",
            "concerto_GiB",
            "kept_gain",
            "lhs_ms",
            "lhs_GiB",
            "floor_GiB",
        ]);
        for (name, m) in &memory {
            let program = rows
                .iter()
                .find(|r| r.config == *name)
                .map_or(0, |r| r.comparison.program_order_ns);
            t.row(vec![
                name.to_string(),
                gib(m.budget_bytes),
                ms(program),
                gib(m.program_peak_bytes),
                ms(m.unbounded_ns),
                format!(
                    "{}{}",
                    gib(m.unbounded_peak_bytes),
                    if m.unbounded_raises_peak { " +" } else { "" }
                ),
                ms(m.concerto_ns),
                gib(m.concerto_peak_bytes),
                format!("{:.1}%", m.kept_gain_pct),
                ms(m.lhs_ns),
                format!(
                    "{}{}",
                    gib(m.lhs_peak_bytes),
                    if m.lhs_within { "" } else { " over" }
                ),
                gib(m.peak_lower_bound_bytes),
            ]);
        }
        writeln!(f)?;
        f.write_str(&t.render())?;
        writeln!(
            f,
            "memory: free = concerto without the budget (+: its peak is above program \
             order's); concerto = within the budget (checked by memory::check_memory); \
             kept_gain = (program - concerto) / (program - free); lhs = the LHS baseline \
             with XLA's memory treatment (tie-breaker, retry at 0.9; over = above the \
             budget); floor = a peak no order can go below"
        )
    }

    /// What the S+F columns mean, with the rows' fusion notes.
    fn fusion_legend(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "S+F_ms = concerto on the graph with collectives fused into buckets chosen under \
             concerto's plan, kept at S when the fused graph schedules longer; F_gain = S+F \
             vs S; calls = collective calls before -> after; F_s = bucket search + S+F \
             scheduling"
        )?;
        for r in self.0 {
            if let Some(n) = &r.fuse_note {
                writeln!(f, "{}: {n}", r.config)?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for GraphsTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.groups();
        let mut t = Table::new(&Self::header(g));
        for r in self.0 {
            t.row(Self::cells(g, r));
        }
        f.write_str(&t.render())?;
        self.legend(f, g)?;
        self.memory(f)?;
        gap::GapTable(self.0).fmt(f)?;
        if g.fusing {
            self.fusion_legend(f)?;
        }
        Ok(())
    }
}
