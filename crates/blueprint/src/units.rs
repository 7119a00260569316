//! Durations and memory sizes as HOCON (Lightbend Config, which Cloudflow used) writes them.
//!
//! A value is a number (digits, with an optional decimal fraction), optional whitespace, and
//! a unit. A bare number is a size in bytes, as in HOCON; a bare duration is refused (HOCON
//! reads it as milliseconds, which silently turned `inactivity = 30` into 30 ms), except
//! `0`, which means the same in every unit. The units and their meanings are those of the
//! HOCON specification ("Duration format", "Size in bytes format"):
//!
//! - durations (lowercase only): `ns`, `us`, `ms`, `s`, `m`, `h`, `d`, and the long forms
//!   (`nanosecond(s)`, `microsecond(s)`, `millisecond(s)`, `second(s)`, `minute(s)`,
//!   `hour(s)`, `day(s)`, and Lightbend Config's `nano(s)`, `micro(s)`, `milli(s)`);
//! - sizes: `B`/`b`/`byte(s)`; powers of ten `kB`, `MB`, `GB`, `TB`, `PB`, `EB` (and
//!   `kilobyte(s)`...); powers of two `K`/`k`/`Ki`/`KiB`, `M`/`m`/`Mi`/`MiB`,
//!   `G`/`g`/`Gi`/`GiB`, `T`/`t`/`Ti`/`TiB`, `P`/`p`/`Pi`/`PiB`, `E`/`e`/`Ei`/`EiB` (and
//!   `kibibyte(s)`...). A single letter is a power of two, as in HOCON and `java -Xmx2G`.
//!
//! Beyond HOCON, without changing any HOCON meaning: a duration may be a sequence of terms
//! (`1m 30s`, `1h30m`), `sec(s)`, `min(s)`, `hr(s)` are accepted, and so is ISO 8601's form
//! (`PT30S`, `PT1H30M`, `P1DT12H`, as Java's `Duration.parse` reads it). A fraction must
//! come out whole: `1.5s` is 1,500 ms, but `0.1k` (102.4 bytes) is refused.

use std::time::Duration;

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// Duration units and their length in nanoseconds.
const DURATION_UNITS: &[(&[&str], u128)] = &[
    (&["ns", "nano", "nanos", "nanosecond", "nanoseconds"], 1),
    (
        &["us", "micro", "micros", "microsecond", "microseconds"],
        1_000,
    ),
    (
        &["ms", "milli", "millis", "millisecond", "milliseconds"],
        1_000_000,
    ),
    (&["s", "second", "seconds", "sec", "secs"], NANOS_PER_SECOND),
    (
        &["m", "minute", "minutes", "min", "mins"],
        60 * NANOS_PER_SECOND,
    ),
    (
        &["h", "hour", "hours", "hr", "hrs"],
        3_600 * NANOS_PER_SECOND,
    ),
    (&["d", "day", "days"], 86_400 * NANOS_PER_SECOND),
];

/// Size units and their number of bytes.
const SIZE_UNITS: &[(&[&str], u128)] = &[
    (&["B", "b", "byte", "bytes"], 1),
    (&["kB", "kilobyte", "kilobytes"], 1_000),
    (&["MB", "megabyte", "megabytes"], 1_000_000),
    (&["GB", "gigabyte", "gigabytes"], 1_000_000_000),
    (&["TB", "terabyte", "terabytes"], 1_000_000_000_000),
    (&["PB", "petabyte", "petabytes"], 1_000_000_000_000_000),
    (&["EB", "exabyte", "exabytes"], 1_000_000_000_000_000_000),
    (
        &["ZB", "zettabyte", "zettabytes"],
        1_000_000_000_000_000_000_000,
    ),
    (
        &["YB", "yottabyte", "yottabytes"],
        1_000_000_000_000_000_000_000_000,
    ),
    (&["K", "k", "Ki", "KiB", "kibibyte", "kibibytes"], 1 << 10),
    (&["M", "m", "Mi", "MiB", "mebibyte", "mebibytes"], 1 << 20),
    (&["G", "g", "Gi", "GiB", "gibibyte", "gibibytes"], 1 << 30),
    (&["T", "t", "Ti", "TiB", "tebibyte", "tebibytes"], 1 << 40),
    (&["P", "p", "Pi", "PiB", "pebibyte", "pebibytes"], 1 << 50),
    (&["E", "e", "Ei", "EiB", "exbibyte", "exbibytes"], 1 << 60),
    (&["Z", "z", "Zi", "ZiB", "zebibyte", "zebibytes"], 1 << 70),
    (&["Y", "y", "Yi", "YiB", "yobibyte", "yobibytes"], 1 << 80),
];

