//! Audit, LinkedIn's pattern from Kafka 0.8's operations material: a producer publishes, per
//! topic and time window, how many messages it had acknowledged (and where they went) to an
//! audit topic; a checker (`gregor_admin::Admin::audit`, `gregor audit`) reads the audit topic
//! and the topics and reports, per topic and window, produced against seen, so loss is
//! detected.
//!
//! Opt in with [`AsyncProducer::with_audit`] or [`SyncProducer::with_audit`] and an
//! [`AuditConfig`]:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use gregor_producer::audit::AuditConfig;
//! use gregor_producer::{AsyncProducer, ProducerConfig, Record};
//! use gregor_serde::StringEncoder;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ProducerConfig::from_properties([
//!     ("metadata.broker.list", "127.0.0.1:9092"),
//!     ("request.required.acks", "-1"),
//!     ("client.id", "billing"),
//! ])?;
//! let audit = AuditConfig::new().window(Duration::from_secs(60));
//! let producer: AsyncProducer<String, String> =
//!     AsyncProducer::with_audit(config, audit, StringEncoder::new(), StringEncoder::new())?;
//! producer.send(Record::new("events", "hello".to_owned())).await?.await?;
//! // the audit of the last, partial window is published by close
//! producer.close(Duration::from_secs(5)).await;
//! # Ok(()) }
//! ```
//!
//! # What is counted
//!
//! Kafka 0.8 messages carry no timestamp, and the user's payload is not touched, so the
//! producer counts what it *knows*: every record's one delivery result. An acknowledged record
//! (`request.required.acks` 1 or -1) comes back with its partition and offset (a batch's base
//! offset from the ProduceResponse, and the records of a batch have consecutive offsets); the
//! producer adds it, in the window of its acknowledgement, to its partition's count and to an
//! offset range (merged with the previous one when consecutive) together with its
//! *fingerprint*. A failed record counts as failed (a known loss, reported as such: its
//! sender got the error). With `request.required.acks=0` there are no offsets: counts only
//! (the checker reports them as unverified).
//!
//! The fingerprint of a message is the CRC-32 Kafka stores in an uncompressed message v0
//! ([`fingerprint`]); a range's is the sum of its messages'. It lets the checker tell the
//! producer's messages from others stored at the same offsets: Kafka 0.8 loses acknowledged
//! messages by truncating a log's tail (acks=1 and a leader failover, an unclean election, a
//! deleted and re-created topic), and the offsets are then given to new messages — counting
//! messages at the offsets alone would call the lost ones seen.
//!
//! # When it is published
//!
//! Windows are aligned to the epoch (`window_start_ms` is a multiple of `window_ms`), so the
//! windows of all producers line up. At the end of each window the producer queues one audit
//! record per topic it had results for (several when a record would exceed
//! [`AuditConfig::max_record_bytes`]); [`AsyncProducer::close`] (and the last handle's drop)
//! publishes the current, partial window once every record has its result. A flush does
//! not: that would add an audit record per topic per flush. Audit records go through the same
//! queue, batching and retries as the application's records, but take no place in
//! `queue.buffering.max.messages` and get no delivery result; they are keyed by the producer
//! name. An audit record that still fails after the retries is queued again for the next
//! window end, up to [`PUBLISH_ATTEMPTS`] times, then dropped with an error in the log (its
//! messages then show up as unaudited). The audit topic's own records are not audited.
//!
//! # The audit record
//!
//! One JSON object per message value, keyed by the producer name: its format (version
//! [`AUDIT_FORMAT_VERSION`]) is defined once, in [`format`](mod@format), for the producer that writes it and
//! the checker that reads it ([`AuditRecord`]).
//!
//! # Cost
//!
//! Off, it is one `Option` check per result. On, per acknowledged record: a CRC-32 of its key
//! and value and a few integer updates, no allocation (a new topic, partition, window or
//! non-consecutive range allocates); per window: one small record per topic.
//!
//! [`AsyncProducer::with_audit`]: crate::AsyncProducer::with_audit
//! [`SyncProducer::with_audit`]: crate::SyncProducer::with_audit
//! [`AsyncProducer::close`]: crate::AsyncProducer::close

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use gregor_protocol::{EncodedMessage, Message};
use tokio::time::Instant;

