//! [`KafkaConsumer`]: a member of a consumer group, fed by a polling thread.
//!
//! One thread per consumer polls librdkafka and hands batches of records to the runtime
//! over a small bounded channel; when the runtime stays behind for a while, the thread
//! pauses its partitions and keeps polling, so the member stays in the group however slow the
//! streamlet is. Rebalance callbacks run on that thread:
//!
//! - **before partitions are revoked**, the offsets the runtime has
//!   [staged](runnel_backend::Consumer::stage) for them (their outputs are acknowledged) are
//!   committed synchronously, so the next owner starts where this one really got to;
//! - **after partitions are assigned**, each one's start offset is resolved explicitly (a
//!   pending seek, the committed offset, else the earliest or latest one) and assigned, so
//!   [`positions`](runnel_backend::Consumer::positions) is exact from the first moment.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rdkafka::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer as _, ConsumerContext, ConsumerGroupMetadata, Rebalance,
    RebalanceProtocol,
};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Headers as _, Message as _};
use rdkafka::statistics::Statistics;
use rdkafka::{Offset, TopicPartitionList};
use runnel_backend::{
    CommitOffset, ConsumedRecord, Consumer, ConsumerConfig, Error, Headers, Record, Result,
    StartFrom, TopicPartition,
};
use tokio::sync::mpsc;

use crate::context;
use crate::copy_buffer::CopyBuffer;
use crate::error::Redactor;
use crate::metadata::{Metadata, blocking};

/// Records per batch handed from the polling thread.
const BATCH: usize = 2048;
/// Batches waiting in the channel before the thread pauses its partitions.
const BATCHES_AHEAD: usize = 4;
/// How long one poll of the thread blocks; also how quickly it notices a stop.
const POLL: Duration = Duration::from_millis(100);
/// How long the thread waits for room in the channel before it pauses its partitions.
/// Pausing drops what librdkafka prefetched, and resuming costs a fetch round trip, so a
/// streamlet that is only briefly behind (waiting for acknowledgements) is waited for;
/// rebalance callbacks are served at most this much later, far inside
/// `max.poll.interval.ms`.
const PATIENCE: Duration = Duration::from_millis(500);
/// How often the thread tries the channel again while waiting.
const RETRY: Duration = Duration::from_millis(1);

/// What the polling thread hands over, in order.
enum Batch {
    Records(Vec<ConsumedRecord>),
    /// Every record of this partition after this point was read after a seek.
    Sought(TopicPartition),
    Failed(Error),
}

/// What the runtime asks of the polling thread.
enum Command {
    Seek(TopicPartition, u64),
}

/// What the polling thread, the rebalance callbacks and the runtime share.
pub(crate) struct Shared {
    pub(crate) group: String,
    /// The member's static name (`group.instance.id`), if it has one.
    static_member: Option<String>,
    pub(crate) start_from: StartFrom,
    /// Offsets go through a transaction instead of the group commit.
    pub(crate) transactional: bool,
    pub(crate) redactor: Redactor,
    pub(crate) metadata: Arc<Metadata>,
    pub(crate) timeout: Duration,
    /// Assigned partitions, with the offset of the next record the runtime receives.
    positions: Mutex<BTreeMap<TopicPartition, u64>>,
    /// Offsets safe to commit (outputs acknowledged), not yet committed.
    staged: Mutex<BTreeMap<TopicPartition, u64>>,
    /// Seeks asked for before the partitions were assigned; they win over committed
    /// offsets at the assignment.
    pending_seeks: Mutex<BTreeMap<TopicPartition, u64>>,
    /// Lag per assigned partition from librdkafka's latest statistics.
    client_lag: Mutex<BTreeMap<TopicPartition, u64>>,
    /// How many rebalances took partitions from this member.
    revocations: AtomicU64,
    /// Whether the group has assigned this member its partitions yet.
    assigned: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn new(
        config: &ConsumerConfig,
        transactional: bool,
        redactor: Redactor,
        metadata: Arc<Metadata>,
        timeout: Duration,
    ) -> Self {
        Shared {
            group: config.group.clone(),
            static_member: config.static_member.clone(),
            start_from: config.start_from,
            transactional,
            redactor,
            metadata,
            timeout,
            positions: Mutex::default(),
            staged: Mutex::default(),
            revocations: AtomicU64::new(0),
            assigned: AtomicBool::new(false),
            pending_seeks: Mutex::default(),
            client_lag: Mutex::default(),
        }
    }

