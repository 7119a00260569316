//! [`Processor`]: map, filter or flat-map one inlet into one outlet.

use crate::{CommitToken, Context, Data, Inlet, Outlet, OutletSender, Result, Shape, Streamlet};

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
///
/// Each output carries the input's event timestamp and headers. An output too large for its
/// topic, or an [`Error::bad_data`](crate::Error::bad_data) from a
/// [`try_new`](Processor::try_new) closure, hands the input to the inlet's bad-data policy
/// (by default, the dead-letter topic) and the processor goes on with the next one.
pub struct Processor<In, Out, F> {
    inlet: Inlet<In>,
    outlet: Outlet<Out>,
    transform: F,
    description: &'static str,
    delivery: runnel_blueprint::descriptor::Delivery,
}

impl<In: Data, Out: Data> Processor<In, Out, ()> {
    /// A processor applying `transform` to every value of `inlet`.
    #[allow(clippy::new_ret_no_self)] // the closure is wrapped, so the type differs
    pub fn new<I>(
        inlet: Inlet<In>,
        outlet: Outlet<Out>,
        mut transform: impl FnMut(In) -> I + Send + 'static,
    ) -> Processor<In, Out, impl FnMut(In) -> Result<I> + Send + 'static>
    where
        I: IntoIterator<Item = Out>,
        I::IntoIter: Send,
    {
        Processor::try_new(inlet, outlet, move |value| Ok(transform(value)))
    }

    /// A processor whose `transform` can fail. An error made with
    /// [`Error::bad_data`](crate::Error::bad_data) says the input cannot be processed: it goes
    /// to the inlet's bad-data policy and the processor goes on. Any other error fails the
    /// streamlet, which is restarted and reads the input again (and gives up on it after it
    /// failed several times in a row; see [`FailedAttempts`](crate::FailedAttempts)).
    ///
    /// ```
    /// use runnel_streamlet::prelude::*;
    ///
    /// pub const IN: Inlet<String> = Inlet::new("in");
    /// pub const OUT: Outlet<i64> = Outlet::new("out");
    ///
    /// /// Parses numbers; anything else goes to the dead-letter topic.
    /// pub fn parse() -> impl Streamlet {
    ///     Processor::try_new(IN, OUT, |text: String| {
    ///         text.trim().parse::<i64>().map(Some).map_err(Error::bad_data)
    ///     })
    /// }
    /// # let _ = parse();
    /// ```
    pub fn try_new<F, I>(
        inlet: Inlet<In>,
        outlet: Outlet<Out>,
        transform: F,
    ) -> Processor<In, Out, F>
    where
        F: FnMut(In) -> Result<I> + Send + 'static,
        I: IntoIterator<Item = Out>,
        I::IntoIter: Send,
    {
        Processor {
            inlet,
            outlet,
            transform,
            description: "",
            delivery: runnel_blueprint::descriptor::Delivery::AtLeastOnce,
        }
    }
}

impl<In, Out, F> Processor<In, Out, F> {
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
    F: FnMut(In) -> Result<I> + Send + 'static,
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
            let (value, token) = message.into_parts();
            // Only the iterator, which is `Send`, lives across the sends.
            let outcome = match (self.transform)(value).map(IntoIterator::into_iter) {
                Ok(outputs) => send_all(&output, outputs, &token).await,
                Err(error) => Err(error),
            };
            match outcome {
                // The common case commits without building `settle`'s future.
                Ok(()) => token.commit(),
                failed => token.settle(failed).await?,
            }
        }
        Ok(())
    }
}

/// Sends every value derived from the message `from` commits, stopping at the first error.
pub(crate) async fn send_all<Out: Data>(
    output: &OutletSender<Out>,
    outputs: impl Iterator<Item = Out> + Send,
    from: &CommitToken,
) -> Result<()> {
    for value in outputs {
        output.send_derived(&value, from).await?;
    }
    Ok(())
}

impl<In, Out, F> std::fmt::Debug for Processor<In, Out, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("inlet", &self.inlet)
            .field("outlet", &self.outlet)
            .finish_non_exhaustive()
    }
}
