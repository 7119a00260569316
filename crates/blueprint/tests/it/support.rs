//! Helpers shared by the integration tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use runnel_blueprint::descriptor::AppDescriptor;
use runnel_blueprint::{
    KeptSchemas, QueryProblem, Verification, kept_schema, verify, verify_against,
    verify_with_queries,
};

/// A file of the repository's `docs/` directory.
pub(crate) fn docs(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `tests/fixtures`.
pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A descriptor from `tests/fixtures/descriptors`.
pub(crate) fn descriptor(name: &str) -> AppDescriptor {
    let path = fixtures().join("descriptors").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    AppDescriptor::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The descriptor a fixture is checked against: `<case>.json` beside it, else the one named
/// by a `# descriptor: NAME` comment, else `app.json`.
pub(crate) fn descriptor_for(blueprint: &Path, text: &str) -> AppDescriptor {
    let sibling = blueprint.with_extension("json");
    if sibling.exists() {
        let json = std::fs::read_to_string(&sibling).unwrap();
        return AppDescriptor::from_json(&json)
            .unwrap_or_else(|e| panic!("{}: {e}", sibling.display()));
    }
    let named = text
        .lines()
        .find_map(|line| line.strip_prefix("# descriptor: "))
        .unwrap_or("app.json");
    descriptor(named.trim())
}

/// The blueprint at `path` verified against its descriptor ([`descriptor_for`]) and, where
/// a `<case>.kept.json` beside it holds the schemas a backplane keeps for its topics (topic:
/// `[{fingerprint, definition}]`), against those; where a `<case>.queries.json` holds what
/// the app found planning its SQL streamlets (`[{instance, message, line, column}]`) or
/// describing its Python ones (`[{instance, message}]`), with those.
pub(crate) fn verify_fixture(path: &Path, text: &str) -> Verification {
    let descriptor = descriptor_for(path, text);
    let name = Path::new(path.file_name().unwrap());
    let queries_path = path.with_extension("queries.json");
    if queries_path.exists() {
        let problems: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&queries_path).unwrap()).unwrap();
        let problems: Vec<QueryProblem> = problems
            .into_iter()
            .map(|problem| QueryProblem {
                instance: problem["instance"].as_str().unwrap().to_owned(),
                message: problem["message"].as_str().unwrap().to_owned(),
                // A Python streamlet's problem has no place within the reference.
                position: problem["line"].as_u64().zip(problem["column"].as_u64()),
            })
            .collect();
        return verify_with_queries(
            name,
            text,
            &descriptor,
            None,
            &problems,
            &runnel_blueprint::BlueprintFiles::default(),
        );
    }
    let kept_path = path.with_extension("kept.json");
    if !kept_path.exists() {
        return verify(name, text, &descriptor);
    }
    let kept: BTreeMap<String, Vec<serde_json::Value>> =
        serde_json::from_str(&std::fs::read_to_string(&kept_path).unwrap()).unwrap();
    let kept: KeptSchemas = kept
        .into_iter()
        .map(|(topic, schemas)| {
            let schemas = schemas
                .into_iter()
                .map(|schema| {
                    kept_schema(
                        schema["fingerprint"].as_str().unwrap(),
                        schema["definition"].clone(),
                    )
                })
                .collect();
            (topic, schemas)
        })
        .collect();
    verify_against(name, text, &descriptor, &kept)
}

/// The `.toml` files of a fixture directory, sorted.
pub(crate) fn blueprints_in(directory: &str) -> Vec<PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(fixtures().join(directory))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    paths
}

/// A descriptor built from JSON text, for tests that define their own.
pub(crate) fn descriptor_json(json: serde_json::Value) -> AppDescriptor {
    serde_json::from_value(json).unwrap()
}
