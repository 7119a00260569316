//! The Nexmark queries as streamlets, one file each. Each reads the generator's topics
//! (bids, and for joins persons or auctions) and writes its results to `out`. With a
//! bounded input (a generator `count`) every window fires at the end, so each query has a
//! bounded mode whose output is complete.

pub mod q0;
pub mod q1;
pub mod q2;

/// The generated streams of the first `count` events with the default configuration.
#[cfg(test)]
pub(crate) fn test_streams(count: u64) -> crate::generator::Streams {
    crate::generator::Generator::new(crate::generator::GeneratorConfig::default())
        .expect("the default configuration is valid")
        .streams(count)
}
