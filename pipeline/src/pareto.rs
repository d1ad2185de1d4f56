//! The makespan-memory trade-off of a graph: concerto's S step under a descending series of
//! memory budgets ([`ScheduleConfig::memory_budget`](crate::ScheduleConfig::memory_budget)).
//!
//! [`pareto`] schedules the graph without a budget, then again and again with a budget just
//! below the peak of the last plan found: `peak - step`, `step = (unbounded peak - floor) /
//! points`, where the floor is [`concerto_graph::memory::peak_lower_bound`]. A budget no plan
//! keeps ([`PipelineError::MemoryBudget`]) is reported with the smallest peak found under it,
//! and the sweep goes on from that budget less a step (the search is a heuristic below the
//! unbounded peak: a lower budget can succeed where a higher one failed). It stops below the
//! floor or after `points` budgets. Each point is a plan that passed the
//! memory checker; the front is the points no other point beats on both axes. Program order is
//! reported beside them for reference. Cost: up to `points + 1` S steps, each within the
//! pipeline's time limit (or work budget), so the same input, seed and work budget give the
//! same front.
//!
//! [`Pareto::svg`] draws it: peak memory (GiB) across, simulated makespan (ms) up, each point
//! a circle carrying its exact values (`data-peak-bytes`, `data-makespan-ns`), the front a
//! staircase, program order a square, the floor a dashed line.

use std::fmt::Write as _;

use concerto_graph::Graph;
use serde::Serialize;

use crate::error::PipelineError;
use crate::pipeline::Pipeline;
use crate::progress::Progress;
use crate::schedule::Scheduler;
use crate::table::{gib, Table};

/// One budget of the sweep and the plan concerto returned under it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParetoPoint {
    /// The budget (bytes); `None` for the unbounded run.
    pub budget_bytes: Option<u64>,
    /// The plan's simulated makespan (ns).
    pub makespan_ns: u64,
    /// The plan's peak (bytes), within the budget.
    pub peak_bytes: u64,
    /// Where the plan comes from (`solver`, a baseline's name, `hint`).
    pub origin: &'static str,
    /// Whether no other point is at most as long and at most as large, and better on one.
    pub on_front: bool,
}

/// What [`pareto`] found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pareto {
    /// The graph's name.
    pub graph: String,
    /// Program order: makespan (ns) and peak (bytes), for reference.
    pub program_ns: u64,
    /// See [`Pareto::program_ns`].
    pub program_peak_bytes: u64,
    /// A peak no plan can go below (bytes).
    pub floor_bytes: u64,
    /// The points, unbounded first, budgets descending.
    pub points: Vec<ParetoPoint>,
    /// The budgets no plan kept, each with the smallest peak found under it (bytes).
    pub infeasible: Vec<(u64, u64)>,
}

/// Runs the sweep (see the module docs) with `pipeline`'s S step options (its own memory
/// budget is ignored), at most `points` budgets after the unbounded run.
///
/// Errors: those of the S step other than [`PipelineError::MemoryBudget`], and
/// [`PipelineError::InvalidConfig`] for `points == 0`.
pub fn pareto(
    pipeline: &Pipeline,
    graph: &Graph,
    points: usize,
    progress: &dyn Progress,
) -> Result<Pareto, PipelineError> {
    if points == 0 {
        return Err(PipelineError::InvalidConfig {
            reason: "the Pareto sweep needs at least one budget".into(),
        });
    }
    let mut config = pipeline.config.clone();
    config.memory_budget = None;
    config.schedule.memory_budget = None;
    progress.start(graph.name(), Some(points as u64 + 1));
    let free =
        Pipeline::new(config.clone(), pipeline.solvers.clone()).schedule(graph, Vec::new())?;
    progress.advance(1, "unbounded");
    let program = free
        .get(Scheduler::ProgramOrder)
        .expect("the S step always reports program order");
    let floor = free.peak_lower_bound_bytes;
    let mut out = Pareto {
        graph: graph.name().to_string(),
        program_ns: program.makespan_ns(),
        program_peak_bytes: program.peak_memory_bytes,
        floor_bytes: floor,
        points: vec![ParetoPoint {
            budget_bytes: None,
            makespan_ns: free.concerto().makespan_ns(),
            peak_bytes: free.concerto().peak_memory_bytes,
            origin: free.origin.as_str(),
            on_front: false,
        }],
        infeasible: Vec::new(),
    };
    let step = (out.points[0].peak_bytes.saturating_sub(floor) / points as u64).max(1);
    let mut last = out.points[0].peak_bytes;
    for _ in 0..points {
        let Some(budget) = last.checked_sub(step).filter(|b| *b >= floor) else {
            break;
        };
        last = budget;
        config.schedule.memory_budget = Some(budget);
        let run =
            Pipeline::new(config.clone(), pipeline.solvers.clone()).schedule(graph, Vec::new());
        progress.advance(1, &format!("budget {budget} B"));
        match run {
            Ok(s) => {
                last = s.concerto().peak_memory_bytes;
                out.points.push(ParetoPoint {
                    budget_bytes: Some(budget),
                    makespan_ns: s.concerto().makespan_ns(),
                    peak_bytes: s.concerto().peak_memory_bytes,
                    origin: s.origin.as_str(),
                    on_front: false,
                })
            }
            Err(PipelineError::MemoryBudget { smallest_bytes, .. }) => {
                out.infeasible.push((budget, smallest_bytes));
            }
            Err(e) => return Err(e),
        }
    }
    progress.finish();
    let all = out.points.clone();
    for p in &mut out.points {
        p.on_front = !all.iter().any(|q| {
            q.makespan_ns <= p.makespan_ns
                && q.peak_bytes <= p.peak_bytes
                && (q.makespan_ns < p.makespan_ns || q.peak_bytes < p.peak_bytes)
        });
    }
    Ok(out)
}

