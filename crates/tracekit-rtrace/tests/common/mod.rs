//! Shared by the integration tests: the upstream sp-rtrace corpus.

/// A file of `tests/corpus/rtrace/upstream/`.
pub fn upstream(name: &str) -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/corpus/rtrace/upstream/"
    )
    .to_string()
        + name;
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