use crate::config::{ConfigError, ProducerConfig};
use crate::delivery::Pending;
use crate::error::{DeliveryError, Error, Result};
use crate::observer::Observer;
use crate::topic::{TopicId, TopicNames};

pub mod format;

pub use format::{
    fingerprint, AuditPartition, AuditRange, AuditRecord, AUDIT_FORMAT_VERSION, AUDIT_FORMAT_VERSIONS,
    DEFAULT_AUDIT_TOPIC,
};
use format::{max_header_json_bytes, message_fingerprint, MAX_PARTITION_JSON_BYTES, MAX_RANGE_JSON_BYTES};

/// The window unless [`AuditConfig::window`] says otherwise: one minute.
pub const DEFAULT_AUDIT_WINDOW: Duration = Duration::from_secs(60);
/// The largest audit record (JSON bytes, about) unless [`AuditConfig::max_record_bytes`] says
/// otherwise: 256 KiB, well below a broker's default `message.max.bytes` (1000012).
pub const DEFAULT_MAX_AUDIT_RECORD_BYTES: usize = 256 * 1024;
/// How many times an audit record is sent (each time with the producer's own retries) before
/// it is dropped.
pub const PUBLISH_ATTEMPTS: u32 = 3;
/// The name used for an empty `client.id` in the default producer name.
const ANONYMOUS: &str = "gregor";
/// The smallest `max_record_bytes` accepted: room for the header and a few ranges.
const MIN_RECORD_BYTES: usize = 1024;

/// The audit settings of a producer (see the [module docs](self)).
///
/// ```
/// use std::time::Duration;
/// use gregor_producer::audit::{AuditConfig, DEFAULT_AUDIT_TOPIC};
///
/// let audit = AuditConfig::new().window(Duration::from_secs(10)).producer_name("billing-1");
/// assert_eq!(audit.topic_name(), DEFAULT_AUDIT_TOPIC);
/// assert_eq!(audit.window_length(), Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditConfig {
    topic: String,
    window: Duration,
    producer: Option<String>,
    max_record_bytes: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            topic: DEFAULT_AUDIT_TOPIC.to_owned(),
            window: DEFAULT_AUDIT_WINDOW,
            producer: None,
            max_record_bytes: DEFAULT_MAX_AUDIT_RECORD_BYTES,
        }
    }
}

impl AuditConfig {
    /// The defaults: topic [`DEFAULT_AUDIT_TOPIC`], window [`DEFAULT_AUDIT_WINDOW`], producer
    /// name `client.id@host:pid`.
    pub fn new() -> AuditConfig {
        AuditConfig::default()
    }

    /// The topic audit records are published to. Default: [`DEFAULT_AUDIT_TOPIC`]. Records the
    /// application sends to it are not audited.
    pub fn topic(mut self, topic: impl Into<String>) -> Self {
        self.topic = topic.into();
        self
    }

    /// The window length: counts are published once per window per topic, so a shorter window
    /// means finer reports and more audit records. Default: [`DEFAULT_AUDIT_WINDOW`]; whole
    /// milliseconds, at least 1 ms.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The producer's name in its audit records. Default: `client.id@host:pid` (`gregor` for an
    /// empty `client.id`). A random session id tells apart two producers of the same name.
    pub fn producer_name(mut self, name: impl Into<String>) -> Self {
        self.producer = Some(name.into());
        self
    }

    /// Splits an audit record into several above about this many bytes of JSON (a partition
    /// with many ranges: many producers interleaving on it). Default:
    /// [`DEFAULT_MAX_AUDIT_RECORD_BYTES`]; at least 1024.
    pub fn max_record_bytes(mut self, bytes: usize) -> Self {
        self.max_record_bytes = bytes;
        self
    }

    /// The audit topic.
    pub fn topic_name(&self) -> &str {
        &self.topic
    }

    /// The window length.
    pub fn window_length(&self) -> Duration {
        self.window
    }

    /// The producer name given, if any.
    pub fn producer(&self) -> Option<&str> {
        self.producer.as_deref()
    }

    /// The record size bound.
    pub fn record_bytes(&self) -> usize {
        self.max_record_bytes
    }

