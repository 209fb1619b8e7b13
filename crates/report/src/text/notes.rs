//! Notes gathered while rendering: each says what a marker or a `~` means
//! and what to do about it, once, at the end.

#[derive(Debug, Default)]
pub(super) struct Notes {
    lines: Vec<String>,
}

impl Notes {
    /// Adds a note unless the same one is already there.
    pub(super) fn add(&mut self, line: impl Into<String>) {
        let line = line.into();
        if !self.lines.contains(&line) {
            self.lines.push(line);
        }
    }

    pub(super) fn render(&self) -> String {
        if self.lines.is_empty() {
            return String::new();
        }
        let mut out = String::from("\nnotes:\n");
        for l in &self.lines {
            out.push_str(&format!("  - {l}\n"));
        }
        out
    }
}
