//! [`ExactlyOnce`]: a query's streamlet with exactly-once delivery, registered beside the
//! at-least-once one as `<query>-exactly-once`, so the same blueprint runs either way.
//!
//! The streamlets' helpers (`Processor`, `WindowedAggregate`, [`TwoInputs`]) only declare
//! their delivery in their shape; the runtime does the rest (a transaction per checkpoint
//! interval holding the outputs, the state and the input offsets). Every query streamlet
//! settles each message before it takes the next, so none holds an uncommitted message when
//! it saves, which exactly-once requires.
//!
//! [`TwoInputs`]: crate::two_inputs::TwoInputs

use runnel::prelude::*;

/// `S`, with exactly-once delivery.
///
/// ```
/// use runnel::prelude::*;
/// use runnel_blueprint::descriptor::Delivery;
/// use runnel_nexmark::exactly_once::ExactlyOnce;
/// use runnel_nexmark::queries::q0;
///
/// let streamlet = ExactlyOnce(q0::streamlet());
/// assert_eq!(streamlet.shape().delivery(), Delivery::ExactlyOnce);
/// ```
#[derive(Debug)]
pub struct ExactlyOnce<S>(pub S);

impl<S: Streamlet> Streamlet for ExactlyOnce<S> {
    fn shape(&self) -> Shape {
        self.0.shape().exactly_once()
    }

    async fn run(self, ctx: Context) -> Result<()> {
        self.0.run(ctx).await
    }
}
