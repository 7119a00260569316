//! [`Merge`]: several inlets of one type into one outlet.

use futures::StreamExt;

use crate::{Context, Data, Inlet, Outgoing, Outlet, Result, Shape, Streamlet};

/// A streamlet that forwards every value of several inlets to one outlet, keeping each
/// value's key and event timestamp. Values of one inlet stay in order; inlets interleave.
///
/// ```
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Reading { pub celsius: f64 }
///
/// pub const NORTH: Inlet<Reading> = Inlet::new("north");
/// pub const SOUTH: Inlet<Reading> = Inlet::new("south");
/// pub const ALL: Outlet<Reading> = Outlet::new("all");
///
/// pub fn both() -> impl Streamlet {
///     Merge::new([NORTH, SOUTH], ALL)
/// }
/// # let _ = both();
/// ```
#[derive(Debug)]
pub struct Merge<T> {
    inlets: Vec<Inlet<T>>,
    outlet: Outlet<T>,
    description: &'static str,
    delivery: runnel_blueprint::descriptor::Delivery,
}

impl<T: Data> Merge<T> {
    /// A merge of `inlets` into `outlet`.
    pub fn new(inlets: impl IntoIterator<Item = Inlet<T>>, outlet: Outlet<T>) -> Self {
        Merge {
            inlets: inlets.into_iter().collect(),
            outlet,
            description: "",
            delivery: runnel_blueprint::descriptor::Delivery::AtLeastOnce,
        }
    }

    /// Says what the merge does (shown by `describe`).
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

impl<T: Data> Streamlet for Merge<T> {
    fn shape(&self) -> Shape {
        let shape = Shape::new()
            .describe(self.description)
            .with_delivery(self.delivery);
        self.inlets
            .iter()
            .fold(shape, |shape, inlet| shape.inlet(*inlet))
            .outlet(self.outlet)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let output = ctx.outlet(self.outlet);
        let streams: Vec<_> = self
            .inlets
            .iter()
            .map(|inlet| ctx.inlet(*inlet).into_stream())
            .collect();
        let mut merged = futures::stream::select_all(streams);
        while let Some(message) = merged.next().await {
            let (value, token) = message?.into_parts();
            let mut outgoing = Outgoing::new(&value)
                .timestamp(token.timestamp())
                .input_headers(token.headers());
            if let Some(key) = token.key() {
                outgoing = outgoing.key(key.to_vec());
            }
            let outcome = output.send_record(outgoing).await;
            token.settle(outcome).await?;
        }
        Ok(())
    }
}
