//! `bench graphs --svg`: the run's rows as a bar chart, per graph concerto's gain over the best
//! baseline and its gap to the proven lower bound.

use std::fmt::Write as _;

use super::GraphsRowSummary;

/// Width of the chart (px).
const WIDTH: f64 = 900.0;
/// Left of the plot area; graph names are right-aligned before it (px).
const PLOT_LEFT: f64 = 190.0;
/// Right margin, room for the bars' labels (px).
const RIGHT_MARGIN: f64 = 70.0;
/// Height above the first row: title and legend (px).
const HEAD: f64 = 56.0;
/// Height of one graph's row (two bars) (px).
const ROW: f64 = 30.0;
/// Height of one bar (px).
const BAR: f64 = 11.0;
/// Height of the axis under the rows (px).
const AXIS: f64 = 40.0;
/// Colour of the gain bars.
const GAIN: &str = "#4e79a7";
/// Colour of the gap bars.
const GAP: &str = "#e15759";

/// The rows of a `bench graphs` run as a standalone SVG bar chart: one row per graph, a bar of
/// `gain_vs_best_baseline_pct` (concerto's plan against the shortest baseline, positive when
/// shorter) and a bar of `gap_to_bound_pct` (concerto above the proven bound, with the bound
/// that binds named), on one percent scale starting at 0 (a negative gain, which `bench graphs`
/// reports as a failure, is drawn left of it). Each bar carries a `<title>` with its value.
/// Deterministic; O(rows).
pub fn svg_chart(rows: &[GraphsRowSummary]) -> String {
    let top = rows
        .iter()
        .flat_map(|r| [r.gain_vs_best_baseline_pct, r.gap_to_bound_pct])
        .fold(1.0_f64, f64::max);
    let low = rows
        .iter()
        .map(|r| r.gain_vs_best_baseline_pct)
        .fold(0.0_f64, f64::min);
    let step = nice_step((top - low) / 6.0);
    let (lo, hi) = ((low / step).floor() * step, (top / step).ceil() * step);
    let plot = WIDTH - PLOT_LEFT - RIGHT_MARGIN;
    let x_of = |pct: f64| PLOT_LEFT + (pct - lo) / (hi - lo) * plot;
    let height = HEAD + rows.len() as f64 * ROW + AXIS;
    let mut s = String::new();
    // `write!` to a String cannot fail.
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <title>concerto bench graphs: gain over the best baseline and gap to the proven bound</title>\n\
         <rect class=\"background\" x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#ffffff\"/>\n\
         <text x=\"{PLOT_LEFT}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">concerto per graph \
         (simulated makespans, %)</text>\n\
         <rect x=\"{PLOT_LEFT}\" y=\"32\" width=\"12\" height=\"12\" fill=\"{GAIN}\"/>\
         <text x=\"{:.2}\" y=\"42.5\">gain over the best baseline</text>\n\
         <rect x=\"{:.2}\" y=\"32\" width=\"12\" height=\"12\" fill=\"{GAP}\"/>\
         <text x=\"{:.2}\" y=\"42.5\">gap to the proven bound (the bound that binds)</text>",
        PLOT_LEFT + 16.0,
        PLOT_LEFT + 220.0,
        PLOT_LEFT + 236.0,
    );
    let bottom = HEAD + rows.len() as f64 * ROW;
    write_grid(&mut s, lo, hi, step, bottom, &x_of);
    for (k, r) in rows.iter().enumerate() {
        let y = HEAD + k as f64 * ROW;
        let _ = writeln!(
            s,
            "<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\">{}</text>",
            PLOT_LEFT - 8.0,
            y + ROW / 2.0 + 4.0,
            escaped(&r.config),
        );
        let gain = r.gain_vs_best_baseline_pct;
        let gap = r.gap_to_bound_pct;
        let bound = &r.comparison.bound_kind;
        write_bar(
            &mut s,
            (x_of(0.0), x_of(gain)),
            y + 3.0,
            GAIN,
            &format!("gain {gain:.2}%"),
        );
        write_bar(
            &mut s,
            (x_of(0.0), x_of(gap)),
            y + 4.0 + BAR,
            GAP,
            &format!("gap {gap:.2}% ({bound})"),
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Writes the vertical grid lines and tick labels from `lo` to `hi` percent every `step`, and
/// the zero line, down to `bottom`.
fn write_grid(s: &mut String, lo: f64, hi: f64, step: f64, bottom: f64, x_of: &dyn Fn(f64) -> f64) {
    let ticks = ((hi - lo) / step).round() as i64;
    for t in 0..=ticks {
        let pct = lo + t as f64 * step;
        let x = x_of(pct);
        let colour = if pct.abs() < step / 2.0 {
            "#333333"
        } else {
            "#dddddd"
        };
        let _ = writeln!(
            s,
            "<line x1=\"{x:.2}\" y1=\"{HEAD}\" x2=\"{x:.2}\" y2=\"{bottom:.2}\" stroke=\"{colour}\"/>\
             <text x=\"{x:.2}\" y=\"{:.2}\" text-anchor=\"middle\">{}%</text>",
            bottom + 16.0,
            trim(pct),
        );
    }
}

/// Writes one horizontal bar between x coordinates `xs` at height `y`, labelled at its end.
fn write_bar(s: &mut String, xs: (f64, f64), y: f64, colour: &str, label: &str) {
    let (a, b) = (xs.0.min(xs.1), xs.0.max(xs.1));
    let _ = writeln!(
        s,
        "<rect class=\"bar\" x=\"{a:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{BAR}\" \
         fill=\"{colour}\"><title>{label}</title></rect><text x=\"{:.2}\" y=\"{:.2}\" \
         font-size=\"10\" fill=\"#333333\">{}</text>",
        (b - a).max(0.5),
        b + 4.0,
        y + BAR - 2.0,
        escaped(label),
    );
}

/// A step of 1, 2 or 5 times a power of ten, at least `raw` (and at least 0.1).
fn nice_step(raw: f64) -> f64 {
    let mut p = 0.1;
    loop {
        for m in [1.0, 2.0, 5.0] {
            if m * p >= raw {
                return m * p;
            }
        }
        p *= 10.0;
    }
}

/// `x` without trailing zeros (`2`, `0.5`).
fn trim(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// `s` escaped for XML text.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
