//! Shared by the tool crate's integration tests: the recorded outputs of
//! the external load tools in `tests/data/external`.

/// The text of `tests/data/external/<name>`.
pub(crate) fn data(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/data/external/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}
