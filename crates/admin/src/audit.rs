//! Audit check, LinkedIn's pattern from Kafka 0.8's operations material: producers with audit
//! on (`gregor_producer::audit`) publish, per topic and time window, the offsets of the
//! messages they had acknowledged; [`Admin::audit`] reads those audit records (their format is
//! `gregor_producer::audit::format`'s, re-exported here: [`AuditRecord`], [`AuditRange`],
//! [`fingerprint`]) and the topics,
//! and reports per topic and window how many were produced and how many are still in the
//! log — so loss is detected.
//!
//! ```text
//!  audit topic (every partition, from the earliest offset)
//!      │ parse, drop duplicates (producer, session, seq), keep the claims:
//!      ▼ (topic, partition) -> [first, last, fingerprint] per window
//!  each audited partition: earliest and log end offsets, then a fetch stream over the claimed
//!      │ offsets only (one fetch at a time: bounded memory), fingerprinting each message
//!      ▼
//!  per claim: seen | missing (absent, or overwritten by other messages) | expired (retention)
//!      ▼
//!  per topic and window: produced, seen, missing, completeness; per partition: unaudited
//! ```
//!
//! # How a claim is judged
//!
//! A producer's claim is "I had offsets `first..=last` of this partition acknowledged, and the
//! sum of their fingerprints is F" (the fingerprint of a message is the CRC-32 an uncompressed
//! Kafka message v0 carries: [`fingerprint`]). The checker reads those offsets:
//!
//! * every offset is there and the fingerprints add up to F: all **seen**;
//! * offsets below the partition's earliest offset are **expired** (deleted by retention: not
//!   a loss, and not checkable);
//! * otherwise the claim is damaged. Kafka 0.8 loses acknowledged messages by truncating a
//!   log's tail (acks=1 or acks=-1 with a shrunk ISR and a leader failover, an unclean
//!   election, a deleted and re-created topic) and then gives the offsets to new messages. So
//!   the claim's messages from the first offset that is absent, or that another, intact claim
//!   holds, are **missing** (**overwritten** when another message sits at their offset); the
//!   ones before it are counted as seen but **unconfirmed** (the sum covers the whole claim, so
//!   a part cannot be checked). A damaged claim whose offsets are all there and held by no
//!   intact claim (overwritten by a producer without audit) is missing as a whole.
//!
//! Messages of the log that no claim accounts for are **unaudited** (sent by producers
//! without audit, or records whose delivery failed although the broker kept them). This
//! count assumes offsets without gaps (no compacted topics).
//!
//! Records acknowledged without an offset (acks=0) are **unverified**; records that failed
//! are reported as **failed** — known losses, their senders got the error — and are not
//! missing. A topic is complete when nothing is missing and every partition could be read.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use gregor_simple_consumer::{SimpleConsumer, SimpleConsumerConfig};

use crate::error::{Error, Result};
use crate::Admin;

// the audit record format, as producers with audit write it: one definition, in
// gregor_producer::audit::format
pub use gregor_producer::audit::{
    fingerprint, AuditPartition, AuditRange, AuditRecord, AUDIT_FORMAT_VERSIONS, DEFAULT_AUDIT_TOPIC,
};

/// `client.id` of the checker's fetches unless [`AuditOptions::client_id`] says otherwise.
pub const DEFAULT_AUDIT_CLIENT_ID: &str = "gregor-audit";
/// The fetch size per request unless [`AuditOptions::fetch_max_bytes`] says otherwise.
pub const DEFAULT_AUDIT_FETCH_BYTES: i32 = 1024 * 1024;
/// How many malformed audit records are kept as examples in a report.
const MALFORMED_EXAMPLES: usize = 20;
/// The largest message the checker grows its fetch for (then it reports the partition).
const FETCH_GROW_MAX: i32 = 64 * 1024 * 1024;

/// What [`Admin::audit`] checks and how it reads.
///
/// ```
/// use gregor_admin::audit::{AuditOptions, DEFAULT_AUDIT_TOPIC};
///
/// let options = AuditOptions::new().topics(["events", "billing"]);
/// assert_eq!(options.audit_topic_name(), DEFAULT_AUDIT_TOPIC);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditOptions {
    audit_topic: String,
    topics: Option<BTreeSet<String>>,
    client_id: String,
    fetch_max_bytes: i32,
    session_timeout: Duration,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            audit_topic: DEFAULT_AUDIT_TOPIC.to_owned(),
            topics: None,
            client_id: DEFAULT_AUDIT_CLIENT_ID.to_owned(),
            fetch_max_bytes: DEFAULT_AUDIT_FETCH_BYTES,
            session_timeout: Duration::from_secs(30),
        }
    }
}

