//! `runnel list`: the Applications of a namespace (or of all).

use std::io::Write;

use anyhow::Context as _;
use kube::api::ListParams;
use kube::{Api, ResourceExt as _};
use runnel_operator::Application;
use serde::Serialize;

use super::{connect, first_line, print, table};
use crate::Outcome;
use crate::args::{ListArgs, Output};

/// One row of `list`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    namespace: String,
    name: String,
    version: String,
    phase: String,
    ready_replicas: i32,
    desired_replicas: i32,
    streamlets: usize,
    message: String,
}

pub(crate) async fn run(args: &ListArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let (client, namespace) = connect(&args.cluster).await?;
    let apps: Api<Application> = if args.all_namespaces {
        Api::all(client)
    } else {
        Api::namespaced(client, &namespace)
    };
    let listed: Vec<Listed> = apps
        .list(&ListParams::default())
        .await
        .context("listing applications")?
        .items
        .into_iter()
        .map(|app| {
            let status = app.status.clone().unwrap_or_default();
            Listed {
                namespace: app.namespace().unwrap_or_default(),
                name: app.name().to_owned(),
                version: app.spec.version.clone(),
                phase: if app.status.is_some() {
                    status.phase.to_string()
                } else {
                    "-".to_owned()
                },
                ready_replicas: status.streamlets.iter().map(|s| s.ready_replicas).sum(),
                desired_replicas: status.streamlets.iter().map(|s| s.desired_replicas).sum(),
                streamlets: app.spec.streamlets.len(),
                message: status.message,
            }
        })
        .collect();
    if args.output != Output::Table {
        print(out, args.output, &listed)?;
        return Ok(Outcome::Passed);
    }
    if listed.is_empty() {
        writeln!(
            out,
            "no applications in {}",
            if args.all_namespaces {
                "any namespace".to_owned()
            } else {
                format!("namespace {namespace}")
            }
        )?;
        return Ok(Outcome::Passed);
    }
    write!(out, "{}", render(&listed, args.all_namespaces))?;
    Ok(Outcome::Passed)
}

/// The table of `list`: one line per app, however long its message.
fn render(listed: &[Listed], all_namespaces: bool) -> String {
    let rows: Vec<Vec<String>> = listed
        .iter()
        .map(|app| {
            let mut row = Vec::new();
            if all_namespaces {
                row.push(app.namespace.clone());
            }
            row.extend([
                app.name.clone(),
                app.version.clone(),
                app.phase.clone(),
                format!("{}/{}", app.ready_replicas, app.desired_replicas),
                app.streamlets.to_string(),
                first_line(
                    &app.message,
                    &format!("runnel status {} --details", app.name),
                ),
            ]);
            row
        })
        .collect();
    let mut header = Vec::new();
    if all_namespaces {
        header.push("NAMESPACE");
    }
    header.extend(["NAME", "VERSION", "PHASE", "READY", "STREAMLETS", "MESSAGE"]);
    table(&header, &rows)
}

#[cfg(test)]
mod tests {
    use super::{Listed, render};

    #[test]
    fn a_message_of_several_lines_shows_its_first_and_where_to_read_the_rest() {
        let listed = Listed {
            namespace: "shop".into(),
            name: "fraud".into(),
            version: "1.0.0".into(),
            phase: "Failed".into(),
            ready_replicas: 0,
            desired_replicas: 2,
            streamlets: 2,
            message: "scorer: exited with code 1\nerror: the model does not load\ncaused by: ..."
                .into(),
        };
        assert_eq!(
            render(&[listed], false),
            "NAME   VERSION  PHASE   READY  STREAMLETS  MESSAGE\n\
             fraud  1.0.0    Failed  0/2    2           scorer: exited with code 1 (more: runnel status fraud --details)\n"
        );
    }
}
