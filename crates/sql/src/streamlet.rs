//! [`SqlStreamlet`]: a planned [`Query`] as a streamlet, with an inlet per input table and
//! one outlet, [`OUTLET`].

use std::sync::Arc;

use std::collections::HashMap;

use bytes::Bytes;
use runnel_blueprint::descriptor::Delivery;
use runnel_streamlet::watermark::Watermarks;
use runnel_streamlet::{
    AvroDatum, Context, InletStream, Message, Result, Shape, Streamlet, avro_schema_descriptor,
};

mod stateful;

use crate::{Processed, Query, Table};

/// The name of a SQL streamlet's outlet.
pub const OUTLET: &str = "out";

/// How many records a SQL streamlet takes into one batch at most: as many as the log has
/// handed over, up to this.
const BATCH: usize = 1024;

/// A query run as a streamlet: an inlet per input table, named as the table, reading its
/// records encoded; one outlet, [`OUTLET`], writing the results with the query's output
/// schema. Records are processed in batches of what the inlet has ready
/// ([`InletStream::next_ready`]); each result is
/// sent derived from its input (keeping its headers), and each input is committed once its
/// result is sent. A record that does not decode, or on which the query fails, goes to the
/// dead-letter topic with the reason, as any bad record does.
///
/// ```
/// use std::sync::Arc;
/// use runnel_sql::{Column, ColumnType, Query, SqlStreamlet, Table};
/// use runnel_streamlet::Streamlet;
/// let bids = Table::new("bids", vec![Column::new("price", ColumnType::Long)]);
/// let query = Query::plan("SELECT price * 2 AS doubled FROM bids", &[bids], "Doubled").unwrap();
/// let shape = SqlStreamlet::new(Arc::new(query)).shape();
/// assert_eq!(shape.inlet_names().collect::<Vec<_>>(), ["bids"]);
/// assert_eq!(shape.outlet_schema("out").unwrap().name, "Doubled");
/// ```
#[derive(Clone, Debug)]
pub struct SqlStreamlet {
    query: Arc<Query>,
    delivery: Delivery,
    watermarks: Watermarks,
}

impl SqlStreamlet {
    /// The streamlet running `query`, at-least-once.
    pub fn new(query: Arc<Query>) -> Self {
        SqlStreamlet {
            query,
            delivery: Delivery::AtLeastOnce,
            watermarks: Watermarks::default(),
        }
    }

    /// How the watermarks of a query's group windows follow event time (default: up to 5 s out of
    /// order, a partition idle after a minute without records); a window fires once the
    /// watermark passes its end. A query of several inlets reads them within the strategy's
    /// [drift](Watermarks::max_drift) of each other (default 10 s of event time).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use runnel_sql::{Column, ColumnType, Query, SqlStreamlet, Table};
    /// use runnel_streamlet::watermark::Watermarks;
    /// # let bids = Table::new("bids", vec![Column::new("time", ColumnType::Long)]);
    /// # let query = Arc::new(Query::plan("SELECT COUNT(*) AS bids FROM bids GROUP BY TUMBLE(time, INTERVAL '1' MINUTE)", &[bids], "Count").unwrap());
    /// let streamlet = SqlStreamlet::new(query).watermarks(Watermarks::bounded(Duration::from_secs(1)));
    /// ```
    pub fn watermarks(mut self, watermarks: Watermarks) -> Self {
        self.watermarks = watermarks;
        self
    }

    /// Runs with `delivery` instead: exactly-once commits each batch's results and input
    /// offsets in one transaction, at-most-once commits inputs without waiting for results.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use runnel_sql::{Column, ColumnType, Query, SqlStreamlet, Table};
    /// use runnel_streamlet::Streamlet;
    /// use runnel_blueprint::descriptor::Delivery;
    /// # let bids = Table::new("bids", vec![Column::new("price", ColumnType::Long)]);
    /// # let query = Arc::new(Query::plan("SELECT price FROM bids", &[bids], "Price").unwrap());
    /// let streamlet = SqlStreamlet::new(query).delivery(Delivery::ExactlyOnce);
    /// assert_eq!(streamlet.shape().descriptor("sql:q").delivery, Delivery::ExactlyOnce);
    /// ```
    pub fn delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }
}

/// The tables of the other schemas records of the input were written with, by fingerprint
/// (or why such a schema cannot be read).
type Writers = HashMap<Bytes, Result<Table, String>>;

