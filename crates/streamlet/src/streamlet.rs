//! The [`Streamlet`] trait.

use std::future::Future;

use futures::future::BoxFuture;

use crate::{Context, Result, Shape};

/// A unit of business logic with typed inlets and outlets.
///
/// Two methods: what it looks like ([`shape`](Streamlet::shape)), and what it does
/// ([`run`](Streamlet::run)). The runtime connects the ports to topics, hands over a
/// [`Context`], restarts the streamlet with backoff when `run` fails, and stops it by
/// cancelling the context (inlets then return `None`).
///
/// ```
/// use runnel_streamlet::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
/// pub struct Reading { pub celsius: f64 }
///
/// pub const IN: Inlet<Reading> = Inlet::new("in");
/// pub const HOT: Outlet<Reading> = Outlet::new("hot");
///
/// /// Passes on readings above 30 °C.
/// pub struct HotOnly;
///
/// impl Streamlet for HotOnly {
///     fn shape(&self) -> Shape {
///         Shape::new().inlet(IN).outlet(HOT)
///     }
///
///     async fn run(self, mut ctx: Context) -> Result<()> {
///         let mut readings = ctx.inlet(IN);
///         let hot = ctx.outlet(HOT);
///         while let Some(message) = readings.next().await? {
///             if message.value().celsius > 30.0 {
///                 hot.send(message.value()).await?;
///             }
///             message.commit(); // at-least-once: commit after every output is sent
///         }
///         Ok(())
///     }
/// }
/// ```
pub trait Streamlet: Send + 'static {
    /// The ports, parameters and volume mounts.
    fn shape(&self) -> Shape;

    /// Runs until the inputs end, the context is cancelled, or an error occurs.
    fn run(self, ctx: Context) -> impl Future<Output = Result<()>> + Send;
}

/// A streamlet with its type erased, as the runtime keeps it. Implemented for every
/// [`Streamlet`]; streamlet authors never implement it themselves.
pub trait DynStreamlet: Send + 'static {
    /// See [`Streamlet::shape`].
    fn shape(&self) -> Shape;

    /// See [`Streamlet::run`].
    fn run_boxed(self: Box<Self>, ctx: Context) -> BoxFuture<'static, Result<()>>;
}

impl std::fmt::Debug for dyn DynStreamlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Streamlet")
    }
}

impl<S: Streamlet> DynStreamlet for S {
    fn shape(&self) -> Shape {
        Streamlet::shape(self)
    }

    fn run_boxed(self: Box<Self>, ctx: Context) -> BoxFuture<'static, Result<()>> {
        Box::pin((*self).run(ctx))
    }
}
