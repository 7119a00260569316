use std::error::Error as _;
use std::sync::Arc;

use runnel_backend::TopicSpec;
use runnel_runtime::{LocalConfig, PlanError, RunError, provision};

use crate::support::{blueprint_text, memory, planned, registry};

#[tokio::test]
async fn managed_topics_and_the_dead_letter_topic_are_created() -> anyhow::Result<()> {
    let registry = registry(Arc::default());
    let plan = planned(&registry, &blueprint_text("copy"), &LocalConfig::default())?;
    let (_, backend) = memory();
    provision(&plan, &*backend).await?;
    assert_eq!(backend.topic("first").await?.unwrap().partitions, 2);
    assert_eq!(backend.topic("second").await?.unwrap().partitions, 1);
    assert!(backend.topic("test.dead-letter").await?.is_some());
    Ok(())
}

#[tokio::test]
async fn an_existing_topic_with_other_partitions_is_reported() -> anyhow::Result<()> {
    let registry = registry(Arc::default());
    let plan = planned(&registry, &blueprint_text("copy"), &LocalConfig::default())?;
    let (_, backend) = memory();
    backend.create_topic(&TopicSpec::new("first", 3)).await?;
    let error = provision(&plan, &*backend).await.unwrap_err();
    assert_eq!(error.to_string(), "creating topic 'first' failed");
    assert_eq!(
        error.source().unwrap().to_string(),
        "topic 'first' exists with 3 partitions, but 2 were asked for"
    );
    Ok(())
}

#[tokio::test]
async fn an_unmanaged_topic_must_exist() -> anyhow::Result<()> {
    let registry = registry(Arc::default());
    let text = blueprint_text("copy").replace("partitions = 2", "managed = false");
    let plan = planned(&registry, &text, &LocalConfig::default())?;
    let (_, backend) = memory();
    let error = provision(&plan, &*backend).await.unwrap_err();
    assert!(
        matches!(error, RunError::MissingTopic { ref topic } if topic == "first"),
        "{error}"
    );
    Ok(())
}

#[tokio::test]
async fn every_bad_value_and_unknown_instance_is_found_before_starting() -> anyhow::Result<()> {
    let registry = registry(Arc::default());
    let mut config = LocalConfig::default();
    config.set("numbers.count=many")?;
    config.set("numbers.colour=red")?;
    let error = planned(&registry, &blueprint_text("copy"), &config).unwrap_err();
    let PlanError::Configuration { parameters, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!(parameters.len(), 2);
    assert_eq!(
        error.to_string(),
        "invalid configuration:\n  streamlet 'numbers', parameter 'count': 'many' is not an integer\n  streamlet 'numbers', parameter 'colour': unknown parameter; the streamlet has: count"
    );
    // An unknown instance beside an unknown key: both reported at once.
    config.set("nobody.count=1")?;
    let error = planned(&registry, &blueprint_text("copy"), &config).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid configuration:\n  the configuration sets parameters for 'nobody', which is not a streamlet of the blueprint\n  streamlet 'numbers', parameter 'count': 'many' is not an integer\n  streamlet 'numbers', parameter 'colour': unknown parameter; the streamlet has: count"
    );
    Ok(())
}
