//! [`FakeApiServer`]: the Kubernetes REST API over HTTP on a local port, backed by the
//! [`Store`](crate::store::Store), with faults to inject and a log of requests.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::kinds::Kind;
use crate::selector::Selector;
use crate::store::{ApiError, Propagation, Store, Write};

/// A failure to inject: the next `times` requests whose method matches (any, when `None`)
/// and whose path contains `path_contains` get `code` instead of an answer.
#[derive(Clone, Debug)]
pub struct Fault {
    /// `GET`, `PATCH`, ... or any.
    pub method: Option<Method>,
    /// A piece of the path and query (`path?query`), such as `/deployments` or
    /// `watch=true`.
    pub path_contains: String,
    /// The status code: 500, 409, 429, ...
    pub code: u16,
    /// How many requests fail.
    pub times: usize,
}

/// One request the server received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The method.
    pub method: String,
    /// The path.
    pub path: String,
    /// The query string.
    pub query: String,
    /// The content type of a body.
    pub content_type: String,
}

#[derive(Debug)]
struct Shared {
    store: Mutex<Store>,
    faults: Mutex<Vec<Fault>>,
    requests: Mutex<Vec<Request>>,
    watches: tokio::sync::watch::Sender<u64>,
}

/// An in-process Kubernetes API server on `127.0.0.1`, for tests.
///
/// It serves the resources clients use (core, apps, policy, coordination, events, RBAC, CRDs and
/// the custom resources they define) with Kubernetes' semantics for create, get, list (with
/// label and field selectors), watch (from a resource version, 410 Gone after
/// [`compact`](FakeApiServer::compact)), replace with resourceVersion conflicts, JSON merge
/// patches, server-side apply with field managers and conflicts, status subresources,
/// deletion with finalizers, graceful pod deletion and garbage collection by owner
/// reference (background, foreground, orphan), and the pod proxy. What it does not do:
/// authentication, admission, validation against schemas, defaulting, and strategic
/// merge patch directives (such patches merge lists by their key field).
///
/// ```no_run
/// # async fn demo() {
/// let server = runnel_test_cluster::FakeApiServer::start().await;
/// let client = server.client("default");
/// let version = client.apiserver_version().await.unwrap();
/// assert_eq!(version.major, "1");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct FakeApiServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl FakeApiServer {
    /// Starts a server on a free port, on the current Tokio runtime.
    ///
    /// # Panics
    ///
    /// When no local port can be bound.
    pub async fn start() -> FakeApiServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding a local port");
        let address = listener.local_addr().expect("a bound address");
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::new()),
            faults: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
            watches: tokio::sync::watch::channel(0).0,
        });
        let stop = CancellationToken::new();
        let router = Router::new().fallback(handle).with_state(shared.clone());
        let stopping = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move { stopping.cancelled().await })
                .await;
        });
        FakeApiServer {
            address,
            shared,
            stop,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// A kube client of this server, with `namespace` as its default namespace.
    ///
    /// # Panics
    ///
    /// Never in practice: the URL is always valid.
    pub fn client(&self, namespace: &str) -> kube::Client {
        let mut config = kube::Config::new(self.url().parse().expect("a valid URL"));
        config.default_namespace = namespace.to_owned();
        config.read_timeout = Some(Duration::from_secs(300));
        kube::Client::try_from(config).expect("a client for a plain HTTP server")
    }

    /// A kubeconfig file's text for this server, with `namespace` as the context's
    /// namespace (what `runnel` and `kubectl` read).
    pub fn kubeconfig(&self, namespace: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: tester\n    namespace: {namespace}\ncurrent-context: fake\nusers:\n- name: tester\n  user: {{}}\n",
            self.url()
        )
    }

    /// Makes the next matching requests fail.
    pub fn fail_next(&self, fault: Fault) {
        self.shared.faults.lock().expect("not poisoned").push(fault);
    }

    /// Ends every open watch, as an API server restart or a load balancer does; clients
    /// watch again from their last resource version.
    pub fn close_watches(&self) {
        self.shared
            .watches
            .send_modify(|generation| *generation += 1);
    }

    /// Forgets the change history, so that watches resuming from an older resource
    /// version get 410 Gone and must list again.
    pub fn compact(&self) {
        self.shared.store.lock().expect("not poisoned").compact();
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().expect("not poisoned").clone()
    }

    /// Stops serving.
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