/// `run` over the records of one batch: those of the table's own schema together, those
/// of each other writer's schema together, with that writer's table (for resolving them to
/// the table's), each group with the records' indices in `batch`. Results and rejections
/// come back by index in `batch`.
fn by_writer<T>(
    table: &str,
    batch: &[Message<AvroDatum>],
    inlet: &InletStream<AvroDatum>,
    writers: &mut Writers,
    mut run: impl FnMut(Option<&Table>, &[&[u8]], &[usize]) -> Processed<T>,
) -> Processed<T> {
    if batch.iter().all(|message| message.value().writer.is_none()) {
        let records: Vec<&[u8]> = batch.iter().map(|m| m.value().bytes.as_ref()).collect();
        let indices: Vec<usize> = (0..batch.len()).collect();
        return run(None, &records, &indices);
    }
    let mut groups: HashMap<Option<&Bytes>, Vec<usize>> = HashMap::new();
    for (index, message) in batch.iter().enumerate() {
        groups
            .entry(message.value().writer.as_ref())
            .or_default()
            .push(index);
    }
    let mut processed = Processed::default();
    for (writer, indices) in groups {
        let records: Vec<&[u8]> = indices
            .iter()
            .map(|index| batch[*index].value().bytes.as_ref())
            .collect();
        let group = match writer {
            None => run(None, &records, &indices),
            Some(fingerprint) => {
                let written_with = writers.entry(fingerprint.clone()).or_insert_with(|| {
                    let definition = inlet.writer_schema(fingerprint).ok_or_else(|| {
                        format!(
                            "written with schema {}, which the inlet does not know",
                            String::from_utf8_lossy(fingerprint)
                        )
                    })?;
                    Table::from_avro(table, &definition).map_err(|error| error.to_string())
                });
                match written_with {
                    Ok(writer) => run(Some(writer), &records, &indices),
                    Err(reason) => Processed::all_rejected(records.len(), reason),
                }
            }
        };
        processed.results.extend(
            group
                .results
                .into_iter()
                .map(|(at, result)| (indices[at], result)),
        );
        processed.rejected.extend(
            group
                .rejected
                .into_iter()
                .map(|(at, error)| (indices[at], error)),
        );
    }
    processed.results.sort_by_key(|(index, _)| *index);
    processed.rejected.sort_by_key(|(index, _)| *index);
    processed
}

/// Takes the next batch from `inlet`: the next message, waiting for it, then as many as
/// are ready, up to [`BATCH`]. False when the input ended.
async fn next_batch(
    inlet: &mut InletStream<AvroDatum>,
    batch: &mut Vec<Message<AvroDatum>>,
) -> Result<bool> {
    let Some(first) = inlet.next().await? else {
        return Ok(false);
    };
    batch.push(first);
    fill_batch(inlet, batch).await?;
    Ok(true)
}

/// Adds to `batch` the messages `inlet` has ready, up to [`BATCH`].
async fn fill_batch(
    inlet: &mut InletStream<AvroDatum>,
    batch: &mut Vec<Message<AvroDatum>>,
) -> Result<()> {
    while batch.len() < BATCH {
        match inlet.next_ready().await? {
            Some(message) => batch.push(message),
            None => break,
        }
    }
    Ok(())
}

impl Streamlet for SqlStreamlet {
    fn shape(&self) -> Shape {
        let schema = |definition| {
            avro_schema_descriptor(definition).expect("tables and outputs have Avro schemas")
        };
        let shape = self
            .query
            .inputs()
            .iter()
            .fold(Shape::new().describe("runs a SQL query"), |shape, table| {
                shape.datum_inlet(table.name(), schema(table.avro_schema()))
            });
        let shape = shape.datum_outlet(OUTLET, schema(self.query.output_schema()));
        let shape = if self.query.is_stateful() {
            shape.checkpointed_with_changelog()
        } else {
            shape
        };
        match self.delivery {
            Delivery::AtLeastOnce => shape,
            Delivery::ExactlyOnce => shape.exactly_once(),
            Delivery::AtMostOnce => shape.at_most_once(),
        }
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        if self.query.is_stateful() {
            return stateful::run(&self.query, self.watermarks, ctx).await;
        }
        let table = self.query.inputs()[0].name().to_owned();
        let mut inlet = ctx.datum_inlet(&table);
        let out = ctx.datum_outlet(OUTLET);
        let mut batch: Vec<Message<AvroDatum>> = Vec::with_capacity(BATCH);
        let mut writers = Writers::default();
        while next_batch(&mut inlet, &mut batch).await? {
            let processed = by_writer(
                &table,
                &batch,
                &inlet,
                &mut writers,
                |writer, records, _| self.query.process_written(&table, writer, records),
            );
            let mut results = processed.results.into_iter().peekable();
            let mut rejected = processed.rejected.into_iter().peekable();
            for (index, message) in batch.drain(..).enumerate() {
                let rejection = rejected.next_if(|(at, _)| *at == index);
                let mut own = Vec::new();
                while let Some((_, bytes)) = results.next_if(|(at, _)| *at == index) {
                    own.push(bytes);
                }
                if let Some((_, error)) = rejection {
                    message.reject(error).await?;
                } else {
                    let (_, token) = message.into_parts();
                    for bytes in own {
                        out.send_derived(&AvroDatum::new(bytes), &token).await?;
                    }
                    token.commit();
                }
            }
        }
        Ok(())
    }
}
