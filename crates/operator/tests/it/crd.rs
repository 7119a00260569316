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

/// Every `format` in `schema`, with where it is.
fn formats(schema: &serde_json::Value, at: &str, found: &mut Vec<String>) {
    match schema {
        serde_json::Value::Object(object) => {
            if let Some(format) = object.get("format").and_then(|f| f.as_str()) {
                found.push(format!("{at}: {format}"));
            }
            for (key, value) in object {
                formats(value, &format!("{at}.{key}"), found);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                formats(item, at, found);
            }
        }
        _ => {}
    }
}

#[test]
fn the_schema_bounds_counts_keys_its_lists_and_uses_only_standard_formats() {
    let crd = serde_json::to_value(runnel_operator::crd()).unwrap();
    let root = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    let spec = &root["spec"]["properties"];
    assert_eq!(
        spec["streamlets"]["items"]["properties"]["replicas"]["minimum"],
        0.0
    );
    assert_eq!(
        spec["topics"]["items"]["properties"]["partitions"]["minimum"],
        1.0
    );
    let scaling = &spec["configuration"]["properties"]["streamlets"]["additionalProperties"]["properties"]
        ["scaling"]["properties"];
    for (field, minimum) in [
        ("minReplicas", 0.0),
        ("maxReplicas", 1.0),
        ("targetLag", 1.0),
        ("targetLagSeconds", 1.0),
    ] {
        assert_eq!(scaling[field]["minimum"], minimum, "{field}");
    }
    for (list, key) in [
        (&spec["streamlets"], "name"),
        (&spec["topics"], "name"),
        (&root["status"]["properties"]["streamlets"], "name"),
        (&root["status"]["properties"]["conditions"], "type"),
    ] {
        assert_eq!(list["x-kubernetes-list-type"], "map");
        assert_eq!(list["x-kubernetes-list-map-keys"], serde_json::json!([key]));
    }
    assert_eq!(spec["imagePullSecrets"]["x-kubernetes-list-type"], "set");
    let mut found = Vec::new();
    formats(&crd, "", &mut found);
    assert!(
        found
            .iter()
            .all(|f| f.ends_with(": int32") || f.ends_with(": int64")),
        "{found:#?}"
    );
}
