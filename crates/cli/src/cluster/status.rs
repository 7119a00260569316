//! `runnel status APP`: the Application's status (phase, conditions, streamlets with ready
//! and desired replicas, restarts, last error) and each streamlet's consumer lag, read from
//! its pods' admin endpoints through the API server's pod proxy when they answer.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt as _};
use runnel_application::{ADMIN_PORT, ApplicationStatus};
use runnel_operator::names::{STREAMLET_LABEL, app_selector};
use serde::{Deserialize, Serialize};

use super::{application, connect, print, table};
use crate::Outcome;
use crate::args::{AppStatusArgs, Output};

/// What `status -o json|yaml` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    name: String,
    namespace: String,
    version: String,
    status: ApplicationStatus,
    /// Consumer lag per streamlet, from its pods (the largest any pod reports).
    lag: BTreeMap<String, u64>,
}

pub(crate) async fn run(args: &AppStatusArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let name = args.app.as_deref().expect("only called with an app");
    let (client, namespace) = connect(&args.cluster).await?;
    loop {
        let app = application(&client, &namespace, name).await?;
        let report = Report {
            name: name.to_owned(),
            namespace: namespace.clone(),
            version: app.spec.version.clone(),
            status: app.status.clone().unwrap_or_default(),
            lag: lag(&client, &namespace, name).await?,
        };
        let output = match args.local.output {
            runnel_status::StatusFormat::Json => Output::Json,
            runnel_status::StatusFormat::Yaml => Output::Yaml,
            runnel_status::StatusFormat::Table => Output::Table,
        };
        if output == Output::Table {
            write!(out, "{}", render(&report, app.status.is_some()))?;
        } else {
            print(out, output, &report)?;
        }
        out.flush()?;
        if !args.local.watch {
            return Ok(Outcome::Passed);
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        writeln!(out)?;
    }
}

fn render(report: &Report, observed: bool) -> String {
    let status = &report.status;
    let phase = if observed {
        status.phase.to_string()
    } else {
        "unknown (no operator has written a status yet)".to_owned()
    };
    let mut text = format!(
        "application {} in {} (version {})\nphase: {phase}\n",
        report.name, report.namespace, report.version
    );
    if !status.message.is_empty() {
        text.push_str(&format!("message: {}\n", status.message));
    }
    for condition in &status.conditions {
        text.push_str(&format!(
            "condition {}: {} ({}) since {}\n",
            condition.type_, condition.status, condition.reason, condition.last_transition_time
        ));
    }
    text.push('\n');
    let rows: Vec<Vec<String>> = status
        .streamlets
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                format!("{}/{}", s.ready_replicas, s.desired_replicas),
                s.restarts.to_string(),
                report
                    .lag
                    .get(&s.name)
                    .map_or_else(|| "-".to_owned(), |lag| lag.to_string()),
                s.autoscaling.as_ref().map_or_else(
                    || "-".to_owned(),
                    |a| format!("{} ({})", a.replicas, a.reason),
                ),
                s.last_error.clone().unwrap_or_else(|| "-".to_owned()),
            ]
        })
        .collect();
    text.push_str(&table(
        &[
            "STREAMLET",
            "READY",
            "RESTARTS",
            "LAG",
            "AUTOSCALED",
            "LAST ERROR",
        ],
        &rows,
    ));
    text
}

/// The part of a pod's `/api/status` this command reads (docs/metrics.md documents it).
#[derive(Deserialize)]
struct PodStatus {
    streamlets: Vec<PodStreamlet>,
}

#[derive(Deserialize)]
struct PodStreamlet {
    name: String,
    lag: u64,
}

/// The lag each streamlet's pods report, through the API server's pod proxy; pods that do
/// not answer are left out.
async fn lag(client: &Client, namespace: &str, app: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let listed = pods
        .list(&ListParams::default().labels(&app_selector(app)))
        .await
        .with_context(|| format!("listing the pods of application {namespace}/{app}"))?;
    let mut lag = BTreeMap::new();
    for pod in listed.items {
        if pod.metadata.deletion_timestamp.is_some() || pod.labels().get(STREAMLET_LABEL).is_none()
        {
            continue;
        }
        let path = format!(
            "/api/v1/namespaces/{namespace}/pods/{}:{ADMIN_PORT}/proxy/api/status",
            pod.name_any()
        );
        let Ok(request) = http_get(&path) else {
            continue;
        };
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(3),
            client.request_text(request),
        )
        .await;
        let Ok(Ok(text)) = answer else {
            continue;
        };
        let Ok(status) = serde_json::from_str::<PodStatus>(&text) else {
            continue;
        };
        for streamlet in status.streamlets {
            let entry = lag.entry(streamlet.name).or_insert(0);
            *entry = (*entry).max(streamlet.lag);
        }
    }
    Ok(lag)
}

fn http_get(path: &str) -> anyhow::Result<http::Request<Vec<u8>>> {
    Ok(http::Request::get(path).body(Vec::new())?)
}
