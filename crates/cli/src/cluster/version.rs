//! `runnel version`: this client and the operator, each with its protocol version; a
//! mismatch says which one to upgrade.

use std::io::Write;

use serde::Serialize;

use super::{connect, operator_version, print, protocol_mismatch};
use crate::Outcome;
use crate::args::{Output, VersionArgs};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Versions {
    client: Side,
    #[serde(skip_serializing_if = "Option::is_none")]
    operator: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Side {
    version: String,
    protocol_version: u32,
}

pub(crate) async fn run(
    args: &VersionArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let client = Side {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol_version: runnel_application::PROTOCOL_VERSION,
    };
    let mut versions = Versions {
        client,
        operator: None,
        problem: None,
    };
    let mut namespace = String::new();
    if !args.client {
        let (kube, ns) = connect(&args.cluster).await?;
        namespace = ns;
        let operator = operator_version(&kube, &namespace).await?;
        versions.problem = protocol_mismatch(operator.as_ref());
        versions.operator = operator.map(|(version, protocol_version)| Side {
            version,
            protocol_version,
        });
    }
    if args.output != Output::Table {
        print(out, args.output, &versions)?;
    } else {
        writeln!(
            out,
            "client: runnel {} (protocol {})",
            versions.client.version, versions.client.protocol_version
        )?;
        match &versions.operator {
            Some(operator) => writeln!(
                out,
                "operator: runnel {} (protocol {})",
                operator.version, operator.protocol_version
            )?,
            None if !args.client => writeln!(
                out,
                "operator: none found in namespace {namespace} (no lease runnel-operator)"
            )?,
            None => {}
        }
    }
    if let Some(problem) = &versions.problem {
        writeln!(err, "error: {problem}")?;
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Passed)
}