impl Pareto {
    /// The table: one row per point, then program order and the floor.
    pub fn table(&self) -> String {
        let mut t = Table::new(&[
            "budget_GiB",
            "makespan_ms",
            "peak_GiB",
            "vs_unbounded",
            "front",
            "plan",
        ]);
        let base = self.points[0].makespan_ns as f64;
        for p in &self.points {
            t.row(vec![
                p.budget_bytes
                    .map_or("none".into(), |b| format!("{:.3}", gib(b))),
                format!("{:.3}", p.makespan_ns as f64 / 1e6),
                format!("{:.3}", gib(p.peak_bytes)),
                format!("{:+.2}%", (p.makespan_ns as f64 / base - 1.0) * 100.0),
                if p.on_front { "*" } else { "" }.into(),
                p.origin.to_string(),
            ]);
        }
        let mut s = t.render();
        let _ = writeln!(
            s,
            "program order {:.3} ms at {:.3} GiB; no order below {:.3} GiB",
            self.program_ns as f64 / 1e6,
            gib(self.program_peak_bytes),
            gib(self.floor_bytes)
        );
        for &(b, smallest) in &self.infeasible {
            let _ = writeln!(
                s,
                "budget {:.3} GiB: no plan found (smallest peak found {:.3} GiB)",
                gib(b),
                gib(smallest)
            );
        }
        s
    }

    /// The plot as a standalone SVG (see the module docs).
    pub fn svg(&self) -> String {
        let c = self.canvas();
        let mut s = String::new();
        self.svg_frame(&mut s, &c);
        self.svg_front(&mut s, &c);
        self.svg_points(&mut s, &c);
        s.push_str("</svg>\n");
        s
    }

