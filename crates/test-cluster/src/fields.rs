//! Field ownership and server-side apply, as the API server does them, on JSON objects.
//!
//! A field path names a leaf: a scalar, an empty object or list, or an atomic list. Lists of
//! objects that all carry the same key field (`name`, `uid`, `type`, `mountPath`,
//! `containerPort`, `port`) are associative: each element is addressed by its key, as
//! Kubernetes' `x-kubernetes-list-map-keys` do for containers, env, volumes, ports and owner
//! references; other lists are atomic.
//!
//! - An *update* (create, replace, merge patch) gives its manager every leaf it changed and
//!   takes those leaves from the other managers.
//! - An *apply* sets what the applied object holds; a leaf another manager owns with a
//!   different value is a conflict unless forced (then the applier takes it); leaves the
//!   applier owned before and no longer applies are removed unless another manager owns
//!   them too. Leaves nobody applied stay.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Segment {
    /// A field of an object.
    Field(String),
    /// The element of an associative list whose key field has this value.
    Key(String, String),
}

/// A path to a leaf.
pub(crate) type FieldPath = Vec<Segment>;

/// Which part of an object a write covers: the main resource (everything but `status`,
/// when the kind has a status subresource) or `status` alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The whole object except server-set metadata.
    All,
    /// Everything except `status`.
    Main,
    /// `status` only.
    Status,
}

/// The ownership of one manager.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Owned {
    /// `Apply` or `Update`.
    pub(crate) operation: String,
    /// The leaves.
    pub(crate) fields: BTreeSet<FieldPath>,
}

/// Every manager's ownership of one object.
pub(crate) type Managers = BTreeMap<String, Owned>;

const KEY_FIELDS: [&str; 6] = ["name", "uid", "type", "mountPath", "containerPort", "port"];

/// Metadata the server sets, owned by nobody.
const SERVER_METADATA: [&str; 10] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// How lists are treated: built-in kinds have associative lists (by their key field);
/// custom resources' lists are atomic, as Kubernetes treats CRD lists without
/// `x-kubernetes-list-type: map`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lists {
    /// Lists of objects with a unique key field merge by it.
    ByKey,
    /// Every list is replaced whole.
    Atomic,
}

thread_local! {
    static LISTS: std::cell::Cell<Lists> = const { std::cell::Cell::new(Lists::ByKey) };
}

/// Runs `work` with lists treated as `lists`.
pub(crate) fn with_lists<T>(lists: Lists, work: impl FnOnce() -> T) -> T {
    let previous = LISTS.with(|cell| cell.replace(lists));
    let result = work();
    LISTS.with(|cell| cell.set(previous));
    result
}

/// The key field of an associative list, if `items` is one: every element has it, as a
/// string or number, and no two share a value.
fn list_key(items: &[Value]) -> Option<&'static str> {
    if items.is_empty() || LISTS.with(std::cell::Cell::get) == Lists::Atomic {
        return None;
    }
    KEY_FIELDS.into_iter().find(|key| {
        let values: Vec<String> = items
            .iter()
            .filter_map(|item| {
                item.get(*key)
                    .filter(|v| v.is_string() || v.is_number())
                    .map(key_text)
            })
            .collect();
        values.len() == items.len()
            && values
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                == values.len()
    })
}

fn key_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The leaves of `object` within `scope`.
pub(crate) fn leaves(object: &Value, scope: Scope) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    let Some(map) = object.as_object() else {
        return out;
    };
    for (key, value) in map {
        let included = match (scope, key.as_str()) {
            (_, "apiVersion" | "kind") => false,
            (Scope::Status, name) => name == "status",
            (Scope::Main, "status") => false,
            _ => true,
        };
        if !included {
            continue;
        }
        let path = vec![Segment::Field(key.clone())];
        if key == "metadata" {
            if let Some(meta) = value.as_object() {
                for (field, inner) in meta {
                    if !SERVER_METADATA.contains(&field.as_str()) {
                        walk(
                            inner,
                            vec![Segment::Field(key.clone()), Segment::Field(field.clone())],
                            &mut out,
                        );
                    }
                }
            }
        } else {
            walk(value, path, &mut out);
        }
    }
    out
}