type SharedState = Arc<Shared>;

async fn handle(
    State(shared): State<SharedState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(params): Query<BTreeMap<String, String>>,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    shared.requests.lock().expect("not poisoned").push(Request {
        method: method.to_string(),
        path: path.clone(),
        query: uri.query().unwrap_or_default().to_owned(),
        content_type: content_type.clone(),
    });
    let target = format!("{path}?{}", uri.query().unwrap_or_default());
    if let Some(code) = take_fault(&shared, &method, &target) {
        let reason = match code {
            409 => "Conflict",
            429 => "TooManyRequests",
            404 => "NotFound",
            _ => "InternalError",
        };
        return error(&ApiError::new(
            code,
            reason,
            format!("injected failure of {method} {path}"),
        ));
    }
    if path == "/version" {
        return json_response(
            StatusCode::OK,
            &json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-runnel-fake", "platform": "linux/amd64"}),
        );
    }
    let Some(route) = route(&shared, &path) else {
        return error(&ApiError::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        ));
    };
    let manager = params.get("fieldManager").cloned().unwrap_or_else(|| {
        headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .and_then(|agent| agent.split('/').next())
            .unwrap_or("unknown")
            .to_owned()
    });
    let result = match (&method, route.name.as_deref(), route.subresource.as_deref()) {
        (&Method::GET, None, _) if is_true(params.get("watch")) => {
            return watch(&shared, &route, &params);
        }
        (&Method::GET, None, _) => list(&shared, &route, &params),
        (&Method::GET, Some(name), Some(sub)) if sub.starts_with("proxy") => {
            // The query goes to the pod with the path, as the API server forwards it.
            let forwarded = match uri.query() {
                Some(query) => format!("{path}?{query}"),
                None => path.clone(),
            };
            return proxy(&shared, &route, name, &forwarded).await;
        }
        (&Method::GET, Some(name), _) => lock(&shared)
            .get(&route.kind, &route.namespace, name)
            .map(|o| (StatusCode::OK, o)),
        (&Method::POST, None, _) => parse(&body, &content_type).and_then(|object| {
            lock(&shared)
                .create(&route.kind, &route.namespace, object, &manager)
                .map(|o| (StatusCode::CREATED, o))
        }),
        (&Method::PUT, Some(name), sub) => parse(&body, &content_type).and_then(|object| {
            lock(&shared)
                .write(
                    &route.kind,
                    &route.namespace,
                    name,
                    Write::Replace(object),
                    &manager,
                    sub == Some("status"),
                )
                .map(|o| (StatusCode::OK, o))
        }),
        (&Method::PATCH, Some(name), sub) => parse(&body, &content_type).and_then(|patch| {
            let write = if content_type.starts_with("application/apply-patch") {
                if !params.contains_key("fieldManager") {
                    return Err(ApiError::new(
                        422,
                        "Invalid",
                        "fieldManager is required for apply requests",
                    ));
                }
                Write::Apply(patch, is_true(params.get("force")))
            } else if content_type.starts_with("application/merge-patch") {
                Write::Merge(patch, false)
            } else if content_type.starts_with("application/strategic-merge-patch") {
                Write::Merge(patch, true)
            } else {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    format!("the fake API server does not take {content_type} patches"),
                ));
            };
            lock(&shared)
                .write(
                    &route.kind,
                    &route.namespace,
                    name,
                    write,
                    &manager,
                    sub == Some("status"),
                )
                .map(|o| (StatusCode::OK, o))
        }),
        (&Method::DELETE, Some(name), None) => {
            let options: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let propagation = params
                .get("propagationPolicy")
                .map(String::as_str)
                .or_else(|| options["propagationPolicy"].as_str())
                .map(|policy| match policy {
                    "Foreground" => Propagation::Foreground,
                    "Orphan" => Propagation::Orphan,
                    _ => Propagation::Background,
                });
            let grace = params
                .get("gracePeriodSeconds")
                .and_then(|g| g.parse().ok())
                .or_else(|| options["gracePeriodSeconds"].as_i64());
            let uid = options["preconditions"]["uid"].as_str().map(str::to_owned);
            lock(&shared)
                .delete(&route.kind, &route.namespace, name, propagation, grace, uid)
                .map(|o| (StatusCode::OK, o))
        }
        _ => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            format!("{method} is not allowed on {path}"),
        )),
    };
    match result {
        Ok((status, object)) => json_response(status, &object),
        Err(failure) => error(&failure),
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Store> {
    shared.store.lock().expect("not poisoned")
}

fn take_fault(shared: &Shared, method: &Method, path: &str) -> Option<u16> {
    let mut faults = shared.faults.lock().expect("not poisoned");
    let fault = faults.iter_mut().find(|fault| {
        fault.times > 0
            && fault.method.as_ref().is_none_or(|m| m == method)
            && path.contains(&fault.path_contains)
    })?;
    fault.times -= 1;
    let code = fault.code;
    faults.retain(|fault| fault.times > 0);
    Some(code)
}

fn is_true(value: Option<&String>) -> bool {
    matches!(value.map(String::as_str), Some("true" | "1"))
}

/// Where a path points.
struct Route {
    kind: Kind,
    namespace: String,
    name: Option<String>,
    subresource: Option<String>,
}

fn route(shared: &Shared, path: &str) -> Option<Route> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, plural, rest @ ..] => (*namespace, [&[*plural], rest].concat()),
        other => ("", other.to_vec()),
    };
    let plural = *rest.first()?;
    let kind = lock(shared).kind(group, version, plural)?;
    Some(Route {
        kind,
        namespace: namespace.to_owned(),
        name: rest.get(1).map(|s| (*s).to_owned()),
        subresource: (rest.len() > 2).then(|| rest[2..].join("/")),
    })
}