impl AuditOptions {
    /// Every audited topic, audit topic [`DEFAULT_AUDIT_TOPIC`].
    pub fn new() -> AuditOptions {
        AuditOptions::default()
    }

    /// The topic the producers publish audit records to. Default: [`DEFAULT_AUDIT_TOPIC`].
    pub fn audit_topic(mut self, topic: impl Into<String>) -> Self {
        self.audit_topic = topic.into();
        self
    }

    /// Checks only these topics (each is reported, audited or not). Default: every topic the
    /// audit records name.
    pub fn topics<I, S>(mut self, topics: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.topics = Some(topics.into_iter().map(Into::into).collect());
        self
    }

    /// `client.id` of the fetches. Default: [`DEFAULT_AUDIT_CLIENT_ID`].
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = client_id.into();
        self
    }

    /// Bytes per fetch (`fetch.message.max.bytes`); a larger message grows the fetch up to
    /// 64 MiB. Memory is about this much, whatever the topics hold. Default:
    /// [`DEFAULT_AUDIT_FETCH_BYTES`].
    pub fn fetch_max_bytes(mut self, bytes: i32) -> Self {
        self.fetch_max_bytes = bytes;
        self
    }

    /// The audit topic.
    pub fn audit_topic_name(&self) -> &str {
        &self.audit_topic
    }

    /// The topics to check, `None` for every audited one.
    pub fn topic_names(&self) -> Option<&BTreeSet<String>> {
        self.topics.as_ref()
    }
}

// ---------------------------------------------------------------------------------------------
// the report
// ---------------------------------------------------------------------------------------------

/// One topic and window of an [`AuditReport`], summed over every producer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WindowAudit {
    /// The topic.
    pub topic: String,
    /// The window's start, ms since the epoch.
    pub window_start_ms: u64,
    /// The window's length in ms.
    pub window_ms: u64,
    /// How many producers reported on it.
    pub producers: usize,
    /// Records acknowledged (by every producer), with and without offsets.
    pub produced: u64,
    /// Of `produced`: found in the log.
    pub seen: u64,
    /// Of `seen`: in a damaged claim, so not confirmed by the fingerprints (see the module
    /// docs).
    pub unconfirmed: u64,
    /// Of `produced`: not in the log, or replaced by other messages — lost.
    pub missing: u64,
    /// Of `missing`: replaced by other messages at their offsets.
    pub overwritten: u64,
    /// Of `produced`: below the partition's earliest offset (deleted by retention).
    pub expired: u64,
    /// Of `produced`: acknowledged without an offset (acks=0), so not checkable.
    pub unverified: u64,
    /// Of `produced`: in partitions that could not be read (see [`PartitionAudit::error`]).
    pub unchecked: u64,
    /// Records whose delivery failed (known losses; not in `produced`).
    pub failed: u64,
}

impl WindowAudit {
    /// `seen / (seen + missing)` in percent; `None` when nothing was checkable.
    pub fn completeness(&self) -> Option<f64> {
        let checked = self.seen + self.missing;
        (checked > 0).then(|| self.seen as f64 * 100.0 / checked as f64)
    }

    /// True when nothing is missing and everything checkable was checked.
    pub fn is_complete(&self) -> bool {
        self.missing == 0 && self.unchecked == 0
    }

    fn add(&mut self, o: &ClaimOutcome) {
        self.seen += o.seen;
        self.unconfirmed += o.unconfirmed;
        self.missing += o.missing;
        self.overwritten += o.overwritten;
        self.expired += o.expired;
    }
}

/// One partition of an [`AuditReport`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionAudit {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// Its earliest offset, `None` when the partition does not exist (or was not read).
    pub log_start: Option<i64>,
    /// Its log end offset (the next message's) when the check read it.
    pub log_end: Option<i64>,
    /// Messages the audit records claim at offsets (all windows).
    pub claimed: u64,
    /// Of `claimed`: found.
    pub seen: u64,
    /// Of `seen`: not confirmed by the fingerprints.
    pub unconfirmed: u64,
    /// Of `claimed`: lost.
    pub missing: u64,
    /// Of `missing`: replaced by other messages.
    pub overwritten: u64,
    /// Of `claimed`: deleted by retention.
    pub expired: u64,
    /// Messages in the log no audit record accounts for.
    pub unaudited: u64,
    /// Why the partition could not be checked.
    pub error: Option<String>,
}

