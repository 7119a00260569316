//! Keyed state in the test kit: values, lists and maps per key, timers in both time
//! domains, time to live, and the errors of a misdeclared streamlet.

use std::time::Duration;

use runnel_host::testkit::{TestRecord, TestRun};
use runnel_streamlet::prelude::*;
use runnel_streamlet::state::{Keyed, ListState, MapState, TimeDomain, ValueState};
use runnel_streamlet::watermark::Watermarks;

/// A payment by a card at a merchant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Payment {
    card: String,
    merchant: String,
    cents: i64,
}

/// What a card's state looked like after a payment, or when a timer fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, AvroSchema)]
struct Report {
    card: String,
    event: String,
    total: i64,
    recent: Vec<i64>,
    /// `merchant=cents`, sorted.
    merchants: Vec<String>,
}

const PAYMENTS: Inlet<Payment> = Inlet::new("payments");
const REPORTS: Outlet<Report> = Outlet::new("reports");
const TOTAL: ValueState<i64> = ValueState::new("total");
const RECENT: ListState<i64> = ListState::new("recent");
const MERCHANTS: MapState<String, i64> = MapState::new("merchants");
const SEEN: ValueState<bool> = ValueState::new("seen").expire_after(Duration::from_secs(3));

fn payment(card: &str, merchant: &str, cents: i64) -> Payment {
    Payment {
        card: card.into(),
        merchant: merchant.into(),
        cents,
    }
}

/// Keeps per card a total, the last three amounts and the sum per merchant; reports after
/// each payment, and a summary when a timer fires: event time 10 s after a card's first
/// payment, processing time 5 s after it.
struct Cards;

impl Streamlet for Cards {
    fn shape(&self) -> Shape {
        Shape::new().inlet(PAYMENTS).outlet(REPORTS).keyed_state()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(PAYMENTS);
        let output = ctx.outlet(REPORTS);
        let mut state = ctx
            .keyed_state()?
            .watermarks(Watermarks::bounded(Duration::ZERO));
        while let Some(next) = state.next(&mut input).await? {
            let (partition, card, event) = match &next {
                Keyed::Message(message) => {
                    let payment = message.value();
                    let now = ctx.clock().now_millis();
                    let mut entry = state.entry(message.partition(), payment.card.as_bytes());
                    let total = entry
                        .value(TOTAL)
                        .update(|total| total.unwrap_or(0) + payment.cents)?;
                    if total == payment.cents {
                        entry.set_timer(TimeDomain::EventTime, message.timestamp() + 10_000);
                        entry.set_timer(TimeDomain::ProcessingTime, now + 5_000);
                    }
                    let mut recent = entry.list(RECENT).get()?;
                    recent.push(payment.cents);
                    recent.drain(..recent.len().saturating_sub(3));
                    entry.list(RECENT).set(&recent)?;
                    let merchant = payment.merchant.clone();
                    let sum = entry.map(MERCHANTS).get(&merchant)?.unwrap_or(0);
                    entry
                        .map(MERCHANTS)
                        .insert(&merchant, &(sum + payment.cents))?;
                    let seen = entry.value(SEEN).get()?.is_some();
                    entry.value(SEEN).set(&true)?;
                    let event = if seen { "payment (seen)" } else { "payment" };
                    (message.partition(), payment.card.clone(), event.to_owned())
                }
                Keyed::Timer(timer) => {
                    let card = String::from_utf8(timer.key.clone()).unwrap();
                    (
                        timer.partition,
                        card,
                        format!("{:?} timer at {}", timer.domain, timer.time),
                    )
                }
            };
            let mut entry = state.entry(partition, card.as_bytes());
            let mut merchants: Vec<String> = entry
                .map(MERCHANTS)
                .entries()?
                .into_iter()
                .map(|(merchant, cents)| format!("{merchant}={cents}"))
                .collect();
            merchants.sort();
            let report = Report {
                total: entry.value(TOTAL).get()?.unwrap_or(0),
                recent: entry.list(RECENT).get()?,
                merchants,
                card,
                event,
            };
            output.send(&report).await?;
            if let Keyed::Message(message) = next {
                message.commit();
            }
        }
        Ok(())
    }
}

#[tokio::test]
async fn values_lists_and_maps_are_kept_per_key() {
    let run = TestRun::new(Cards)
        .input(
            PAYMENTS,
            [
                payment("a", "shop", 100),
                payment("b", "shop", 7),
                payment("a", "cafe", 20),
                payment("a", "shop", 1),
                payment("a", "cafe", 2),
            ],
        )
        .run()
        .await
        .unwrap();
    let payments: Vec<Report> = run
        .output(REPORTS)
        .into_iter()
        .filter(|report| report.event.starts_with("payment"))
        .collect();
    assert_eq!(payments.len(), 5);
    let last_of_a = &payments[4];
    assert_eq!(last_of_a.total, 123);
    assert_eq!(last_of_a.recent, vec![20, 1, 2]);
    assert_eq!(
        last_of_a.merchants,
        vec!["cafe=22".to_owned(), "shop=101".to_owned()]
    );
    assert_eq!((payments[1].card.as_str(), payments[1].total), ("b", 7));
}