    /// Checks the settings.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] (property `audit.topic`, `audit.window.ms`,
    /// `audit.producer.name` or `audit.max.record.bytes`) for a topic name Kafka refuses, a
    /// window under 1 ms or not a whole number of milliseconds, an empty producer name, a
    /// record bound under 1024.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid =
            |property, value: String, reason: &str| ConfigError::Invalid { property, value, reason: reason.to_owned() };
        gregor_config::check_topic_name("audit.topic", &self.topic)?;
        let ms = self.window.as_millis();
        if ms == 0 || self.window.subsec_nanos() % 1_000_000 != 0 || ms > u64::MAX as u128 {
            return Err(invalid(
                "audit.window.ms",
                format!("{:?}", self.window),
                "a window is a whole number of milliseconds, at least 1",
            ));
        }
        if self.producer.as_deref().is_some_and(|p| p.trim().is_empty() || p.len() > i16::MAX as usize) {
            return Err(invalid(
                "audit.producer.name",
                self.producer.clone().unwrap_or_default(),
                "a producer name has 1 to 32767 bytes, not only spaces",
            ));
        }
        if self.max_record_bytes < MIN_RECORD_BYTES {
            return Err(invalid(
                "audit.max.record.bytes",
                self.max_record_bytes.to_string(),
                "at least 1024 bytes (a record's header alone takes a few hundred)",
            ));
        }
        Ok(())
    }
}

/// The default producer name: `client.id@host:pid`.
fn default_producer_name(client_id: &str) -> String {
    let client = if client_id.is_empty() { ANONYMOUS } else { client_id };
    format!("{client}@{}:{}", hostname(), std::process::id())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "localhost".to_owned())
}

#[derive(Debug)]
struct PartitionCounts {
    partition: i32,
    count: u64,
    ranges: Vec<AuditRange>,
}

impl PartitionCounts {
    fn add(&mut self, offset: i64, fingerprint: u32) {
        self.count += 1;
        if offset < 0 {
            return;
        }
        match self.ranges.last_mut() {
            Some(r) if r.last.checked_add(1) == Some(offset) => {
                r.last = offset;
                r.fingerprint = r.fingerprint.wrapping_add(u64::from(fingerprint));
            }
            _ => self.ranges.push(AuditRange { first: offset, last: offset, fingerprint: u64::from(fingerprint) }),
        }
    }
}

#[derive(Debug)]
struct TopicCounts {
    topic: String,
    partitions: Vec<PartitionCounts>,
    /// Index in `partitions` of the one counted last (results come in runs of a partition).
    last: usize,
    failed: u64,
}

impl TopicCounts {
    fn partition(&mut self, partition: i32) -> &mut PartitionCounts {
        if self.partitions.get(self.last).is_none_or(|p| p.partition != partition) {
            self.last = match self.partitions.iter().position(|p| p.partition == partition) {
                Some(i) => i,
                None => {
                    self.partitions.push(PartitionCounts { partition, count: 0, ranges: Vec::new() });
                    self.partitions.len() - 1
                }
            };
        }
        &mut self.partitions[self.last]
    }
}

/// An audit record on its way, and how often it was sent.
#[derive(Debug)]
struct Outgoing {
    value: Bytes,
    /// The message of its latest send (the engine's record holds a copy of these bytes: that
    /// is how the auditor knows its own records).
    sent: Option<EncodedMessage>,
    attempts: u32,
    not_before: Instant,
}

/// What a producer with audit on keeps: the counts of the current window, the audit records
/// waiting to go, and those in flight. A pure state machine fed `now` by the engine, which
/// knows it as an [`Observer`]: it shows it every result, lets it send its records every
/// turn, and sleeps until its next wake-up.
#[derive(Debug)]
pub(crate) struct Auditor {
    /// The audit topic's name, and the producer's number for it (its records carry it).
    topic: Arc<str>,
    topic_id: TopicId,
    /// The producer's names, where the audit topic is registered.
    _names: Arc<TopicNames>,
    key: Bytes,
    producer: String,
    session: String,
    acks: i16,
    window_ms: u64,
    max_record_bytes: usize,
    /// `anchor` is `anchor_ms` milliseconds after the epoch.
    anchor: Instant,
    anchor_ms: u64,
    window_start_ms: u64,
    window_end: Instant,
    topics: Vec<TopicCounts>,
    index: HashMap<String, usize>,
    /// Index in `topics` of the one counted last.
    last: usize,
    next_seq: u64,
    outbox: VecDeque<Outgoing>,
    in_flight: Vec<Outgoing>,
}