/// An audit record the checker could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedAuditRecord {
    /// Its partition of the audit topic.
    pub partition: i32,
    /// Its offset.
    pub offset: i64,
    /// What is wrong with it.
    pub reason: String,
}

/// What [`Admin::audit`] found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AuditReport {
    /// The audit topic read.
    pub audit_topic: String,
    /// Audit records read (each once).
    pub records: u64,
    /// Audit records stored more than once (a retried produce request), counted once.
    pub duplicates: u64,
    /// Audit records that could not be read (not counted).
    pub malformed: u64,
    /// Some of them, with the reason.
    pub malformed_examples: Vec<MalformedAuditRecord>,
    /// The producers that published records, by name.
    pub producers: BTreeSet<String>,
    /// Per topic and window, sorted.
    pub windows: Vec<WindowAudit>,
    /// Per partition, sorted.
    pub partitions: Vec<PartitionAudit>,
}

impl AuditReport {
    /// True when nothing is missing and every partition could be read.
    pub fn is_complete(&self) -> bool {
        self.windows.iter().all(WindowAudit::is_complete) && self.partitions.iter().all(|p| p.error.is_none())
    }

    /// Messages missing over every topic and window.
    pub fn missing(&self) -> u64 {
        self.windows.iter().map(|w| w.missing).sum()
    }

    /// Messages produced over every topic and window.
    pub fn produced(&self) -> u64 {
        self.windows.iter().map(|w| w.produced).sum()
    }

    /// Messages seen over every topic and window.
    pub fn seen(&self) -> u64 {
        self.windows.iter().map(|w| w.seen).sum()
    }

    /// Failed deliveries over every topic and window.
    pub fn failed(&self) -> u64 {
        self.windows.iter().map(|w| w.failed).sum()
    }

    /// Unaudited messages over every partition.
    pub fn unaudited(&self) -> u64 {
        self.partitions.iter().map(|p| p.unaudited).sum()
    }

    /// The windows of `topic`.
    pub fn topic_windows<'a>(&'a self, topic: &'a str) -> impl Iterator<Item = &'a WindowAudit> + 'a {
        self.windows.iter().filter(move |w| w.topic == topic)
    }

    /// One partition's line.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionAudit> {
        self.partitions.iter().find(|p| p.topic == topic && p.partition == partition)
    }

    /// The windows of `topic` summed into one (window fields are those of the first).
    pub fn topic_total(&self, topic: &str) -> WindowAudit {
        let mut total = WindowAudit { topic: topic.to_owned(), ..WindowAudit::default() };
        let mut first = true;
        for w in self.topic_windows(topic) {
            if first {
                total.window_start_ms = w.window_start_ms;
                total.window_ms = w.window_ms;
                first = false;
            }
            total.producers = total.producers.max(w.producers);
            total.produced += w.produced;
            total.seen += w.seen;
            total.unconfirmed += w.unconfirmed;
            total.missing += w.missing;
            total.overwritten += w.overwritten;
            total.expired += w.expired;
            total.unverified += w.unverified;
            total.unchecked += w.unchecked;
            total.failed += w.failed;
        }
        total
    }
}

// ---------------------------------------------------------------------------------------------
// judging claims (pure)
// ---------------------------------------------------------------------------------------------

/// A range claimed by an audit record, and the window it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claim {
    pub(crate) first: i64,
    pub(crate) last: i64,
    pub(crate) fingerprint: u64,
    pub(crate) window: usize,
}

impl Claim {
    fn len(&self) -> u64 {
        (self.last - self.first + 1) as u64
    }
}

/// What became of a claim's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ClaimOutcome {
    pub(crate) seen: u64,
    pub(crate) unconfirmed: u64,
    pub(crate) missing: u64,
    pub(crate) overwritten: u64,
    pub(crate) expired: u64,
}

#[derive(Debug, Clone, Copy)]
struct ClaimState {
    present: u64,
    sum: u64,
    /// The next offset expected (messages come in offset order).
    next: i64,
    first_absent: Option<i64>,
}

/// Walks a partition's log in offset order against its claims (sorted by first offset): fed
/// only the messages at claimed offsets, it keeps a few numbers per claim.
#[derive(Debug)]
pub(crate) struct Sweep {
    claims: Vec<Claim>,
    log_start: i64,
    states: Vec<ClaimState>,
    next_claim: usize,
    active: Vec<usize>,
    /// The claimed offsets at or above `log_start`, merged: `[start, end)`.
    needed: Vec<(i64, i64)>,
}

