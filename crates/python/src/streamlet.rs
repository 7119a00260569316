//! [`PythonStreamlet`]: a streamlet written in Python, run by the host as any other: the
//! host reads the inlets, hands the records to the Python process in batches, sends what it
//! emits, dead-letters what it fails on, and commits (and checkpoints its state) as the
//! streamlet's delivery guarantee says.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use runnel_blueprint::descriptor::{Delivery, StateScope, StreamletDescriptor};
use runnel_streamlet::{
    AvroDatum, Checkpoints, Context, Error, InletStream, Message, Outgoing, OutletSender, Result,
    Shape, Streamlet,
};
use tokio::time::Instant;

use crate::command::PythonCommand;
use crate::error::PythonError;
use crate::frame::{InputRecord, OWN_SCHEMA, Outcome, TableOutput};
use crate::worker::Worker;

/// The most records handed over in one batch.
const BATCH: usize = 1024;

/// How often a stateful Python streamlet's state is checkpointed while records come.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// A streamlet written in Python (docs/python.md), by its command and descriptor entry.
///
/// ```no_run
/// # async fn demo() -> Result<(), runnel_python::PythonError> {
/// use runnel_python::{PythonCommand, PythonStreamlet};
/// let streamlet = PythonStreamlet::describe(PythonCommand::new("scoring:score")).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct PythonStreamlet {
    command: PythonCommand,
    descriptor: StreamletDescriptor,
    delivery: Delivery,
}

impl PythonStreamlet {
    /// The streamlet `command` runs, with the ports, parameters and state `descriptor`
    /// gives (as [`describe`](crate::describe) returns it), delivered at least once.
    pub fn new(command: PythonCommand, descriptor: StreamletDescriptor) -> Self {
        PythonStreamlet {
            command,
            descriptor,
            delivery: Delivery::AtLeastOnce,
        }
    }

    /// The streamlet `command` runs, described by itself.
    ///
    /// # Errors
    ///
    /// As [`describe`](crate::describe).
    pub async fn describe(command: PythonCommand) -> Result<Self, PythonError> {
        let descriptor = crate::describe(&command).await?;
        Ok(PythonStreamlet::new(command, descriptor))
    }

    /// Delivers with `delivery` (exactly once: outputs, state and input offsets commit
    /// together).
    pub fn delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// The descriptor entry it runs with.
    pub fn descriptor(&self) -> &StreamletDescriptor {
        &self.descriptor
    }

    fn is_stateful(&self) -> bool {
        self.descriptor.state == StateScope::Instance
    }

    /// The conversions of the arrow form, for a streamlet that takes pyarrow tables.
    #[cfg(feature = "arrow")]
    fn arrow_form(&self) -> Result<ArrowForm> {
        let failed = |port: &str, error: crate::arrow::ArrowError| {
            Error::msg(format!(
                "Python streamlet '{}' takes pyarrow tables, and port '{port}' has no Arrow form: {error}",
                self.command.reference()
            ))
        };
        let inlets = self
            .descriptor
            .inlets
            .iter()
            .map(|inlet| {
                crate::arrow::ArrowInlet::new(&inlet.schema.definition)
                    .map(|form| (form, crate::arrow::WriterSchemas::default()))
                    .map_err(|error| failed(&inlet.name, error))
            })
            .collect::<Result<_>>()?;
        let outlets = self
            .descriptor
            .outlets
            .iter()
            .map(|outlet| {
                crate::arrow::ArrowOutlet::new(&outlet.schema.definition)
                    .map_err(|error| failed(&outlet.name, error))
            })
            .collect::<Result<_>>()?;
        Ok(ArrowForm { inlets, outlets })
    }

    /// Without Arrow, a streamlet that takes pyarrow tables cannot run.
    #[cfg(not(feature = "arrow"))]
    fn arrow_form(&self) -> Result<ArrowForm> {
        Err(Error::msg(format!(
            "Python streamlet '{}' takes pyarrow tables, and this host was built without Arrow: enable the `python-arrow` feature of the runnel crate",
            self.command.reference()
        )))
    }

