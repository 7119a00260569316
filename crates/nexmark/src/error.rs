//! [`ConfigError`]: what is wrong with a generator configuration.

/// A generator configuration that cannot generate events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A setting that must be positive is not.
    #[error("nexmark generator setting '{setting}' must be at least 1, was {value}")]
    NotPositive {
        /// The setting, as the source streamlet's parameter names it.
        setting: &'static str,
        /// Its value.
        value: i64,
    },
}