impl Sweep {
    pub(crate) fn new(mut claims: Vec<Claim>, log_start: i64) -> Sweep {
        claims.sort_by_key(|c| (c.first, c.last));
        let states = claims
            .iter()
            .map(|c| ClaimState { present: 0, sum: 0, next: c.first.max(log_start), first_absent: None })
            .collect();
        let mut needed: Vec<(i64, i64)> = Vec::new();
        for c in &claims {
            let (start, end) = (c.first.max(log_start), c.last + 1);
            if start >= end {
                continue;
            }
            match needed.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => needed.push((start, end)),
            }
        }
        Sweep { claims, log_start, states, next_claim: 0, active: Vec::new(), needed }
    }

    /// The first claimed offset at or after `from`.
    pub(crate) fn next_needed(&self, from: i64) -> Option<i64> {
        let i = self.needed.partition_point(|(_, end)| *end <= from);
        self.needed.get(i).map(|(start, _)| (*start).max(from))
    }

    /// A message of the log, in offset order.
    pub(crate) fn offer(&mut self, offset: i64, fingerprint: u32) {
        while self.next_claim < self.claims.len() && self.claims[self.next_claim].first <= offset {
            self.active.push(self.next_claim);
            self.next_claim += 1;
        }
        let claims = &self.claims;
        self.active.retain(|&i| claims[i].last >= offset);
        for &i in &self.active {
            let st = &mut self.states[i];
            if offset < st.next {
                continue;
            }
            if offset > st.next && st.first_absent.is_none() {
                st.first_absent = Some(st.next);
            }
            st.present += 1;
            st.sum = st.sum.wrapping_add(u64::from(fingerprint));
            st.next = offset + 1;
        }
    }

    /// Judges every claim (see the module docs); returns the outcomes in the order of
    /// `claims()` and how many offsets of `[log_start, log_end)` the intact parts cover.
    pub(crate) fn finish(mut self, log_end: i64) -> (Vec<Claim>, Vec<ClaimOutcome>, u64) {
        for (c, st) in self.claims.iter().zip(&mut self.states) {
            if st.first_absent.is_none() && st.next <= c.last {
                st.first_absent = Some(st.next);
            }
        }
        let log_start = self.log_start;
        let intact: Vec<bool> = self
            .claims
            .iter()
            .zip(&self.states)
            .map(|(c, st)| c.first >= log_start && st.present == c.len() && st.sum == c.fingerprint)
            .collect();
        // intact claims hold distinct offsets: sorted by first, their ends are sorted too
        let held: Vec<(i64, i64)> =
            self.claims.iter().zip(&intact).filter(|(_, ok)| **ok).map(|(c, _)| (c.first, c.last)).collect();
        let mut outcomes = Vec::with_capacity(self.claims.len());
        let mut covered: Vec<(i64, i64)> = Vec::new();
        for ((c, st), ok) in self.claims.iter().zip(&self.states).zip(&intact) {
            if *ok {
                outcomes.push(ClaimOutcome { seen: c.len(), ..ClaimOutcome::default() });
                covered.push((c.first, c.last + 1));
                continue;
            }
            let start = c.first.max(log_start);
            if start > c.last {
                outcomes.push(ClaimOutcome { expired: c.len(), ..ClaimOutcome::default() });
                continue;
            }
            let expired = (start - c.first) as u64;
            let i = held.partition_point(|(_, last)| *last < start);
            let taken = held.get(i).filter(|(first, _)| *first <= c.last).map(|(first, _)| (*first).max(start));
            let absent = st.first_absent.unwrap_or(c.last + 1);
            let whole = expired == 0 && st.present == c.len();
            let outcome = if whole && taken.is_none() {
                // every offset holds a message, none of them ours, and no intact claim says whose
                ClaimOutcome { missing: c.len(), overwritten: c.len(), ..ClaimOutcome::default() }
            } else {
                let cut = taken.map_or(absent, |t| t.min(absent));
                let seen = (cut - start) as u64;
                covered.push((start, cut));
                let missing = c.len() - expired - seen;
                ClaimOutcome { seen, unconfirmed: seen, missing, overwritten: st.present - seen, expired }
            };
            outcomes.push(outcome);
        }
        covered.retain(|(s, e)| s < e);
        covered.sort_unstable();
        let mut total = 0u64;
        let mut reach = i64::MIN;
        for (s, e) in covered {
            let (s, e) = (s.max(reach).max(log_start), e.min(log_end));
            if s < e {
                total += (e - s) as u64;
            }
            reach = reach.max(e);
        }
        (self.claims, outcomes, total)
    }
}

