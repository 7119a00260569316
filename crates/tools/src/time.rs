//! Times on the command line: RFC 3339 or milliseconds since the Unix epoch.

/// Milliseconds since the Unix epoch from `2026-12-01T10:00:00Z` (RFC 3339) or a number
/// of milliseconds.
///
/// ```
/// assert_eq!(runnel_tools::parse_time("1700000000000"), Ok(1_700_000_000_000));
/// assert_eq!(runnel_tools::parse_time("2023-11-14T22:13:20Z"), Ok(1_700_000_000_000));
/// assert!(runnel_tools::parse_time("yesterday").is_err());
/// ```
///
/// # Errors
///
/// When `text` is neither.
pub fn parse_time(text: &str) -> Result<i64, String> {
    if let Ok(millis) = text.parse::<i64>() {
        return Ok(millis);
    }
    let time = humantime::parse_rfc3339_weak(text).map_err(|_| {
        format!("'{text}' is not a time: give RFC 3339 (2026-12-01T10:00:00Z) or milliseconds since the epoch")
    })?;
    let since = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| format!("'{text}' is before 1970"))?;
    i64::try_from(since.as_millis()).map_err(|_| format!("'{text}' is too far ahead"))
}
