//! `runnel configure` and `runnel configuration`, and the configuration handling `deploy`
//! shares: layers from files and `key=value`, the user's secret values kept in a Secret of
//! their own, and what changes.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt as _};
use runnel_application::{ApplicationSpec, Configuration, MASK, Problem, is_secret};
use runnel_blueprint::Blueprint;
use runnel_operator::{Application, SECRET_CONFIGURATION_KEY, names};

use super::{FIELD_MANAGER, application, connect, print};
use crate::Outcome;
use crate::args::{ConfigurationArgs, ConfigureArgs, Output};

/// The name of the Secret with an app's secret configuration values.
pub(crate) fn secret_name(app: &str) -> String {
    format!("{app}-configuration")
}

/// The layer the files (in order) and then the assignments make, or every problem.
pub(crate) fn layer(
    files: &[PathBuf],
    assignments: &[String],
) -> Result<Configuration, Vec<Problem>> {
    let mut layer = Configuration::default();
    let mut problems = Vec::new();
    for path in files {
        match std::fs::read_to_string(path) {
            Ok(text) => match Configuration::parse_file(path, &text) {
                Ok(file) => layer.overlay(&file),
                Err(problem) => problems.push(problem),
            },
            Err(error) => problems.push(Problem::new(
                path.display().to_string(),
                format!("cannot be read: {error}"),
            )),
        }
    }
    for assignment in assignments {
        if let Err(problem) = layer.assign(assignment) {
            problems.push(problem);
        }
    }
    if problems.is_empty() {
        Ok(layer)
    } else {
        Err(problems)
    }
}

/// The user's configuration of a deployed app: the public part from the spec and the
/// secret part from its Secret.
pub(crate) async fn deployed_configuration(
    client: &Client,
    app: &Application,
) -> anyhow::Result<Configuration> {
    let mut configuration = app.spec.configuration.clone();
    if let Some(name) = &app.spec.secret_configuration {
        let namespace = app.namespace().unwrap_or_default();
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        let secret = secrets
            .get_opt(name)
            .await
            .with_context(|| format!("reading the secret configuration {namespace}/{name}"))?;
        if let Some(bytes) = secret
            .as_ref()
            .and_then(|s| s.data.as_ref())
            .and_then(|d| d.get(SECRET_CONFIGURATION_KEY))
        {
            let text = String::from_utf8_lossy(&bytes.0);
            let parsed = Configuration::parse_file(
                &PathBuf::from(format!("secret {namespace}/{name}")),
                &text,
            )
            .map_err(|problem| {
                anyhow::anyhow!("{}", problem.message.lines().next().unwrap_or_default())
            })
            .with_context(|| format!("reading the secret configuration {namespace}/{name}"))?;
            configuration.overlay(&parsed);
        }
    }
    Ok(configuration)
}

/// Checks a user layer against the blueprint and, over the app's defaults, for
/// completeness.
pub(crate) fn check(
    user: &Configuration,
    spec: &ApplicationSpec,
    blueprint: &Blueprint,
) -> Vec<Problem> {
    let mut problems = user.check(blueprint, &spec.descriptor);
    let mut effective = spec.defaults.clone();
    effective.overlay(user);
    problems.extend(effective.check_complete(blueprint, &spec.descriptor));
    problems
}

/// `key: old -> new` lines for every configuration value that changes, secrets masked.
pub(crate) fn changes(before: &Configuration, after: &Configuration) -> Vec<String> {
    let (old, new) = (before.entries(), after.entries());
    let shown = |key: &str, value: &str| {
        let last = key.rsplit('.').next().unwrap_or(key);
        if is_secret(last) || is_secret(key) {
            MASK.to_owned()
        } else {
            value.to_owned()
        }
    };
    let mut lines = Vec::new();
    for (key, value) in &new {
        match old.get(key) {
            None => lines.push(format!("  + {key} = {}", shown(key, value))),
            Some(previous) if previous != value => {
                lines.push(format!(
                    "  ~ {key}: {} -> {}",
                    shown(key, previous),
                    shown(key, value)
                ));
            }
            Some(_) => {}
        }
    }
    for key in old.keys().filter(|key| !new.contains_key(*key)) {
        lines.push(format!("  - {key}"));
    }
    lines
}