impl Auditor {
    /// An auditor for a producer with `config` whose topic names are `names`, its clock
    /// anchored to the wall clock now.
    pub(crate) fn new(audit: AuditConfig, config: &ProducerConfig, names: &Arc<TopicNames>) -> Result<Auditor> {
        audit.validate().map_err(Error::Config)?;
        let wall_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let session = format!("{:016x}", rand::random::<u64>());
        let (client_id, acks) = (config.client_id(), config.request_required_acks());
        Ok(Auditor::at(audit, names, client_id, acks, session, Instant::now(), wall_ms))
    }

    /// An auditor whose clock reads `wall_ms` at `now` (tests drive it by hand).
    fn at(
        audit: AuditConfig,
        names: &Arc<TopicNames>,
        client_id: &str,
        acks: i16,
        session: String,
        now: Instant,
        wall_ms: u64,
    ) -> Auditor {
        let producer = audit.producer.clone().unwrap_or_else(|| default_producer_name(client_id));
        let window_ms = audit.window.as_millis() as u64;
        let window_start_ms = wall_ms - wall_ms % window_ms;
        let (topic_id, topic) = names.register(&audit.topic);
        let mut a = Auditor {
            key: Bytes::from(producer.clone().into_bytes()),
            topic,
            topic_id,
            _names: names.clone(),
            producer,
            session,
            acks,
            window_ms,
            max_record_bytes: audit.max_record_bytes,
            anchor: now,
            anchor_ms: wall_ms,
            window_start_ms,
            window_end: now,
            topics: Vec::new(),
            index: HashMap::new(),
            last: 0,
            next_seq: 0,
            outbox: VecDeque::new(),
            in_flight: Vec::new(),
        };
        a.window_end = a.instant_of(window_start_ms + window_ms);
        a
    }

    fn instant_of(&self, wall_ms: u64) -> Instant {
        self.anchor + Duration::from_millis(wall_ms.saturating_sub(self.anchor_ms))
    }

    fn wall_ms(&self, now: Instant) -> u64 {
        self.anchor_ms + now.saturating_duration_since(self.anchor).as_millis() as u64
    }

    /// The audit record `record` is, when it is one of the auditor's own (taken off the
    /// records in flight).
    fn take_own(&mut self, record: &Pending) -> Option<Outgoing> {
        // the auditor's own records have no delivery slot (an application's record keeps its
        // slot until its result is handed out, after this); the engine holds a copy of the
        // message (in its partition's blocks), so the bytes tell which one it is
        if record.has_slot() || self.in_flight.is_empty() {
            return None;
        }
        let own = self.in_flight.iter().position(|o| o.sent.as_ref() == Some(record.message()))?;
        Some(self.in_flight.swap_remove(own))
    }

    /// An audit record failed for good: sent again at the next window end, or dropped after
    /// [`PUBLISH_ATTEMPTS`] sends (or when the producer closed).
    fn not_published(&mut self, mut sent: Outgoing, e: &DeliveryError) {
        if sent.attempts < PUBLISH_ATTEMPTS && !matches!(e.error, Error::Closed { .. }) {
            tracing::warn!(
                topic = %self.topic,
                attempts = sent.attempts,
                error = %e.error,
                "an audit record was not published; trying again at the next window end"
            );
            sent.not_before = self.window_end;
            self.outbox.push_back(sent);
        } else {
            tracing::error!(
                topic = %self.topic,
                attempts = sent.attempts,
                error = %e.error,
                record = %String::from_utf8_lossy(&sent.value),
                "an audit record was dropped: its messages will show up as unaudited"
            );
        }
    }

    fn topic_counts(&mut self, topic: &str) -> &mut TopicCounts {
        if self.topics.get(self.last).is_none_or(|t| t.topic != topic) {
            self.last = match self.index.get(topic) {
                Some(&i) => i,
                None => {
                    self.topics.push(TopicCounts {
                        topic: topic.to_owned(),
                        partitions: Vec::new(),
                        last: 0,
                        failed: 0,
                    });
                    self.index.insert(topic.to_owned(), self.topics.len() - 1);
                    self.topics.len() - 1
                }
            };
        }
        &mut self.topics[self.last]
    }