    /// [`Error::MemberFenced`] if `code` says another member took this one's static name.
    fn fenced(&self, code: Option<RDKafkaErrorCode>) -> Option<Error> {
        (code == Some(RDKafkaErrorCode::FencedInstanceId)).then(|| Error::MemberFenced {
            group: self.group.clone(),
            member: self.static_member.clone().unwrap_or_default(),
        })
    }

    /// Keeps the lag librdkafka reports for the partitions assigned now (it reports -1 where
    /// it knows no committed offset or end yet, and keeps partitions it no longer fetches).
    fn record_statistics(&self, statistics: &Statistics) {
        let positions = lock(&self.positions);
        let mut lag = BTreeMap::new();
        for (name, topic) in &statistics.topics {
            for (number, partition) in &topic.partitions {
                let (Ok(number), Ok(behind)) = (
                    u32::try_from(*number),
                    u64::try_from(partition.consumer_lag),
                ) else {
                    continue;
                };
                let assigned = positions
                    .keys()
                    .find(|tp| tp.partition == number && &*tp.topic == name.as_str());
                if let Some(tp) = assigned {
                    lag.insert(tp.clone(), behind);
                }
            }
        }
        drop(positions);
        *lock(&self.client_lag) = lag;
    }

    fn partitions_of(&self, list: &TopicPartitionList) -> Vec<TopicPartition> {
        list.elements()
            .iter()
            .map(|e| TopicPartition::new(self.metadata.intern(e.topic()), e.partition() as u32))
            .collect()
    }

    /// Commits the staged offsets of `revoked` before they go to another member.
    fn revoke(&self, consumer: &BaseConsumer<GroupContext>, revoked: &TopicPartitionList) {
        let revoked = self.partitions_of(revoked);
        let staged: Vec<(TopicPartition, u64)> = {
            let mut staged = lock(&self.staged);
            revoked
                .iter()
                .filter_map(|tp| staged.remove(tp).map(|offset| (tp.clone(), offset)))
                .collect()
        };
        lock(&self.positions).retain(|tp, _| !revoked.contains(tp));
        if !revoked.is_empty() {
            self.revocations.fetch_add(1, Ordering::SeqCst);
        }
        tracing::info!(group = %self.group, "partitions revoked: {}", list(&revoked));
        if self.transactional || staged.is_empty() {
            return;
        }
        let list = offset_list(staged.iter().map(|(tp, o)| (tp, *o)));
        match consumer.commit(&list, CommitMode::Sync) {
            Ok(()) => {
                tracing::debug!(group = %self.group, "committed {} partitions before they were revoked", staged.len())
            }
            Err(error) => tracing::warn!(
                group = %self.group,
                "committing offsets before a rebalance failed (their records will be read again): {}",
                self.redactor.error(&error)
            ),
        }
    }

