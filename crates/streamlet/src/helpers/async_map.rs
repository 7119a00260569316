//! [`AsyncMap`]: an async function over one inlet, several calls at once, in order.

use std::future::Future;

use futures::StreamExt;
use futures::stream::FuturesOrdered;

use crate::{Context, Data, Inlet, Outlet, Result, Shape, Streamlet};

/// A streamlet that calls an async function (a lookup, an HTTP call, a model) for each input
/// value with up to `concurrency` calls in flight, and emits and commits the results in
/// input order, so at-least-once holds however the calls finish.
///
/// ```
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Reading { pub sensor: String, pub celsius: f64 }
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Located { pub reading: Reading, pub room: String }
///
/// pub const IN: Inlet<Reading> = Inlet::new("in");
/// pub const OUT: Outlet<Located> = Outlet::new("out");
///
/// async fn room_of(sensor: &str) -> Result<String> {
///     Ok(format!("room of {sensor}"))
/// }
///
/// pub fn locate() -> impl Streamlet {
///     AsyncMap::new(IN, OUT, 8, |reading: Reading| async move {
///         let room = room_of(&reading.sensor).await?;
///         Ok(Located { reading, room })
///     })
/// }
/// # let _ = locate();
/// ```
pub struct AsyncMap<In, Out, F> {
    inlet: Inlet<In>,
    outlet: Outlet<Out>,
    concurrency: usize,
    call: F,
    description: &'static str,
    delivery: runnel_blueprint::descriptor::Delivery,
}

impl<In, Out, F, Fut> AsyncMap<In, Out, F>
where
    In: Data,
    Out: Data,
    F: FnMut(In) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Out>> + Send + 'static,
{
    /// An async map with at most `concurrency` calls in flight (at least one).
    pub fn new(inlet: Inlet<In>, outlet: Outlet<Out>, concurrency: usize, call: F) -> Self {
        AsyncMap {
            inlet,
            outlet,
            concurrency: concurrency.max(1),
            call,
            description: "",
            delivery: runnel_blueprint::descriptor::Delivery::AtLeastOnce,
        }
    }

    /// Says what the map does (shown by `describe`).
    pub fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// Asks for exactly-once delivery ([`Shape::exactly_once`]).
    pub fn exactly_once(mut self) -> Self {
        self.delivery = runnel_blueprint::descriptor::Delivery::ExactlyOnce;
        self
    }
}

impl<In, Out, F, Fut> Streamlet for AsyncMap<In, Out, F>
where
    In: Data,
    Out: Data,
    F: FnMut(In) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Out>> + Send + 'static,
{
    fn shape(&self) -> Shape {
        Shape::new()
            .describe(self.description)
            .with_delivery(self.delivery)
            .inlet(self.inlet)
            .outlet(self.outlet)
    }

    async fn run(mut self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(self.inlet);
        let output = ctx.outlet(self.outlet);
        let mut in_flight = FuturesOrdered::new();
        let mut input_open = true;
        loop {
            tokio::select! {
                // Finished calls first, so results leave in order as early as possible.
                biased;
                Some((result, token)) = in_flight.next(), if !in_flight.is_empty() => {
                    let outcome = match result {
                        Ok(value) => output.send_derived(&value, &token).await,
                        Err(error) => Err(error),
                    };
                    token.settle(outcome).await?;
                }
                message = input.next(), if input_open && in_flight.len() < self.concurrency => {
                    match message? {
                        Some(message) => {
                            let (value, token) = message.into_parts();
                            let call: Fut = (self.call)(value);
                            in_flight.push_back(async move { (call.await, token) });
                        }
                        None => input_open = false,
                    }
                }
                else => return Ok(()),
            }
        }
    }
}

impl<In, Out, F> std::fmt::Debug for AsyncMap<In, Out, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncMap")
            .field("inlet", &self.inlet)
            .field("outlet", &self.outlet)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}
