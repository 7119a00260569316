//! `runnel deploy APP.yaml [--scale S=N]... [--conf FILE]... [KEY=VALUE]...`.

use std::io::Write;

use anyhow::Context as _;
use kube::Api;
use kube::api::{Patch, PatchParams};
use runnel_application::{ApplicationDocument, ApplicationSpec, Problem};
use runnel_blueprint::descriptor::StateScope;
use runnel_operator::Application;

use super::configure::{changes, check, deployed_configuration, layer, report, write_secret};
use super::{FIELD_MANAGER, connect, operator_version, protocol_mismatch};
use crate::Outcome;
use crate::args::DeployArgs;

pub(crate) async fn run(
    args: &DeployArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let text = crate::read(&args.file, "application")?;
    let document = ApplicationDocument::from_yaml(&args.file, &text)?;
    let name = document.metadata.name.clone();
    let blueprint = match document.spec.verify(&name) {
        Ok(blueprint) => blueprint,
        Err(error) => {
            writeln!(err, "error: {error}\nnothing was written")?;
            return Ok(Outcome::Failed);
        }
    };
    let mut cluster = args.cluster.clone();
    if cluster.namespace.is_none() {
        cluster.namespace = document.metadata.namespace.clone();
    }
    let (client, namespace) = connect(&cluster).await?;
    let apps: Api<Application> = Api::namespaced(client.clone(), &namespace);
    let existing = apps
        .get_opt(&name)
        .await
        .with_context(|| format!("reading application {namespace}/{name}"))?;

    // The user's configuration: what was deployed, then the files, then key=value.
    let before = match &existing {
        Some(app) => deployed_configuration(&client, app).await?,
        None => Default::default(),
    };
    let change = match layer(&args.conf, &args.assignments) {
        Ok(change) => change,
        Err(problems) => return report(err, &problems),
    };
    // Only what was deployed before may name streamlets the blueprint no longer has (they
    // are dropped); a new value for a streamlet the blueprint lacks is refused by `check`.
    let mut user = before.clone();
    let dropped = user.retain_streamlets(|instance| blueprint.streamlet(instance).is_some());
    user.overlay(&change);
    let mut problems = check(&user, &document.spec, &blueprint);
    let mut spec: ApplicationSpec = document.spec.clone();
    // A suspended app stays suspended through a redeploy, as its replicas stay.
    spec.suspended = existing.as_ref().is_some_and(|app| app.spec.suspended);
    // So does its rollback setting (set with kubectl): the redeploy is what it guards.
    spec.rollback = existing.as_ref().and_then(|app| app.spec.rollback.clone());
    for streamlet in &mut spec.streamlets {
        if let Some(deployed) = existing
            .as_ref()
            .and_then(|app| app.spec.streamlet(&streamlet.name))
        {
            streamlet.replicas = deployed.replicas;
        }
    }
    for assignment in &args.scale {
        match parse_scale(assignment, &spec) {
            Ok((instance, replicas)) => {
                if let Some(warning) = idle_warning(&spec, &instance, replicas) {
                    writeln!(err, "{warning}")?;
                }
                if let Some(streamlet) = spec.streamlets.iter_mut().find(|s| s.name == instance) {
                    streamlet.replicas = replicas;
                }
            }
            Err(problem) => problems.push(problem),
        }
    }
    if !problems.is_empty() {
        return report(err, &problems);
    }
    if let Some(kafka) = &args.kafka {
        spec.kafka.bootstrap_servers = Some(kafka.clone());
    } else if spec.kafka.bootstrap_servers.is_none() {
        spec.kafka.bootstrap_servers = existing
            .as_ref()
            .and_then(|app| app.spec.kafka.bootstrap_servers.clone());
    }

    let operator = operator_version(&client, &namespace).await?;
    if let Some(message) = protocol_mismatch(operator.as_ref()) {
        writeln!(err, "error: {message}\nnothing was written")?;
        return Ok(Outcome::Failed);
    }
    if operator.is_none() {
        writeln!(
            err,
            "warning: no runnel operator holds the lease runnel-operator in namespace {namespace}; the application waits until one runs there"
        )?;
    }

    // What will change.
    match &existing {
        None => {
            writeln!(
                out,
                "create application '{name}' in {namespace}: version {}, image {}",
                spec.version, spec.image
            )?;
            for streamlet in &spec.streamlets {
                writeln!(
                    out,
                    "  + streamlet {} ({}), {} replicas",
                    streamlet.name, streamlet.type_name, streamlet.replicas
                )?;
            }
            for topic in &spec.topics {
                writeln!(
                    out,
                    "  + topic {} ({} partitions{})",
                    topic.name,
                    topic.partitions,
                    if topic.managed { "" } else { ", not managed" }
                )?;
            }
        }
        Some(app) => {
            writeln!(out, "update application '{name}' in {namespace}:")?;
            let old = &app.spec;
            if old.version != spec.version {
                writeln!(out, "  ~ version: {} -> {}", old.version, spec.version)?;
            }
            if old.image != spec.image {
                writeln!(out, "  ~ image: {} -> {}", old.image, spec.image)?;
            }
            for streamlet in &spec.streamlets {
                match old.streamlet(&streamlet.name) {
                    None => writeln!(
                        out,
                        "  + streamlet {} ({}), {} replicas",
                        streamlet.name, streamlet.type_name, streamlet.replicas
                    )?,
                    Some(previous) if previous.replicas != streamlet.replicas => {
                        writeln!(
                            out,
                            "  ~ streamlet {}: {} -> {} replicas",
                            streamlet.name, previous.replicas, streamlet.replicas
                        )?;
                    }
                    Some(_) => {}
                }
            }
            for previous in &old.streamlets {
                if spec.streamlet(&previous.name).is_none() {
                    writeln!(out, "  - streamlet {}", previous.name)?;
                }
            }
            if old.blueprint != spec.blueprint {
                writeln!(out, "  ~ blueprint changed: every streamlet restarts")?;
            }
            if old.defaults != spec.defaults {
                writeln!(out, "  ~ the app's default configuration changed")?;
            }
            if spec.suspended {
                writeln!(
                    out,
                    "  = suspended: it stays so, with 0 replicas, until `runnel resume {name}`"
                )?;
            }
        }
    }
    for line in changes(&before, &user) {
        writeln!(out, "{line}")?;
    }
    for instance in &dropped {
        writeln!(
            out,
            "  - configuration of streamlet {instance}, which the blueprint no longer has"
        )?;
    }
    if args.dry_run {
        writeln!(out, "dry run: nothing was written")?;
        return Ok(Outcome::Passed);
    }

    let (public, secret) = user.split_secrets();
    let secret_name = write_secret(&client, &namespace, &name, existing.as_ref(), &secret).await?;
    spec.configuration = public;
    spec.secret_configuration = secret_name.clone();
    let mut object = Application::from_document(&document);
    object.metadata.namespace = Some(namespace.clone());
    object.spec = spec;
    let applied = apps
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .with_context(|| format!("writing application {namespace}/{name}"))?;
    if existing.is_none() && secret_name.is_some() {
        // Now that the Application has a uid, let it own the secret configuration.
        write_secret(&client, &namespace, &name, Some(&applied), &secret).await?;
    }
    writeln!(
        out,
        "deployed application '{name}' to {namespace} (generation {}); follow it with `runnel status {name}`",
        applied.metadata.generation.unwrap_or_default()
    )?;
    Ok(Outcome::Passed)
}

