//! Reports: terminal tables and the self-contained HTML report.
