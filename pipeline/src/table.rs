//! Plain-text tables with aligned columns, for rendering reports.

/// Bytes in GiB (for tables and messages).
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// A table: a header row and data rows, printed with columns padded to their widest cell;
/// numeric-looking cells are right-aligned.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (cells past the header's width are ignored).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The header, a rule and the rows, one per line.
    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0; cols];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (c, cell) in row.iter().enumerate().take(cols) {
                width[c] = width[c].max(cell.chars().count());
            }
        }
        let numeric =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || ".-+%e".contains(c));
        let mut out = String::new();
        let line = |row: &Vec<String>, out: &mut String| {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .take(cols)
                .map(|(c, cell)| {
                    if numeric(cell) {
                        format!("{cell:>w$}", w = width[c])
                    } else {
                        format!("{cell:<w$}", w = width[c])
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        };
        line(&self.header, &mut out);
        let rule: Vec<String> = width.iter().map(|&w| "-".repeat(w)).collect();
        out.push_str(&rule.join("  "));
        out.push('\n');
        for row in &self.rows {
            line(row, &mut out);
        }
        out
    }
}
