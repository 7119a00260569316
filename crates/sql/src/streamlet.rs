//! [`SqlStreamlet`]: a planned [`Query`] as a streamlet, with an inlet per input table and
//! one outlet, [`OUTLET`].

use std::sync::Arc;

use runnel_streamlet::{
    AvroDatum, Context, Message, Result, Shape, Streamlet, avro_schema_descriptor,
};

use crate::Query;

/// The name of a SQL streamlet's outlet.
pub const OUTLET: &str = "out";

/// How many records a SQL streamlet takes into one batch at most: as many as the log has
/// handed over, up to this.
const BATCH: usize = 1024;

/// A query run as a streamlet: an inlet per input table, named as the table, reading its
/// records encoded; one outlet, [`OUTLET`], writing the results with the query's output
/// schema. Records are processed in batches of what the inlet has ready; each result is
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
}

impl SqlStreamlet {
    /// The streamlet running `query`.
    pub fn new(query: Arc<Query>) -> Self {
        SqlStreamlet { query }
    }
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
        shape.datum_outlet(OUTLET, schema(self.query.output_schema()))
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let table = self.query.inputs()[0].name().to_owned();
        let mut inlet = ctx.datum_inlet(&table);
        let out = ctx.datum_outlet(OUTLET);
        let mut batch: Vec<Message<AvroDatum>> = Vec::with_capacity(BATCH);
        while let Some(first) = inlet.next().await? {
            batch.push(first);
            while batch.len() < BATCH && inlet.ready() > 0 {
                match inlet.next().await? {
                    Some(message) => batch.push(message),
                    None => break,
                }
            }
            let records: Vec<&[u8]> = batch
                .iter()
                .map(|message| message.value().bytes.as_ref())
                .collect();
            let processed = self.query.process(&table, &records);
            let mut results = processed.results.into_iter().peekable();
            let mut rejected = processed.rejected.into_iter().peekable();
            for (index, message) in batch.drain(..).enumerate() {
                let rejection = rejected.next_if(|(at, _)| *at == index);
                let mut own = Vec::new();
                while let Some((_, bytes)) = results.next_if(|(at, _)| *at == index) {
                    own.push(bytes);
                }
                if let Some(writer) = &message.value().writer {
                    let reason = format!(
                        "written with schema {}, not the schema of table '{table}'; SQL streamlets read records of their input's current schema only",
                        String::from_utf8_lossy(writer)
                    );
                    message.reject(reason).await?;
                } else if let Some((_, error)) = rejection {
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