fn parse(body: &[u8], content_type: &str) -> Result<Value, ApiError> {
    let parsed = if content_type.contains("yaml") {
        serde_norway::from_slice::<Value>(body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice::<Value>(body).map_err(|e| e.to_string())
    };
    parsed.map_err(|message| {
        ApiError::new(
            400,
            "BadRequest",
            format!("the body is not an object: {message}"),
        )
    })
}

fn selectors(params: &BTreeMap<String, String>) -> Result<(Selector, Selector), ApiError> {
    let parse = |name: &str| {
        Selector::parse(params.get(name).map_or("", String::as_str))
            .map_err(|message| ApiError::new(400, "BadRequest", message))
    };
    Ok((parse("labelSelector")?, parse("fieldSelector")?))
}

fn list(
    shared: &Shared,
    route: &Route,
    params: &BTreeMap<String, String>,
) -> Result<(StatusCode, Value), ApiError> {
    let (labels, fields) = selectors(params)?;
    let store = lock(shared);
    let namespace =
        (route.kind.namespaced && !route.namespace.is_empty()).then_some(route.namespace.as_str());
    let items: Vec<Value> = store
        .list(&route.kind, namespace)
        .into_iter()
        .filter(|o| labels.matches_labels(o) && fields.matches_fields(o))
        .collect();
    Ok((
        StatusCode::OK,
        json!({
            "apiVersion": route.kind.api_version(),
            "kind": format!("{}List", route.kind.kind),
            "metadata": {"resourceVersion": store.revision().to_string()},
            "items": items,
        }),
    ))
}

fn watch(shared: &SharedState, route: &Route, params: &BTreeMap<String, String>) -> Response {
    let (labels, fields) = match selectors(params) {
        Ok(selectors) => selectors,
        Err(failure) => return error(&failure),
    };
    let timeout = params
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .unwrap_or(1800u64);
    let from: u64 = params
        .get("resourceVersion")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let kind = route.kind.clone();
    let namespace =
        (kind.namespaced && !route.namespace.is_empty()).then(|| route.namespace.clone());
    let wanted = move |group: &str, plural: &str, ns: &str, object: &Value| {
        group == kind.group
            && plural == kind.plural
            && namespace.as_deref().is_none_or(|n| n == ns)
            && labels.matches_labels(object)
            && fields.matches_fields(object)
    };
    let (first, mut changes, last) = {
        let store = lock(shared);
        let receiver = store.subscribe();
        let first: Vec<Value> = if from == 0 {
            store
                .list(&route.kind, None)
                .into_iter()
                .filter(|o| {
                    wanted(
                        &route.kind.group,
                        &route.kind.plural,
                        o["metadata"]["namespace"].as_str().unwrap_or_default(),
                        o,
                    )
                })
                .map(|o| json!({"type": "ADDED", "object": o}))
                .collect()
        } else {
            match store.since(from) {
                Some(changes) => changes
                    .iter()
                    .filter(|c| wanted(&c.group, &c.plural, &c.namespace, &c.object))
                    .map(|c| json!({"type": c.event, "object": c.object}))
                    .collect(),
                None => vec![
                    json!({"type": "ERROR", "object": ApiError::new(410, "Expired", format!("too old resource version: {from}")).status()}),
                ],
            }
        };
        let expired = first.iter().any(|e| e["type"] == "ERROR");
        (
            first,
            receiver,
            if expired {
                None
            } else {
                Some(store.revision())
            },
        )
    };
    let (sender, receiver) = futures::channel::mpsc::unbounded::<Bytes>();
    let mut closed = shared.watches.subscribe();
    tokio::spawn(async move {
        for event in first {
            if sender.unbounded_send(line(&event)).is_err() {
                return;
            }
        }
        let Some(mut seen) = last else {
            return;
        };
        let deadline = tokio::time::sleep(Duration::from_secs(timeout));
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                biased;
                _ = closed.changed() => return,
                change = changes.recv() => match change {
                    Ok(change) => {
                        if change.revision <= seen {
                            continue;
                        }
                        seen = change.revision;
                        if wanted(&change.group, &change.plural, &change.namespace, &change.object) {
                            let event = json!({"type": change.event, "object": change.object});
                            if sender.unbounded_send(line(&event)).is_err() {
                                return;
                            }
                        }
                    }
                    Err(_) => return,
                },
                () = &mut deadline => return,
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(receiver.map(Ok::<_, Infallible>)))
        .expect("a valid response")
}

fn line(event: &Value) -> Bytes {
    let mut text = serde_json::to_vec(event).expect("events serialize");
    text.push(b'\n');
    Bytes::from(text)
}

/// `GET .../pods/NAME[:PORT]/proxy/PATH[?QUERY]`: forwards to the pod's IP.
async fn proxy(shared: &Shared, route: &Route, name: &str, path: &str) -> Response {
    let (pod_name, port) = name
        .rsplit_once(':')
        .map_or((name, None), |(n, p)| (n, Some(p)));
    let pod = match lock(shared).get(&route.kind, &route.namespace, pod_name) {
        Ok(pod) => pod,
        Err(failure) => return error(&failure),
    };
    let Some(ip) = pod["status"]["podIP"].as_str().map(str::to_owned) else {
        return error(&ApiError::new(
            503,
            "ServiceUnavailable",
            format!("pod {pod_name} has no IP"),
        ));
    };
    let port = port.map_or_else(
        || "80".to_owned(),
        |port| {
            port.parse::<u16>()
                .map(|p| p.to_string())
                .unwrap_or_else(|_| {
                    pod["spec"]["containers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
                        .find(|p| p["name"].as_str() == Some(port))
                        .and_then(|p| p["containerPort"].as_u64())
                        .map_or_else(|| port.to_owned(), |p| p.to_string())
                })
        },
    );
    let rest = path.split_once("/proxy").map_or("", |(_, rest)| rest);
    let url = format!(
        "http://{ip}:{port}{}",
        if rest.is_empty() { "/" } else { rest }
    );
    let fetched = tokio::task::spawn_blocking(move || {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(3)))
            .http_status_as_error(false)
            .build()
            .new_agent();
        let mut response = agent.get(&url).call().map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((status, text))
    })
    .await;
    match fetched {
        Ok(Ok((status, text))) => Response::builder()
            .status(status)
            .body(Body::from(text))
            .expect("a valid response"),
        other => error(&ApiError::new(
            503,
            "ServiceUnavailable",
            format!("proxying to pod {pod_name} failed: {}", message_of(&other)),
        )),
    }
}

fn message_of(result: &Result<Result<(u16, String), String>, tokio::task::JoinError>) -> String {
    match result {
        Ok(Err(message)) => message.clone(),
        Err(error) => error.to_string(),
        Ok(Ok(_)) => String::new(),
    }
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(value).expect("values serialize"),
    )
        .into_response()
}

fn error(failure: &ApiError) -> Response {
    json_response(
        StatusCode::from_u16(failure.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &failure.status(),
    )
}