const DURATION_EXAMPLES: &str = "write it like 250ms, 5s or 1m 30s";
const SIZE_EXAMPLES: &str = "write it like 1024, 512k, 64MiB or 1GB; k, M, G, T are powers of 1024, kB, MB, GB, TB powers of 1000";

/// One `number unit` term: the number's digits before and after the point, and the unit.
struct Term<'t> {
    whole: &'t str,
    fraction: &'t str,
    unit: &'t str,
}

/// Splits off the first term of `text` (which starts at a digit), returning it and the rest.
fn term(text: &str) -> Option<(Term<'_>, &str)> {
    let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let whole_end = digits(text);
    if whole_end == 0 {
        return None;
    }
    let (whole, mut rest) = text.split_at(whole_end);
    let mut fraction = "";
    if let Some(after_point) = rest.strip_prefix('.') {
        let end = digits(after_point);
        if end == 0 {
            return None;
        }
        fraction = &after_point[..end];
        rest = &after_point[end..];
    }
    let rest = rest.trim_start();
    let unit_end = rest
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(rest.len());
    let (unit, rest) = rest.split_at(unit_end);
    Some((
        Term {
            whole,
            fraction,
            unit,
        },
        rest.trim_start(),
    ))
}

/// `whole.fraction × per_unit`, when it is a whole number that fits a `u128`.
fn scale(term: &Term<'_>, per_unit: u128) -> Result<u128, Scale> {
    let whole: u128 = term.whole.parse().map_err(|_| Scale::TooLarge)?;
    let mut total = whole.checked_mul(per_unit).ok_or(Scale::TooLarge)?;
    if !term.fraction.is_empty() {
        let digits = u32::try_from(term.fraction.len()).map_err(|_| Scale::NotWhole)?;
        let denominator = 10u128.checked_pow(digits).ok_or(Scale::NotWhole)?;
        let numerator: u128 = term.fraction.parse().map_err(|_| Scale::NotWhole)?;
        let part = numerator.checked_mul(per_unit).ok_or(Scale::TooLarge)?;
        if !part.is_multiple_of(denominator) {
            return Err(Scale::NotWhole);
        }
        total = total
            .checked_add(part / denominator)
            .ok_or(Scale::TooLarge)?;
    }
    Ok(total)
}

enum Scale {
    TooLarge,
    NotWhole,
}

fn lookup(units: &[(&[&str], u128)], unit: &str) -> Option<u128> {
    units
        .iter()
        .find(|(names, _)| names.contains(&unit))
        .map(|(_, size)| *size)
}

/// Parses a duration in HOCON's format (see the module documentation).
///
/// # Errors
///
/// A lowercase reason naming the text when it is not a duration.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let not_a_duration =
        |detail: &str| format!("'{text}' is not a duration{detail} ({DURATION_EXAMPLES})");
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return Err(format!(
            "'{text}' is not a duration: durations cannot be negative"
        ));
    }
    if let Some(iso) = trimmed
        .strip_prefix('P')
        .or_else(|| trimmed.strip_prefix('p'))
    {
        return parse_iso_duration(text, iso);
    }
    let mut rest = trimmed;
    let mut nanos: u128 = 0;
    let mut terms = 0;
    while !rest.is_empty() {
        let Some((term, after)) = term(rest) else {
            return Err(not_a_duration(""));
        };
        terms += 1;
        let per_unit = if term.unit.is_empty() {
            if terms > 1 || !after.is_empty() {
                return Err(not_a_duration(": every term of a sequence needs a unit"));
            }
            if term.whole.bytes().all(|digit| digit == b'0')
                && term.fraction.bytes().all(|digit| digit == b'0')
            {
                return Ok(Duration::ZERO);
            }
            return Err(format!(
                "'{text}' is not a duration: it needs a unit, such as '{number}ms', '{number}s' or '{number}m' (a bare number is not taken to mean milliseconds)",
                number = trimmed
            ));
        } else {
            lookup(DURATION_UNITS, term.unit).ok_or_else(|| {
                format!(
                    "'{text}' is not a duration: unknown unit '{}' (the units are ns, us, ms, s, m, h and d, or nanoseconds, microseconds, milliseconds, seconds, minutes, hours and days)",
                    term.unit
                )
            })?
        };
        let part = scale(&term, per_unit).map_err(|problem| match problem {
            Scale::TooLarge => format!("'{text}' is too long a duration"),
            Scale::NotWhole => format!("'{text}' is not a whole number of nanoseconds"),
        })?;
        nanos = nanos
            .checked_add(part)
            .ok_or_else(|| format!("'{text}' is too long a duration"))?;
        rest = after;
    }
    if terms == 0 {
        return Err(not_a_duration(""));
    }
    duration_of_nanos(text, nanos)
}