// ---------------------------------------------------------------------------------------------
// the check
// ---------------------------------------------------------------------------------------------

/// The audit records read so far: windows (summed over producers) and claims per partition.
#[derive(Debug, Default)]
struct Collected {
    windows: Vec<WindowAudit>,
    window_ids: HashMap<(String, u64, u64), usize>,
    /// Per window, the (producer, session) pairs that reported on it.
    window_producers: Vec<BTreeSet<(String, String)>>,
    claims: BTreeMap<(String, i32), Vec<Claim>>,
    records: HashSet<(String, String, u64)>,
    report: AuditReport,
}

impl Collected {
    fn add(&mut self, record: AuditRecord, wanted: Option<&BTreeSet<String>>) {
        if wanted.is_some_and(|w| !w.contains(&record.topic)) {
            return;
        }
        if !self.records.insert((record.producer.clone(), record.session.clone(), record.seq)) {
            self.report.duplicates += 1;
            return;
        }
        self.report.records += 1;
        self.report.producers.insert(record.producer.clone());
        let key = (record.topic.clone(), record.window_start_ms, record.window_ms);
        let id = match self.window_ids.get(&key) {
            Some(&id) => id,
            None => {
                self.windows.push(WindowAudit {
                    topic: record.topic.clone(),
                    window_start_ms: record.window_start_ms,
                    window_ms: record.window_ms,
                    ..WindowAudit::default()
                });
                self.window_producers.push(BTreeSet::new());
                self.window_ids.insert(key, self.windows.len() - 1);
                self.windows.len() - 1
            }
        };
        self.window_producers[id].insert((record.producer.clone(), record.session.clone()));
        let w = &mut self.windows[id];
        w.producers = self.window_producers[id].len();
        w.failed += record.failed;
        for (partition, p) in record.partitions {
            let ranged: u64 = p.ranges.iter().map(AuditRange::len).sum();
            w.produced += p.count;
            w.unverified += p.count - ranged;
            let claims = self.claims.entry((record.topic.clone(), partition)).or_default();
            claims.extend(p.ranges.iter().map(|r| Claim {
                first: r.first,
                last: r.last,
                fingerprint: r.fingerprint,
                window: id,
            }));
        }
    }
}

