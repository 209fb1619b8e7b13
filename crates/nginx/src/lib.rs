//! nginx configuration: a crossplane-compatible parser and builder, and the
//! tuning advisor (`tare nginx advise`, docs/nginx.md).
//!
//! The pipeline, one module per step:
//! - [`lexer`]: text to tokens, exactly as crossplane 0.5.8 cuts them.
//! - [`analyzer`]: is a directive allowed here, with these arguments (crossplane's table).
//! - [`parser`]: files (with `include` globs) to a [`Payload`], the crossplane JSON
//!   ([`parse_text`]: the main file's text given instead of read).
//! - [`combine`]: the `--combine` form, includes spliced in.
//! - [`builder`]: a [`Payload`] back to configuration text.
//! - [`glob`]: include patterns expanded as Python's `glob` does.
//! - [`relocate`]: a parsed configuration moved to another directory before building.
//! - [`retarget`]: a reverse proxy's upstreams pointed at another backend before building.
//! - [`stream`]: `tare nginx parse`'s JSON and summary written as the files are
//!   parsed, without the configuration in memory.
//! - [`python`]: Python's `repr` and `json.dumps`, which crossplane's output inherits.
//! - [`advise`]: the tuning lists of seeds 000 and 003 (docs/studies.md) as rules
//!   over a parsed configuration, each with a machine-applicable [`advise::Change`].

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod advise;
mod analyzer;
pub mod builder;
pub mod combine;
mod glob;
mod lexer;
mod parser;
mod payload;
mod python;
pub mod relocate;
pub mod retarget;
pub mod stream;

pub use builder::{build, build_file, build_files, BuildOptions};
pub use parser::{parse, parse_text, ParseOptions};
pub use payload::{ConfigFile, FileError, Payload, PayloadError, Statement, Status};
pub use relocate::relocate;
pub use retarget::{is_proxy, retarget, RetargetError, Retargeted};

/// The payload as `crossplane parse` prints it (compact, or indented with `-i N`),
/// without the trailing newline.
pub fn to_json(payload: &Payload, indent: Option<usize>) -> String {
    python::dumps(payload, indent)
}
