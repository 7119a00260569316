//! `APP sql QUERY`: an ad hoc query over the app's topics, each a table named as its topic
//! and typed by its schema, on the embedded log or Kafka: the records there when it starts
//! (then every window fires, as at the end of a bounded input), or with `--follow` the new
//! ones too, results printed as they come. A table or JSON lines; a bounded query whose
//! results update prints the rows its changes leave, or with `--changelog` the changes.

use std::io::Write;

#[cfg(feature = "sql")]
mod printer;

use crate::cli::SqlArgs;
use crate::declared::Planner;
use crate::error::AppError;
use runnel_blueprint::descriptor::AppDescriptor;

/// Runs the query of `args` over the topics of the app `app`, whose streamlets
/// `descriptor` describes, printing the results to `out`.
#[cfg(not(feature = "sql"))]
pub(crate) async fn query_topics(
    _app: &str,
    _descriptor: &AppDescriptor,
    _planner: &Planner,
    _args: &SqlArgs,
    _out: &mut dyn Write,
) -> Result<(), AppError> {
    Err(AppError::SqlNotEnabled)
}

/// Runs the query of `args` over the topics of the app `app`, whose streamlets
/// `descriptor` describes, printing the results to `out`.
#[cfg(feature = "sql")]
pub(crate) async fn query_topics(
    app: &str,
    descriptor: &AppDescriptor,
    planner: &Planner,
    args: &SqlArgs,
    out: &mut dyn Write,
) -> Result<(), AppError> {
    use std::collections::HashMap;
    use std::time::Duration;

    use runnel_sql::{Execution, Query, Table};
    use runnel_tools::Tools;

    /// Records read per request.
    const BATCH: usize = 1000;
    /// How long `--follow` waits between looks for new records.
    const FOLLOW_INTERVAL: Duration = Duration::from_millis(250);

    let functions = planner.as_ref().ok_or(AppError::SqlNotEnabled)?;
    let tools = Tools::open(&args.source, Some(app), Some(descriptor)).await?;
    let mut topics = tools.schemas.topics();
    topics.sort();
    let tables: Vec<Table> = topics
        .iter()
        .filter_map(|topic| {
            let definition = tools.schemas.avro_definition(topic)?;
            Table::from_avro(topic.as_str(), &definition).ok()
        })
        .collect();
    let query = Query::plan_with(&args.query, &tables, "Result", functions)
        .map_err(|error| AppError::Query(located(&args.query, &error)))?;
    let mut execution = Execution::new(&query);

    /// Where the query is in one input's partitions.
    struct Reading {
        topic: String,
        /// Per partition: the next offset, and the end when the query started.
        positions: Vec<(u32, u64, u64)>,
        /// The tables of the schemas its records were written with, by definition.
        writers: HashMap<String, Table>,
    }
    let mut readings = Vec::new();
    for table in query.inputs() {
        let offsets = tools.store.offsets(table.name()).await?;
        let positions = offsets
            .iter()
            .enumerate()
            .map(|(partition, range)| (partition as u32, range.start, range.end))
            .collect();
        readings.push(Reading {
            topic: table.name().to_owned(),
            positions,
            writers: HashMap::new(),
        });
    }
    let mut printer = printer::Printer::new(&query, args.format, args.follow, args.changelog);
    loop {
        let mut progressed = false;
        for reading in &mut readings {
            for (partition, position, end) in &mut reading.positions {
                let wanted = if args.follow {
                    BATCH
                } else {
                    BATCH.min(end.saturating_sub(*position) as usize)
                };
                if wanted == 0 {
                    continue;
                }
                let consumed = tools
                    .store
                    .read(
                        &reading.topic,
                        *partition,
                        *position,
                        wanted,
                        Duration::from_millis(200),
                    )
                    .await?;
                let consumed: Vec<_> = consumed
                    .into_iter()
                    .filter(|record| args.follow || record.offset < *end)
                    .collect();
                let Some(last) = consumed.last() else {
                    continue;
                };
                *position = last.offset + 1;
                progressed = true;
                tools
                    .learn_schemas(consumed.iter().map(|record| &record.record))
                    .await?;
                // Records go to the query in runs of one writer schema.
                let mut run: Vec<(&[u8], u64)> = Vec::new();
                let mut run_writer: Option<String> = None;
                let mut flush = |run: &mut Vec<(&[u8], u64)>, writer: &Option<String>| {
                    if run.is_empty() {
                        return Ok::<(), AppError>(());
                    }
                    let writer = match writer {
                        Some(definition) => {
                            if !reading.writers.contains_key(definition) {
                                let schema = serde_json::from_str(definition)
                                    .expect("a schema written as JSON reads back");
                                let table = Table::from_avro(reading.topic.as_str(), &schema)
                                    .map_err(|error| AppError::Query(error.to_string()))?;
                                reading.writers.insert(definition.clone(), table);
                            }
                            reading.writers.get(definition)
                        }
                        None => None,
                    };
                    let records: Vec<&[u8]> = run.iter().map(|(body, _)| *body).collect();
                    let partitions = vec![*partition; records.len()];
                    for (index, error) in
                        execution.add(&reading.topic, writer, &records, &partitions)
                    {
                        tracing::warn!(
                            topic = reading.topic,
                            partition = *partition,
                            offset = run[index].1,
                            "the query skips a record: {error}"
                        );
                    }
                    run.clear();
                    Ok(())
                };
                for record in &consumed {
                    match tools.schemas.avro_body(&reading.topic, &record.record) {
                        Ok((body, writer)) => {
                            let writer = Some(writer.to_string());
                            if writer != run_writer {
                                flush(&mut run, &run_writer)?;
                                run_writer = writer;
                            }
                            run.push((body, record.offset));
                        }
                        Err(reason) => tracing::warn!(
                            topic = reading.topic,
                            partition = *partition,
                            offset = record.offset,
                            "the query skips a record that does not decode: {reason}"
                        ),
                    }
                }
                flush(&mut run, &run_writer)?;
            }
        }
        printer.print(&query, execution.take_changes(), out)?;
        if !progressed {
            if !args.follow {
                break;
            }
            tokio::time::sleep(FOLLOW_INTERVAL).await;
        }
    }
    execution.finish();
    printer.print(&query, execution.take_changes(), out)?;
    printer.finish(out)
}

/// A query's error with the query's line and a caret under where it is.
#[cfg(feature = "sql")]
fn located(query: &str, error: &runnel_sql::Error) -> String {
    let Some(position) = error.position() else {
        return format!("the query: {error}");
    };
    let line = query
        .lines()
        .nth(position.line.saturating_sub(1) as usize)
        .unwrap_or_default();
    let caret = " ".repeat(position.column.saturating_sub(1) as usize);
    format!("the query, at {position}: {error}\n  {line}\n  {caret}^")
}
