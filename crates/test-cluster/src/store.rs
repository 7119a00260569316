//! The API server's state: objects by resource and name, one resource version counter,
//! the history of changes that watches replay, and garbage collection by owner reference.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::fields::{self, Managers, Scope};
use crate::kinds::{self, Kind};

/// How many changes watches can resume from.
const HISTORY: usize = 100_000;

/// A failed request, as a Kubernetes `Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) code: u16,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
        }
    }

    fn not_found(kind: &Kind, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{}.{} \"{name}\" not found", kind.plural, kind.group),
        )
    }

    /// The `Status` body.
    pub(crate) fn status(&self) -> Value {
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": self.message, "reason": self.reason,
            "code": self.code,
        })
    }
}

/// Identifies one object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key {
    pub(crate) group: String,
    pub(crate) plural: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

#[derive(Clone, Debug)]
struct Stored {
    kind: Kind,
    object: Value,
    managers: Managers,
}

/// One change, as watches deliver it.
#[derive(Clone, Debug)]
pub(crate) struct Change {
    pub(crate) revision: u64,
    pub(crate) group: String,
    pub(crate) plural: String,
    pub(crate) namespace: String,
    pub(crate) event: &'static str,
    pub(crate) object: Value,
}

/// How a delete propagates to dependents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Propagation {
    Background,
    Foreground,
    Orphan,
}

/// What a write is.
#[derive(Clone, Debug)]
pub(crate) enum Write {
    /// PUT: the whole object (a `resourceVersion` in it must match).
    Replace(Value),
    /// RFC 7386 merge patch (strategic merge patches are treated the same, with
    /// associative lists merged by key).
    Merge(Value, bool),
    /// Server-side apply, forced or not.
    Apply(Value, bool),
}

/// The state.
#[derive(Debug)]
pub(crate) struct Store {
    custom: Vec<Kind>,
    objects: BTreeMap<Key, Stored>,
    revision: u64,
    uids: u64,
    history: VecDeque<Arc<Change>>,
    /// Watches from a revision below this get 410 Gone.
    oldest: u64,
    changes: broadcast::Sender<Arc<Change>>,
}

impl Store {
    pub(crate) fn new() -> Store {
        Store {
            custom: Vec::new(),
            objects: BTreeMap::new(),
            revision: 1,
            uids: 0,
            history: VecDeque::new(),
            oldest: 1,
            changes: broadcast::channel(16_384).0,
        }
    }