fn duration_of_nanos(text: &str, nanos: u128) -> Result<Duration, String> {
    let seconds = u64::try_from(nanos / NANOS_PER_SECOND)
        .map_err(|_| format!("'{text}' is too long a duration"))?;
    let subsecond = u32::try_from(nanos % NANOS_PER_SECOND).unwrap_or_default();
    Ok(Duration::new(seconds, subsecond))
}

/// Parses the part after `P` of an ISO 8601 duration, `[nD][T[nH][nM][n[.f]S]]`, as
/// Java's `Duration.parse` does (no years, months or weeks: their length varies).
fn parse_iso_duration(text: &str, after_p: &str) -> Result<Duration, String> {
    let not_iso = |detail: &str| {
        format!(
            "'{text}' is not an ISO 8601 duration{detail} (write it like PT30S, PT1H30M or P1DT12H)"
        )
    };
    let upper = after_p.to_ascii_uppercase();
    let (date, time) = match upper.split_once('T') {
        Some((_, "")) => return Err(not_iso(": nothing follows 'T'")),
        Some((date, time)) => (date, Some(time)),
        None => (upper.as_str(), None),
    };
    if date.is_empty() && time.is_none() {
        return Err(not_iso(""));
    }
    let mut nanos: u128 = 0;
    let mut add = |part: &str, designators: &[(char, u128)]| -> Result<(), String> {
        let mut rest = part;
        let mut allowed = designators;
        while !rest.is_empty() {
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(|| not_iso(": a number lacks its designator"))?;
            let (number, after) = rest.split_at(end);
            let designator = after.chars().next().unwrap_or_default();
            let position = allowed
                .iter()
                .position(|(letter, _)| *letter == designator)
                .ok_or_else(|| not_iso(&format!(": unexpected '{designator}'")))?;
            let per_unit = allowed[position].1;
            allowed = &allowed[position + 1..];
            let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
            if whole.is_empty()
                || (number.contains('.') && (fraction.is_empty() || designator != 'S'))
            {
                return Err(not_iso(": only seconds may have a fraction"));
            }
            let part = scale(
                &Term {
                    whole,
                    fraction,
                    unit: "",
                },
                per_unit,
            )
            .map_err(|problem| match problem {
                Scale::TooLarge => format!("'{text}' is too long a duration"),
                Scale::NotWhole => format!("'{text}' is not a whole number of nanoseconds"),
            })?;
            nanos = nanos
                .checked_add(part)
                .ok_or_else(|| format!("'{text}' is too long a duration"))?;
            rest = &after[designator.len_utf8()..];
        }
        Ok(())
    };
    add(date, &[('D', 86_400 * NANOS_PER_SECOND)])?;
    if let Some(time) = time {
        add(
            time,
            &[
                ('H', 3_600 * NANOS_PER_SECOND),
                ('M', 60 * NANOS_PER_SECOND),
                ('S', NANOS_PER_SECOND),
            ],
        )?;
    }
    duration_of_nanos(text, nanos)
}

