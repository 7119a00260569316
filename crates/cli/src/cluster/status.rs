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

use super::{application, connect, first_line, print, table};
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
            write!(
                out,
                "{}",
                render(&report, app.status.is_some(), args.details)
            )?;
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

/// The status as text. Messages and errors of several lines show their first line, saying
/// where to read the rest, unless `details` asks for them whole (below the table).
fn render(report: &Report, observed: bool, details: bool) -> String {
    let status = &report.status;
    let more = format!("runnel status {} --details", report.name);
    let shown = |text: &str| {
        if details {
            text.trim().to_owned()
        } else {
            first_line(text, &more)
        }
    };
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
        text.push_str(&format!("message: {}\n", shown(&status.message)));
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
                s.last_error
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), |error| first_line(error, &more)),
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
    if details {
        for streamlet in &status.streamlets {
            if let Some(error) = &streamlet.last_error {
                text.push_str(&format!(
                    "\nlast error of {}:\n{}\n",
                    streamlet.name,
                    error.trim()
                ));
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use runnel_application::{ApplicationStatus, StreamletStatus};

    use super::{Report, render};

    fn failing() -> Report {
        Report {
            name: "fraud".into(),
            namespace: "shop".into(),
            version: "1.0.0".into(),
            status: ApplicationStatus {
                streamlets: vec![StreamletStatus {
                    name: "scorer".into(),
                    desired_replicas: 1,
                    last_error: Some("exited with code 1\nerror: the model does not load".into()),
                    ..StreamletStatus::default()
                }],
                ..ApplicationStatus::default()
            },
            lag: Default::default(),
        }
    }

    #[test]
    fn a_last_error_of_several_lines_keeps_the_table_one_line_a_streamlet() {
        let text = render(&failing(), true, false);
        let row = text
            .lines()
            .find(|line| line.starts_with("scorer"))
            .unwrap();
        assert!(
            row.ends_with("exited with code 1 (more: runnel status fraud --details)"),
            "{text}"
        );
        assert!(!text.contains("the model does not load"), "{text}");
    }

    #[test]
    fn details_print_the_whole_error_below_the_table() {
        let text = render(&failing(), true, true);
        assert!(
            text.ends_with(
                "\nlast error of scorer:\nexited with code 1\nerror: the model does not load\n"
            ),
            "{text}"
        );
    }
}
