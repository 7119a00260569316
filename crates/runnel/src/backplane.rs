//! Choosing the backplane of a run: the embedded log by default, Kafka with `--kafka`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use runnel_backend::Backend;
use runnel_embedded_log::{EmbeddedBackend, FsyncPolicy, LogConfig};
use runnel_runtime::LocalConfig;

use crate::AppError;
use crate::cli::{Fsync, RunArgs};

/// The backplane a run uses, and how to describe it to the user.
#[derive(Debug)]
pub(crate) struct Backplane {
    /// The last handle: dropping it stops the embedded log's writers after a final sync.
    pub(crate) backend: Arc<dyn Backend>,
    /// For the banner: where the data lives.
    pub(crate) describe: String,
    /// For the live view's footer.
    pub(crate) short: String,
}

/// Opens the backplane the arguments ask for.
pub(crate) async fn open(
    args: &RunArgs,
    config: &LocalConfig,
    data_dir: PathBuf,
) -> Result<Backplane, AppError> {
    match &args.kafka {
        Some(bootstrap) => kafka(bootstrap, &kafka_settings(args, config)?).await,
        None => embedded(args, data_dir),
    }
}

/// The `[kafka]` table, then every `--kafka-setting`.
fn kafka_settings(
    args: &RunArgs,
    config: &LocalConfig,
) -> Result<BTreeMap<String, String>, AppError> {
    let mut settings = config.kafka_settings().clone();
    for (index, setting) in args.kafka_settings.iter().enumerate() {
        // The text is never echoed: it may hold a secret.
        let (key, value) = setting.split_once('=').ok_or(AppError::KafkaSetting {
            position: index + 1,
        })?;
        settings.insert(key.trim().to_owned(), value.to_owned());
    }
    Ok(settings)
}

fn embedded(args: &RunArgs, data_dir: PathBuf) -> Result<Backplane, AppError> {
    let fsync = match args.fsync {
        Fsync::Always => FsyncPolicy::Always,
        Fsync::Never => FsyncPolicy::Never,
        Fsync::Every(interval) => FsyncPolicy::Interval(interval),
    };
    let backend = EmbeddedBackend::open(&data_dir, LogConfig::default().with_fsync(fsync))
        .map_err(|source| AppError::OpenLog {
            path: data_dir.clone(),
            source,
        })?;
    Ok(Backplane {
        backend: Arc::new(backend),
        describe: format!(
            "data: {} (the embedded log; a restart resumes from committed offsets)",
            data_dir.display()
        ),
        short: format!("data in {}", data_dir.display()),
    })
}

#[cfg(feature = "kafka")]
async fn kafka(
    bootstrap: &str,
    settings: &BTreeMap<String, String>,
) -> Result<Backplane, AppError> {
    let mut config = runnel_kafka::KafkaConfig::new(bootstrap);
    config.settings.extend(settings);
    let shown = config.settings.to_string();
    let backend = runnel_kafka::KafkaBackend::connect(config).await?;
    let mut describe = format!(
        "data: the kafka cluster at {bootstrap} (consumer groups <app>.<instance>.<inlet>; a restart resumes from committed offsets)"
    );
    if !shown.is_empty() {
        describe.push_str(&format!("\nkafka settings: {shown}"));
    }
    Ok(Backplane {
        backend: Arc::new(backend),
        describe,
        short: format!("kafka at {bootstrap}"),
    })
}

#[cfg(not(feature = "kafka"))]
async fn kafka(
    _bootstrap: &str,
    _settings: &BTreeMap<String, String>,
) -> Result<Backplane, AppError> {
    Err(AppError::KafkaNotEnabled)
}
