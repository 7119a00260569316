//! Watermarks: how far event time has progressed on a streamlet's input.
//!
//! Each input partition has its own watermark, generated at the consumer from the event
//! timestamps it delivers ([`Watermarks`] says how: bounded out-of-orderness, or nothing
//! before the end of a bounded input). A partition that delivers nothing for a while is
//! idle and no longer holds the others back. The streamlet's watermark is the minimum over
//! its non-idle partitions, and it never goes back ([`WatermarkHolder`]). A streamlet that
//! reads several inputs keeps them near each other in event time with an [`Alignment`].
//!
//! ```
//! use std::time::Duration;
//! use runnel_event_time::watermark::{WatermarkHolder, Watermarks};
//!
//! let strategy = Watermarks::bounded(Duration::from_secs(4)).idle_after(Duration::from_secs(60));
//! let mut holder = WatermarkHolder::new(strategy);
//! holder.add_partition(0, 0);
//! holder.add_partition(1, 0);
//! holder.observe(0, 10_000, 1); // partition 1 has not spoken yet: it holds the watermark
//! assert_eq!(holder.current(), i64::MIN);
//! holder.observe(1, 7_000, 2);
//! assert_eq!(holder.current(), 3_000); // min(10 s, 7 s) - 4 s
//! holder.observe(0, 20_000, 60_002);
//! assert_eq!(holder.check_idle(60_002), Some(16_000)); // partition 1 went idle
//! ```

mod alignment;
mod holder;
mod scripted;
mod strategy;

pub use alignment::Alignment;
pub use holder::WatermarkHolder;
pub use scripted::ScriptedWatermarks;
pub use strategy::Watermarks;