#[tokio::test]
async fn timers_fire_in_processing_and_event_time_and_values_expire() {
    let record = |cents, timestamp| {
        TestRecord::new(payment("a", "shop", cents))
            .key("a")
            .timestamp(timestamp)
    };
    let run = TestRun::new(Cards)
        .at(1_000)
        .input_records(PAYMENTS, [record(1, 50_000)])
        .at(2_000)
        .input_records(PAYMENTS, [record(2, 55_000)])
        // 3 s after the last write, `seen` has expired.
        .at(5_500)
        .input_records(PAYMENTS, [record(4, 59_000)])
        // The watermark passes 60 s: the event-time timer set at 50 s + 10 s fires.
        .at(7_000)
        .input_records(PAYMENTS, [record(8, 61_000)])
        .run()
        .await
        .unwrap();
    let events: Vec<(i64, String, i64)> = run
        .timed_output(REPORTS)
        .unwrap()
        .into_iter()
        .map(|(time, report)| (time, report.event, report.total))
        .collect();
    assert_eq!(
        events,
        vec![
            (1_000, "payment".to_owned(), 1),
            (2_000, "payment (seen)".to_owned(), 3),
            (5_500, "payment".to_owned(), 7),
            // 5 s of processing time after the first payment.
            (6_000, "ProcessingTime timer at 6000".to_owned(), 7),
            (7_000, "payment (seen)".to_owned(), 15),
            (7_000, "EventTime timer at 60000".to_owned(), 15),
        ]
    );
    // The status shows the watermark keyed state follows (the last record's time, with
    // no out-of-orderness allowed), as it does for windows.
    assert_eq!(run.metrics().watermark(), Some(61_000));
}

#[tokio::test]
async fn event_time_timers_due_by_the_end_of_a_bounded_input_fire() {
    let run = TestRun::new(Cards)
        .input_records(
            PAYMENTS,
            [TestRecord::new(payment("z", "shop", 5)).timestamp(1_000)],
        )
        .run()
        .await
        .unwrap();
    let events: Vec<String> = run
        .output(REPORTS)
        .into_iter()
        .map(|report| report.event)
        .collect();
    assert_eq!(events, vec!["payment", "EventTime timer at 11000"]);
}

/// Ends a card's session 30 s of event time after its last payment, with the session's
/// total: each payment moves the card's event-time timer.
struct Sessions;

const SESSION_TOTAL: ValueState<i64> = ValueState::new("session-total");
const SESSION_TIMER: ValueState<i64> = ValueState::new("session-timer");

impl Streamlet for Sessions {
    fn shape(&self) -> Shape {
        Shape::new().inlet(PAYMENTS).outlet(REPORTS).keyed_state()
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(PAYMENTS);
        let output = ctx.outlet(REPORTS);
        let mut state = ctx.keyed_state()?;
        while let Some(next) = state.next(&mut input).await? {
            match next {
                Keyed::Message(message) => {
                    let payment = message.value();
                    let mut card = state.entry(message.partition(), payment.card.as_bytes());
                    card.value(SESSION_TOTAL)
                        .update(|total| total.unwrap_or(0) + payment.cents)?;
                    if let Some(previous) = card.value(SESSION_TIMER).get()? {
                        card.delete_timer(TimeDomain::EventTime, previous);
                    }
                    let expiry = message.timestamp() + 30_000;
                    card.set_timer(TimeDomain::EventTime, expiry);
                    card.value(SESSION_TIMER).set(&expiry)?;
                    message.commit();
                }
                Keyed::Timer(timer) => {
                    let mut card = state.entry(timer.partition, timer.key.clone());
                    let total = card.value(SESSION_TOTAL).get()?.unwrap_or(0);
                    card.value(SESSION_TOTAL).clear();
                    card.value(SESSION_TIMER).clear();
                    let report = Report {
                        card: String::from_utf8_lossy(&timer.key).into_owned(),
                        event: format!("session ended at {}", timer.time),
                        total,
                        recent: Vec::new(),
                        merchants: Vec::new(),
                    };
                    output.send(&report).await?;
                }
            }
        }
        Ok(())
    }
}

/// Scripted watermarks fire event-time timers as a run's own watermarks do: when the
/// watermark passes the timer, with no record needed to arrive after it.
#[tokio::test]
async fn scripted_watermarks_fire_event_time_timers_when_they_pass_them() {
    let record = |card: &'static str, cents, timestamp| {
        TestRecord::new(payment(card, "shop", cents))
            .key(card)
            .timestamp(timestamp)
    };
    let run = TestRun::new(Sessions)
        .at(1_000)
        .input_records(PAYMENTS, [record("a", 1, 10_000), record("b", 5, 12_000)])
        .at(2_000)
        .input_records(PAYMENTS, [record("a", 2, 20_000)])
        // Past b's expiry (42 s), not a's (50 s): only b's session ends.
        .at(3_000)
        .watermark(45_000)
        .at(4_000)
        .watermark(50_000)
        .run()
        .await
        .unwrap();
    let ended: Vec<(i64, String, String, i64)> = run
        .timed_output(REPORTS)
        .unwrap()
        .into_iter()
        .map(|(time, report)| (time, report.card, report.event, report.total))
        .collect();
    assert_eq!(
        ended,
        vec![
            (3_000, "b".into(), "session ended at 42000".into(), 5),
            (4_000, "a".into(), "session ended at 50000".into(), 3),
        ]
    );
}

/// Asks for keyed state without declaring it.
struct Undeclared;

impl Streamlet for Undeclared {
    fn shape(&self) -> Shape {
        Shape::new().inlet(PAYMENTS).checkpointed_by_partition()
    }

    async fn run(self, ctx: Context) -> Result<()> {
        ctx.keyed_state()?;
        Ok(())
    }
}

#[tokio::test]
async fn asking_for_undeclared_keyed_state_is_an_error_that_says_what_to_add() {
    let error = TestRun::new(Undeclared)
        .input(PAYMENTS, [payment("a", "shop", 1)])
        .run()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("add `.keyed_state()` to its Shape"),
        "{error}"
    );
}
