//! A plain text table: columns padded to their widest cell, numbers aligned
//! right, text left, two spaces between columns; widths count characters,
//! not bytes, so `µs` and `→` line up.

/// How a column aligns its cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    header: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(header: &[(&str, Align)]) -> Self {
        Table {
            header: header.iter().map(|(h, a)| (h.to_string(), *a)).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing trailing cells are blank.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table, each line indented by `indent` spaces, trailing spaces
    /// trimmed (snapshot diffs stay clean).
    pub(crate) fn render(&self, indent: usize) -> String {
        let cols = self.header.len();
        let width = |s: &str| s.chars().count();
        let mut widths: Vec<usize> = self.header.iter().map(|(h, _)| width(h)).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(width(cell));
            }
        }
        let mut out = String::new();
        let headers: Vec<String> = self.header.iter().map(|(h, _)| h.clone()).collect();
        for row in std::iter::once(&headers).chain(&self.rows) {
            let mut line = " ".repeat(indent);
            for (i, (_, align)) in self.header.iter().enumerate() {
                let cell = row.get(i).map(String::as_str).unwrap_or("");
                let pad = " ".repeat(widths[i] - width(cell));
                if i > 0 {
                    line.push_str("  ");
                }
                match align {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_by_characters() {
        let mut t = Table::new(&[("step", Align::Left), ("p99", Align::Right)]);
        t.row(vec!["a → b".into(), "8.24ms".into()]);
        t.row(vec!["long step name".into(), "41µs".into()]);
        assert_eq!(
            t.render(2),
            "  step               p99\n  a → b           8.24ms\n  long step name    41µs\n"
        );
    }
}
