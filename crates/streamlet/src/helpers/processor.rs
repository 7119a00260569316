//! [`Processor`]: map, filter or flat-map one inlet into one outlet.

use crate::{Context, Data, Inlet, Outgoing, Outlet, Result, Shape, Streamlet};

/// A streamlet that turns each input value into zero, one or many output values.
///
/// The closure returns anything iterable: a value wrapped in `Some` or `[value]` maps, an
/// `Option` filters, a `Vec` fans out.
///
/// ```
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Reading { pub celsius: f64 }
///
/// pub const IN: Inlet<Reading> = Inlet::new("in");
/// pub const OUT: Outlet<Reading> = Outlet::new("out");
///
/// /// Drops readings outside -50..=150 °C.
/// pub fn plausible() -> impl Streamlet {
///     Processor::new(IN, OUT, |reading: Reading| {
///         (-50.0..=150.0).contains(&reading.celsius).then_some(reading)
///     })
/// }
/// # let _ = plausible();
/// ```
pub struct Processor<In, Out, F> {
    inlet: Inlet<In>,
    outlet: Outlet<Out>,
    transform: F,
    description: &'static str,
    delivery: runnel_blueprint::descriptor::Delivery,
}

impl<In, Out, F, I> Processor<In, Out, F>
where
    In: Data,
    Out: Data,
    F: FnMut(In) -> I + Send + 'static,
    I: IntoIterator<Item = Out>,
    I::IntoIter: Send,
{
    /// A processor applying `transform` to every value of `inlet`.
    pub fn new(inlet: Inlet<In>, outlet: Outlet<Out>, transform: F) -> Self {
        Processor {
            inlet,
            outlet,
            transform,
            description: "",
            delivery: runnel_blueprint::descriptor::Delivery::AtLeastOnce,
        }
    }

    /// Says what the processor does (shown by `describe`).
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

impl<In, Out, F, I> Streamlet for Processor<In, Out, F>
where
    In: Data,
    Out: Data,
    F: FnMut(In) -> I + Send + 'static,
    I: IntoIterator<Item = Out>,
    I::IntoIter: Send,
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
        while let Some(message) = input.next().await? {
            let timestamp = message.timestamp();
            let (value, commit) = message.into_parts();
            for out in (self.transform)(value) {
                output
                    .send_record(Outgoing::new(&out).timestamp(timestamp))
                    .await?;
            }
            commit.commit();
        }
        Ok(())
    }
}

impl<In, Out, F> std::fmt::Debug for Processor<In, Out, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("inlet", &self.inlet)
            .field("outlet", &self.outlet)
            .finish_non_exhaustive()
    }
}