    /// Starts every newly assigned partition at an explicit offset: a pending seek, the
    /// committed one, else the earliest or latest one. Reading the committed offsets or a
    /// partition's ends is retried; a partition whose start still cannot be read is assigned
    /// a logical start that librdkafka resolves itself (the committed offset, else the
    /// earliest or latest), and tracked all the same, so its commits, its end of input and
    /// its watermark are never skipped.
    fn assign(&self, consumer: &BaseConsumer<GroupContext>, assigned: &TopicPartitionList) {
        let committed = retried(|| consumer.committed_offsets(assigned.clone(), self.timeout))
            .map_err(|error| {
                tracing::warn!(group = %self.group, "reading committed offsets failed; librdkafka resolves them instead: {}", self.redactor.error(&error));
            })
            .ok();
        let mut explicit = TopicPartitionList::new();
        let mut starts = Vec::new();
        let mut sought = std::mem::take(&mut *lock(&self.pending_seeks));
        for element in assigned.elements() {
            let (topic, partition) = (element.topic(), element.partition());
            let tp = TopicPartition::new(self.metadata.intern(topic), partition as u32);
            let seek = sought.remove(&tp).map(|offset| offset as i64);
            let stored = seek.or_else(|| {
                committed
                    .as_ref()
                    .and_then(|list| list.find_partition(topic, partition))
                    .and_then(|e| match e.offset() {
                        Offset::Offset(offset) if offset >= 0 => Some(offset),
                        _ => None,
                    })
            });
            let start = match stored {
                Some(offset) => Offset::Offset(offset),
                // Unknown committed offsets: let librdkafka look them up.
                None if committed.is_none() => Offset::Stored,
                None => match retried(|| consumer.fetch_watermarks(topic, partition, self.timeout))
                {
                    Ok((low, high)) => Offset::Offset(match self.start_from {
                        StartFrom::Earliest => low,
                        StartFrom::Latest => high,
                    }),
                    Err(error) => {
                        tracing::warn!(group = %self.group, "reading the offsets of {topic}/{partition} failed; librdkafka resolves its start instead: {}", self.redactor.error(&error));
                        match self.start_from {
                            StartFrom::Earliest => Offset::Beginning,
                            StartFrom::Latest => Offset::End,
                        }
                    }
                },
            };
            if explicit
                .add_partition_offset(topic, partition, start)
                .is_ok()
            {
                // A logical start is at or after offset 0; the first record read moves the
                // position to where reading really began.
                let position = match start {
                    Offset::Offset(offset) => offset.max(0) as u64,
                    _ => 0,
                };
                starts.push((tp, position));
            }
        }
        // Seeks for partitions another member got wait for a later assignment.
        lock(&self.pending_seeks).append(&mut sought);
        let assigned_again = match consumer.rebalance_protocol() {
            RebalanceProtocol::Cooperative => consumer
                .incremental_unassign(assigned)
                .and_then(|()| consumer.incremental_assign(&explicit)),
            _ => consumer.assign(&explicit),
        };
        if let Err(error) = assigned_again {
            tracing::warn!(group = %self.group, "assigning start offsets failed: {}", self.redactor.error(&error));
            return;
        }
        // librdkafka keeps a partition's pause flag across reassignment; a partition paused
        // before a rebalance must not stay paused after it (the polling thread pauses again
        // if the runtime is still behind).
        let _ = consumer.resume(&explicit);
        tracing::info!(
            group = %self.group,
            "partitions assigned: {}",
            list(&starts.iter().map(|(tp, _)| tp.clone()).collect::<Vec<_>>())
        );
        lock(&self.positions).extend(starts);
        self.assigned.store(true, Ordering::SeqCst);
    }
}

/// How often a metadata request made during a rebalance is tried before giving up.
const ATTEMPTS: u32 = 3;

/// `request`, tried up to [`ATTEMPTS`] times with a short pause between tries.
fn retried<T>(
    mut request: impl FnMut() -> std::result::Result<T, KafkaError>,
) -> std::result::Result<T, KafkaError> {
    let mut attempt = 1;
    loop {
        match request() {
            Ok(value) => return Ok(value),
            Err(error) if attempt >= ATTEMPTS => return Err(error),
            Err(_) => {
                std::thread::sleep(Duration::from_millis(100) * attempt);
                attempt += 1;
            }
        }
    }
}

/// `topic/0, topic/1`, or `none`.
fn list(partitions: &[TopicPartition]) -> String {
    if partitions.is_empty() {
        return "none".to_owned();
    }
    partitions
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn offset_list<'a>(offsets: impl Iterator<Item = (&'a TopicPartition, u64)>) -> TopicPartitionList {
    let mut list = TopicPartitionList::new();
    for (tp, offset) in offsets {
        // Only fails for an out-of-range offset, which a u64 from the log is not.
        let _ = list.add_partition_offset(
            &tp.topic,
            tp.partition as i32,
            Offset::Offset(offset as i64),
        );
    }
    list
}

/// The consumer's librdkafka context: logging and the rebalance hooks.
pub(crate) struct GroupContext {
    pub(crate) shared: Arc<Shared>,
}