fn walk(value: &Value, path: FieldPath, out: &mut BTreeSet<FieldPath>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, inner) in map {
                let mut next = path.clone();
                next.push(Segment::Field(key.clone()));
                walk(inner, next, out);
            }
        }
        Value::Array(items) => match list_key(items) {
            Some(key) => {
                for item in items {
                    let mut next = path.clone();
                    next.push(Segment::Key(key.to_owned(), key_text(&item[key])));
                    match item.as_object() {
                        Some(fields) if fields.len() > 1 => walk(item, next, out),
                        _ => {
                            out.insert(next);
                        }
                    }
                }
            }
            None => {
                out.insert(path);
            }
        },
        _ => {
            out.insert(path);
        }
    }
}

/// The value at `path`, if any.
pub(crate) fn get<'a>(object: &'a Value, path: &[Segment]) -> Option<&'a Value> {
    let mut current = object;
    for segment in path {
        current = match segment {
            Segment::Field(name) => current.get(name)?,
            Segment::Key(key, value) => current
                .as_array()?
                .iter()
                .find(|item| item.get(key).map(key_text).as_deref() == Some(value))?,
        };
    }
    Some(current)
}

/// Removes the value at `path` (and the element, for a key segment at the end).
pub(crate) fn remove(object: &mut Value, path: &[Segment]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = object;
    for segment in parents {
        let next = match segment {
            Segment::Field(name) => current.get_mut(name),
            Segment::Key(key, value) => current.as_array_mut().and_then(|items| {
                items
                    .iter_mut()
                    .find(|item| item.get(key).map(key_text).as_deref() == Some(value))
            }),
        };
        match next {
            Some(next) => current = next,
            None => return,
        }
    }
    match last {
        Segment::Field(name) => {
            if let Some(map) = current.as_object_mut() {
                map.remove(name);
            }
        }
        Segment::Key(key, value) => {
            if let Some(items) = current.as_array_mut() {
                items.retain(|item| item.get(key).map(key_text).as_deref() != Some(value));
            }
        }
    }
}

/// Drops objects and associative lists left empty by removals under `path`'s parents.
fn prune(object: &mut Value, path: &[Segment]) {
    for depth in (1..path.len()).rev() {
        let parent = &path[..depth];
        let empty = match get(object, parent) {
            Some(Value::Object(map)) => map.is_empty(),
            Some(Value::Array(items)) => items.is_empty(),
            _ => false,
        };
        if empty && !matches!(parent, [Segment::Field(m)] if m == "metadata") {
            remove(object, parent);
        }
    }
}

