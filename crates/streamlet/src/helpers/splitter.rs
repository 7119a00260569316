//! [`Splitter`]: route each value of one inlet to one of two outlets.

use crate::{Context, Data, Inlet, Outlet, Result, Shape, Streamlet};

/// Which outlet of a [`Splitter`] a value goes to. By Cloudflow's convention, `Left` is for
/// values that failed a check and `Right` for the ones that passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Either<L, R> {
    /// To the left outlet.
    Left(L),
    /// To the right outlet.
    Right(R),
}

/// A streamlet that sends each input value to the left or the right outlet.
///
/// ```
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Reading { pub celsius: f64 }
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Rejected { pub reading: Reading, pub reason: String }
///
/// pub const IN: Inlet<Reading> = Inlet::new("in");
/// pub const INVALID: Outlet<Rejected> = Outlet::new("invalid");
/// pub const VALID: Outlet<Reading> = Outlet::new("valid");
///
/// pub fn validate() -> impl Streamlet {
///     Splitter::new(IN, INVALID, VALID, |reading: Reading| {
///         if reading.celsius.is_finite() {
///             Either::Right(reading)
///         } else {
///             Either::Left(Rejected { reading, reason: "not a number".into() })
///         }
///     })
/// }
/// # let _ = validate();
/// ```
pub struct Splitter<In, L, R, F> {
    inlet: Inlet<In>,
    left: Outlet<L>,
    right: Outlet<R>,
    route: F,
    description: &'static str,
    delivery: runnel_blueprint::descriptor::Delivery,
}

impl<In, L, R, F> Splitter<In, L, R, F>
where
    In: Data,
    L: Data,
    R: Data,
    F: FnMut(In) -> Either<L, R> + Send + 'static,
{
    /// A splitter routing every value of `inlet` with `route`.
    pub fn new(inlet: Inlet<In>, left: Outlet<L>, right: Outlet<R>, route: F) -> Self {
        Splitter {
            inlet,
            left,
            right,
            route,
            description: "",
            delivery: runnel_blueprint::descriptor::Delivery::AtLeastOnce,
        }
    }

    /// Says what the splitter does (shown by `describe`).
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

impl<In, L, R, F> Streamlet for Splitter<In, L, R, F>
where
    In: Data,
    L: Data,
    R: Data,
    F: FnMut(In) -> Either<L, R> + Send + 'static,
{
    fn shape(&self) -> Shape {
        Shape::new()
            .describe(self.description)
            .with_delivery(self.delivery)
            .inlet(self.inlet)
            .outlet(self.left)
            .outlet(self.right)
    }

    async fn run(mut self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(self.inlet);
        let (left, right) = (ctx.outlet(self.left), ctx.outlet(self.right));
        while let Some(message) = input.next().await? {
            let (value, token) = message.into_parts();
            let outcome = match (self.route)(value) {
                Either::Left(value) => left.send_derived(&value, &token).await,
                Either::Right(value) => right.send_derived(&value, &token).await,
            };
            token.settle(outcome).await?;
        }
        Ok(())
    }
}

impl<In, L, R, F> std::fmt::Debug for Splitter<In, L, R, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Splitter")
            .field("inlet", &self.inlet)
            .field("left", &self.left)
            .field("right", &self.right)
            .finish_non_exhaustive()
    }
}