impl ClientContext for GroupContext {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        context::log(&self.shared.redactor, level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        context::report_error(&self.shared.redactor, &error, reason);
    }

    fn stats(&self, statistics: Statistics) {
        self.shared.record_statistics(&statistics);
    }
}

impl ConsumerContext for GroupContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(revoked) = rebalance {
            self.shared.revoke(consumer, revoked);
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(assigned) = rebalance {
            self.shared.assign(consumer, assigned);
        }
    }
}

pub(crate) type Client = BaseConsumer<GroupContext>;

/// A member of a consumer group on Kafka.
pub(crate) struct KafkaConsumer {
    shared: Arc<Shared>,
    client: Mutex<Option<Arc<Client>>>,
    batches: tokio::sync::Mutex<mpsc::Receiver<Batch>>,
    buffered: Mutex<VecDeque<ConsumedRecord>>,
    /// Partitions sought whose older records may still arrive; dropped until the thread's
    /// `Sought` marker for them.
    discarding: Mutex<Vec<TopicPartition>>,
    commands: Mutex<std::sync::mpsc::Sender<Command>>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for KafkaConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaConsumer")
            .field("group", &self.shared.group)
            .finish_non_exhaustive()
    }
}

impl KafkaConsumer {
    /// Subscribes `client` to `topics` and starts its polling thread.
    pub(crate) fn start(client: Client, topics: &[&str]) -> std::result::Result<Self, KafkaError> {
        client.subscribe(topics)?;
        let shared = client.context().shared.clone();
        let names = Names::reading(topics.iter().copied(), &shared.metadata);
        let client = Arc::new(client);
        let (sender, batches) = mpsc::channel(BATCHES_AHEAD);
        let (commands, orders) = std::sync::mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name(format!("kafka-consumer {}", shared.group))
            .spawn({
                let (client, stop) = (client.clone(), stop.clone());
                move || poll_loop(&client, names, &sender, &orders, &stop)
            })
            .expect("starting a consumer thread");
        Ok(KafkaConsumer {
            shared,
            client: Mutex::new(Some(client)),
            batches: tokio::sync::Mutex::new(batches),
            buffered: Mutex::default(),
            discarding: Mutex::default(),
            commands: Mutex::new(commands),
            stop,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The group metadata a transaction needs to commit this member's offsets.
    pub(crate) fn group_metadata(&self) -> Option<ConsumerGroupMetadata> {
        lock(&self.client).as_ref()?.group_metadata()
    }

    fn take(&self, max_records: usize) -> Vec<ConsumedRecord> {
        let mut buffered = lock(&self.buffered);
        let count = max_records.max(1).min(buffered.len());
        let records: Vec<ConsumedRecord> = buffered.drain(..count).collect();
        drop(buffered);
        self.advance(records)
    }

    /// Moves the positions past `records`, which the runtime receives now, leaving out the
    /// records of partitions taken away since they were fetched.
    fn advance(&self, mut records: Vec<ConsumedRecord>) -> Vec<ConsumedRecord> {
        // The next position of each partition in the batch, found first, so the shared map
        // (hashed by topic name) is looked up once per partition rather than per record.
        let mut nexts: Vec<(&ConsumedRecord, u64)> = Vec::new();
        for record in &records {
            let next = record.offset + 1;
            match nexts
                .iter_mut()
                .find(|(seen, _)| seen.partition == record.partition && seen.topic == record.topic)
            {
                Some((_, known)) => *known = (*known).max(next),
                None => nexts.push((record, next)),
            }
        }
        let mut positions = lock(&self.shared.positions);
        let mut revoked = Vec::new();
        for (record, next) in nexts {
            let tp = TopicPartition::new(record.topic.clone(), record.partition);
            match positions.get_mut(&tp) {
                Some(position) => *position = (*position).max(next),
                // Taken away since it was fetched: its records are the next owner's to read.
                None => revoked.push(tp),
            }
        }
        drop(positions);
        if !revoked.is_empty() {
            records.retain(|record| {
                !revoked
                    .iter()
                    .any(|tp| tp.partition == record.partition && tp.topic == record.topic)
            });
        }
        records
    }

    /// Receives a handed-over batch: straight to the caller when nothing is buffered before
    /// it (the rest of a batch larger than `max_records` is buffered), else behind what is
    /// buffered. `None` when nothing of it is for the caller yet.
    fn receive(
        &self,
        mut batch: Vec<ConsumedRecord>,
        max_records: usize,
    ) -> Option<Vec<ConsumedRecord>> {
        // Held until the batch is placed, as a seek changes both.
        let discarding = lock(&self.discarding);
        if !discarding.is_empty() {
            batch.retain(|record| {
                !discarding
                    .iter()
                    .any(|tp| tp.partition == record.partition && tp.topic == record.topic)
            });
        }
        let mut buffered = lock(&self.buffered);
        if !buffered.is_empty() || batch.is_empty() {
            buffered.extend(batch);
            return None;
        }
        let max_records = max_records.max(1);
        if batch.len() > max_records {
            buffered.extend(batch.drain(max_records..));
        }
        drop((buffered, discarding));
        Some(self.advance(batch))
    }

    /// Stops the polling thread and closes the client (leaving the group, committing staged
    /// offsets of the revoked partitions), on the calling thread.
    fn shut_down(
        stop: &AtomicBool,
        thread: Option<std::thread::JoinHandle<()>>,
        client: Option<Arc<Client>>,
    ) {
        stop.store(true, Ordering::SeqCst);
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        if let Some(client) = &client
            && client.context().shared.static_member.is_some()
        {
            leave_group(client);
        }
        drop(client);
    }
}

/// How long a static member stopped on purpose waits to leave its group.
const LEAVE_TIMEOUT: Duration = Duration::from_secs(3);

/// Makes a static member that is stopped on purpose leave its group. Closing alone does
/// not (KIP-345: a static member is expected back under its name), which would keep its
/// partitions, and tools that want the group empty, waiting for the session timeout.
/// Unsubscribing does: librdkafka serves the revocation (the callback commits the staged
/// offsets) and then sends a LeaveGroup. A member that is killed never gets here, so a
/// process started again after a crash still takes its partitions back at once.
fn leave_group(client: &Client) {
    client.unsubscribe();
    let deadline = Instant::now() + LEAVE_TIMEOUT;
    let mut quiet_polls = 0;
    while Instant::now() < deadline && quiet_polls < 3 {
        let _ = client.poll(Duration::from_millis(50));
        let assigned = client.assignment().map_or(0, |list| list.count());
        // Once nothing is assigned, a few more polls let the LeaveGroup go out.
        if assigned == 0 {
            quiet_polls += 1;
        }
    }
}

#[async_trait]
impl Consumer for KafkaConsumer {
    async fn poll(&self, max_records: usize) -> Result<Vec<ConsumedRecord>> {
        loop {
            if !lock(&self.buffered).is_empty() {
                return Ok(self.take(max_records));
            }
            let mut batches = self.batches.lock().await;
            match batches.recv().await {
                Some(Batch::Records(batch)) => {
                    if let Some(records) = self.receive(batch, max_records) {
                        return Ok(records);
                    }
                }
                Some(Batch::Sought(tp)) => lock(&self.discarding).retain(|d| *d != tp),
                Some(Batch::Failed(error)) => return Err(error),
                None => return Err(Error::Closed),
            }
        }
    }

    async fn commit(&self, offsets: &[CommitOffset]) -> Result<()> {
        let Some(client) = lock(&self.client).clone() else {
            return Err(Error::Closed);
        };
        // Everything staged is acknowledged too; commit the furthest of both, for the
        // partitions this member still owns.
        let mut wanted: BTreeMap<TopicPartition, u64> = lock(&self.shared.staged).clone();
        for offset in offsets {
            let tp = TopicPartition::new(offset.topic.clone(), offset.partition);
            let entry = wanted.entry(tp).or_insert(offset.offset);
            *entry = (*entry).max(offset.offset);
        }
        {
            let positions = lock(&self.shared.positions);
            wanted.retain(|tp, _| positions.contains_key(tp));
        }
        if wanted.is_empty() {
            return Ok(());
        }
        let list = offset_list(wanted.iter().map(|(tp, o)| (tp, *o)));
        let shared = self.shared.clone();
        blocking(move || match client.commit(&list, CommitMode::Sync) {
            Ok(()) => {
                let mut staged = lock(&shared.staged);
                for (tp, offset) in &wanted {
                    if staged.get(tp).is_some_and(|s| s <= offset) {
                        staged.remove(tp);
                    }
                }
                Ok(())
            }
            Err(error) if rebalancing(&error) => {
                // The group is rebalancing: keep the offsets staged; the revocation callback
                // or the next commit writes them.
                tracing::debug!(group = %shared.group, "commit deferred: {}", shared.redactor.error(&error));
                Ok(())
            }
            Err(error) => Err(shared
                .fenced(error.rdkafka_error_code())
                .unwrap_or_else(|| Error::Commit {
                    group: shared.group.clone(),
                    source: shared.redactor.boxed(&error),
                })),
        })
        .await
    }

    async fn seek(&self, topic: &str, partition: u32, offset: u64) -> Result<()> {
        let tp = TopicPartition::new(self.shared.metadata.intern(topic), partition);
        let not_assigned = || Error::NotAssigned {
            topic: topic.to_owned(),
            partition,
        };
        let assigned = {
            let mut positions = lock(&self.shared.positions);
            let nothing_assigned = positions.is_empty();
            match positions.get_mut(&tp) {
                Some(position) => {
                    *position = offset;
                    true
                }
                None if nothing_assigned => false,
                None => return Err(not_assigned()),
            }
        };
        if !assigned {
            // Not assigned yet (Kafka assigns during the first polls): start there then,
            // if the partition exists.
            let (_, partitions) = self.shared.metadata.partitions(topic, false).await?;
            if partition >= partitions {
                return Err(not_assigned());
            }
            lock(&self.shared.pending_seeks).insert(tp, offset);
            return Ok(());
        }
        lock(&self.buffered).retain(|r| !(r.partition == partition && &*r.topic == topic));
        lock(&self.discarding).push(tp.clone());
        lock(&self.commands)
            .send(Command::Seek(tp, offset))
            .map_err(|_| Error::Closed)
    }

    fn stage(&self, offsets: &[CommitOffset]) {
        let mut staged = lock(&self.shared.staged);
        for offset in offsets {
            let tp = TopicPartition::new(offset.topic.clone(), offset.partition);
            let entry = staged.entry(tp).or_insert(offset.offset);
            *entry = (*entry).max(offset.offset);
        }
    }

    fn positions(&self) -> Vec<(TopicPartition, u64)> {
        lock(&self.shared.positions)
            .iter()
            .map(|(tp, offset)| (tp.clone(), *offset))
            .collect()
    }

    fn revocations(&self) -> u64 {
        self.shared.revocations.load(Ordering::SeqCst)
    }

    fn assigned(&self) -> bool {
        self.shared.assigned.load(Ordering::SeqCst)
    }

    fn client_lag(&self) -> Vec<(TopicPartition, u64)> {
        lock(&self.shared.client_lag)
            .iter()
            .map(|(tp, lag)| (tp.clone(), *lag))
            .collect()
    }

    async fn close(&self) -> Result<()> {
        let thread = lock(&self.thread).take();
        let client = lock(&self.client).take();
        let stop = self.stop.clone();
        tokio::task::spawn_blocking(move || Self::shut_down(&stop, thread, client))
            .await
            .map_err(|_| Error::Closed)
    }
}

impl Drop for KafkaConsumer {
    fn drop(&mut self) {
        let thread = lock(&self.thread).take();
        let client = lock(&self.client).take();
        if thread.is_none() && client.is_none() {
            return;
        }
        let stop = self.stop.clone();
        // Leaving the group takes a round trip; do not block the caller's (async) thread.
        let _ = std::thread::Builder::new()
            .name("kafka-consumer-close".into())
            .spawn(move || Self::shut_down(&stop, thread, client));
    }
}

/// Whether a commit failed only because the group is rebalancing.
fn rebalancing(error: &KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::RebalanceInProgress
                | RDKafkaErrorCode::IllegalGeneration
                | RDKafkaErrorCode::UnknownMemberId
                | RDKafkaErrorCode::NotCoordinator
                | RDKafkaErrorCode::CoordinatorLoadInProgress
                | RDKafkaErrorCode::CoordinatorNotAvailable
                | RDKafkaErrorCode::RequestTimedOut
        )
    )
}

/// The polling thread: reads batches and hands them over until stopped or nobody listens.
fn poll_loop(
    client: &Client,
    mut names: Names,
    sender: &mpsc::Sender<Batch>,
    orders: &std::sync::mpsc::Receiver<Command>,
    stop: &AtomicBool,
) {
    let shared = client.context().shared.clone();
    while !stop.load(Ordering::SeqCst) {
        while let Ok(Command::Seek(tp, offset)) = orders.try_recv() {
            // librdkafka's seek also drops what it fetched for the partition before.
            if let Err(error) = client.seek(
                &tp.topic,
                tp.partition as i32,
                Offset::Offset(offset as i64),
                shared.timeout,
            ) {
                tracing::warn!(group = %shared.group, "seeking {tp} to {offset} failed: {}", shared.redactor.error(&error));
            }
            if sender.blocking_send(Batch::Sought(tp)).is_err() {
                return;
            }
        }
        let mut batch = Vec::new();
        match client.poll(POLL) {
            None => continue,
            Some(Ok(message)) => batch.push(convert(&message, &mut names, &shared.metadata)),
            Some(Err(error)) => {
                if error.rdkafka_error_code() == Some(RDKafkaErrorCode::Fatal) {
                    let cause = client.client().fatal_error().map(|(code, _)| code);
                    let failed = shared.fenced(cause).unwrap_or_else(|| Error::Consume {
                        topic: shared.group.clone(),
                        source: shared.redactor.boxed(&error),
                    });
                    if sender.blocking_send(Batch::Failed(failed)).is_err() {
                        return;
                    }
                } else {
                    tracing::warn!(group = %shared.group, "kafka consumer: {}", shared.redactor.error(&error));
                }
                continue;
            }
        }
        while batch.len() < BATCH {
            match client.poll(Duration::ZERO) {
                Some(Ok(message)) => batch.push(convert(&message, &mut names, &shared.metadata)),
                _ => break,
            }
        }
        if !hand_over(client, sender, stop, batch, &mut names, &shared) {
            return;
        }
    }
}

/// Sends a batch; while the runtime is behind, pauses the partitions and keeps polling so
/// the member stays in the group. Returns `false` once nobody receives any more.
fn hand_over(
    client: &Client,
    sender: &mpsc::Sender<Batch>,
    stop: &AtomicBool,
    mut batch: Vec<ConsumedRecord>,
    names: &mut Names,
    shared: &Shared,
) -> bool {
    // Everything paused here, resumed once the batch is handed over: the assignment may
    // change in between, and a partition left paused would never be read again.
    let mut paused = TopicPartitionList::new();
    let waiting_since = std::time::Instant::now();
    loop {
        match sender.try_send(Batch::Records(batch)) {
            Ok(()) => break,
            Err(mpsc::error::TrySendError::Closed(_)) => return false,
            Err(mpsc::error::TrySendError::Full(returned)) => {
                batch = match returned {
                    Batch::Records(records) => records,
                    _ => Vec::new(),
                };
                if stop.load(Ordering::SeqCst) {
                    return false;
                }
                if waiting_since.elapsed() < PATIENCE {
                    std::thread::sleep(RETRY);
                    continue;
                }
                if let Ok(assignment) = client.assignment()
                    && assignment.count() > 0
                    && client.pause(&assignment).is_ok()
                {
                    for element in assignment.elements() {
                        if paused
                            .find_partition(element.topic(), element.partition())
                            .is_none()
                        {
                            paused.add_partition(element.topic(), element.partition());
                        }
                    }
                }
                // Serves rebalances; returns records fetched before the pause, if any.
                if let Some(Ok(message)) = client.poll(Duration::from_millis(20)) {
                    batch.push(convert(&message, names, &shared.metadata));
                }
            }
        }
    }
    if paused.count() > 0 {
        if let Ok(assignment) = client.assignment() {
            for element in assignment.elements() {
                if paused
                    .find_partition(element.topic(), element.partition())
                    .is_none()
                {
                    paused.add_partition(element.topic(), element.partition());
                }
            }
        }
        if let Err(error) = client.resume(&paused) {
            tracing::warn!(group = %shared.group, "resuming partitions failed: {}", shared.redactor.error(&error));
        }
    }
    true
}

/// What the polling thread keeps between records: the topic name records share (without
/// a lookup each), and the buffer records are copied into.
#[derive(Default)]
pub(crate) struct Names {
    /// The only topic read, when there is one: its records need not be asked for their
    /// topic's name (librdkafka gives it as a C string, measured and checked as UTF-8 on
    /// every call).
    only: Option<Arc<str>>,
    /// The last topic name seen, when several are read.
    last: Option<Arc<str>>,
    copies: CopyBuffer,
}

impl Names {
    /// For a client reading `topics` (names, not patterns).
    pub(crate) fn reading<'a>(
        topics: impl IntoIterator<Item = &'a str>,
        metadata: &Metadata,
    ) -> Names {
        let mut distinct: Vec<&str> = topics.into_iter().collect();
        distinct.sort_unstable();
        distinct.dedup();
        let only = match distinct[..] {
            [topic] if !topic.starts_with('^') => Some(metadata.intern(topic)),
            _ => None,
        };
        Names {
            only,
            ..Names::default()
        }
    }
}