    /// Checks that the process's own descriptor has the ports this one was built with.
    fn check_ready(&self, ready: &serde_json::Value) -> Result<()> {
        let names = |ports: &serde_json::Value| -> Vec<String> {
            ports
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|port| port["name"].as_str().map(str::to_owned))
                .collect()
        };
        let expected_inlets: Vec<String> = self
            .descriptor
            .inlets
            .iter()
            .map(|p| p.name.clone())
            .collect();
        let expected_outlets: Vec<String> = self
            .descriptor
            .outlets
            .iter()
            .map(|p| p.name.clone())
            .collect();
        let (inlets, outlets) = (names(&ready["inlets"]), names(&ready["outlets"]));
        if inlets != expected_inlets || outlets != expected_outlets {
            return Err(Error::msg(format!(
                "Python streamlet '{}' now has inlets {inlets:?} and outlets {outlets:?}, but was described with inlets {expected_inlets:?} and outlets {expected_outlets:?}: describe it again (verify the blueprint)",
                self.command.reference()
            )));
        }
        Ok(())
    }
}

impl Streamlet for PythonStreamlet {
    fn shape(&self) -> Shape {
        let descriptor = &self.descriptor;
        let mut shape = Shape::new().describe("runs a Python streamlet");
        for inlet in &descriptor.inlets {
            shape = shape.datum_inlet(&inlet.name, inlet.schema.clone());
        }
        for outlet in &descriptor.outlets {
            shape = shape.datum_outlet(&outlet.name, outlet.schema.clone());
        }
        for parameter in &descriptor.parameters {
            shape = shape.parameter_descriptor(parameter.clone());
        }
        if self.is_stateful() {
            shape = shape.checkpointed();
        }
        match self.delivery {
            Delivery::AtLeastOnce => shape,
            Delivery::ExactlyOnce => shape.exactly_once(),
            Delivery::AtMostOnce => shape.at_most_once(),
        }
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let parameters: BTreeMap<String, String> = self
            .descriptor
            .parameters
            .iter()
            .filter_map(|parameter| {
                let value = ctx.parameter_value(&parameter.key)?;
                Some((parameter.key.clone(), value.to_string()))
            })
            .collect();
        let (mut worker, ready) = Worker::start(&self.command, ctx.instance(), &parameters)
            .await
            .map_err(Error::external)?;
        self.check_ready(&ready)?;
        let arrow = match ready["form"].as_str() {
            Some("arrow") => Some(self.arrow_form()?),
            _ => None,
        };
        let checkpoints = if self.is_stateful() {
            ctx.checkpoints()
        } else {
            None
        };
        if let Some(state) = checkpoints.as_ref().and_then(Checkpoints::restored) {
            worker.restore(state).await.map_err(Error::external)?;
        }
        let mut inlets: Vec<InletStream<AvroDatum>> = self
            .descriptor
            .inlets
            .iter()
            .map(|inlet| ctx.datum_inlet(&inlet.name))
            .collect();
        let outlets: Vec<OutletSender<AvroDatum>> = self
            .descriptor
            .outlets
            .iter()
            .map(|outlet| ctx.datum_outlet(&outlet.name))
            .collect();
        let mut host = Host {
            streamlet: self.command.reference().to_owned(),
            worker,
            arrow,
            outlet_names: self
                .descriptor
                .outlets
                .iter()
                .map(|outlet| outlet.name.clone())
                .collect(),
            outlets,
            writers: vec![HashMap::new(); inlets.len()],
            checkpoints,
            next_save: None,
        };
        let mut first = 0;
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            let next = tokio::select! {
                next = next_message(&mut inlets, first) => next?,
                () = save_due(host.next_save) => {
                    host.save().await?;
                    continue;
                }
            };
            let Some((inlet, message)) = next else { break };
            first = (inlet + 1) % inlets.len();
            batch.push(message);
            while batch.len() < BATCH {
                match inlets[inlet].next_ready().await? {
                    Some(message) => batch.push(message),
                    None => break,
                }
            }
            let now = ctx.clock().now_millis();
            host.process(&inlets[inlet], inlet, now, &mut batch).await?;
        }
        if host.next_save.is_some() {
            host.save().await?;
        }
        host.worker.quit().await.map_err(Error::external)
    }
}

