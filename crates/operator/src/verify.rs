//! [`verify`]: whether an Application's spec can be carried out, as the reconcile and the
//! admission webhook both ask.

use runnel_application::{Configuration, PROTOCOL_VERSION};
use runnel_blueprint::Blueprint;

use crate::Application;

/// A spec that can be carried out, resolved.
#[derive(Debug)]
pub(crate) struct Verified {
    pub(crate) blueprint: Blueprint,
    pub(crate) configuration: Configuration,
    pub(crate) bootstrap_servers: String,
}

/// Why a spec cannot be carried out: a reason for the status's condition (`InvalidBlueprint`)
/// and the message for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

/// What is known of the configuration's secret values.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Secrets<'a> {
    /// The values of the Application's secret configuration: the configuration must be
    /// complete with them.
    Known(&'a Configuration),
    /// Not read (the admission webhook does not read Secrets): the values the spec holds
    /// are checked, but a required value may still come with the secret ones.
    Unknown,
}

/// Checks everything that can make the spec impossible, in the order a user fixes them:
/// the protocol version, the blueprint against the descriptor, the configuration against
/// the descriptor, and that there is a Kafka cluster (the spec's, else
/// `default_bootstrap_servers`).
pub(crate) fn verify(
    app: &Application,
    secrets: Secrets<'_>,
    operator_version: &str,
    default_bootstrap_servers: Option<&str>,
) -> Result<Verified, Refusal> {
    let refuse = |reason, message| Refusal { reason, message };
    let spec = &app.spec;
    if spec.protocol_version != PROTOCOL_VERSION {
        let upgrade = if spec.protocol_version > PROTOCOL_VERSION {
            "upgrade the operator"
        } else {
            "deploy it again with the runnel CLI that matches this operator"
        };
        return Err(refuse(
            "ProtocolMismatch",
            format!(
                "the application was written with protocol {}, this operator (runnel {operator_version}) speaks protocol {PROTOCOL_VERSION}: {upgrade}",
                spec.protocol_version
            ),
        ));
    }
    let blueprint = spec
        .verify(app.name())
        .map_err(|error| refuse("InvalidBlueprint", error.to_string()))?;
    let mut configuration = spec.effective_configuration();
    let problems = match secrets {
        Secrets::Known(secret) => {
            configuration.overlay(secret);
            let mut problems = configuration.check(&blueprint, &spec.descriptor);
            problems.extend(configuration.check_complete(&blueprint, &spec.descriptor));
            problems
        }
        Secrets::Unknown => configuration.check(&blueprint, &spec.descriptor),
    };
    if !problems.is_empty() {
        let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Err(refuse(
            "InvalidConfiguration",
            format!("invalid configuration: {}", listed.join("; ")),
        ));
    }
    let bootstrap_servers = spec
        .kafka
        .bootstrap_servers
        .as_deref()
        .or(default_bootstrap_servers)
        .map(str::to_owned)
        .ok_or_else(|| {
            refuse(
                "NoKafkaCluster",
                "no Kafka cluster: deploy with --kafka BOOTSTRAP or start the operator with --kafka"
                    .to_owned(),
            )
        })?;
    Ok(Verified {
        blueprint,
        configuration,
        bootstrap_servers,
    })
}