impl Admin {
    /// Checks the audit (see [`crate::audit`]): reads every audit record of
    /// `options.audit_topic_name()` from the earliest offset, then every claimed offset of
    /// every audited partition (or only `options.topic_names()`), and reports produced, seen,
    /// missing, failed and unaudited messages per topic and window. Brokers are found through
    /// ZooKeeper (`/brokers/ids`), topics and partitions too (nothing is auto-created).
    ///
    /// Memory holds the audit records' ranges (a few numbers per producer, partition and
    /// window) and one fetch (`fetch_max_bytes`); the topics' messages are streamed. Reads go
    /// to the leaders; a partition that cannot be read is reported (with its error) and makes
    /// the report incomplete. Producers still running may publish more records meanwhile:
    /// the check sees the audit topic as it was when it read it, and each partition up to the
    /// log end it found just after.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTopic`] when the audit topic does not exist (no producer with audit
    /// published yet), [`Error::NoBrokers`], [`Error::ZooKeeper`], and
    /// [`Error::Consumer`] when the audit topic cannot be read.
    pub async fn audit(&self, options: &AuditOptions) -> Result<AuditReport> {
        let audit_topic = &options.audit_topic;
        let audit_assignment = self.existing_assignment(audit_topic).await?;
        let consumer = self.audit_consumer(options).await?;
        let read_error =
            |what: String, e: gregor_simple_consumer::Error| Error::Consumer { context: what, source: Arc::new(e) };

        // 1. the audit records
        let mut collected = Collected::default();
        collected.report.audit_topic = audit_topic.clone();
        for &partition in audit_assignment.partitions.keys() {
            let context = || format!("could not read the audit topic {audit_topic}/{partition}");
            let start = consumer.earliest_offset(audit_topic, partition).await.map_err(|e| read_error(context(), e))?;
            let end = consumer.latest_offset(audit_topic, partition).await.map_err(|e| read_error(context(), e))?;
            let mut offset = start;
            while offset < end {
                let data = consumer
                    .fetch_partition(audit_topic, partition, offset)
                    .await
                    .map_err(|e| read_error(context(), e))?;
                for m in &data.messages {
                    if m.offset >= end {
                        break;
                    }
                    match AuditRecord::parse(m.value.as_deref().unwrap_or_default()) {
                        Ok(record) => collected.add(record, options.topics.as_ref()),
                        Err(e) => {
                            collected.report.malformed += 1;
                            if collected.report.malformed_examples.len() < MALFORMED_EXAMPLES {
                                collected.report.malformed_examples.push(MalformedAuditRecord {
                                    partition,
                                    offset: m.offset,
                                    reason: e.to_string(),
                                });
                            }
                        }
                    }
                }
                if data.next_offset <= offset {
                    // nothing below the end it reported at first: the log end moved back
                    tracing::warn!(topic = %audit_topic, partition, offset, end, "the audit topic ends early");
                    break;
                }
                offset = data.next_offset;
            }
        }

        // 2. the topics: every audited one, or the ones asked for (audited or not)
        let mut topics: BTreeSet<String> = collected.windows.iter().map(|w| w.topic.clone()).collect();
        if let Some(wanted) = &options.topics {
            topics.extend(wanted.iter().cloned());
        }
        topics.remove(audit_topic);
        let mut windows = std::mem::take(&mut collected.windows);
        let mut partitions = Vec::new();
        for topic in &topics {
            let existing: BTreeSet<i32> = match self.assignment(topic).await? {
                Some(a) => a.partitions.keys().copied().collect(),
                None => BTreeSet::new(),
            };
            let claimed: BTreeSet<i32> = collected
                .claims
                .range((topic.clone(), i32::MIN)..=(topic.clone(), i32::MAX))
                .map(|((_, p), _)| *p)
                .collect();
            for partition in existing.union(&claimed).copied() {
                let claims = collected.claims.remove(&(topic.clone(), partition)).unwrap_or_default();
                let line = if existing.contains(&partition) {
                    check_partition(&consumer, topic, partition, claims, &mut windows).await
                } else {
                    // the topic (or the partition) is gone, and every claimed message with it
                    let mut line = PartitionAudit { topic: topic.clone(), partition, ..PartitionAudit::default() };
                    for c in claims {
                        line.claimed += c.len();
                        line.missing += c.len();
                        windows[c.window].add(&ClaimOutcome { missing: c.len(), ..ClaimOutcome::default() });
                    }
                    line
                };
                partitions.push(line);
            }
        }
        consumer.close().await;
        let mut report = collected.report;
        windows.sort_by(|a, b| {
            (&a.topic, a.window_start_ms, a.window_ms).cmp(&(&b.topic, b.window_start_ms, b.window_ms))
        });
        report.windows = windows;
        partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        report.partitions = partitions;
        Ok(report)
    }

    async fn audit_consumer(&self, options: &AuditOptions) -> Result<SimpleConsumer> {
        let brokers = self.list_brokers().await?;
        if brokers.brokers.is_empty() {
            return Err(Error::NoBrokers);
        }
        let list = brokers.brokers.iter().map(|b| b.addr()).collect::<Vec<_>>().join(",");
        let config = SimpleConsumerConfig::builder()
            .metadata_broker_list(list)
            .client_id(options.client_id.clone())
            .fetch_message_max_bytes(options.fetch_max_bytes)
            .fetch_wait_max(Duration::ZERO)
            .fetch_message_auto_grow_max_bytes(Some(FETCH_GROW_MAX.max(options.fetch_max_bytes.saturating_add(1))))
            .security(self.pool().config().security())
            .build()
            .map_err(|e| Error::Consumer {
                context: "invalid audit read settings".to_owned(),
                source: Arc::new(gregor_simple_consumer::Error::Config(e)),
            })?;
        SimpleConsumer::new(config).map_err(|e| Error::Consumer {
            context: "could not set up the audit reads".to_owned(),
            source: Arc::new(e),
        })
    }
}