/// The next message of any inlet, trying them from `first` on so none starves; `None` once
/// every inlet ended.
async fn next_message(
    inlets: &mut [InletStream<AvroDatum>],
    first: usize,
) -> Result<Option<(usize, Message<AvroDatum>)>> {
    let count = inlets.len();
    let mut open: Vec<usize> = (0..count).map(|at| (first + at) % count).collect();
    while !open.is_empty() {
        // An inlet with a message at hand goes first, without setting up a wait on all.
        for &index in &open {
            if let Some(ready) = inlets[index].next_ready().now_or_never()
                && let Some(message) = ready?
            {
                return Ok(Some((index, message)));
            }
        }
        let waits = inlets
            .iter_mut()
            .enumerate()
            .filter(|(index, _)| open.contains(index))
            .map(|(index, inlet)| Box::pin(async move { (index, inlet.next().await) }));
        let ((index, next), _, _) = futures::future::select_all(waits).await;
        match next? {
            Some(message) => return Ok(Some((index, message))),
            None => open.retain(|open| *open != index),
        }
    }
    Ok(None)
}

/// Waits until a save is due; never without one.
async fn save_due(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The arrow form's conversions: per inlet, its records into Arrow (and the schemas its
/// writers used); per outlet, tables back into its records.
#[cfg(feature = "arrow")]
struct ArrowForm {
    inlets: Vec<(crate::arrow::ArrowInlet, crate::arrow::WriterSchemas)>,
    outlets: Vec<crate::arrow::ArrowOutlet>,
}

/// Without the `arrow` feature there is no arrow form, and no value of this type.
#[cfg(not(feature = "arrow"))]
type ArrowForm = std::convert::Infallible;

/// The host's side of a running Python streamlet.
struct Host {
    /// The streamlet reference, for errors.
    streamlet: String,
    worker: Worker,
    /// The streamlet's arrow form, when it takes pyarrow tables.
    arrow: Option<ArrowForm>,
    outlets: Vec<OutletSender<AvroDatum>>,
    /// The outlets' names, for errors.
    outlet_names: Vec<String>,
    /// Per inlet, the writer id the process knows each writer schema by.
    writers: Vec<HashMap<Bytes, u16>>,
    checkpoints: Option<Checkpoints>,
    /// When the state changed since the last save: when the next save is due.
    next_save: Option<Instant>,
}

impl Host {
    /// Hands `batch` (of inlet `inlet`) to the process, sends what it emitted, rejects what
    /// it failed on, and commits the rest.
    async fn process(
        &mut self,
        stream: &InletStream<AvroDatum>,
        inlet: usize,
        now: i64,
        batch: &mut Vec<Message<AvroDatum>>,
    ) -> Result<()> {
        let inlet_index = u16::try_from(inlet).expect("fewer than 65,536 inlets");
        // Records that cannot be read (written with a schema the inlet does not know; in
        // the arrow form, not decoding) are rejected without reaching Python.
        let mut refused: HashMap<usize, String> = HashMap::new();
        let mut records = Vec::with_capacity(batch.len());
        let mut handed = Vec::with_capacity(batch.len());
        for (index, message) in batch.iter().enumerate() {
            let writer = match &message.value().writer {
                None => OWN_SCHEMA,
                Some(fingerprint) => match self.writer_id(stream, inlet_index, fingerprint) {
                    Some(writer) => writer,
                    None => {
                        refused.insert(
                            index,
                            format!(
                                "it was written with schema {}, which the inlet does not know",
                                String::from_utf8_lossy(fingerprint)
                            ),
                        );
                        continue;
                    }
                },
            };
            records.push(InputRecord {
                partition: message.partition(),
                offset: message.offset(),
                key: message.key(),
                writer,
                datum: &message.value().bytes,
            });
            handed.push(index);
        }
        let outcomes = if records.is_empty() {
            Vec::new()
        } else if self.arrow.is_some() {
            self.arrow_batch(
                stream,
                inlet,
                now,
                batch,
                &mut records,
                &mut handed,
                &mut refused,
            )
            .await?
        } else {
            self.worker
                .batch(inlet_index, now, &records)
                .await
                .map_err(Error::external)?
        };
        drop(records);
        let mut outcomes = handed.into_iter().zip(outcomes);
        let mut next = outcomes.next();
        for (index, message) in batch.drain(..).enumerate() {
            if let Some(reason) = refused.remove(&index) {
                message.reject(reason).await?;
                continue;
            }
            let (handed, outcome) = next.take().expect("an outcome per record handed over");
            debug_assert_eq!(handed, index);
            next = outcomes.next();
            let outputs = match outcome {
                Outcome::Failed(error) => {
                    message.reject(error).await?;
                    continue;
                }
                Outcome::Done(outputs) => outputs
                    .into_iter()
                    .map(|output| (output.outlet, output.key, output.datum))
                    .collect(),
                Outcome::Tables(tables) => match self.rows(tables) {
                    Ok(rows) => rows,
                    Err(error) => {
                        message.reject(error).await?;
                        continue;
                    }
                },
            };
            let (_, token) = message.into_parts();
            for (outlet, key, datum) in outputs {
                let Some(sender) = self.outlets.get(usize::from(outlet)) else {
                    return Err(Error::external(PythonError::Protocol {
                        streamlet: self.streamlet.clone(),
                        reason: format!("it emitted on outlet {outlet}, which it does not have"),
                    }));
                };
                let datum = AvroDatum::new(datum);
                let mut outgoing = Outgoing::new(&datum)
                    .timestamp(token.timestamp())
                    .input_headers(token.headers());
                if let Some(key) = key {
                    outgoing = outgoing.key(key);
                }
                sender.send_record(outgoing).await?;
            }
            token.commit();
        }
        if self.checkpoints.is_some() {
            self.next_save
                .get_or_insert_with(|| Instant::now() + CHECKPOINT_EVERY);
        }
        Ok(())
    }

    /// The arrow form: decodes `records` (of `batch`, at `handed`) into an Arrow IPC
    /// stream and hands that over. Records that do not decode move to `refused`, out of
    /// `records` and `handed`.
    #[cfg(feature = "arrow")]
    #[allow(clippy::too_many_arguments)] // the batch's parts, as `process` keeps them
    async fn arrow_batch(
        &mut self,
        stream: &InletStream<AvroDatum>,
        inlet: usize,
        now: i64,
        batch: &[Message<AvroDatum>],
        records: &mut Vec<InputRecord<'_>>,
        handed: &mut Vec<usize>,
        refused: &mut HashMap<usize, String>,
    ) -> Result<Vec<Outcome>> {
        let form = self.arrow.as_mut().expect("the arrow form");
        let (arrow_inlet, writers) = &mut form.inlets[inlet];
        let mut values = Vec::with_capacity(records.len());
        let mut kept = Vec::with_capacity(records.len());
        for (record, index) in records.iter().zip(handed.iter()) {
            let message = &batch[*index];
            let writer = match &message.value().writer {
                None => None,
                Some(fingerprint) => writers
                    .get_or_parse(fingerprint, || stream.writer_schema(fingerprint))
                    .map_err(Error::external)?,
            };
            let reader = arrow_inlet.avro();
            let decoded = match writer {
                None => apache_avro::from_avro_datum(reader, &mut &*record.datum, None),
                Some(writer) => {
                    apache_avro::from_avro_datum(writer, &mut &*record.datum, Some(reader))
                }
            };
            match decoded {
                Ok(value) => {
                    values.push(value);
                    kept.push(true);
                }
                Err(error) => {
                    refused.insert(*index, format!("it does not decode: {error}"));
                    kept.push(false);
                }
            }
        }
        let mut keep = kept.iter();
        records.retain(|_| *keep.next().expect("a flag per record"));
        let mut keep = kept.iter();
        handed.retain(|_| *keep.next().expect("a flag per record"));
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let arrow_stream = arrow_inlet.stream(&values).map_err(Error::external)?;
        let inlet_index = u16::try_from(inlet).expect("fewer than 65,536 inlets");
        self.worker
            .arrow_batch(inlet_index, now, records, &arrow_stream)
            .await
            .map_err(Error::external)
    }

    #[cfg(not(feature = "arrow"))]
    #[allow(clippy::too_many_arguments, clippy::unused_async)] // as with the feature
    async fn arrow_batch(
        &mut self,
        _stream: &InletStream<AvroDatum>,
        _inlet: usize,
        _now: i64,
        _batch: &[Message<AvroDatum>],
        _records: &mut Vec<InputRecord<'_>>,
        _handed: &mut Vec<usize>,
        _refused: &mut HashMap<usize, String>,
    ) -> Result<Vec<Outcome>> {
        match *self.arrow.as_ref().expect("the arrow form") {}
    }

    /// The records of the tables an arrow-form streamlet emitted, each with its outlet and
    /// key; or why they do not encode (the input they answer is rejected with it).
    fn rows(
        &self,
        tables: Vec<TableOutput>,
    ) -> std::result::Result<Vec<(u16, Option<Bytes>, Bytes)>, String> {
        #[cfg(feature = "arrow")]
        if let Some(form) = &self.arrow {
            let mut rows = Vec::new();
            for table in tables {
                let outlet = form.outlets.get(usize::from(table.outlet)).ok_or_else(|| {
                    format!(
                        "it emitted a table on outlet {}, which it does not have",
                        table.outlet
                    )
                })?;
                let encoded = outlet
                    .rows(&table.stream, table.key_column.as_deref())
                    .map_err(|error| {
                        format!(
                            "the table it emitted on outlet '{}' does not encode: {error}",
                            self.outlet_name(table.outlet)
                        )
                    })?;
                rows.extend(
                    encoded
                        .into_iter()
                        .map(|(key, datum)| (table.outlet, key, datum)),
                );
            }
            return Ok(rows);
        }
        drop(tables);
        Err("it answered with Arrow tables, and it is not of the arrow form".to_owned())
    }

    /// The name of outlet `outlet`, or its number if it has none.
    #[cfg_attr(not(feature = "arrow"), allow(dead_code))]
    fn outlet_name(&self, outlet: u16) -> String {
        self.outlet_names
            .get(usize::from(outlet))
            .cloned()
            .unwrap_or_else(|| outlet.to_string())
    }

    /// The id the process knows writer schema `fingerprint` of `inlet` by, telling it the
    /// schema the first time; `None` when the inlet does not know the schema.
    fn writer_id(
        &mut self,
        stream: &InletStream<AvroDatum>,
        inlet: u16,
        fingerprint: &Bytes,
    ) -> Option<u16> {
        let known = &mut self.writers[usize::from(inlet)];
        if let Some(id) = known.get(fingerprint) {
            return Some(*id);
        }
        let schema = stream.writer_schema(fingerprint)?;
        let id = u16::try_from(known.len())
            .ok()
            .filter(|id| *id != OWN_SCHEMA)?;
        self.worker.schema(inlet, id, &schema);
        known.insert(fingerprint.clone(), id);
        Some(id)
    }

    /// Checkpoints the process's state with the offsets of every input committed so far.
    async fn save(&mut self) -> Result<()> {
        self.next_save = None;
        if let Some(checkpoints) = &self.checkpoints {
            let state = self.worker.checkpoint().await.map_err(Error::external)?;
            checkpoints.save(state);
        }
        Ok(())
    }
}
