//! Statistics and attribution over recorded runs.