pub(crate) fn convert(
    message: &BorrowedMessage<'_>,
    names: &mut Names,
    metadata: &Metadata,
) -> ConsumedRecord {
    let topic = match (&names.only, &names.last) {
        (Some(only), _) => only.clone(),
        (None, Some(name)) if &**name == message.topic() => name.clone(),
        (None, _) => {
            let name = metadata.intern(message.topic());
            names.last = Some(name.clone());
            name
        }
    };
    let copies = &mut names.copies;
    let mut headers = Headers::new();
    if let Some(borrowed) = message.headers() {
        for header in borrowed.iter() {
            headers.push(header.key, copies.copy(header.value.unwrap_or_default()));
        }
    }
    ConsumedRecord {
        topic,
        partition: message.partition() as u32,
        offset: message.offset() as u64,
        record: Record {
            key: message.key().map(|key| copies.copy(key)),
            // A message without a payload is a null value (a tombstone), not an empty one.
            value: message.payload().map(|value| copies.copy(value)),
            headers,
            timestamp: message.timestamp().to_millis().unwrap_or(0),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_a_single_topic_share_its_name_without_asking() {
        // Nothing is asked of the broker: interning a name is local.
        let client = crate::KafkaConfig::new("127.0.0.1:9")
            .admin()
            .create_with_context(crate::context::LogContext {
                redactor: Redactor::new(Arc::default()),
            })
            .unwrap();
        let metadata = Metadata::new(client, Redactor::new(Arc::default()), Duration::ZERO);
        let one = Names::reading(["orders", "orders"], &metadata);
        assert_eq!(one.only.as_deref(), Some("orders"));
        assert!(
            Names::reading(["orders", "payments"], &metadata)
                .only
                .is_none()
        );
        assert!(Names::reading(["^orders.*"], &metadata).only.is_none());
        assert!(Names::reading([], &metadata).only.is_none());
    }

    #[test]
    fn requests_during_a_rebalance_are_retried_a_bounded_number_of_times() {
        let mut calls = 0;
        let failing = retried(|| -> std::result::Result<(), KafkaError> {
            calls += 1;
            Err(KafkaError::MetadataFetch(
                RDKafkaErrorCode::BrokerTransportFailure,
            ))
        });
        assert!(failing.is_err());
        assert_eq!(calls, ATTEMPTS);
        let mut calls = 0;
        let second_time = retried(|| {
            calls += 1;
            if calls < 2 {
                Err(KafkaError::MetadataFetch(
                    RDKafkaErrorCode::BrokerTransportFailure,
                ))
            } else {
                Ok(calls)
            }
        });
        assert_eq!(second_time.unwrap(), 2);
    }
}
