//! The Application CustomResourceDefinition, generated from the Rust types.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec, CustomResourceDefinitionVersion, CustomResourceSubresourceStatus,
    CustomResourceSubresources, CustomResourceValidation, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use runnel_application::{ApplicationSpec, ApplicationStatus, GROUP, KIND, PLURAL, VERSION};
use schemars::JsonSchema;
use serde_json::{Value, json};

/// The CustomResourceDefinition of [`Application`](crate::Application): `runnel.dev`,
/// `v1alpha1`, namespaced, a structural schema generated from the spec and status types
/// (with their doc comments as descriptions, so `kubectl explain` works), the status
/// subresource, and printer columns for version, phase, message and age. `runnel crd`
/// prints it.
///
/// ```
/// let crd = runnel_operator::crd();
/// assert_eq!(crd.metadata.name.as_deref(), Some("applications.runnel.dev"));
/// let schema = crd.spec.versions[0].schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap();
/// assert!(schema.properties.as_ref().unwrap().contains_key("spec"));
/// ```
pub fn crd() -> CustomResourceDefinition {
    let spec = schema_of::<ApplicationSpec>(
        "What the user asks the cluster to run: the image, the blueprint and descriptor, the streamlets with their replicas, the topics and the configuration.",
    );
    let status = schema_of::<ApplicationStatus>(
        "What the operator observed: the phase, conditions, a message and each streamlet's replicas, restarts and last error.",
    );
    let root = json!({
        "type": "object",
        "description": "A Runnel app: streamlets wired by a blueprint, each run as its own Deployment.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        }
    });
    let mut root = root;
    standard_formats_only(&mut root);
    let lists = &mut root["properties"];
    list_of_maps(&mut lists["spec"]["properties"]["streamlets"], "name");
    list_of_maps(&mut lists["spec"]["properties"]["topics"], "name");
    list_of_maps(&mut lists["status"]["properties"]["streamlets"], "name");
    list_of_maps(&mut lists["status"]["properties"]["conditions"], "type");
    set_of_strings(&mut lists["spec"]["properties"]["imagePullSecrets"]);
    for port_list in ["producers", "consumers"] {
        set_of_strings(
            &mut lists["spec"]["properties"]["topics"]["items"]["properties"][port_list],
        );
    }
    let schema: JSONSchemaProps =
        serde_json::from_value(root).expect("the generated schema is a JSONSchemaProps");
    let column = |name: &str, type_: &str, path: &str, description: &str, priority: i32| {
        CustomResourceColumnDefinition {
            name: name.to_owned(),
            type_: type_.to_owned(),
            json_path: path.to_owned(),
            description: Some(description.to_owned()),
            priority: (priority > 0).then_some(priority),
            format: None,
        }
    };
    CustomResourceDefinition {
        metadata: ObjectMeta {
            name: Some(format!("{PLURAL}.{GROUP}")),
            labels: Some([("app.kubernetes.io/part-of".to_owned(), "runnel".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: CustomResourceDefinitionSpec {
            group: GROUP.to_owned(),
            names: CustomResourceDefinitionNames {
                kind: KIND.to_owned(),
                list_kind: Some(format!("{KIND}List")),
                plural: PLURAL.to_owned(),
                singular: Some(KIND.to_ascii_lowercase()),
                short_names: Some(vec!["rapp".to_owned()]),
                categories: Some(vec!["runnel".to_owned()]),
            },
            scope: "Namespaced".to_owned(),
            versions: vec![CustomResourceDefinitionVersion {
                name: VERSION.to_owned(),
                served: true,
                storage: true,
                schema: Some(CustomResourceValidation {
                    open_api_v3_schema: Some(schema),
                }),
                subresources: Some(CustomResourceSubresources {
                    status: Some(CustomResourceSubresourceStatus(json!({}))),
                    scale: None,
                }),
                additional_printer_columns: Some(vec![
                    column("Version", "string", ".spec.version", "The app's version", 0),
                    column(
                        "Phase",
                        "string",
                        ".status.phase",
                        "Pending, Running, Degraded, Failed, Suspended, RolledBack or Undeploying",
                        0,
                    ),
                    column(
                        "Message",
                        "string",
                        ".status.message",
                        "What is going on",
                        1,
                    ),
                    column(
                        "Age",
                        "date",
                        ".metadata.creationTimestamp",
                        "Time since creation",
                        0,
                    ),
                ]),
                deprecated: None,
                deprecation_warning: None,
                selectable_fields: None,
            }],
            conversion: None,
            preserve_unknown_fields: None,
        },
        status: None,
    }
}

/// The structural schema of `T`, as kube's `CustomResource` derive makes it: OpenAPI 3,
/// subschemas inlined, `nullable` for options, enums rewritten.
fn schema_of<T: JsonSchema>(description: &str) -> Value {
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube::core::schema::StructuralSchemaRewriter)
        .with_transform(kube::core::schema::OptionalEnum)
        .into_generator();
    let mut schema =
        serde_json::to_value(generator.into_root_schema_for::<T>()).expect("schemas serialize");
    if let Some(object) = schema.as_object_mut() {
        // The type's own doc comment is written for Rust readers; say it for kubectl explain.
        object.remove("title");
        object.insert("description".to_owned(), Value::from(description));
    }
    schema
}

/// The formats Kubernetes knows (`k8s.io/kube-openapi` `strfmt`); others (`uint16`,
/// `uint32`, which schemars writes for unsigned integers) make the API server warn. The
/// range they stand for stays as `minimum`/`maximum`.
const KNOWN_FORMATS: [&str; 7] = [
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "date",
    "date-time",
];

/// Removes every `format` Kubernetes does not know, throughout `schema`.
fn standard_formats_only(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| !KNOWN_FORMATS.contains(&format))
            {
                object.remove("format");
            }
            object.values_mut().for_each(standard_formats_only);
        }
        Value::Array(items) => items.iter_mut().for_each(standard_formats_only),
        _ => {}
    }
}

/// Marks a list of objects as a map keyed by `key`, so that server-side apply merges its
/// entries by key (as for a Deployment's containers).
fn list_of_maps(list: &mut Value, key: &str) {
    assert!(
        list.is_object(),
        "the list to mark as keyed by {key} exists"
    );
    list["x-kubernetes-list-type"] = json!("map");
    list["x-kubernetes-list-map-keys"] = json!([key]);
}

/// Marks a list of strings as a set.
fn set_of_strings(list: &mut Value) {
    assert!(list.is_object(), "the list to mark as a set exists");
    list["x-kubernetes-list-type"] = json!("set");
}
