//! The Nexmark queries as streamlets, one file each. Each reads the generator's topics
//! (bids, and for joins persons or auctions) and writes its results to `out`. With a
//! bounded input (a generator `count`) every window fires at the end, so each query has a
//! bounded mode whose output is complete.

pub mod q0;
pub mod q1;
pub mod q11;
pub mod q12;
pub mod q2;
pub mod q3;
pub mod q4;
pub mod q5;
pub mod q7;
pub mod q8;
pub mod q9;

use std::time::Duration;

use runnel::watermark::Watermarks;

/// The size of the queries' event-time windows (the reference's `windowSizeSec`, 10 s).
pub const WINDOW_SIZE: Duration = Duration::from_secs(10);
/// How often query 5's sliding windows start (the reference's `windowPeriodSec`, 5 s).
pub const WINDOW_PERIOD: Duration = Duration::from_secs(5);
/// The queries' watermarks: events at most 1 s out of order are on time. The generator
/// shuffles events within groups of `out-of-order-group-size`, so at 10,000 events per
/// second of event time groups of up to 10,000 events are never late.
pub const WATERMARKS: Watermarks = Watermarks::bounded(Duration::from_secs(1));

/// The generated streams of the first `count` events at `events_per_second` of event time,
/// otherwise with the default configuration.
#[cfg(test)]
pub(crate) fn test_streams(count: u64, events_per_second: i64) -> crate::generator::Streams {
    shuffled_streams(count, events_per_second, 1)
}

/// As [`test_streams`], shuffled within groups of `group` events (out of order by up to
/// `group - 1` events).
#[cfg(test)]
pub(crate) fn shuffled_streams(
    count: u64,
    events_per_second: i64,
    group: i64,
) -> crate::generator::Streams {
    let config = crate::generator::GeneratorConfig {
        events_per_second,
        out_of_order_group_size: group,
        ..crate::generator::GeneratorConfig::default()
    };
    crate::generator::Generator::new(config)
        .expect("a valid configuration")
        .streams(count)
}
