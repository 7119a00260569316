//! [`Egress`]: an async sink for one inlet.

use std::future::Future;

use crate::{Context, Data, Inlet, Result, Shape, Streamlet};

/// A streamlet that hands every value of an inlet to an async function (write to a database,
/// call a service, log it) and commits it once the function succeeded.
///
/// An error from the function fails the streamlet, which is restarted with backoff and sees
/// the uncommitted value again.
///
/// ```
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Reading { pub celsius: f64 }
///
/// pub const IN: Inlet<Reading> = Inlet::new("in");
///
/// /// Logs every reading.
/// pub fn logger() -> impl Streamlet {
///     Egress::new(IN, |reading: Reading| async move {
///         tracing::info!(celsius = reading.celsius, "reading");
///         Ok(())
///     })
/// }
/// # let _ = logger();
/// ```
pub struct Egress<In, F> {
    inlet: Inlet<In>,
    sink: F,
    description: &'static str,
}

impl<In, F, Fut> Egress<In, F>
where
    In: Data,
    F: FnMut(In) -> Fut + Send + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    /// An egress calling `sink` for every value of `inlet`.
    pub fn new(inlet: Inlet<In>, sink: F) -> Self {
        Egress {
            inlet,
            sink,
            description: "",
        }
    }

    /// Says what the egress does (shown by `describe`).
    pub fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }
}

impl<In, F, Fut> Streamlet for Egress<In, F>
where
    In: Data,
    F: FnMut(In) -> Fut + Send + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    fn shape(&self) -> Shape {
        Shape::new().describe(self.description).inlet(self.inlet)
    }

    async fn run(mut self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(self.inlet);
        while let Some(message) = input.next().await? {
            let (value, token) = message.into_parts();
            let outcome = (self.sink)(value).await;
            match outcome {
                // The common case commits without building `settle`'s future.
                Ok(()) => token.commit(),
                failed => token.settle(failed).await?,
            }
        }
        Ok(())
    }
}

impl<In, F> std::fmt::Debug for Egress<In, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("inlet", &self.inlet)
            .finish_non_exhaustive()
    }
}
