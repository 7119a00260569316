//! [`Context`]: what a running streamlet gets from the runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use runnel_blueprint::parameter::ParameterValue;
use tokio_util::sync::CancellationToken;

use crate::checkpoint::Checkpoints;
use crate::clock::Clock;
use crate::inlet::InletParts;
use crate::outlet::OutletParts;
use crate::parameter::ParameterType;
use crate::port::{Direction, PortSpec};
use crate::watermark::ScriptedWatermarks;
use crate::{Data, Inlet, InletStream, InstanceMetrics, Outlet, OutletSender, Parameter, Shape};
use runnel_codec::AvroDatum;

/// The running streamlet's access to its ports, parameters, clock and shutdown signal.
///
/// Ports and parameters must be the ones declared in the streamlet's [`Shape`]; asking for
/// anything else is a bug and panics, which the test kit shows on the first run.
#[derive(Debug)]
pub struct Context {
    instance: Arc<str>,
    shape: Shape,
    inlets: HashMap<&'static str, InletParts>,
    outlets: HashMap<&'static str, OutletParts>,
    parameters: HashMap<String, ParameterValue>,
    clock: Arc<dyn Clock>,
    shutdown: CancellationToken,
    metrics: Arc<InstanceMetrics>,
    scripted_watermarks: Option<ScriptedWatermarks>,
    checkpoints: Option<Checkpoints>,
    readiness: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl Context {
    pub(crate) fn new(
        instance: Arc<str>,
        shape: Shape,
        inlets: HashMap<&'static str, InletParts>,
        outlets: HashMap<&'static str, OutletParts>,
        parameters: HashMap<String, ParameterValue>,
        clock: Arc<dyn Clock>,
        shutdown: CancellationToken,
    ) -> Self {
        Context {
            instance,
            shape,
            inlets,
            outlets,
            parameters,
            clock,
            shutdown,
            metrics: Arc::default(),
            scripted_watermarks: None,
            checkpoints: None,
            readiness: Mutex::new(None),
        }
    }

    /// Hands a streamlet that reports its own readiness the signal to report it with.
    pub(crate) fn with_readiness(self, ready: Option<tokio::sync::oneshot::Sender<()>>) -> Self {
        *self
            .readiness
            .lock()
            .unwrap_or_else(|poison| poison.into_inner()) = ready;
        self
    }

    /// Gives a checkpointed streamlet its checkpoints.
    pub(crate) fn with_checkpoints(mut self, checkpoints: Option<Checkpoints>) -> Self {
        self.checkpoints = checkpoints;
        self
    }

    /// Counts into `metrics` what the streamlet reports through the context.
    pub(crate) fn with_metrics(mut self, metrics: Arc<InstanceMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Hands the streamlet watermarks set from outside.
    pub(crate) fn with_scripted_watermarks(
        mut self,
        watermarks: Option<ScriptedWatermarks>,
    ) -> Self {
        self.scripted_watermarks = watermarks;
        self
    }

    /// The instance name from the blueprint.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Takes the stream of an inlet. Each inlet can be taken once.
    ///
    /// # Panics
    ///
    /// If the inlet is not in the shape, has another type there, or was already taken.
    pub fn inlet<T: Data>(&mut self, inlet: Inlet<T>) -> InletStream<T> {
        let port = self.shape.expect_port::<T>(Direction::Inlet, inlet.name());
        let format = port.format;
        let parts = self.inlets.remove(inlet.name()).unwrap_or_else(|| {
            panic!(
                "inlet '{}' was already taken from the context",
                inlet.name()
            )
        });
        InletStream::new(parts, format, None)
    }

    /// Takes the stream of an inlet declared with [`Shape::datum_inlet`]: its records
    /// still encoded, each naming the schema it was written with when that is not the
    /// inlet's own. Each inlet can be taken once.
    ///
    /// # Panics
    ///
    /// If the shape has no such inlet of datums, or it was already taken.
    pub fn datum_inlet(&mut self, name: &str) -> InletStream<AvroDatum> {
        let port = self.shape.expect_port::<AvroDatum>(Direction::Inlet, name);
        let (format, schema) = (port.format, port.given_schema().cloned());
        let parts = self
            .inlets
            .remove(name)
            .unwrap_or_else(|| panic!("inlet '{name}' was already taken from the context"));
        InletStream::new(parts, format, schema.as_ref())
    }

    /// A sender for an outlet declared with [`Shape::datum_outlet`], taking values encoded
    /// with its schema.
    ///
    /// # Panics
    ///
    /// If the shape has no such outlet of datums.
    pub fn datum_outlet(&self, name: &str) -> OutletSender<AvroDatum> {
        let port = self.shape.expect_port::<AvroDatum>(Direction::Outlet, name);
        let schema = port.given_schema().cloned();
        self.outlet_sender(port, None, true, schema.as_ref())
    }

    /// A sender for an outlet. May be called several times; the senders share one topic.
    ///
    /// # Panics
    ///
    /// If the outlet is not in the shape or has another type there.
    pub fn outlet<T: Data>(&self, outlet: Outlet<T>) -> OutletSender<T> {
        let port = self
            .shape
            .expect_port::<T>(Direction::Outlet, outlet.name());
        self.outlet_sender(
            port,
            outlet.key_function(),
            outlet.forwards_input_headers(),
            None,
        )
    }

    fn outlet_sender<T: Data>(
        &self,
        port: &PortSpec,
        key: Option<crate::port::KeyFunction<T>>,
        forward_headers: bool,
        schema: Option<&serde_json::Value>,
    ) -> OutletSender<T> {
        let parts = &self.outlets[port.name];
        let parts = OutletParts {
            port: parts.port,
            topic: parts.topic.clone(),
            partitions: parts.partitions,
            producer: parts.producer.clone(),
            acknowledgements: parts.acknowledgements.clone(),
            clock: parts.clock.clone(),
            metrics: parts.metrics.clone(),
            tag_schema: parts.tag_schema,
            registry_id: parts.registry_id,
        };
        OutletSender::new(parts, port.format, key, forward_headers, schema)
    }

    /// The checked value of a parameter.
    ///
    /// # Panics
    ///
    /// If the parameter is not in the shape.
    pub fn parameter<T: ParameterType>(&self, parameter: Parameter<T>) -> T {
        let value = self.parameters.get(parameter.key()).unwrap_or_else(|| {
            panic!(
                "the streamlet asked for parameter '{}', which is not in its shape()",
                parameter.key()
            )
        });
        T::from_value(value).unwrap_or_else(|| {
            panic!(
                "parameter '{}' was read with another type than declared",
                parameter.key()
            )
        })
    }

    /// The checked value of parameter `key`, for a streamlet whose parameters are known
    /// only at run time ([`Shape::parameter_descriptor`]); its text in the parameter's
    /// syntax is its `to_string()`. `None` when the shape declares no such parameter.
    pub fn parameter_value(&self, key: &str) -> Option<&ParameterValue> {
        self.parameters.get(key)
    }

    /// The processing-time clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The checkpoints of a streamlet whose shape is
    /// [`checkpointed`](crate::Shape::checkpointed): the state it resumes from and how to
    /// save more. `None` for other streamlets.
    pub fn checkpoints(&self) -> Option<Checkpoints> {
        self.checkpoints.clone()
    }

    /// The keyed state of a streamlet whose shape says
    /// [`keyed_state`](crate::Shape::keyed_state); read the inlet through it (see
    /// [`KeyedState`](crate::state::KeyedState)).
    ///
    /// # Errors
    ///
    /// When the shape does not declare keyed state, or does not have exactly one inlet.
    pub fn keyed_state(&self) -> crate::Result<crate::state::KeyedState> {
        let instance = &self.instance;
        if !self.shape.has_keyed_state() {
            return Err(crate::Error::msg(format!(
                "streamlet '{instance}' asks for keyed state, but its shape does not declare it: add `.keyed_state()` to its Shape"
            )));
        }
        let inlets = self.shape.ports_in(Direction::Inlet).count();
        if inlets != 1 {
            return Err(crate::Error::msg(format!(
                "streamlet '{instance}' keeps keyed state, which reads exactly one inlet, but its shape has {inlets}"
            )));
        }
        let checkpoints = self.checkpoints.clone().ok_or_else(|| {
            crate::Error::msg(format!(
                "streamlet '{instance}' keeps keyed state, but the runtime gave it no checkpoints"
            ))
        })?;
        Ok(crate::state::KeyedState::new(
            checkpoints,
            self.clock.clone(),
            self.shutdown.clone(),
            self.metrics.clone(),
            self.scripted_watermarks.clone(),
        ))
    }

    /// Where queries of the instance's keyed state come from, and its size goes.
    pub(crate) fn state_queries(&self) -> &crate::state::StateQueries {
        self.metrics.state_queries()
    }

    /// Watermarks set from outside the streamlet, when a test scripts them: a streamlet that
    /// tracks event time follows these instead of generating its own. `None` in production.
    pub fn scripted_watermarks(&self) -> Option<ScriptedWatermarks> {
        self.scripted_watermarks.clone()
    }

    /// Counts records that arrived too late for their windows (the instance's `late`
    /// metric). The windowed helpers count their own; a custom windowed streamlet calls
    /// this for each record it sends to its late output.
    pub fn count_late(&self, records: u64) {
        self.metrics.count_late(records);
    }

    /// Reports the streamlet's event-time watermark (milliseconds since the Unix epoch) for
    /// the status and the `runnel_watermark_seconds` metric. The windowed helpers report
    /// theirs; a custom event-time streamlet calls this when its watermark advances.
    pub fn report_watermark(&self, watermark: i64) {
        self.metrics.set_watermark(watermark);
    }

    /// The metrics of a streamlet that serves models: the model serving, the models
    /// rejected and the scoring time, exported on `/metrics` from the first call on (see
    /// [`ModelMetrics`](crate::ModelMetrics)).
    pub fn model_metrics(&self) -> crate::ModelMetrics {
        let models = self.metrics.models().clone();
        models.use_them();
        models
    }

    /// Facts to show in the status beside the instance's counters, such as the model a
    /// scorer serves now (see [`StatusDetails`](crate::StatusDetails)).
    pub fn status_details(&self) -> crate::StatusDetails {
        self.metrics.details().clone()
    }

    /// Tells the runtime the streamlet is ready, for a streamlet whose shape
    /// [reports readiness](crate::Shape::reports_readiness): an HTTP server calls it once it
    /// has bound its port. Later calls, and calls from streamlets whose readiness follows
    /// their connected ports, do nothing.
    pub fn report_ready(&self) {
        let ready = self
            .readiness
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        if let Some(ready) = ready {
            // The runtime may have stopped waiting (it is shutting down): nothing to tell.
            let _ = ready.send(());
        }
    }

    /// Whether the streamlet has been asked to stop.
    pub fn is_stopping(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// Completes when the streamlet is asked to stop; sources select on it.
    pub async fn stopped(&self) {
        self.shutdown.cancelled().await;
    }

    /// The shutdown signal, for tasks the streamlet spawns.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }
}