/// Reads a partition's claimed offsets and judges its claims, adding the outcomes to their
/// windows. A read error leaves the claims unchecked and is reported on the line.
async fn check_partition(
    consumer: &SimpleConsumer,
    topic: &str,
    partition: i32,
    claims: Vec<Claim>,
    windows: &mut [WindowAudit],
) -> PartitionAudit {
    let mut line = PartitionAudit { topic: topic.to_owned(), partition, ..PartitionAudit::default() };
    line.claimed = claims.iter().map(Claim::len).sum();
    let read = async {
        let failed = |e: gregor_simple_consumer::Error| error_chain(&e);
        let start = consumer.earliest_offset(topic, partition).await.map_err(failed)?;
        let mut end = consumer.latest_offset(topic, partition).await.map_err(failed)?;
        let mut sweep = Sweep::new(claims.clone(), start);
        let mut cursor = sweep.next_needed(start);
        while let Some(at) = cursor.filter(|at| *at < end) {
            let data = consumer.fetch_partition(topic, partition, at).await.map_err(failed)?;
            for m in &data.messages {
                if m.offset >= end {
                    break;
                }
                sweep.offer(m.offset, fingerprint(m.key.as_deref(), m.value.as_deref()));
            }
            if data.next_offset <= at {
                if data.high_watermark > at {
                    return Err(format!(
                        "no message at offset {at} although the high watermark is {}",
                        data.high_watermark
                    ));
                }
                // the committed log ends below the log end read first (truncated meanwhile)
                end = data.high_watermark.max(start);
                break;
            }
            cursor = sweep.next_needed(data.next_offset);
        }
        Ok::<_, String>((start, end, sweep.finish(end)))
    };
    match read.await {
        Ok((start, end, (claims, outcomes, covered))) => {
            line.log_start = Some(start);
            line.log_end = Some(end);
            for (c, o) in claims.iter().zip(&outcomes) {
                windows[c.window].add(o);
                line.seen += o.seen;
                line.unconfirmed += o.unconfirmed;
                line.missing += o.missing;
                line.overwritten += o.overwritten;
                line.expired += o.expired;
            }
            line.unaudited = ((end - start).max(0) as u64).saturating_sub(covered);
        }
        Err(e) => {
            tracing::warn!(%topic, partition, error = %e, "audit: the partition could not be read");
            for c in &claims {
                windows[c.window].unchecked += c.len();
            }
            line.error = Some(e);
        }
    }
    line
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(v: &str) -> u32 {
        fingerprint(None, Some(v.as_bytes()))
    }

    /// A claim over `values` at `first..`, in window 0.
    fn claim(first: i64, values: &[&str]) -> Claim {
        Claim {
            first,
            last: first + values.len() as i64 - 1,
            fingerprint: values.iter().map(|v| u64::from(fp(v))).sum(),
            window: 0,
        }
    }

    /// Runs a sweep over a log of `(offset, value)` starting at `log_start`.
    fn judge(claims: Vec<Claim>, log_start: i64, log: &[(i64, &str)]) -> (Vec<ClaimOutcome>, u64) {
        let log_end = log.last().map_or(log_start, |(o, _)| o + 1);
        let mut sweep = Sweep::new(claims, log_start);
        let mut cursor = sweep.next_needed(log_start);
        // as the check does: only claimed offsets, in order, skipping gaps between claims
        for (offset, value) in log {
            match cursor {
                Some(at) if *offset >= at => {
                    sweep.offer(*offset, fp(value));
                    cursor = sweep.next_needed(offset + 1);
                }
                _ => {}
            }
        }
        let (_, outcomes, covered) = sweep.finish(log_end);
        (outcomes, (log_end - log_start) as u64 - covered)
    }

    fn seen(n: u64) -> ClaimOutcome {
        ClaimOutcome { seen: n, ..ClaimOutcome::default() }
    }

    #[test]
    fn intact_claims_are_seen_and_the_rest_of_the_log_is_unaudited() {
        let log = [(0, "a"), (1, "b"), (2, "x"), (3, "c"), (4, "d")];
        let (o, unaudited) = judge(vec![claim(3, &["c", "d"]), claim(0, &["a", "b"])], 0, &log);
        assert_eq!(o, [seen(2), seen(2)]);
        assert_eq!(unaudited, 1);
    }

    #[test]
    fn a_truncated_tail_is_missing_and_the_part_before_it_unconfirmed() {
        // acknowledged 0..=5, the log kept 0..=2
        let log = [(0, "a"), (1, "b"), (2, "c")];
        let (o, unaudited) = judge(vec![claim(0, &["a", "b", "c", "d", "e", "f"])], 0, &log);
        assert_eq!(o, [ClaimOutcome { seen: 3, unconfirmed: 3, missing: 3, ..ClaimOutcome::default() }]);
        assert_eq!(unaudited, 0);
    }

    #[test]
    fn lost_offsets_taken_by_later_audited_messages_are_missing_and_overwritten() {
        // a claim 0..=5 lost its tail from 3 on; a later producer got 3..=4
        let log = [(0, "a"), (1, "b"), (2, "c"), (3, "N"), (4, "M")];
        let (o, unaudited) = judge(vec![claim(0, &["a", "b", "c", "d", "e", "f"]), claim(3, &["N", "M"])], 0, &log);
        assert_eq!(
            o,
            [ClaimOutcome { seen: 3, unconfirmed: 3, missing: 3, overwritten: 2, expired: 0 }, seen(2)],
            "exactly the three lost"
        );
        assert_eq!(unaudited, 0);
        // the same when the whole claim was lost and re-used (a topic deleted and re-created)
        let log = [(0, "N"), (1, "M"), (2, "O")];
        let (o, _) = judge(vec![claim(0, &["a", "b"]), claim(2, &["c", "d"]), claim(0, &["N", "M", "O"])], 0, &log);
        assert_eq!(o[0], ClaimOutcome { missing: 2, overwritten: 2, ..ClaimOutcome::default() });
        assert_eq!(o[1], seen(3), "sorted by first offset: the intact claim is second");
        assert_eq!(o[2], ClaimOutcome { missing: 2, overwritten: 1, ..ClaimOutcome::default() });
    }

    #[test]
    fn offsets_taken_by_unaudited_messages_make_the_whole_claim_missing() {
        let log = [(0, "x"), (1, "y")];
        let (o, unaudited) = judge(vec![claim(0, &["a", "b"])], 0, &log);
        assert_eq!(o, [ClaimOutcome { missing: 2, overwritten: 2, ..ClaimOutcome::default() }]);
        assert_eq!(unaudited, 2);
    }

    #[test]
    fn offsets_below_the_log_start_are_expired() {
        let log = [(2, "c"), (3, "d")];
        let (o, unaudited) = judge(vec![claim(0, &["a", "b"]), claim(1, &["b", "c", "d"])], 2, &log);
        assert_eq!(o[0], ClaimOutcome { expired: 2, ..ClaimOutcome::default() });
        assert_eq!(o[1], ClaimOutcome { expired: 1, seen: 2, unconfirmed: 2, ..ClaimOutcome::default() });
        assert_eq!(unaudited, 0);
    }

    #[test]
    fn a_claim_beyond_the_log_end_and_an_empty_log_are_missing() {
        let (o, unaudited) = judge(vec![claim(5, &["a"])], 0, &[(0, "z")]);
        assert_eq!(o, [ClaimOutcome { missing: 1, ..ClaimOutcome::default() }]);
        assert_eq!(unaudited, 1);
        let (o, unaudited) = judge(vec![claim(0, &["a", "b"])], 0, &[]);
        assert_eq!(o, [ClaimOutcome { missing: 2, ..ClaimOutcome::default() }]);
        assert_eq!(unaudited, 0);
    }

    #[test]
    fn the_sweep_skips_to_claimed_offsets() {
        let s = Sweep::new(vec![claim(10, &["a", "b"]), claim(11, &["b", "c", "d"]), claim(40, &["e"])], 0);
        assert_eq!(s.needed, [(10, 14), (40, 41)]);
        assert_eq!(s.next_needed(0), Some(10));
        assert_eq!(s.next_needed(12), Some(12));
        assert_eq!(s.next_needed(14), Some(40));
        assert_eq!(s.next_needed(41), None);
    }

    fn record_json(partitions: &str) -> String {
        format!(
            "{{\"version\":1,\"producer\":\"p\",\"session\":\"s\",\"seq\":7,\"topic\":\"t\",\"window_start_ms\":60000,\
             \"window_ms\":60000,\"acks\":-1,\"partitions\":{{{partitions}}},\"failed\":2}}"
        )
    }

    #[test]
    fn duplicates_count_once_and_windows_sum_producers() {
        let mut c = Collected::default();
        let r = AuditRecord::parse(record_json("\"0\":{\"count\":3,\"ranges\":[[0,1,5]]}").as_bytes()).unwrap();
        c.add(r.clone(), None);
        c.add(r.clone(), None);
        let mut other = r.clone();
        other.session = "s2".into();
        c.add(other, None);
        c.add(AuditRecord { topic: "u".into(), ..r }, Some(&BTreeSet::from(["t".to_owned()])));
        assert_eq!((c.report.records, c.report.duplicates), (2, 1));
        assert_eq!(c.windows.len(), 1, "u was not asked for");
        let w = &c.windows[0];
        assert_eq!((w.producers, w.produced, w.unverified, w.failed), (2, 6, 2, 4));
        assert_eq!(c.claims[&("t".to_owned(), 0)].len(), 2);
    }
}