/// Writes the secret part of the user's configuration to its Secret (or deletes the Secret
/// when there is none), owned by the Application when it exists, so that undeploy removes it.
pub(crate) async fn write_secret(
    client: &Client,
    namespace: &str,
    app: &str,
    owner: Option<&Application>,
    secret: &Configuration,
) -> anyhow::Result<Option<String>> {
    let name = secret_name(app);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    if secret.is_empty() {
        match secrets.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(response)) if response.code == 404 => {}
            Err(error) => {
                return Err(error).with_context(|| format!("deleting secret {namespace}/{name}"));
            }
        }
        return Ok(None);
    }
    let owner_references = owner.and_then(|app| {
        Some(vec![OwnerReference {
            api_version: runnel_application::API_VERSION.to_owned(),
            kind: runnel_application::KIND.to_owned(),
            name: app.name().to_owned(),
            uid: app.uid()?,
            controller: Some(false),
            block_owner_deletion: Some(false),
        }])
    });
    let object = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([
                (names::APP_LABEL.to_owned(), app.to_owned()),
                (
                    "app.kubernetes.io/managed-by".to_owned(),
                    "runnel-cli".to_owned(),
                ),
            ])),
            owner_references,
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            SECRET_CONFIGURATION_KEY.to_owned(),
            ByteString(secret.to_file().into_bytes()),
        )])),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    };
    secrets
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .with_context(|| format!("writing secret {namespace}/{name}"))?;
    Ok(Some(name))
}

/// Prints the problems and says nothing was written.
pub(crate) fn report(err: &mut dyn Write, problems: &[Problem]) -> anyhow::Result<Outcome> {
    writeln!(err, "error: invalid configuration; nothing was written:")?;
    for problem in problems {
        writeln!(err, "  {problem}")?;
    }
    Ok(Outcome::Failed)
}

/// `runnel configure APP [--conf FILE]... [KEY=VALUE]...`.
pub(crate) async fn run(
    args: &ConfigureArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let (client, namespace) = connect(&args.cluster).await?;
    let change = match layer(&args.conf, &args.assignments) {
        Ok(change) => change,
        Err(problems) => return report(err, &problems),
    };
    let apps: Api<Application> = Api::namespaced(client.clone(), &namespace);
    // An apply with the resourceVersion read, so the configuration written is the one
    // checked: a concurrent change (the operator's status writes among them) is a
    // conflict, and the whole read, check and write is done again.
    for _ in 0..5 {
        let app = application(&client, &namespace, &args.app).await?;
        let blueprint = app.spec.verify(app.name())?;
        let before = deployed_configuration(&client, &app).await?;
        let mut user = before.clone();
        user.overlay(&change);
        let problems = check(&user, &app.spec, &blueprint);
        if !problems.is_empty() {
            return report(err, &problems);
        }
        let lines = changes(&before, &user);
        if lines.is_empty() {
            writeln!(
                out,
                "application '{}': the configuration is unchanged",
                args.app
            )?;
            return Ok(Outcome::Passed);
        }
        let print_changes = |out: &mut dyn Write| -> std::io::Result<()> {
            writeln!(out, "application '{}' in {namespace}:", args.app)?;
            for line in &lines {
                writeln!(out, "{line}")?;
            }
            Ok(())
        };
        if args.dry_run {
            print_changes(out)?;
            writeln!(out, "dry run: nothing was written")?;
            return Ok(Outcome::Passed);
        }
        let (public, secret) = user.split_secrets();
        let secret_name = write_secret(&client, &namespace, &args.app, Some(&app), &secret).await?;
        let patch = serde_json::json!({
            "apiVersion": runnel_application::API_VERSION,
            "kind": runnel_application::KIND,
            "metadata": {"name": args.app, "resourceVersion": app.resource_version()},
            "spec": ApplicationSpec { configuration: public, secret_configuration: secret_name, ..app.spec.clone() },
        });
        match apps
            .patch(
                &args.app,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await
        {
            Ok(_) => {
                print_changes(out)?;
                writeln!(
                    out,
                    "configured; the streamlets whose configuration changed restart"
                )?;
                return Ok(Outcome::Passed);
            }
            Err(kube::Error::Api(response)) if response.code == 409 => continue,
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("writing application {namespace}/{}", args.app));
            }
        }
    }
    anyhow::bail!(
        "application '{}' kept changing while configuring it; try again",
        args.app
    )
}

/// `runnel configuration APP`: defaults, then the user's values, secrets masked.
pub(crate) async fn show(args: &ConfigurationArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let (client, namespace) = connect(&args.cluster).await?;
    let app = application(&client, &namespace, &args.app).await?;
    let mut effective = app.spec.defaults.clone();
    effective.overlay(&deployed_configuration(&client, &app).await?);
    let masked = effective.masked();
    match args.output {
        Output::Table => {
            writeln!(
                out,
                "# application {namespace}/{} (defaults from the app, then deploy and configure)",
                args.app
            )?;
            write!(out, "{}", masked.to_file())?;
        }
        other => print(out, other, &masked)?,
    }
    Ok(Outcome::Passed)
}