    /// The plot's geometry: every point, program order and the floor within the axes.
    fn canvas(&self) -> Canvas {
        let xs: Vec<f64> = self
            .points
            .iter()
            .map(|p| gib(p.peak_bytes))
            .chain([gib(self.program_peak_bytes), gib(self.floor_bytes)])
            .collect();
        let ys: Vec<f64> = self
            .points
            .iter()
            .map(|p| p.makespan_ns as f64 / 1e6)
            .chain([self.program_ns as f64 / 1e6])
            .collect();
        let span = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let pad = ((hi - lo) * 0.08).max(hi.abs() * 1e-3).max(1e-9);
            (lo - pad, hi + pad)
        };
        Canvas {
            w: 720.0,
            h: 440.0,
            left: 80.0,
            right: 30.0,
            top: 40.0,
            bottom: 60.0,
            x: span(&xs),
            y: span(&ys),
        }
    }

    /// The SVG's opening, the title, the axes with their ticks and labels, and the floor.
    fn svg_frame(&self, s: &mut String, c: &Canvas) {
        let Canvas {
            w,
            h,
            left,
            right,
            top,
            bottom,
            x: (x0, x1),
            y: (y0, y1),
        } = *c;
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}: makespan against peak memory</text>"#,
            w / 2.0,
            xml(&self.graph)
        );
        // Axes and ticks.
        let _ = writeln!(
            s,
            r#"<path d="M{left},{top} V{} H{}" stroke="black" fill="none"/>"#,
            h - bottom,
            w - right
        );
        for k in 0..=4 {
            let x = x0 + (x1 - x0) * k as f64 / 4.0;
            let y = y0 + (y1 - y0) * k as f64 / 4.0;
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{x:.2}</text>"#,
                c.px(x),
                h - bottom + 18.0
            );
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{:.1}" text-anchor="end">{y:.1}</text>"#,
                left - 6.0,
                c.py(y) + 4.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">peak memory (GiB)</text>"#,
            (left + w - right) / 2.0,
            h - 18.0
        );
        let _ = writeln!(
            s,
            r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">simulated makespan (ms)</text>"#,
            (top + h - bottom) / 2.0,
            (top + h - bottom) / 2.0
        );
        // The floor, labelled at its foot (the legend is at the top left).
        let fx = c.px(gib(self.floor_bytes));
        let _ = writeln!(
            s,
            r#"<line x1="{fx:.1}" y1="{top}" x2="{fx:.1}" y2="{}" stroke="gray" stroke-dasharray="4 4"/><text x="{:.1}" y="{}" fill="gray">floor</text>"#,
            h - bottom,
            fx + 4.0,
            h - bottom - 6.0
        );
    }

    /// The front as a staircase, by peak.
    fn svg_front(&self, s: &mut String, c: &Canvas) {
        let mut front: Vec<&ParetoPoint> = self.points.iter().filter(|p| p.on_front).collect();
        front.sort_by_key(|p| (p.peak_bytes, p.makespan_ns));
        if front.len() > 1 {
            let mut d = String::new();
            for (i, p) in front.iter().enumerate() {
                let (x, y) = (c.px(gib(p.peak_bytes)), c.py(p.makespan_ns as f64 / 1e6));
                if i == 0 {
                    let _ = write!(d, "M{x:.1},{y:.1}");
                } else {
                    let _ = write!(d, " H{x:.1} V{y:.1}");
                }
            }
            let _ = writeln!(
                s,
                r##"<path d="{d}" stroke="#1f77b4" fill="none" stroke-width="1.5"/>"##
            );
        }
    }

    /// A circle per point (dark on the front) with its numbers as data attributes, program
    /// order's square, and the legend.
    fn svg_points(&self, s: &mut String, c: &Canvas) {
        for p in &self.points {
            let (x, y) = (c.px(gib(p.peak_bytes)), c.py(p.makespan_ns as f64 / 1e6));
            let budget = p
                .budget_bytes
                .map_or("none".to_string(), |b| format!("{:.3} GiB", gib(b)));
            let _ = writeln!(
                s,
                r##"<circle class="point" cx="{x:.1}" cy="{y:.1}" r="5" fill="{}" data-peak-bytes="{}" data-makespan-ns="{}" data-budget-bytes="{}"><title>budget {budget}: {:.3} ms at {:.3} GiB ({})</title></circle>"##,
                if p.on_front { "#1f77b4" } else { "#aec7e8" },
                p.peak_bytes,
                p.makespan_ns,
                p.budget_bytes.map_or(String::new(), |b| b.to_string()),
                p.makespan_ns as f64 / 1e6,
                gib(p.peak_bytes),
                p.origin
            );
        }
        let (x, y) = (
            c.px(gib(self.program_peak_bytes)),
            c.py(self.program_ns as f64 / 1e6),
        );
        let _ = writeln!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="#d62728"><title>program order: {:.3} ms at {:.3} GiB</title></rect><text x="{:.1}" y="{:.1}" fill="#d62728">program order</text>"##,
            x - 5.0,
            y - 5.0,
            self.program_ns as f64 / 1e6,
            gib(self.program_peak_bytes),
            x - 8.0,
            y - 10.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" fill="#1f77b4">concerto under each budget (front: dark)</text>"##,
            c.left + 10.0,
            c.top + 12.0
        );
    }
}

/// The plot's geometry: the canvas and its margins (px), and the data range on each axis
/// (GiB across, ms up).
#[derive(Clone, Copy)]
struct Canvas {
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    x: (f64, f64),
    y: (f64, f64),
}

impl Canvas {
    /// The horizontal position of peak `x` (GiB).
    fn px(&self, x: f64) -> f64 {
        self.left + (x - self.x.0) / (self.x.1 - self.x.0) * (self.w - self.left - self.right)
    }

    /// The vertical position of makespan `y` (ms).
    fn py(&self, y: f64) -> f64 {
        self.h
            - self.bottom
            - (y - self.y.0) / (self.y.1 - self.y.0) * (self.h - self.top - self.bottom)
    }
}

/// Text escaped for XML.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
