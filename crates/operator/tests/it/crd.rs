use std::path::PathBuf;

/// Compares `actual` with the golden file `name` under `tests/golden/`; with
/// `RUNNEL_UPDATE_GOLDEN=1` rewrites it instead.
pub(crate) fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("RUNNEL_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "reading {} failed: {error} (RUNNEL_UPDATE_GOLDEN=1 writes it)",
            path.display()
        )
    });
    assert_eq!(
        actual,
        expected,
        "{} differs; RUNNEL_UPDATE_GOLDEN=1 rewrites it",
        path.display()
    );
}

#[test]
fn the_crd_matches_its_golden_file() {
    let yaml = serde_norway::to_string(&runnel_operator::crd()).unwrap();
    golden("crd.yaml", &yaml);
}