/// `applied` merged into `live`: objects field by field, associative lists element by
/// element (by key), everything else replaced.
pub(crate) fn merge(live: &mut Value, applied: &Value) {
    match (live, applied) {
        (Value::Object(target), Value::Object(source)) => {
            for (key, value) in source {
                match target.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        target.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Array(target), Value::Array(source)) => {
            let key =
                list_key(source).filter(|key| target.is_empty() || list_key(target) == Some(*key));
            match key {
                Some(key) => {
                    for item in source {
                        let id = key_text(&item[key]);
                        match target.iter_mut().find(|t| key_text(&t[key]) == id) {
                            Some(existing) => merge(existing, item),
                            None => target.push(item.clone()),
                        }
                    }
                }
                None => *target = source.clone(),
            }
        }
        (target, source) => *target = source.clone(),
    }
}

/// RFC 7386 JSON merge patch.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let map = target.as_object_mut().expect("made an object above");
            for (key, value) in fields {
                if value.is_null() {
                    map.remove(key);
                } else {
                    merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// A conflict: a leaf another manager owns with another value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    pub(crate) manager: String,
    pub(crate) path: FieldPath,
}

/// Renders a path as the API server does in conflict messages: `.spec.replicas`.
pub(crate) fn render(path: &[Segment]) -> String {
    path.iter()
        .map(|segment| match segment {
            Segment::Field(name) => format!(".{name}"),
            Segment::Key(key, value) => format!("[{key}=\"{value}\"]"),
        })
        .collect()
}

/// Server-side apply of `applied` by `manager` onto `live` (within `scope`).
///
/// # Errors
///
/// The conflicts, when not forced.
pub(crate) fn apply(
    live: &mut Value,
    managers: &mut Managers,
    manager: &str,
    applied: &Value,
    scope: Scope,
    force: bool,
) -> Result<(), Vec<Conflict>> {
    let applied_fields = leaves(applied, scope);
    let mut conflicts = Vec::new();
    for path in &applied_fields {
        for (other, owned) in managers.iter() {
            if other == manager || !owned.fields.contains(path) {
                continue;
            }
            if get(live, path) != get(applied, path) {
                conflicts.push(Conflict {
                    manager: other.clone(),
                    path: path.clone(),
                });
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }
    for conflict in &conflicts {
        if let Some(owned) = managers.get_mut(&conflict.manager) {
            owned.fields.remove(&conflict.path);
        }
    }
    let previous = managers
        .get(manager)
        .map(|owned| owned.fields.clone())
        .unwrap_or_default();
    for path in previous.difference(&applied_fields) {
        let shared = managers
            .iter()
            .any(|(other, owned)| other != manager && owned.fields.contains(path));
        if !shared {
            remove(live, path);
            prune(live, path);
        }
    }
    let scoped = scoped(applied, scope);
    merge(live, &scoped);
    managers.insert(
        manager.to_owned(),
        Owned {
            operation: "Apply".to_owned(),
            fields: applied_fields,
        },
    );
    managers.retain(|_, owned| !owned.fields.is_empty());
    Ok(())
}

/// Records an update by `manager` from `before` to `after` (within `scope`): the leaves it
/// changed become its own.
pub(crate) fn record_update(
    managers: &mut Managers,
    manager: &str,
    before: &Value,
    after: &Value,
    scope: Scope,
) {
    let old = leaves(before, scope);
    let new = leaves(after, scope);
    let changed: BTreeSet<FieldPath> = new
        .iter()
        .filter(|path| !old.contains(*path) || get(before, path) != get(after, path))
        .cloned()
        .collect();
    let removed: BTreeSet<FieldPath> = old.difference(&new).cloned().collect();
    for (other, owned) in managers.iter_mut() {
        if other != manager {
            owned
                .fields
                .retain(|path| !changed.contains(path) && !removed.contains(path));
        } else {
            owned.fields.retain(|path| !removed.contains(path));
        }
    }
    if !changed.is_empty() {
        let entry = managers.entry(manager.to_owned()).or_insert_with(|| Owned {
            operation: "Update".to_owned(),
            fields: BTreeSet::new(),
        });
        entry.fields.extend(changed);
    }
    managers.retain(|_, owned| !owned.fields.is_empty());
}

/// The part of `object` a scope covers (identity fields kept).
fn scoped(object: &Value, scope: Scope) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        match scope {
            Scope::All => {}
            Scope::Main => {
                map.remove("status");
            }
            Scope::Status => map.retain(|key, _| key == "status"),
        }
    }
    copy
}

/// `metadata.managedFields` as the API server writes them (`fieldsV1` with `f:` and `k:`
/// keys).
pub(crate) fn managed_fields(managers: &Managers, api_version: &str, time: &str) -> Value {
    let entries: Vec<Value> = managers
        .iter()
        .map(|(manager, owned)| {
            let mut tree = Map::new();
            for path in &owned.fields {
                let mut node = &mut tree;
                for segment in path {
                    let key = match segment {
                        Segment::Field(name) => format!("f:{name}"),
                        Segment::Key(key, value) => {
                            format!("k:{}", serde_json::json!({ key: value }))
                        }
                    };
                    node = node
                        .entry(key)
                        .or_insert_with(|| Value::Object(Map::new()))
                        .as_object_mut()
                        .expect("every node is an object");
                }
            }
            serde_json::json!({
                "manager": manager,
                "operation": owned.operation,
                "apiVersion": api_version,
                "time": time,
                "fieldsType": "FieldsV1",
                "fieldsV1": Value::Object(tree),
            })
        })
        .collect();
    Value::Array(entries)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(image: &str, replicas: Option<i64>) -> Value {
        let mut object = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}
        });
        if let Some(replicas) = replicas {
            object["spec"]["replicas"] = json!(replicas);
        }
        object
    }

    #[test]
    fn apply_leaves_what_others_set_and_removes_what_it_dropped() {
        let mut live = json!({});
        let mut managers = Managers::new();
        apply(
            &mut live,
            &mut managers,
            "op",
            &deployment("a:1", Some(1)),
            Scope::Main,
            false,
        )
        .unwrap();
        // An HPA sets the replicas; a user adds an annotation.
        let before = live.clone();
        live["spec"]["replicas"] = json!(5);
        record_update(&mut managers, "hpa", &before, &live, Scope::Main);
        let before = live.clone();
        live["metadata"]["annotations"] = json!({"note": "mine"});
        record_update(&mut managers, "user", &before, &live, Scope::Main);
        // The operator applies again, without replicas this time and with a new image.
        apply(
            &mut live,
            &mut managers,
            "op",
            &deployment("a:2", None),
            Scope::Main,
            false,
        )
        .unwrap();
        assert_eq!(live["spec"]["replicas"], 5);
        assert_eq!(live["metadata"]["annotations"]["note"], "mine");
        assert_eq!(
            live["spec"]["template"]["spec"]["containers"][0]["image"],
            "a:2"
        );
        // Applying replicas while the HPA owns them conflicts unless forced.
        let conflicts = apply(
            &mut live,
            &mut managers,
            "op",
            &deployment("a:2", Some(1)),
            Scope::Main,
            false,
        )
        .unwrap_err();
        assert_eq!(render(&conflicts[0].path), ".spec.replicas");
        apply(
            &mut live,
            &mut managers,
            "op",
            &deployment("a:2", Some(1)),
            Scope::Main,
            true,
        )
        .unwrap();
        assert_eq!(live["spec"]["replicas"], 1);
        assert!(!managers.contains_key("hpa"));
        // Dropping a label the operator alone set removes it.
        let mut without_labels = deployment("a:2", Some(1));
        without_labels["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("labels");
        apply(
            &mut live,
            &mut managers,
            "op",
            &without_labels,
            Scope::Main,
            false,
        )
        .unwrap();
        assert!(live["metadata"].get("labels").is_none(), "{live}");
    }

    #[test]
    fn containers_merge_by_name_and_env_lists_too() {
        let mut live = json!({"spec": {"containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]}]}});
        let applied = json!({"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}, {"name": "b", "image": "2"}]}});
        merge(&mut live, &applied);
        assert_eq!(live["spec"]["containers"][0]["image"], "1");
        assert_eq!(
            live["spec"]["containers"][0]["env"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(live["spec"]["containers"][1]["name"], "b");
    }

    #[test]
    fn lists_whose_key_values_repeat_are_atomic() {
        let mut live =
            json!({"parameters": [{"key": "a", "type": "int"}, {"key": "b", "type": "int"}]});
        let applied = json!({"parameters": [{"key": "c", "type": "int"}]});
        merge(&mut live, &applied);
        assert_eq!(live, applied);
        let mut custom = json!({"items": [{"name": "a", "v": 1}]});
        with_lists(Lists::Atomic, || {
            merge(&mut custom, &json!({"items": [{"name": "b"}]}))
        });
        assert_eq!(custom, json!({"items": [{"name": "b"}]}));
    }

    #[test]
    fn merge_patches_remove_with_null() {
        let mut target = json!({"a": 1, "b": {"c": 2, "d": 3}});
        merge_patch(&mut target, &json!({"a": null, "b": {"c": 4}}));
        assert_eq!(target, json!({"b": {"c": 4, "d": 3}}));
    }
}