    /// Turns the window's counts into audit records in the outbox.
    fn end_window(&mut self) {
        let topics = std::mem::take(&mut self.topics);
        self.index.clear();
        self.last = 0;
        for t in &topics {
            for value in self.records(t) {
                let seq = self.next_seq;
                self.next_seq += 1;
                let value = self.record(seq, &t.topic, &value).to_json();
                self.outbox.push_back(Outgoing {
                    value: Bytes::from(value),
                    sent: None,
                    attempts: 0,
                    not_before: self.anchor,
                });
            }
        }
    }

    /// A topic's counts cut into records of at most about `max_record_bytes`.
    fn records<'a>(&self, t: &'a TopicCounts) -> Vec<Piece<'a>> {
        let header = max_header_json_bytes(&self.producer, &t.topic);
        let budget = self.max_record_bytes.saturating_sub(header).max(MAX_RANGE_JSON_BYTES + MAX_PARTITION_JSON_BYTES);
        let mut pieces = vec![Piece { partitions: Vec::new(), failed: t.failed, size: 0 }];
        let mut partitions: Vec<&PartitionCounts> = t.partitions.iter().collect();
        partitions.sort_by_key(|p| p.partition);
        for p in partitions {
            let ranged: u64 = p.ranges.iter().map(AuditRange::len).sum();
            // acknowledged without an offset (acks=0): they go with the first piece
            let mut unranged = p.count.saturating_sub(ranged);
            let mut rest = &p.ranges[..];
            loop {
                let piece = pieces.last_mut().expect("one at least");
                let room = budget.saturating_sub(piece.size + MAX_PARTITION_JSON_BYTES) / MAX_RANGE_JSON_BYTES;
                if room == 0 && !piece.partitions.is_empty() {
                    pieces.push(Piece { partitions: Vec::new(), failed: 0, size: 0 });
                    continue;
                }
                let take = rest.len().min(room.max(1));
                let (now, later) = rest.split_at(take);
                let count = now.iter().map(AuditRange::len).sum::<u64>() + unranged;
                unranged = 0;
                piece.partitions.push((p.partition, count, now));
                piece.size += MAX_PARTITION_JSON_BYTES + take * MAX_RANGE_JSON_BYTES;
                rest = later;
                if rest.is_empty() {
                    break;
                }
            }
        }
        pieces
    }

    /// The audit record of a piece of a topic's counts, numbered `seq`.
    fn record(&self, seq: u64, topic: &str, piece: &Piece<'_>) -> AuditRecord {
        let partitions = piece
            .partitions
            .iter()
            .map(|&(partition, count, ranges)| (partition, AuditPartition { count, ranges: ranges.to_vec() }));
        AuditRecord {
            version: u64::from(AUDIT_FORMAT_VERSION),
            producer: self.producer.clone(),
            session: self.session.clone(),
            seq,
            topic: topic.to_owned(),
            window_start_ms: self.window_start_ms,
            window_ms: self.window_ms,
            acks: i64::from(self.acks),
            partitions: partitions.collect(),
            failed: piece.failed,
        }
    }

    /// Audit records waiting to go or in flight (for the engine's debugging and tests).
    #[cfg(test)]
    fn pending(&self) -> usize {
        self.outbox.len() + self.in_flight.len()
    }
}

/// The auditor watches every result (see the [module docs](self)): it counts the
/// application's records per topic, partition and window, and knows its own audit records
/// by their bytes.
impl Observer for Auditor {
    fn on_acknowledged(&mut self, topic: &str, partition: i32, offset: i64, record: &Pending) -> bool {
        if topic == &*self.topic {
            // the application's own records to the audit topic are not audited
            let own = self.take_own(record).is_some();
            if own {
                tracing::debug!(topic, partition, offset, "audit record published");
            }
            return own;
        }
        self.topic_counts(topic).partition(partition).add(offset, message_fingerprint(record.message()));
        false
    }

