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
use runnel_operator::is_ready;
use runnel_operator::names::{STREAMLET_LABEL, app_selector};
use serde::{Deserialize, Serialize};

use super::{application, cluster_config, first_line, print, table};
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
    /// Why pods are not ready, per streamlet: each reason their `/health/ready` gives, as
    /// `POD: REASON`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    not_ready: BTreeMap<String, Vec<String>>,
}

pub(crate) async fn run(args: &AppStatusArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let name = args.app.as_deref().expect("only called with an app");
    let (config, namespace) = cluster_config(&args.cluster).await?;
    let client = Client::try_from(config.clone()).context("making a Kubernetes client")?;
    // The pod proxy passes a pod's own answers through, and a pod that is not ready answers
    // 503, which the default retry policy would retry for minutes: ask pods once.
    let mut once = config;
    once.default_retry = false;
    let pods_client = Client::try_from(once).context("making a Kubernetes client")?;
    loop {
        let app = application(&client, &namespace, name).await?;
        let pods = from_pods(&pods_client, &namespace, name).await?;
        let report = Report {
            name: name.to_owned(),
            namespace: namespace.clone(),
            version: app.spec.version.clone(),
            status: app.status.clone().unwrap_or_default(),
            lag: pods.lag,
            not_ready: pods.not_ready,
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
                if s.idle_replicas > 0 {
                    format!(
                        "{}/{} ({} idle)",
                        s.ready_replicas, s.desired_replicas, s.idle_replicas
                    )
                } else {
                    format!("{}/{}", s.ready_replicas, s.desired_replicas)
                },
                s.restarts.to_string(),
                report
                    .lag
                    .get(&s.name)
                    .map_or_else(|| "-".to_owned(), |lag| lag.to_string()),
                s.autoscaling.as_ref().map_or_else(
                    || "-".to_owned(),
                    |a| format!("{} ({})", a.replicas, a.reason),
                ),
                match (&s.last_error, report.not_ready.get(&s.name)) {
                    (Some(error), _) => first_line(error, &more),
                    (None, Some(reasons)) => {
                        let shown = first_line(&reasons.join("\n"), &more);
                        format!("not ready: {shown}")
                    }
                    (None, None) => "-".to_owned(),
                },
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
            if let Some(reasons) = report.not_ready.get(&streamlet.name) {
                text.push_str(&format!(
                    "\nwhy {} is not ready:\n{}\n",
                    streamlet.name,
                    reasons.join("\n")
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

/// What the pods' admin endpoints say, through the API server's pod proxy.
#[derive(Default)]
struct FromPods {
    /// The largest lag any pod of a streamlet reports.
    lag: BTreeMap<String, u64>,
    /// The reasons pods that are not ready give on `/health/ready`, per streamlet.
    not_ready: BTreeMap<String, Vec<String>>,
}

/// Asks each pod of `app` for its status (the lag) and, when it is not ready, why; pods
/// that do not answer are left out.
async fn from_pods(client: &Client, namespace: &str, app: &str) -> anyhow::Result<FromPods> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let listed = pods
        .list(&ListParams::default().labels(&app_selector(app)))
        .await
        .with_context(|| format!("listing the pods of application {namespace}/{app}"))?;
    let mut found = FromPods::default();
    for pod in listed.items {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(streamlet) = pod.labels().get(STREAMLET_LABEL).cloned() else {
            continue;
        };
        let name = pod.name_any();
        if let Some(status) = ask(client, namespace, &name, "/api/status").await
            && let Ok(status) = serde_json::from_str::<PodStatus>(&status)
        {
            for reported in status.streamlets {
                let entry = found.lag.entry(reported.name).or_insert(0);
                *entry = (*entry).max(reported.lag);
            }
        }
        if !is_ready(&pod)
            && let Some(answer) = ask(client, namespace, &name, "/health/ready").await
        {
            found
                .not_ready
                .entry(streamlet.clone())
                .or_default()
                .extend(readiness_reasons(&name, &answer));
        }
    }
    found.not_ready.retain(|_, reasons| !reasons.is_empty());
    Ok(found)
}

/// The reasons in a `/health/ready` answer ("not ready" and a line per reason), as
/// `POD: REASON`; none when the pod became ready meanwhile.
fn readiness_reasons(pod: &str, answer: &str) -> Vec<String> {
    answer
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && *line != "not ready" && *line != "ready")
        .map(|reason| format!("{pod}: {reason}"))
        .collect()
}

/// The body of `PATH` on the pod's admin endpoint, whatever its status code, or `None` when
/// the pod does not answer within 3 s.
async fn ask(client: &Client, namespace: &str, pod: &str, path: &str) -> Option<String> {
    let path = format!("/api/v1/namespaces/{namespace}/pods/{pod}:{ADMIN_PORT}/proxy{path}");
    let request = http_get(&path).ok()?;
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        client.request_text(request),
    )
    .await;
    match answer {
        Ok(Ok(text)) => Some(text),
        // A 503 from the pod arrives as an API error whose message is the body.
        Ok(Err(kube::Error::Api(response))) if response.code == 503 => Some(response.message),
        _ => None,
    }
}

fn http_get(path: &str) -> anyhow::Result<http::Request<Vec<u8>>> {
    Ok(http::Request::get(path).body(Vec::new())?)
}

#[cfg(test)]
mod tests {
    use runnel_application::{ApplicationStatus, StreamletStatus};

    use super::{Report, readiness_reasons, render};

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
            not_ready: Default::default(),
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
    fn a_pod_that_is_not_ready_shows_why_in_place_of_a_last_error() {
        let mut report = failing();
        report.status.streamlets[0].last_error = None;
        let answer = "not ready\nscorer: inlet 'in' has held none of the 2 partitions of topic 'tx' for 45 s while records on some wait uncommitted\n";
        report.not_ready.insert(
            "scorer".into(),
            readiness_reasons("fraud-scorer-7d9-x2", answer),
        );
        let text = render(&report, true, false);
        let row = text
            .lines()
            .find(|line| line.starts_with("scorer"))
            .unwrap();
        assert!(
            row.ends_with("not ready: fraud-scorer-7d9-x2: scorer: inlet 'in' has held none of the 2 partitions of topic 'tx' for 45 s while records on some wait uncommitted"),
            "{text}"
        );
        assert!(readiness_reasons("p", "ready\n").is_empty());
        let details = render(&report, true, true);
        assert!(
            details.contains("\nwhy scorer is not ready:\nfraud-scorer-7d9-x2: scorer: inlet"),
            "{details}"
        );
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
