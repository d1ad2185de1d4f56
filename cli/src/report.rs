//! Number formats shared by the tables (the JSON shapes are the pipeline's summaries).

/// Milliseconds with three decimals.
pub(crate) fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Bytes in GiB.
pub(crate) fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// `a` relative to `b`, signed percent (`-` when `b` is 0).
pub(crate) fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:+.1}%", (a as f64 / b as f64 - 1.0) * 100.0)
    }
}