/// A warning when `replicas` of `instance` exceed the partitions of the topics it reads:
/// the surplus holds no partition and stays idle.
pub(crate) fn idle_warning(
    spec: &ApplicationSpec,
    instance: &str,
    replicas: i32,
) -> Option<String> {
    let partitions = spec.inlet_partitions(instance)?;
    (replicas > partitions).then(|| {
        format!(
            "warning: streamlet {instance} reads topics with at most {partitions} partitions, so {} of its {replicas} replicas will hold none and stay idle; add partitions to the topic or scale to {partitions}",
            replicas - partitions
        )
    })
}

/// `STREAMLET=N`.
pub(crate) fn parse_scale(text: &str, spec: &ApplicationSpec) -> Result<(String, i32), Problem> {
    let place = || format!("--scale {text}");
    let (instance, count) = text
        .split_once('=')
        .ok_or_else(|| Problem::new(place(), "expected STREAMLET=N"))?;
    let replicas: i32 = count
        .trim()
        .parse()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| Problem::new(place(), format!("'{count}' is not a replica count")))?;
    let Some(streamlet) = spec.streamlet(instance.trim()) else {
        let known: Vec<&str> = spec.streamlets.iter().map(|s| s.name.as_str()).collect();
        let hint = runnel_blueprint::did_you_mean(instance.trim(), known.iter().copied());
        return Err(Problem::new(
            place(),
            format!(
                "the app has no streamlet '{instance}'{hint} (it has: {})",
                known.join(", ")
            ),
        ));
    };
    let state = spec
        .descriptor
        .streamlet(&streamlet.type_name)
        .map(|declared| declared.state);
    if replicas > 1 && state == Some(StateScope::Instance) {
        return Err(Problem::new(
            place(),
            format!(
                "streamlet '{}' keeps one state for the whole instance (its shape is `checkpointed`), so it runs as one member of its consumer group: a second replica would read part of its input without the state; keep its state by input partition (`checkpointed_by_partition`, `keyed_state`) to scale it out (docs/state.md)",
                instance.trim()
            ),
        ));
    }
    Ok((instance.trim().to_owned(), replicas))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use runnel_blueprint::descriptor::AppDescriptor;

    use super::*;

    /// An app whose `totals` keeps one state for the instance and `counts` one per input
    /// partition.
    fn spec() -> ApplicationSpec {
        let descriptor = AppDescriptor::from_json(
            r#"{"descriptor-version": 1, "app": "demo", "streamlets": [
              {"type": "source", "outlets": [{"name": "out", "schema": {"format": "avro", "name": "long", "definition": "long"}}]},
              {"type": "total", "state": "instance", "inlets": [{"name": "in", "schema": {"format": "avro", "name": "long", "definition": "long"}}]},
              {"type": "count", "state": "partition", "inlets": [{"name": "in", "schema": {"format": "avro", "name": "long", "definition": "long"}}]}
            ]}"#,
        )
        .unwrap();
        let text = r#"name = "demo"
