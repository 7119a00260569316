//! [`ModelScorer`]: a streamlet scoring each record with the model serving now, and
//! swapping in the models that arrive on its `models` inlet.

use std::time::Duration;

use futures::FutureExt;
use runnel_streamlet::{
    Context, Error, Inlet, InletStream, Message, ModelMetrics, Outlet, OutletSender, Parameter,
    Result, Shape, Streamlet,
};
use tokio::time::Instant;

use crate::slot::{ModelPolicy, ModelSlot};
use crate::{Model, ModelEvent, ModelRecord, Score, Scoring};

/// The inlet models arrive on. Give its topic one partition, so versions keep their order.
pub const MODELS: Inlet<ModelRecord> = Inlet::new("models");
/// One [`ModelEvent`] per model that arrived: serving, or rejected with the reason.
pub const MODEL_EVENTS: Outlet<ModelEvent> = Outlet::new("model-events");

/// Records scored per model call, at most.
pub const BATCH_SIZE: Parameter<i64> = Parameter::int("batch-size")
    .describe("records scored in one model call, at most; 1 scores each record alone")
    .default("64");
/// The model this scorer serves; other names are rejected.
pub const MODEL_NAME: Parameter<String> = Parameter::string("model-name")
    .describe("the name of the model this scorer serves; models named otherwise are rejected; empty: the name given in code, or else the first model that serves")
    .default("");
/// Whether a model older than the serving one is rejected.
pub const REFUSE_OLDER_VERSIONS: Parameter<bool> = Parameter::bool("refuse-older-versions")
    .describe("reject a model whose version (dotted numbers, such as 2 or 1.10.3) is older than the serving one's")
    .default("false");
/// How long a record may wait for others to fill its batch.
pub const BATCH_LINGER: Parameter<Duration> = Parameter::duration("batch-linger")
    .describe("how long a record waits for others to join its batch; 0ms batches only records already waiting")
    .default("0ms");

/// A streamlet that scores every record of an inlet with the model serving now and sends
/// the record with its score, the model's name and version (see [`Scoring`]), while new
/// models arrive on its [`MODELS`] inlet and are swapped in without a restart.
///
/// - **Loading off the hot path.** A model that arrives is loaded and checked on a blocking
///   thread ([`Model::load`]: it reads as ONNX, its shapes fit the scorer, it scores a
///   probe input) while records go on being scored with the previous one; it is swapped in
///   between two batches, so every record is scored by exactly one model, whose name and
///   version it carries.
/// - **Only its own model.** A scorer serves one model name: the one given by
///   [`model_name`](ModelScorer::model_name) or the `model-name` parameter, or else the
///   first model that serves. A record of another model is rejected, as is, with
///   `refuse-older-versions`, a version older than the serving one's.
/// - **Invalid models are rejected.** The previous model goes on serving; the reason is
///   logged and sent as a [`ModelEvent`] on [`MODEL_EVENTS`], as is every model that starts
///   serving, with how long loading took. The status shows the serving model (`model`),
///   how many were rejected (`models rejected`) and the last one rejected with its reason
///   (`last rejected model`), as [`StatusDetails`](runnel_streamlet::StatusDetails).
/// - **The serving model survives restarts.** The models inlet is committed only up to the
///   record of the serving model, so a restarted scorer reads that record first and serves
///   it again before scoring anything (models rejected after it are read, and rejected,
///   again). Records wait until a model serves; if the models input ends without one,
///   they are rejected (by default, to the dead-letter topic).
/// - **Batching with a latency bound.** Up to `batch-size` records (default 64) are scored
///   in one model call: the ones already waiting, plus, for `batch-linger` (default
///   `0ms`), the ones that arrive meanwhile. So at low rates each record is scored alone at
///   once, and under load calls grow to `batch-size` records.
///
/// Scoring runs on the streamlet's task: fine for models that score a batch in
/// microseconds to a few milliseconds, such as the tabular ones this is built for.
///
/// ```
/// use runnel_onnx::{ModelScorer, Score, Scoring};
/// use runnel_streamlet::prelude::*;
///
/// # #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)] pub struct Payment { pub amount: f64 }
/// # #[derive(Debug, Clone, Serialize, Deserialize, AvroSchema)] pub struct Scored { pub amount: f64, pub fraud: f64, pub model: String }
/// # pub struct FraudScoring;
/// # impl Scoring for FraudScoring {
/// #     type Input = Payment; type Output = Scored; const FEATURES: usize = 1; const OUTPUTS: usize = 2;
/// #     fn features(&self, p: &Payment, f: &mut Vec<f32>) { f.push(p.amount as f32) }
/// #     fn scored(&self, p: Payment, s: Score<'_>) -> Scored { Scored { amount: p.amount, fraud: f64::from(s.values[1]), model: s.label() } }
/// # }
/// pub const PAYMENTS: Inlet<Payment> = Inlet::new("in");
/// pub const SCORED: Outlet<Scored> = Outlet::new("out");
///
/// pub fn scorer() -> impl Streamlet {
///     ModelScorer::new(PAYMENTS, SCORED, FraudScoring)
/// }
/// # let _ = scorer();
/// ```
pub struct ModelScorer<S: Scoring> {
    inlet: Inlet<S::Input>,
    outlet: Outlet<S::Output>,
    scoring: S,
    description: &'static str,
    model_name: Option<&'static str>,
}

impl<S: Scoring> ModelScorer<S> {
    /// A scorer of the records of `inlet` into `outlet`.
    pub fn new(inlet: Inlet<S::Input>, outlet: Outlet<S::Output>, scoring: S) -> Self {
        ModelScorer {
            inlet,
            outlet,
            scoring,
            description: "scores each record with the model serving now; swaps in models arriving on 'models'",
            model_name: None,
        }
    }

