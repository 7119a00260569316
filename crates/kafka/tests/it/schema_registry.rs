//! A real Apicurio Registry (`scripts/registry-dev`) through its Confluent-compatible API:
//! an Avro schema registered and read back, an incompatible change refused under BACKWARD
//! compatibility and a compatible one accepted as version 2.

use runnel_kafka::test_registry::ApicurioRegistry;

/// A registration request for the Avro record `Order` with `fields` (JSON of the fields).
fn register(fields: &str) -> String {
    let schema = format!(r#"{{"type":"record","name":"Order","fields":[{fields}]}}"#);
    format!(
        r#"{{"schemaType":"AVRO","schema":"{}"}}"#,
        schema.replace('"', "\\\"")
    )
}

#[test]
fn avro_schemas_evolve_under_backward_compatibility() {
    let registry = ApicurioRegistry::start();
    assert!(registry.url().starts_with("http://127.0.0.1:"));
    let subject = "/subjects/orders-value";

    let (status, body) = registry
        .request(
            "PUT",
            "/config/orders-value",
            Some(r#"{"compatibility":"BACKWARD"}"#),
        )
        .unwrap();
    assert_eq!(status, 200, "setting BACKWARD compatibility: {body}");

    let first = register(r#"{"name":"id","type":"string"}"#);
    let (status, body) = registry
        .request("POST", &format!("{subject}/versions"), Some(&first))
        .unwrap();
    assert_eq!(status, 200, "registering the first schema: {body}");
    let id: u64 = body
        .trim()
        .strip_prefix(r#"{"id":"#)
        .and_then(|rest| rest.strip_suffix('}'))
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no schema id in {body}"));

    let (status, body) = registry
        .request("GET", &format!("/schemas/ids/{id}"), None)
        .unwrap();
    assert_eq!(status, 200, "reading schema {id}: {body}");
    assert!(
        body.contains(r#"\"name\":\"Order\""#) && body.contains(r#"\"name\":\"id\""#),
        "schema {id} read back is not the one registered: {body}"
    );

    // A new field without a default: records written before it cannot be read.
    let incompatible = register(r#"{"name":"id","type":"string"},{"name":"qty","type":"int"}"#);
    let (status, body) = registry
        .request("POST", &format!("{subject}/versions"), Some(&incompatible))
        .unwrap();
    assert_eq!(
        status, 409,
        "an incompatible change was not refused: {body}"
    );

    // The same field with a default: old records read with qty = 0.
    let compatible =
        register(r#"{"name":"id","type":"string"},{"name":"qty","type":"int","default":0}"#);
    let (status, body) = registry
        .request("POST", &format!("{subject}/versions"), Some(&compatible))
        .unwrap();
    assert_eq!(status, 200, "a compatible change was refused: {body}");

    let (status, body) = registry
        .request("GET", &format!("{subject}/versions"), None)
        .unwrap();
    assert_eq!((status, body.trim()), (200, "[1,2]"));
    let (status, body) = registry
        .request("GET", &format!("{subject}/versions/2"), None)
        .unwrap();
    assert_eq!(status, 200, "reading version 2: {body}");
    assert!(
        body.contains("qty"),
        "version 2 is not the new schema: {body}"
    );
}