    /// The kind at `group`/`version`/`plural`, built-in or from a CRD.
    pub(crate) fn kind(&self, group: &str, version: &str, plural: &str) -> Option<Kind> {
        kinds::built_in(group, version, plural).or_else(|| {
            self.custom
                .iter()
                .find(|k| k.group == group && k.version == version && k.plural == plural)
                .cloned()
        })
    }

    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.changes.subscribe()
    }

    /// Changes after `revision`, or `None` when they are no longer kept.
    pub(crate) fn since(&self, revision: u64) -> Option<Vec<Arc<Change>>> {
        if revision + 1 < self.oldest {
            return None;
        }
        Some(
            self.history
                .iter()
                .filter(|c| c.revision > revision)
                .cloned()
                .collect(),
        )
    }

    /// Forgets the history: watches resuming from an earlier revision get 410 Gone.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.oldest = self.revision + 1;
    }

    pub(crate) fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Result<Value, ApiError> {
        self.objects
            .get(&key(kind, namespace, name))
            .map(|stored| stored.object.clone())
            .ok_or_else(|| ApiError::not_found(kind, name))
    }

    pub(crate) fn list(&self, kind: &Kind, namespace: Option<&str>) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|(k, _)| k.group == kind.group && k.plural == kind.plural)
            .filter(|(k, _)| namespace.is_none_or(|ns| k.namespace == ns))
            .map(|(_, stored)| stored.object.clone())
            .collect()
    }

    pub(crate) fn create(
        &mut self,
        kind: &Kind,
        namespace: &str,
        body: Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        fields::with_lists(lists_of(kind), || {
            self.create_inner(kind, namespace, body, manager)
        })
    }

    fn create_inner(
        &mut self,
        kind: &Kind,
        namespace: &str,
        mut body: Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        if !body["metadata"].is_object() {
            body["metadata"] = json!({});
        }
        let name = match body["metadata"]["name"].as_str() {
            Some(name) => name.to_owned(),
            None => match body["metadata"]["generateName"].as_str() {
                Some(prefix) => format!("{prefix}{:05x}", self.uids + 1),
                None => {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        "metadata.name: Required value",
                    ));
                }
            },
        };
        let key = key(kind, namespace, &name);
        if self.objects.contains_key(&key) {
            return Err(ApiError::new(
                409,
                "AlreadyExists",
                format!("{}.{} \"{name}\" already exists", kind.plural, kind.group),
            ));
        }
        if kind.status_subresource && kind.kind != "Pod" {
            body.as_object_mut().expect("an object").remove("status");
        }
        self.uids += 1;
        let meta = body["metadata"].as_object_mut().expect("an object");
        meta.insert("name".into(), json!(name));
        if kind.namespaced {
            meta.insert("namespace".into(), json!(namespace));
        }
        meta.insert("uid".into(), json!(format!("uid-{:08}", self.uids)));
        meta.insert("creationTimestamp".into(), json!(now()));
        meta.insert("generation".into(), json!(1));
        body["apiVersion"] = json!(kind.api_version());
        body["kind"] = json!(kind.kind);
        let mut managers = Managers::new();
        fields::record_update(&mut managers, manager, &json!({}), &body, Scope::All);
        let stored = Stored {
            kind: kind.clone(),
            object: body,
            managers,
        };
        let object = self.commit(key.clone(), stored, "ADDED");
        // An object created with owners that are gone is garbage at once.
        self.collect_garbage();
        let object = self.objects.get(&key).map_or(object, |s| s.object.clone());
        if kind.kind == "CustomResourceDefinition" {
            for custom in kinds::from_crd(&object) {
                self.custom.retain(|k| {
                    !(k.group == custom.group
                        && k.version == custom.version
                        && k.plural == custom.plural)
                });
                self.custom.push(custom);
            }
        }
        Ok(object)
    }

    /// A write to an existing object (or, for an apply, a new one).
    pub(crate) fn write(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        write: Write,
        manager: &str,
        status: bool,
    ) -> Result<Value, ApiError> {
        fields::with_lists(lists_of(kind), || {
            self.write_inner(kind, namespace, name, write, manager, status)
        })
    }

    fn write_inner(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        write: Write,
        manager: &str,
        status: bool,
    ) -> Result<Value, ApiError> {
        let key = key(kind, namespace, name);
        let Some(existing) = self.objects.get(&key).cloned() else {
            return match write {
                Write::Apply(body, _) if !status => {
                    let mut managers = Managers::new();
                    let mut object = json!({"metadata": {"name": name}});
                    fields::apply(&mut object, &mut managers, manager, &body, Scope::All, true)
                        .expect("nothing to conflict with");
                    let created = self.create(kind, namespace, object, manager)?;
                    // The creation recorded an update; an apply owns its fields as applied.
                    if let Some(stored) = self.objects.get_mut(&key) {
                        stored.managers = managers;
                    }
                    Ok(created)
                }
                _ => Err(ApiError::not_found(kind, name)),
            };
        };
        let scope = match (kind.status_subresource, status) {
            (true, true) => Scope::Status,
            (true, false) => Scope::Main,
            (false, _) => Scope::All,
        };
        let before = existing.object.clone();
        let mut after = before.clone();
        let mut managers = existing.managers.clone();
        match write {
            Write::Replace(body) => {
                if let Some(version) = body["metadata"]["resourceVersion"].as_str()
                    && version
                        != before["metadata"]["resourceVersion"]
                            .as_str()
                            .unwrap_or_default()
                {
                    return Err(conflict(kind, name));
                }
                after = keep_outside(&before, body, scope);
                fields::record_update(&mut managers, manager, &before, &after, scope);
            }
            Write::Merge(patch, by_key) => {
                if let Some(version) = patch["metadata"]["resourceVersion"].as_str()
                    && version
                        != before["metadata"]["resourceVersion"]
                            .as_str()
                            .unwrap_or_default()
                {
                    return Err(conflict(kind, name));
                }
                if by_key {
                    fields::merge(&mut after, &without_nulls(&patch));
                    fields::merge_patch(&mut after, &only_nulls(&patch));
                } else {
                    fields::merge_patch(&mut after, &patch);
                }
                after = keep_outside(&before, after, scope);
                fields::record_update(&mut managers, manager, &before, &after, scope);
            }
            Write::Apply(body, force) => {
                fields::apply(&mut after, &mut managers, manager, &body, scope, force).map_err(
                    |conflicts| {
                        let listed: Vec<String> = conflicts
                            .iter()
                            .map(|c| {
                                format!(
                                    "conflict with \"{}\": {}",
                                    c.manager,
                                    fields::render(&c.path)
                                )
                            })
                            .collect();
                        ApiError::new(
                            409,
                            "Conflict",
                            format!(
                                "Apply failed with {} conflict{}: {}",
                                listed.len(),
                                if listed.len() == 1 { "" } else { "s" },
                                listed.join(", ")
                            ),
                        )
                    },
                )?;
                after = keep_outside(&before, after, scope);
            }
        }
        // Identity and server-set metadata never change through writes.
        for field in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "generation",
        ] {
            match before["metadata"].get(field) {
                Some(value) => after["metadata"][field] = value.clone(),
                None => {
                    if let Some(meta) = after["metadata"].as_object_mut() {
                        meta.remove(field);
                    }
                }
            }
        }
        after["apiVersion"] = json!(kind.api_version());
        after["kind"] = json!(kind.kind);
        if spec_changed(&before, &after) {
            let generation = before["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
            after["metadata"]["generation"] = json!(generation);
        }
        if strip_meta(&before) == strip_meta(&after) && managers == existing.managers {
            return Ok(before);
        }
        let stored = Stored {
            kind: kind.clone(),
            object: after,
            managers,
        };
        let object = self.commit(key.clone(), stored, "MODIFIED");
        // The last finalizer gone from an object being deleted: it goes.
        if object["metadata"]["deletionTimestamp"].is_string() && finalizers(&object).is_empty() {
            self.remove(&key);
        }
        self.collect_garbage();
        Ok(self.objects.get(&key).map_or(object, |s| s.object.clone()))
    }

    pub(crate) fn delete(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        propagation: Option<Propagation>,
        grace: Option<i64>,
        precondition_uid: Option<String>,
    ) -> Result<Value, ApiError> {
        let key = key(kind, namespace, name);
        let stored = self
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(kind, name))?;
        if let Some(uid) = precondition_uid
            && stored.object["metadata"]["uid"].as_str() != Some(uid.as_str())
        {
            return Err(ApiError::new(
                409,
                "Conflict",
                "Precondition failed: UID in precondition does not match",
            ));
        }
        let uid = stored.object["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        // Deleting what is already being deleted changes nothing, unless a pod's grace
        // period is cut to zero (what its kubelet does once the containers stopped).
        if stored.object["metadata"]["deletionTimestamp"].is_string() {
            if kind.kind == "Pod" && grace == Some(0) {
                let removed = self.remove(&key);
                self.collect_garbage();
                return Ok(removed);
            }
            return Ok(stored.object);
        }
        let propagation = propagation.unwrap_or(Propagation::Background);
        if propagation == Propagation::Orphan {
            self.orphan(&uid);
        }
        let mut object = stored.object.clone();
        let mut pending = finalizers(&object);
        if propagation == Propagation::Foreground && self.has_dependents(&uid) {
            pending.push("foregroundDeletion".to_owned());
        }
        let graceful = kind.kind == "Pod"
            && object["metadata"]["deletionTimestamp"].is_null()
            && grace
                .or_else(|| object["spec"]["terminationGracePeriodSeconds"].as_i64())
                .unwrap_or(30)
                > 0;
        if pending.is_empty() && !graceful {
            let removed = self.remove(&key);
            self.collect_garbage();
            return Ok(removed);
        }
        if object["metadata"]["deletionTimestamp"].is_null() {
            object["metadata"]["deletionTimestamp"] = json!(now());
            if graceful {
                let seconds = grace
                    .or_else(|| object["spec"]["terminationGracePeriodSeconds"].as_i64())
                    .unwrap_or(30);
                object["metadata"]["deletionGracePeriodSeconds"] = json!(seconds);
            }
        }
        object["metadata"]["finalizers"] = json!(pending);
        let stored = Stored { object, ..stored };
        let updated = self.commit(key, stored, "MODIFIED");
        self.collect_garbage();
        Ok(updated)
    }

    /// Removes an object at once and records the deletion.
    fn remove(&mut self, key: &Key) -> Value {
        let Some(stored) = self.objects.remove(key) else {
            return Value::Null;
        };
        self.revision += 1;
        let mut object = stored.object;
        object["metadata"]["resourceVersion"] = json!(self.revision.to_string());
        self.record(key, "DELETED", object.clone());
        object
    }

    /// Background and foreground garbage collection, until nothing changes: dependents
    /// whose owners are all gone (or being deleted in the foreground) are deleted; objects
    /// waiting in the foreground lose that finalizer when their last dependent is gone.
    fn collect_garbage(&mut self) {
        loop {
            let uids: BTreeMap<String, bool> = self
                .objects
                .values()
                .map(|s| {
                    (
                        s.object["metadata"]["uid"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        finalizers(&s.object)
                            .iter()
                            .any(|f| f == "foregroundDeletion"),
                    )
                })
                .collect();
            let mut doomed = Vec::new();
            for (key, stored) in &self.objects {
                let owners: Vec<&str> = stored.object["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|owner| owner["uid"].as_str())
                    .collect();
                if owners.is_empty() || !stored.object["metadata"]["deletionTimestamp"].is_null() {
                    continue;
                }
                let gone = owners
                    .iter()
                    .all(|uid| uids.get(*uid).is_none_or(|foreground| *foreground));
                if gone {
                    doomed.push((key.clone(), stored.kind.clone()));
                }
            }
            let mut released = Vec::new();
            for (key, stored) in &self.objects {
                let uid = stored.object["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default();
                if finalizers(&stored.object)
                    .iter()
                    .any(|f| f == "foregroundDeletion")
                    && !self.has_dependents(uid)
                {
                    released.push(key.clone());
                }
            }
            if doomed.is_empty() && released.is_empty() {
                return;
            }
            for (key, kind) in doomed {
                let propagation = Some(Propagation::Foreground);
                let _ = self.delete(&kind, &key.namespace, &key.name, propagation, None, None);
            }
            for key in released {
                let Some(stored) = self.objects.get(&key).cloned() else {
                    continue;
                };
                let mut object = stored.object.clone();
                let rest: Vec<String> = finalizers(&object)
                    .into_iter()
                    .filter(|f| f != "foregroundDeletion")
                    .collect();
                if rest.is_empty() {
                    self.remove(&key);
                } else {
                    object["metadata"]["finalizers"] = json!(rest);
                    self.commit(key, Stored { object, ..stored }, "MODIFIED");
                }
            }
        }
    }

    fn has_dependents(&self, uid: &str) -> bool {
        self.objects.values().any(|s| {
            s.object["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|owners| owners.iter().any(|o| o["uid"].as_str() == Some(uid)))
        })
    }

    fn orphan(&mut self, uid: &str) {
        let keys: Vec<Key> = self
            .objects
            .iter()
            .filter(|(_, s)| {
                s.object["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|owners| owners.iter().any(|o| o["uid"].as_str() == Some(uid)))
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            let stored = self.objects[&key].clone();
            let mut object = stored.object.clone();
            if let Some(owners) = object["metadata"]["ownerReferences"].as_array_mut() {
                owners.retain(|o| o["uid"].as_str() != Some(uid));
            }
            self.commit(key, Stored { object, ..stored }, "MODIFIED");
        }
    }

    /// Stamps a new resource version and the managed fields, stores, and records.
    fn commit(&mut self, key: Key, mut stored: Stored, event: &'static str) -> Value {
        self.revision += 1;
        let version = self.revision.to_string();
        stored.object["metadata"]["resourceVersion"] = json!(version);
        stored.object["metadata"]["managedFields"] =
            fields::managed_fields(&stored.managers, &stored.kind.api_version(), &now());
        let object = stored.object.clone();
        self.objects.insert(key.clone(), stored);
        self.record(&key, event, object.clone());
        object
    }

    fn record(&mut self, key: &Key, event: &'static str, object: Value) {
        let change = Arc::new(Change {
            revision: self.revision,
            group: key.group.clone(),
            plural: key.plural.clone(),
            namespace: key.namespace.clone(),
            event,
            object,
        });
        self.history.push_back(change.clone());
        if self.history.len() > HISTORY {
            self.history.pop_front();
            self.oldest = self.history.front().map_or(self.revision, |c| c.revision);
        }
        let _ = self.changes.send(change);
    }
}

/// Built-in kinds merge lists by key; custom resources' lists are atomic.
fn lists_of(kind: &Kind) -> fields::Lists {
    if kinds::built_in(&kind.group, &kind.version, &kind.plural).is_some() {
        fields::Lists::ByKey
    } else {
        fields::Lists::Atomic
    }
}

fn key(kind: &Kind, namespace: &str, name: &str) -> Key {
    Key {
        group: kind.group.clone(),
        plural: kind.plural.clone(),
        namespace: if kind.namespaced {
            namespace.to_owned()
        } else {
            String::new()
        },
        name: name.to_owned(),
    }
}

fn conflict(kind: &Kind, name: &str) -> ApiError {
    ApiError::new(
        409,
        "Conflict",
        format!(
            "Operation cannot be fulfilled on {}.{} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            kind.plural, kind.group
        ),
    )
}

/// `after` with whatever lies outside `scope` taken from `before`.
fn keep_outside(before: &Value, mut after: Value, scope: Scope) -> Value {
    match scope {
        Scope::All => after,
        Scope::Main => {
            match before.get("status") {
                Some(status) => after["status"] = status.clone(),
                None => {
                    if let Some(map) = after.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
            after
        }
        Scope::Status => {
            let mut kept = before.clone();
            match after.get("status") {
                Some(status) => kept["status"] = status.clone(),
                None => {
                    if let Some(map) = kept.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
            // Metadata may change through status writes too (labels aside, rarely); keep ours.
            if let Some(version) = after["metadata"].get("resourceVersion") {
                kept["metadata"]["resourceVersion"] = version.clone();
            }
            kept
        }
    }
}

fn finalizers(object: &Value) -> Vec<String> {
    object["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect()
}

fn spec_changed(before: &Value, after: &Value) -> bool {
    let strip = |object: &Value| {
        let mut copy = object.clone();
        if let Some(map) = copy.as_object_mut() {
            map.remove("metadata");
            map.remove("status");
        }
        copy
    };
    strip(before) != strip(after)
}

fn strip_meta(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(meta) = copy["metadata"].as_object_mut() {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    copy
}

fn without_nulls(patch: &Value) -> Value {
    match patch {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn only_nulls(patch: &Value) -> Value {
    match patch {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(k, v)| match v {
                    Value::Null => Some((k.clone(), Value::Null)),
                    Value::Object(_) => {
                        let inner = only_nulls(v);
                        (inner.as_object().is_some_and(|m| !m.is_empty()))
                            .then(|| (k.clone(), inner))
                    }
                    _ => None,
                })
                .collect(),
        ),
        _ => Value::Object(serde_json::Map::new()),
    }
}

/// Now, RFC 3339 to the second.
pub(crate) fn now() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    k8s_openapi::jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}
