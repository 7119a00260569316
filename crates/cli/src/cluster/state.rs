//! `runnel state get INSTANCE KEY --app APP`: the keyed state of a key, asked of each pod of
//! the instance through the API server's pod proxy until the one holding the key's
//! partition answers.

use std::io::Write;

use anyhow::Context as _;
use http_body_util::BodyExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, ResourceExt as _};
use runnel_application::ADMIN_PORT;
use runnel_operator::names::{STREAMLET_LABEL, app_selector};

use super::connect;
use crate::Outcome;
use crate::args::StateGet;

/// How long one pod may take to answer.
const POD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(8);

pub(crate) async fn run(
    args: &StateGet,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let app = args.app.as_deref().expect("only called with an app");
    let instance = &args.local.instance;
    let query = match args.local.query() {
        Ok(query) => query,
        Err(error) => {
            writeln!(err, "error: {error}")?;
            return Ok(Outcome::Failed);
        }
    };
    let (client, namespace) = connect(&args.cluster).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let selector = format!("{},{STREAMLET_LABEL}={instance}", app_selector(app));
    let listed = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .with_context(|| format!("listing the pods of {namespace}/{app} running {instance}"))?;
    let mut failures = Vec::new();
    for pod in &listed.items {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.name_any();
        let path = format!(
            "/api/v1/namespaces/{namespace}/pods/{name}:{ADMIN_PORT}/proxy{}",
            runnel_status::state_path(instance, &query)
        );
        let request = http::Request::get(&path).body(kube::client::Body::empty())?;
        let asked = async {
            let response = client.send(request).await?;
            let status = response.status().as_u16();
            let body = response.into_body().collect().await?.to_bytes();
            anyhow::Ok((status, String::from_utf8_lossy(&body).into_owned()))
        };
        let pod_name = format!("pod {name}");
        let answer = match tokio::time::timeout(POD_TIMEOUT, asked).await {
            Ok(Ok((status, body))) => runnel_status::state_answer(&pod_name, status, &body),
            Ok(Err(error)) => Err(runnel_status::StateError::Unreachable {
                url: pod_name,
                reason: format!("{error:#}"),
            }),
            Err(_) => Err(runnel_status::StateError::Unreachable {
                url: pod_name,
                reason: format!("no answer within {} s", POD_TIMEOUT.as_secs()),
            }),
        };
        match answer {
            Ok(state) => {
                writeln!(out, "{}", serde_json::to_string_pretty(&state)?)?;
                return Ok(Outcome::Passed);
            }
            Err(error) => failures.push(error),
        }
    }
    if failures.is_empty() {
        writeln!(
            err,
            "error: no pod of {namespace}/{app} runs streamlet instance '{instance}'"
        )?;
    } else {
        writeln!(
            err,
            "error: {:#}",
            anyhow::Error::from(runnel_status::no_owner(failures))
        )?;
    }
    Ok(Outcome::Failed)
}