[streamlets]
numbers = "source"
totals = "total"
counts = "count"
[topics.numbers]
producers = ["numbers.out"]
consumers = ["totals.in", "counts.in"]
partitions = 4
"#;
        let blueprint = runnel_blueprint::verify(Path::new("blueprint.toml"), text, &descriptor)
            .blueprint
            .unwrap();
        ApplicationDocument::new(
            &blueprint,
            text,
            &descriptor,
            "registry.example/demo:1",
            "1",
        )
        .spec
    }

    #[test]
    fn a_streamlet_with_one_state_for_the_instance_is_not_scaled_above_one() {
        let spec = spec();
        assert_eq!(
            parse_scale("counts=4", &spec).unwrap(),
            ("counts".to_owned(), 4)
        );
        assert_eq!(
            parse_scale("totals=1", &spec).unwrap(),
            ("totals".to_owned(), 1)
        );
        assert_eq!(idle_warning(&spec, "counts", 4), None);
        assert_eq!(
            idle_warning(&spec, "counts", 6).unwrap(),
            "warning: streamlet counts reads topics with at most 4 partitions, so 2 of its 6 replicas will hold none and stay idle; add partitions to the topic or scale to 4"
        );
        assert_eq!(
            idle_warning(&spec, "numbers", 6),
            None,
            "a source reads no topic"
        );
        let misspelt = parse_scale("count=2", &spec).unwrap_err().to_string();
        assert!(
            misspelt.contains("no streamlet 'count'; did you mean 'counts'?"),
            "{misspelt}"
        );
        let refused = parse_scale("totals=2", &spec).unwrap_err().to_string();
        assert!(
            refused.contains("--scale totals=2")
                && refused.contains("keeps one state for the whole instance"),
            "{refused}"
        );
    }
}
