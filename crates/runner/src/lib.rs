//! Experiments: the TOML file, the interleaved runner, run directories and provenance.