    /// Serves only models named `name` (the `model-name` parameter, when set, wins):
    /// records of other models are rejected.
    pub fn model_name(mut self, name: &'static str) -> Self {
        self.model_name = Some(name);
        self
    }

    /// Says what the scorer does (shown by `describe`).
    pub fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }
}

impl<S: Scoring> Streamlet for ModelScorer<S> {
    fn shape(&self) -> Shape {
        Shape::new()
            .describe(self.description)
            .inlet(self.inlet)
            .inlet(MODELS)
            .outlet(self.outlet)
            .outlet(MODEL_EVENTS)
            .parameter(BATCH_SIZE)
            .parameter(BATCH_LINGER)
            .parameter(MODEL_NAME)
            .parameter(REFUSE_OLDER_VERSIONS)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut records = ctx.inlet(self.inlet);
        let mut models = ctx.inlet(MODELS);
        let output = ctx.outlet(self.outlet);
        let batching = Batching {
            size: ctx.parameter(BATCH_SIZE).max(1) as usize,
            linger: ctx.parameter(BATCH_LINGER),
        };
        let named = ctx.parameter(MODEL_NAME);
        let policy = ModelPolicy {
            name: Some(named)
                .filter(|name| !name.is_empty())
                .or_else(|| self.model_name.map(str::to_owned)),
            refuse_older: ctx.parameter(REFUSE_OLDER_VERSIONS),
        };
        let metrics = ctx.model_metrics();
        let mut slot = ModelSlot::new(
            S::FEATURES,
            S::OUTPUTS,
            ctx.outlet(MODEL_EVENTS),
            ctx.status_details(),
            policy,
            metrics.clone(),
        );
        let mut models_open = true;
        let mut batch = Vec::with_capacity(batching.size);
        loop {
            let can_score = slot.serving().is_some() || !models_open;
            tokio::select! {
                biased;
                loaded = slot.loaded() => loaded?,
                model = models.next(), if models_open && !slot.is_loading() => match model? {
                    Some(message) => slot.load(message),
                    // Stopping, not the end of the models: nothing is to be rejected.
                    None if ctx.is_stopping() => break,
                    None => models_open = false,
                },
                record = records.next(), if can_score => {
                    let Some(first) = record? else { break };
                    batch.push(first);
                    let ended = batching.fill(&mut batch, &mut records).await?;
                    match slot.serving() {
                        Some(model) => {
                            score(&self.scoring, model, &mut batch, &output, &metrics).await?
                        }
                        None => reject_unscored(&mut batch).await?,
                    }
                    if ended {
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

/// How batches are filled.
#[derive(Clone, Copy, Debug)]
struct Batching {
    size: usize,
    linger: Duration,
}

impl Batching {
    /// Adds to `batch` the records already waiting and, for the linger time, those that
    /// arrive, up to the batch size; returns whether the input ended.
    async fn fill<T: runnel_streamlet::Data>(
        &self,
        batch: &mut Vec<Message<T>>,
        records: &mut InletStream<T>,
    ) -> Result<bool> {
        let deadline = Instant::now() + self.linger;
        while batch.len() < self.size {
            // `next` is cancel safe: a record it was about to deliver is not lost.
            let next = if self.linger.is_zero() {
                records.next().now_or_never()
            } else {
                tokio::time::timeout_at(deadline, records.next()).await.ok()
            };
            match next {
                None => break,
                Some(next) => match next? {
                    Some(message) => batch.push(message),
                    None => return Ok(true),
                },
            }
        }
        Ok(false)
    }
}

/// Scores `batch` in one model call and sends each record with its score.
async fn score<S: Scoring>(
    scoring: &S,
    model: &Model,
    batch: &mut Vec<Message<S::Input>>,
    output: &OutletSender<S::Output>,
    metrics: &ModelMetrics,
) -> Result<()> {
    let mut rows = Vec::with_capacity(batch.len() * S::FEATURES);
    let mut scored = Vec::with_capacity(batch.len());
    for message in batch.drain(..) {
        let before = rows.len();
        scoring.features(message.value(), &mut rows);
        let count = rows.len() - before;
        if count == S::FEATURES {
            scored.push(message);
        } else {
            rows.truncate(before);
            let reason = format!("it has {count} features; the model takes {}", S::FEATURES);
            message.reject(reason).await?;
        }
    }
    if scored.is_empty() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let scored_batch = model.score(&rows);
    metrics.scored(started.elapsed());
    let values = scored_batch.map_err(|error| {
        Error::msg(format!(
            "model {} failed on a batch: {error}",
            model.label()
        ))
    })?;
    for (message, values) in scored.into_iter().zip(values.chunks(S::OUTPUTS)) {
        let (value, token) = message.into_parts();
        let score = Score {
            model: model.name(),
            version: model.version(),
            values,
        };
        let record = scoring.scored(value, score);
        let sent = output.send_derived(&record, &token).await;
        token.settle(sent).await?;
    }
    Ok(())
}

/// The models input ended without a model that serves: nothing will score these.
async fn reject_unscored<T>(batch: &mut Vec<Message<T>>) -> Result<()> {
    for message in batch.drain(..) {
        message
            .reject("no model serves: the models input ended without a valid one")
            .await?;
    }
    Ok(())
}

impl<S: Scoring> std::fmt::Debug for ModelScorer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelScorer")
            .field("inlet", &self.inlet)
            .field("outlet", &self.outlet)
            .finish_non_exhaustive()
    }
}