/// Parses a memory size in bytes in HOCON's format (see the module documentation).
///
/// # Errors
///
/// A lowercase reason naming the text when it is not a size or does not fit 64 bits.
pub(crate) fn parse_memory_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let not_a_size =
        |detail: &str| format!("'{text}' is not a memory size{detail} ({SIZE_EXAMPLES})");
    if trimmed.starts_with('-') {
        return Err(format!(
            "'{text}' is not a memory size: sizes cannot be negative"
        ));
    }
    let Some((term, rest)) = term(trimmed) else {
        return Err(not_a_size(""));
    };
    if !rest.is_empty() {
        return Err(not_a_size(""));
    }
    let per_unit = if term.unit.is_empty() {
        1
    } else if let Some(size) = lookup(SIZE_UNITS, term.unit) {
        size
    } else if term.unit == "KB" {
        return Err(format!(
            "'{text}' is not a memory size: 'KB' is ambiguous; write kB (1000 bytes) or KiB (1024 bytes)"
        ));
    } else {
        return Err(format!(
            "'{text}' is not a memory size: unknown unit '{}' (the units are B; kB, MB, GB, TB, PB, EB, powers of 1000; K, M, G, T, P, E or KiB, MiB, GiB, TiB, PiB, EiB, powers of 1024)",
            term.unit
        ));
    };
    let too_large = || {
        format!(
            "'{text}' is too large a memory size (at most {} bytes)",
            u64::MAX
        )
    };
    let bytes = scale(&term, per_unit).map_err(|problem| match problem {
        Scale::TooLarge => too_large(),
        Scale::NotWhole => format!("'{text}' is not a whole number of bytes"),
    })?;
    u64::try_from(bytes).map_err(|_| too_large())
}

/// A duration in the shortest form [`parse_duration`] reads back exactly: the largest unit
/// that divides it (`90s`, `2m`, `1500us`).
pub(crate) fn format_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    let units = [
        ("d", 86_400 * NANOS_PER_SECOND),
        ("h", 3_600 * NANOS_PER_SECOND),
        ("m", 60 * NANOS_PER_SECOND),
        ("s", NANOS_PER_SECOND),
        ("ms", 1_000_000),
        ("us", 1_000),
    ];
    if nanos == 0 {
        return "0s".into();
    }
    units
        .iter()
        .find(|(_, size)| nanos.is_multiple_of(*size))
        .map_or_else(
            || format!("{nanos}ns"),
            |(unit, size)| format!("{}{unit}", nanos / size),
        )
}

/// Serializes an optional duration as [`format_duration`] writes it, for fields skipped when
/// `None`.
pub(crate) fn serialize_optional_duration<S: serde::Serializer>(
    duration: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match duration {
        Some(duration) => serializer.serialize_str(&format_duration(*duration)),
        None => serializer.serialize_none(),
    }
}