    fn on_failed(&mut self, topic: &str, record: &Pending, error: &DeliveryError) -> bool {
        if topic == &*self.topic {
            let Some(sent) = self.take_own(record) else { return false };
            self.not_published(sent, error);
            return true;
        }
        self.topic_counts(topic).failed += 1;
        false
    }

    /// Ends the window when its time has come, and returns the audit records to send now.
    /// `last` ends the current window at once and sends everything (the producer is closing
    /// and every application record has its result).
    fn on_tick(&mut self, now: Instant, last: bool) -> Vec<Pending> {
        if now >= self.window_end {
            self.end_window();
            let wall = self.wall_ms(now);
            self.window_start_ms = wall - wall % self.window_ms;
            self.window_end = self.instant_of(self.window_start_ms + self.window_ms);
        }
        if last {
            self.end_window();
        }
        let mut due = Vec::new();
        while let Some(o) = self.outbox.front() {
            if !last && o.not_before > now {
                break;
            }
            let mut o = self.outbox.pop_front().expect("looked at");
            o.attempts += 1;
            let message = match EncodedMessage::encode(&Message::new(Some(self.key.clone()), Some(o.value.clone()))) {
                Ok(m) => m,
                Err(e) => {
                    // a few hundred bytes of JSON: cannot be too long for its length prefix
                    tracing::error!(error = %e, "an audit record could not be encoded; dropped");
                    continue;
                }
            };
            o.sent = Some(message.clone());
            due.push(Pending::new(self.topic_id, None, message, None, None));
            self.in_flight.push(o);
        }
        due
    }

