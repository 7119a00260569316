//! `app build`: the image of this very binary and its Application resource, without Docker
//! and without Kubernetes client code.

use crate::output::print_line;
use std::collections::BTreeMap;

use runnel_application::{ApplicationDocument, Configuration};
use runnel_image::ImageSpec;

use crate::AppError;
use crate::cli::BuildArgs;
use crate::commands::{checked_blueprint, read};

/// Writes `DIR/image` (an OCI image layout), `DIR/<app>-<version>.docker.tar`,
/// `DIR/<app>-<version>.oci.tar` and `DIR/<app>.yaml`, and says how to push and deploy.
pub(crate) fn build(
    app: &str,
    version: Option<&str>,
    declared: &crate::declared::Declared,
    args: &BuildArgs,
) -> Result<(), AppError> {
    let blueprint = checked_blueprint(app, declared, &args.blueprint)?;
    // A pod reads its blueprint from a ConfigMap, away from the query files it names.
    let text = read(&args.blueprint)?;
    let text = runnel_blueprint::inline_files(
        &text,
        &runnel_blueprint::BlueprintFiles::beside(&args.blueprint, &text),
    );
    let descriptor = declared.registry.descriptor(app);
    let version = args
        .version
        .as_deref()
        .or(version)
        .unwrap_or("0.0.0")
        .to_owned();
    let reference = args
        .image
        .clone()
        .unwrap_or_else(|| format!("{}:{version}", blueprint.name));

    let mut defaults = Configuration::default();
    let mut problems = Vec::new();
    for path in &args.conf {
        match Configuration::parse_file(path, &read(path)?) {
            Ok(layer) => defaults.overlay(&layer),
            Err(problem) => problems.push(problem),
        }
    }
    for assignment in &args.sets {
        if let Err(problem) = defaults.assign(assignment) {
            problems.push(problem);
        }
    }
    problems.extend(defaults.check(&blueprint, &descriptor));
    if defaults.has_secrets() {
        let (_, secrets) = defaults.split_secrets();
        let keys = secret_keys(&secrets);
        problems.push(runnel_application::Problem::new(
            keys.join(", "),
            "secret values do not belong in the Application; give them to `runnel deploy --conf` or `runnel configure`, which keep them in a Secret",
        ));
    }
    if !problems.is_empty() {
        return Err(AppError::BuildConfiguration(
            problems.iter().map(ToString::to_string).collect(),
        ));
    }

    let executable = std::env::current_exe().map_err(|source| AppError::Read {
        path: "the running executable".into(),
        source,
    })?;
    let mut spec = ImageSpec::new(&reference, &executable);
    spec.files.push((
        format!("{}/blueprint.toml", runnel_image::APP_DIRECTORY),
        text.clone().into_bytes(),
        0o644,
    ));
    // The image's user may write only its data directory (the root file system is root's).
    spec.cmd = vec![
        "run".to_owned(),
        format!("{}/blueprint.toml", runnel_image::APP_DIRECTORY),
        "--data-dir".to_owned(),
        runnel_image::DATA_DIRECTORY.to_owned(),
    ];
    spec.labels = BTreeMap::from([
        (
            "org.opencontainers.image.title".to_owned(),
            blueprint.name.clone(),
        ),
        (
            "org.opencontainers.image.version".to_owned(),
            version.clone(),
        ),
        ("dev.runnel.app".to_owned(), blueprint.name.clone()),
    ]);
    let python = crate::python_image::python_files(
        &blueprint,
        &args.blueprint,
        args.python_requirements.as_deref(),
        &args.output,
    )?;
    if let Some(python) = &python {
        spec.files.extend(python.files.iter().cloned());
        spec.libraries.extend(python.libraries.iter().cloned());
        spec.env.extend([
            format!(
                "{}={}",
                crate::python_image::INTERPRETER_VARIABLE,
                crate::python_image::IMAGE_INTERPRETER
            ),
            // The streamlets' modules: a pod's blueprint is in a ConfigMap, not beside them.
            format!("PYTHONPATH={}", runnel_image::APP_DIRECTORY),
            // The image's files are root's, byte code made at build included: none to write.
            "PYTHONDONTWRITEBYTECODE=1".to_owned(),
        ]);
    }
    let image = spec.build()?;
    let output = &args.output;
    let stem = format!("{}-{version}", blueprint.name);
    let layout = output.join("image");
    image.write_layout(&layout)?;
    let docker = output.join(format!("{stem}.docker.tar"));
    image.write_docker_archive(&docker)?;
    let oci = output.join(format!("{stem}.oci.tar"));
    image.write_oci_archive(&oci)?;

    let mut document =
        ApplicationDocument::new(&blueprint, &text, &descriptor, &reference, &version);
    document.spec.defaults = defaults;
    document.spec.kafka.bootstrap_servers = args.kafka.clone();
    let yaml_path = output.join(format!("{}.yaml", blueprint.name));
    std::fs::write(&yaml_path, document.to_yaml()).map_err(|source| AppError::Write {
        path: yaml_path.clone(),
        source,
    })?;

    let total: u64 = image.contents.iter().map(|(_, size)| size).sum();
    print_line!(
        "built image {reference} ({}, {}, {} files, {:.1} MB before compression)",
        image.manifest_digest,
        image.architecture,
        image.contents.len(),
        total as f64 / 1e6
    );
    match &python {
        // Thousands of files: the Python part is summed up.
        Some(python) => {
            let python_paths: std::collections::BTreeSet<&str> = python
                .files
                .iter()
                .map(|(path, _, _)| path.as_str())
                .collect();
            // The libraries only Python brings are summed up with it; those the app links
            // too (libc, the loader) are listed as without Python.
            let app_links = runnel_image::linked_libraries(&executable)
                .map(|linked| linked.libraries)
                .unwrap_or_default();
            let python_only = |path: &str| {
                python.libraries.iter().any(|l| l.as_os_str() == path)
                    && !app_links.iter().any(|l| l.as_os_str() == path)
            };
            for (path, size) in &image.contents {
                if !python_paths.contains(path.as_str()) && !python_only(path) {
                    print_line!("  {path} ({:.1} MB)", *size as f64 / 1e6);
                }
            }
            for line in &python.summary {
                print_line!("  {line}");
            }
        }
        None => {
            for (path, size) in &image.contents {
                print_line!("  {path} ({:.1} MB)", *size as f64 / 1e6);
            }
        }
    }
    print_line!();
    print_line!("wrote:");
    print_line!(
        "  {}  (OCI image layout, tag {})",
        layout.display(),
        image.tag
    );
    print_line!("  {}  (docker-archive)", docker.display());
    print_line!("  {}  (oci-archive)", oci.display());
    print_line!("  {}  (the Application)", yaml_path.display());
    print_line!();
    print_line!("push the image with one of:");
    print_line!(
        "  skopeo copy oci:{}:{} docker://{reference}",
        layout.display(),
        image.tag
    );
    print_line!("  crane push {} {reference}", layout.display());
    print_line!(
        "  docker load -i {} && docker push {reference}",
        docker.display()
    );
    print_line!("then deploy it: runnel deploy {}", yaml_path.display());
    Ok(())
}

fn secret_keys(secrets: &Configuration) -> Vec<String> {
    let mut keys: Vec<String> = secrets.kafka.keys().map(|k| format!("kafka.{k}")).collect();
    for (name, streamlet) in &secrets.streamlets {
        keys.extend(
            streamlet
                .parameters
                .keys()
                .map(|k| format!("streamlets.{name}.{k}")),
        );
        keys.extend(
            streamlet
                .kafka
                .keys()
                .map(|k| format!("runtime.streamlets.{name}.kafka.{k}")),
        );
        keys.extend(
            streamlet
                .pod
                .env
                .keys()
                .map(|k| format!("pods.{name}.env.{k}")),
        );
    }
    keys
}