/// A size in the form [`parse_memory_size`] reads back exactly: the largest binary unit that
/// divides it (`64MiB`), else the largest decimal one (`5MB`), else bytes.
pub(crate) fn format_memory_size(bytes: u64) -> String {
    let bytes = u128::from(bytes);
    let binary = [
        ("EiB", 1u128 << 60),
        ("PiB", 1 << 50),
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    let decimal = [
        ("EB", 1_000_000_000_000_000_000u128),
        ("PB", 1_000_000_000_000_000),
        ("TB", 1_000_000_000_000),
        ("GB", 1_000_000_000),
        ("MB", 1_000_000),
        ("kB", 1_000),
    ];
    if bytes == 0 {
        return "0".into();
    }
    binary
        .iter()
        .chain(&decimal)
        .find(|(_, size)| bytes.is_multiple_of(*size))
        .map_or_else(
            || bytes.to_string(),
            |(unit, size)| format!("{}{unit}", bytes / size),
        )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn seconds(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn durations_as_cloudflow_users_write_them() {
        for (text, expected) in [
            ("42 m", seconds(42 * 60)),
            ("52m", seconds(52 * 60)),
            ("2 minutes", seconds(120)),
            ("1 h", seconds(3_600)),
            ("500 ms", Duration::from_millis(500)),
            ("3 days", seconds(3 * 86_400)),
            ("10 seconds", seconds(10)),
            ("1 second", seconds(1)),
            ("250us", Duration::from_micros(250)),
            ("7 nanos", Duration::from_nanos(7)),
            ("1.5 s", Duration::from_millis(1_500)),
            ("  5s  ", seconds(5)),
            ("1m 30s", seconds(90)),
            ("1h30m", seconds(5_400)),
            ("2 hrs", seconds(7_200)),
        ] {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn durations_in_iso_8601_form() {
        for (text, expected) in [
            ("PT30S", seconds(30)),
            ("PT1H30M", seconds(5_400)),
            ("P1DT12H", seconds(36 * 3_600)),
            ("P2D", seconds(2 * 86_400)),
            ("pt0.25s", Duration::from_millis(250)),
            ("PT1M0.5S", Duration::from_millis(60_500)),
        ] {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
        for text in ["P", "PT", "PT5", "PT1S2M", "P1Y", "PT1.5M", "PTS"] {
            let error = parse_duration(text).unwrap_err();
            assert!(
                error.contains("not an ISO 8601 duration"),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn a_bare_number_is_not_a_duration_except_zero() {
        assert_eq!(
            parse_duration("30"),
            Err("'30' is not a duration: it needs a unit, such as '30ms', '30s' or '30m' (a bare number is not taken to mean milliseconds)".into())
        );
        assert!(parse_duration(" 1000 ").unwrap_err().contains("'1000s'"));
        assert!(parse_duration("1.5").is_err());
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("0.0"), Ok(Duration::ZERO));
    }

    #[test]
    fn durations_are_refused_with_the_reason() {
        assert_eq!(
            parse_duration("often"),
            Err("'often' is not a duration (write it like 250ms, 5s or 1m 30s)".into())
        );
        assert_eq!(
            parse_duration("5 M").unwrap_err(),
            "'5 M' is not a duration: unknown unit 'M' (the units are ns, us, ms, s, m, h and d, or nanoseconds, microseconds, milliseconds, seconds, minutes, hours and days)",
            "units are lowercase"
        );
        assert!(
            parse_duration("1 week")
                .unwrap_err()
                .contains("unknown unit 'week'")
        );
        assert!(
            parse_duration("-5s")
                .unwrap_err()
                .contains("cannot be negative")
        );
        assert!(
            parse_duration("1m 30")
                .unwrap_err()
                .contains("needs a unit")
        );
        assert!(
            parse_duration("0.5ns")
                .unwrap_err()
                .contains("whole number of nanoseconds")
        );
        assert!(
            parse_duration("99999999999999999999 d")
                .unwrap_err()
                .contains("too long")
        );
        assert!(parse_duration("").is_err());
        assert!(parse_duration("1.s").is_err());
    }

    #[test]
    fn sizes_follow_hocon_powers_of_two_for_single_letters() {
        for (text, expected) in [
            ("1024", 1024),
            ("512k", 512 << 10),
            ("512 K", 512 << 10),
            ("1G", 1 << 30),
            ("1 g", 1 << 30),
            ("64Mi", 64 << 20),
            ("2GiB", 2 << 30),
            ("1 kB", 1_000),
            ("3 MB", 3_000_000),
            ("1 gigabyte", 1_000_000_000),
            ("2 mebibytes", 2 << 20),
            ("10 bytes", 10),
            ("1.5k", 1_536),
            ("1 E", 1 << 60),
        ] {
            assert_eq!(parse_memory_size(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn sizes_are_refused_with_the_reason() {
        assert!(
            parse_memory_size("12 parsecs")
                .unwrap_err()
                .contains("unknown unit 'parsecs'")
        );
        assert!(
            parse_memory_size("1KB")
                .unwrap_err()
                .contains("write kB (1000 bytes) or KiB (1024 bytes)")
        );
        assert!(
            parse_memory_size("99999999999999Ti")
                .unwrap_err()
                .contains("too large")
        );
        assert!(parse_memory_size("1 ZB").unwrap_err().contains("too large"));
        assert!(
            parse_memory_size("0.1k")
                .unwrap_err()
                .contains("whole number of bytes")
        );
        assert!(parse_memory_size("1 2").is_err());
        assert!(
            parse_memory_size("-1")
                .unwrap_err()
                .contains("cannot be negative")
        );
    }

    #[test]
    fn formats_read_back_exactly() {
        assert_eq!(format_duration(seconds(90)), "90s");
        assert_eq!(format_duration(seconds(120)), "2m");
        assert_eq!(format_duration(Duration::from_micros(1_500)), "1500us");
        assert_eq!(format_duration(Duration::ZERO), "0s");
        assert_eq!(format_memory_size(64 << 20), "64MiB");
        assert_eq!(format_memory_size(5_000_000), "5MB");
        assert_eq!(format_memory_size(1_500), "1500");
    }

    proptest! {
        #[test]
        fn formatted_durations_parse_back(nanos in any::<u64>()) {
            let duration = Duration::from_nanos(nanos);
            prop_assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
        }

        #[test]
        fn formatted_sizes_parse_back(bytes in any::<u64>()) {
            prop_assert_eq!(parse_memory_size(&format_memory_size(bytes)), Ok(bytes));
        }
    }
}