    /// The window's end when something was counted in it, or an audit record's time to go
    /// again.
    fn next_wakeup(&self) -> Option<Instant> {
        let window = (!self.topics.is_empty()).then_some(self.window_end);
        let outbox = self.outbox.iter().map(|o| o.not_before).min();
        match (window, outbox) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Part of a topic's counts that fits one record.
struct Piece<'a> {
    partitions: Vec<(i32, u64, &'a [AuditRange])>,
    failed: u64,
    size: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    fn auditor(window_ms: u64) -> (Auditor, Instant) {
        let now = Instant::now();
        let audit = AuditConfig::new().window(Duration::from_millis(window_ms)).producer_name("p\"1");
        (Auditor::at(audit, &TopicNames::new(), "app", 1, "00000000000000ab".into(), now, T0 + 50), now)
    }

    /// An application's record (its topic given to the hooks apart).
    fn pending(value: &str) -> Pending {
        let message = EncodedMessage::encode(&Message::new(None, Some(Bytes::from(value.to_owned())))).unwrap();
        Pending::new(TopicId::UNREGISTERED, None, message, None, None)
    }

    /// A record as the engine holds it when its result comes: its message copied into its
    /// partition's blocks.
    fn as_queued(p: &Pending) -> Pending {
        let mut q = Pending::new(p.topic().unwrap(), p.partition(), p.message().detached(), None, None);
        q.seq = p.seq;
        q
    }

    fn ack(a: &mut Auditor, topic: &str, partition: i32, offset: i64, value: &str) {
        let p = pending(value);
        assert!(!a.on_acknowledged(topic, partition, offset, &p));
    }

    fn fail(a: &mut Auditor, topic: &str) {
        let p = pending("x");
        let error = p.error(topic.into(), None, 1, Error::Closed { in_flight: false });
        assert!(!a.on_failed(topic, &p, &error));
    }

    /// The result of an audit record that failed with `error`.
    fn failed(a: &mut Auditor, p: &Pending, error: &DeliveryError) -> bool {
        a.on_failed(DEFAULT_AUDIT_TOPIC, p, error)
    }

    fn json(p: &Pending) -> String {
        String::from_utf8(p.message().to_message().value.unwrap().to_vec()).unwrap()
    }

    fn fp(value: &str) -> u64 {
        u64::from(fingerprint(None, Some(value.as_bytes())))
    }

    #[test]
    fn settings_are_checked() {
        assert!(AuditConfig::new().validate().is_ok());
        let property = |c: AuditConfig| match c.validate() {
            Err(ConfigError::Invalid { property, .. }) => property,
            other => panic!("{other:?}"),
        };
        assert_eq!(property(AuditConfig::new().topic("")), "audit.topic");
        assert_eq!(property(AuditConfig::new().topic("a b")), "audit.topic");
        assert_eq!(property(AuditConfig::new().window(Duration::ZERO)), "audit.window.ms");
        assert_eq!(property(AuditConfig::new().window(Duration::from_micros(1500))), "audit.window.ms");
        assert_eq!(property(AuditConfig::new().producer_name("  ")), "audit.producer.name");
        assert_eq!(property(AuditConfig::new().max_record_bytes(10)), "audit.max.record.bytes");
        let name = default_producer_name("");
        assert!(name.starts_with("gregor@") && name.ends_with(&format!(":{}", std::process::id())), "{name}");
    }

    #[test]
    fn a_window_of_acknowledged_and_failed_records_becomes_one_record_per_topic() {
        let (mut a, t0) = auditor(1000);
        assert_eq!(a.next_wakeup(), None, "nothing counted: no timer");
        for (offset, v) in [(10, "a"), (11, "b"), (12, "c"), (20, "d")] {
            ack(&mut a, "t", 0, offset, v);
        }
        ack(&mut a, "t", 1, 5, "e");
        ack(&mut a, "u", 0, 0, "f");
        fail(&mut a, "t");
        fail(&mut a, "t");
        let end = a.next_wakeup().expect("a timer for the window's end");
        assert_eq!(end, t0 + Duration::from_millis(950), "windows are aligned to the epoch");
        assert!(a.on_tick(t0 + Duration::from_millis(900), false).is_empty(), "not yet");
        let due = a.on_tick(end, false);
        assert_eq!(due.len(), 2);
        assert!(due
            .iter()
            .all(|p| p.topic().and_then(|t| t.name()).as_deref() == Some(DEFAULT_AUDIT_TOPIC) && !p.has_slot()));
        assert_eq!(due[0].message().key(), Some(&b"p\"1"[..]));
        let t = json(&due[0]);
        assert_eq!(
            t,
            format!(
                "{{\"version\":1,\"producer\":\"p\\\"1\",\"session\":\"00000000000000ab\",\"seq\":0,\"topic\":\"t\",\
                 \"window_start_ms\":{T0},\"window_ms\":1000,\"acks\":1,\"partitions\":{{\"0\":{{\"count\":4,\
                 \"ranges\":[[10,12,{}],[20,20,{}]]}},\"1\":{{\"count\":1,\"ranges\":[[5,5,{}]]}}}},\"failed\":2}}",
                fp("a") + fp("b") + fp("c"),
                fp("d"),
                fp("e")
            )
        );
        assert!(json(&due[1]).contains("\"seq\":1,\"topic\":\"u\""));
        assert_eq!(a.next_wakeup(), None, "nothing counted in the new window");
        assert_eq!(a.pending(), 2, "both in flight");
        // their results are the auditor's own, whatever the order
        assert!(a.on_acknowledged(DEFAULT_AUDIT_TOPIC, 0, 0, &as_queued(&due[1])));
        assert!(a.on_acknowledged(DEFAULT_AUDIT_TOPIC, 0, 0, &as_queued(&due[0])));
        assert_eq!(a.pending(), 0);
        // an application record to the audit topic is not the auditor's, and not audited
        let theirs = pending("mine");
        assert!(!a.on_acknowledged(DEFAULT_AUDIT_TOPIC, 0, 1, &theirs));
        assert!(a.topics.is_empty(), "not counted");
        assert!(a.on_tick(end + Duration::from_secs(5), false).is_empty());
    }

    #[test]
    fn acks_0_counts_without_ranges_and_the_last_step_publishes_a_partial_window() {
        let (mut a, t0) = auditor(60_000);
        for _ in 0..3 {
            ack(&mut a, "t", 2, -1, "x");
        }
        assert!(a.on_tick(t0 + Duration::from_millis(10), false).is_empty());
        let due = a.on_tick(t0 + Duration::from_millis(10), true);
        assert_eq!(due.len(), 1);
        assert!(json(&due[0]).contains("\"partitions\":{\"2\":{\"count\":3,\"ranges\":[]}},\"failed\":0}"));
        assert!(a.on_tick(t0 + Duration::from_millis(10), true).is_empty(), "nothing more");
    }

    #[test]
    fn counts_go_to_the_window_of_the_step_before_them() {
        let (mut a, t0) = auditor(100);
        ack(&mut a, "t", 0, 0, "a");
        let first = a.on_tick(t0 + Duration::from_millis(60), false);
        assert_eq!(first.len(), 1, "the window [T0, T0+100) ended at T0+50+50");
        ack(&mut a, "t", 0, 1, "b");
        let second = a.on_tick(t0 + Duration::from_millis(400), false);
        assert_eq!(second.len(), 1);
        assert!(json(&first[0]).contains(&format!("\"window_start_ms\":{T0},")));
        assert!(json(&second[0]).contains(&format!("\"window_start_ms\":{},", T0 + 100)));
        // the next window starts where the clock is, not where the last one ended
        ack(&mut a, "t", 0, 2, "c");
        let third = a.on_tick(t0 + Duration::from_millis(460), false);
        assert!(json(&third[0]).contains(&format!("\"window_start_ms\":{},", T0 + 400)), "{}", json(&third[0]));
    }

    #[test]
    fn a_failed_audit_record_is_sent_again_at_the_next_window_end_then_dropped() {
        let (mut a, t0) = auditor(100);
        ack(&mut a, "t", 0, 0, "a");
        let mut now = t0 + Duration::from_millis(50);
        let mut due = a.on_tick(now, false);
        let failure = |_: &Pending| DeliveryError {
            topic: DEFAULT_AUDIT_TOPIC.into(),
            partition: None,
            attempts: 4,
            error: Error::NoLeader { topic: DEFAULT_AUDIT_TOPIC.to_owned(), partition: 0, rounds: 4 },
            key: None,
            value: None,
        };
        for attempt in 1..PUBLISH_ATTEMPTS {
            assert_eq!(due.len(), 1, "attempt {attempt}");
            assert!(failed(&mut a, &as_queued(&due[0]), &failure(&due[0])));
            assert_eq!(a.pending(), 1, "queued again");
            assert!(a.on_tick(now, false).is_empty(), "not before the next window end");
            now = a.next_wakeup().expect("a timer for the retry");
            due = a.on_tick(now, false);
        }
        assert_eq!(due.len(), 1);
        assert!(failed(&mut a, &due[0], &failure(&due[0])));
        assert_eq!(a.pending(), 0, "dropped after {PUBLISH_ATTEMPTS} attempts");
        // a record failed by close is dropped at once
        ack(&mut a, "t", 0, 1, "b");
        let due = a.on_tick(now, true);
        let closed = due[0].error(DEFAULT_AUDIT_TOPIC.into(), None, 1, Error::Closed { in_flight: true });
        assert!(failed(&mut a, &due[0], &closed));
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn large_windows_are_cut_into_records_that_add_up() {
        let (mut a, t0) = auditor(1000);
        a.max_record_bytes = 2048;
        let mut offset = 0;
        for p in 0..3 {
            for _ in 0..100 {
                ack(&mut a, "t", p, offset, "v");
                offset += 2; // never consecutive: a range each
            }
        }
        fail(&mut a, "t");
        let due = a.on_tick(t0 + Duration::from_secs(1), false);
        assert!(due.len() > 5, "{} records", due.len());
        let mut counted = 0;
        let mut ranges = 0;
        let mut failed = 0;
        for p in &due {
            let text = json(p);
            assert!(text.len() <= 2048, "{} bytes", text.len());
            counted += text
                .match_indices("\"count\":")
                .map(|(i, _)| {
                    let rest = &text[i + 8..];
                    rest[..rest.find(',').unwrap()].parse::<u64>().unwrap()
                })
                .sum::<u64>();
            ranges += text.matches("],[").count() + text.matches("[[").count();
            failed += text.rsplit("\"failed\":").next().unwrap().trim_end_matches('}').parse::<u64>().unwrap();
        }
        assert_eq!((counted, ranges, failed), (300, 300, 1));
        let seqs: Vec<String> = due.iter().map(|p| json(p).split(",\"topic\"").next().unwrap().to_owned()).collect();
        assert_eq!(seqs.iter().collect::<std::collections::BTreeSet<_>>().len(), due.len(), "a seq each");
    }
}
