use runnel_streamlet::prelude::*;

/// A temperature reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
pub(crate) struct Reading {
    pub sensor: String,
    pub celsius: f64,
}

pub(crate) fn reading(sensor: &str, celsius: f64) -> Reading {
    Reading {
        sensor: sensor.to_owned(),
        celsius,
    }
}

pub(crate) const IN: Inlet<Reading> = Inlet::new("in");
pub(crate) const OUT: Outlet<Reading> = Outlet::new("out");

/// A user's click at an event time (milliseconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
pub(crate) struct Click {
    pub user: String,
    pub time: i64,
}

/// Click `i` of `users` taking turns: event time moves 100 ms a click, and every fifth one
/// is 2 s late.
pub(crate) fn click(i: i64, users: i64) -> Click {
    Click {
        user: format!("user-{}", i % users),
        time: i * 100 - if i % 5 == 4 { 2_000 } else { 0 },
    }
}

/// The count of `clicks` per user and 10-second window, computed directly.
pub(crate) fn counts_per_ten_seconds(
    clicks: impl IntoIterator<Item = Click>,
) -> std::collections::BTreeMap<(String, i64), i64> {
    let mut counts = std::collections::BTreeMap::new();
    for click in clicks {
        let start = click.time - click.time.rem_euclid(10_000);
        *counts.entry((click.user, start)).or_default() += 1;
    }
    counts
}
