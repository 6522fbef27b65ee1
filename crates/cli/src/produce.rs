//! `gregor produce`: one message per line of stdin, sent by the asynchronous producer; every
//! delivery awaited and accounted for in a summary on stderr.
//!
//! ```text
//!  stdin ─ read_until('\n') ─ split key ─► AsyncProducer::send_with_callback (waits while the
//!                                            │        queue is full: bounded memory)
//!                                            └─► callback ─► Tally (per partition, failures
//!  EOF ─► flush (every result in) ─► close ─► summary           grouped by reason, line numbers)
//! ```

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use gregor_producer::{AsyncProducer, DeliveryHandler, DeliveryResult, ProducerConfig, Record};
use gregor_serde::BytesEncoder;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::cli::ProduceArgs;
use crate::error::{chain, CliError};
use crate::tally::{lock, PartitionCounts};

/// The client.id of this command, unless `--property client.id=...` says otherwise.
const CLIENT_ID: &str = "gregor-produce";
/// request.required.acks unless `--acks` or `--property` say otherwise (the library's default,
/// Kafka 0.8.2's 0, loses broker-side errors silently: wrong for a tool that reports them).
const DEFAULT_ACKS: &str = "1";
/// queue.buffering.max.ms unless `--property` says otherwise: kafka-console-producer.sh's
/// `--timeout` default, so typed lines go out within a second.
const DEFAULT_LINGER_MS: &str = "1000";
/// How long `close` may take once every result is in (it only stops the background task).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// Distinct failure reasons listed in the summary; more are counted together.
const MAX_REASONS: usize = 20;
/// Input line numbers listed per failure reason.
const MAX_LINES_PER_REASON: usize = 10;
/// Bytes read from stdin at a time.
const READ_BUFFER: usize = 64 * 1024;

/// The producer settings: this command's defaults, then the `--command-config` file and the
/// `--property` values, then the flags.
fn config(args: &ProduceArgs) -> Result<ProducerConfig, CliError> {
    let mut props: Vec<(String, String)> = vec![
        ("producer.type".into(), "async".into()),
        ("client.id".into(), CLIENT_ID.into()),
        ("request.required.acks".into(), DEFAULT_ACKS.into()),
        ("queue.buffering.max.ms".into(), DEFAULT_LINGER_MS.into()),
    ];
    props.extend(crate::properties::with_file(args.command_config.as_deref(), &args.properties)?);
    props.push(("metadata.broker.list".into(), args.broker_list.clone()));
    if let Some(acks) = args.acks {
        props.push(("request.required.acks".into(), acks.to_string()));
    }
    if let Some(codec) = args.compression {
        props.push(("compression.codec".into(), codec.property().into()));
    }
    ProducerConfig::from_properties(props).map_err(|e| CliError::usage("invalid producer settings", e))
}

/// Runs `gregor produce`.
pub(crate) async fn run(args: ProduceArgs) -> Result<(), CliError> {
    let config = config(&args)?;
    let acks = config.request_required_acks();
    let producer: AsyncProducer<Bytes, Bytes> = AsyncProducer::new(config, BytesEncoder, BytesEncoder)
        .map_err(|e| CliError::usage("could not create the producer", e))?;
    // one handler for the run (the line number is each message's opaque): a send allocates
    // nothing for its result and takes no lock (a boxed callback and a locked tally per line
    // cost this command about a third of its time). Leaked: it lives to the end of the
    // command, which is the process's.
    let results: &'static Results = Box::leak(Box::default());
    let (mut read, mut accepted) = (0u64, 0u64);
    let topic = gregor_producer::Topic::new(&args.topic);
    let separator = args.key_separator.as_deref().map(str::as_bytes);
    let mut lines = Lines::new(tokio::io::stdin());
    let mut read_error = None;
    let mut interrupted = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut line_no = 0u64;
    loop {
        let line = tokio::select! {
            biased;
            _ = &mut ctrl_c => {
                interrupted = true;
                break;
            }
            line = lines.next() => line,
        };
        let line = match line {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                read_error = Some(e);
                break;
            }
        };
        line_no += 1;
        let (key, value) = split(line, separator);
        let mut record = Record::new(topic.clone(), value);
        record.key = key;
        record.partition = args.partition;
        read += 1;
        // waits while the queue is full: reading stdin waits with it
        let sent = tokio::select! {
            biased;
            _ = &mut ctrl_c => {
                read -= 1;
                interrupted = true;
                break;
            }
            sent = producer.send_with_static_handler(record, results, line_no) => sent,
        };
        match sent {
            Ok(()) => accepted += 1,
            Err(e) => lock(&results.failures).failure(line_no, chain(&e)),
        }
    }
    // every result in: flush waits for the records queued so far (bounded by the retries and
    // request.timeout.ms); a (further) Ctrl-C gives up on them
    let gave_up = tokio::select! {
        biased;
        _ = tokio::signal::ctrl_c() => true,
        _ = producer.flush() => false,
    };
    let _ = producer.close(if gave_up { Duration::ZERO } else { CLOSE_TIMEOUT }).await;
    let tally = results.tally(read, accepted);
    let summary = tally.summary(&args.topic, acks, interrupted.then_some(line_no));
    let _ = std::io::stderr().write_all(summary.as_bytes());
    if let Some(e) = read_error {
        return Err(CliError::new(format!("could not read stdin after line {line_no}"), e));
    }
    match tally.failed() {
        0 => Ok(()),
        n if tally.read == 1 => Err(CliError::msg(format!("{n} of 1 message was not delivered"))),
        n => Err(CliError::msg(format!("{n} of {} messages were not delivered", tally.read))),
    }
}

/// The messages' results as they come, from the run's one [`DeliveryHandler`]: deliveries
/// counted per partition without a lock, failures (with their line numbers) under one.
#[derive(Debug, Default)]
struct Results {
    /// Deliveries (the failures are counted in `failures`).
    delivered: PartitionCounts,
    /// The failures, refusals at `send` too.
    failures: Mutex<Tally>,
}

impl DeliveryHandler for Results {
    fn on_delivery(&self, line: u64, result: DeliveryResult) {
        match result {
            Ok(metadata) => self.delivered.add(metadata.partition),
            Err(_) => lock(&self.failures).result(line, result),
        }
    }
}

impl Results {
    /// Every message's fate: `read` lines, `accepted` by the producer, and what came here.
    fn tally(&self, read: u64, accepted: u64) -> Tally {
        let mut tally = std::mem::take(&mut *lock(&self.failures));
        (tally.read, tally.accepted) = (read, accepted);
        for (p, n) in self.delivered.totals() {
            *tally.delivered.entry(p).or_default() += n;
            tally.results += n;
        }
        tally
    }
}

/// Splits a line at the first `separator`: `(key, value)`; no separator (or none in the line)
/// gives a null key and the whole line as the value.
fn split(line: Bytes, separator: Option<&[u8]>) -> (Option<Bytes>, Bytes) {
    let Some(sep) = separator.filter(|s| !s.is_empty()) else { return (None, line) };
    match line.windows(sep.len()).position(|w| w == sep) {
        Some(at) => (Some(line.slice(..at)), line.slice(at + sep.len()..)),
        None => (None, line),
    }
}

/// Lines of a reader, as they come: each without its `\n`; a last line without `\n` too.
#[derive(Debug)]
struct Lines<R> {
    reader: BufReader<R>,
    /// The line being read.
    line: Vec<u8>,
    /// Where lines are kept, [`ARENA`] bytes at a time: a line is a slice of it, not an
    /// allocation of its own (an allocation per line cost a tenth of this command's time).
    arena: BytesMut,
}

/// Bytes of lines per allocation.
const ARENA: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> Lines<R> {
    fn new(reader: R) -> Self {
        Lines { reader: BufReader::with_capacity(READ_BUFFER, reader), line: Vec::new(), arena: BytesMut::new() }
    }

    /// The next line, `None` at the end. Not cancel safe (a partly read line is lost): only
    /// cancelled when the command stops reading anyway.
    async fn next(&mut self) -> std::io::Result<Option<Bytes>> {
        self.line.clear();
        if self.reader.read_until(b'\n', &mut self.line).await? == 0 {
            return Ok(None);
        }
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
        }
        if self.arena.capacity() < self.line.len() {
            self.arena = BytesMut::with_capacity(ARENA.max(self.line.len()));
        }
        self.arena.extend_from_slice(&self.line);
        Ok(Some(self.arena.split().freeze()))
    }
}

/// Failures of one reason.
#[derive(Debug)]
struct Reason {
    text: String,
    count: u64,
    lines: Vec<u64>,
}

/// Every message's fate, filled by the delivery callbacks.
#[derive(Debug, Default)]
struct Tally {
    /// Lines read (messages attempted).
    read: u64,
    /// Messages the producer accepted (each gets exactly one result).
    accepted: u64,
    /// Results received.
    results: u64,
    /// Delivered messages per partition.
    delivered: BTreeMap<i32, u64>,
    /// Failures grouped by reason, in order of first appearance.
    reasons: Vec<Reason>,
    /// Failures of reasons beyond [`MAX_REASONS`].
    other: u64,
}

impl Tally {
    fn result(&mut self, line: u64, result: DeliveryResult) {
        self.results += 1;
        match result {
            Ok(metadata) => *self.delivered.entry(metadata.partition).or_default() += 1,
            Err(e) => self.failure(line, chain(&e)),
        }
    }

    fn failure(&mut self, line: u64, text: String) {
        if let Some(r) = self.reasons.iter_mut().find(|r| r.text == text) {
            r.count += 1;
            if r.lines.len() < MAX_LINES_PER_REASON {
                r.lines.push(line);
            }
        } else if self.reasons.len() < MAX_REASONS {
            self.reasons.push(Reason { text, count: 1, lines: vec![line] });
        } else {
            self.other += 1;
        }
    }

    fn delivered(&self) -> u64 {
        self.delivered.values().sum()
    }

    /// Messages read and not delivered (refused, failed, or without a result).
    fn failed(&self) -> u64 {
        self.read - self.delivered()
    }

    /// The summary for stderr.
    fn summary(&self, topic: &str, acks: i16, interrupted_after: Option<u64>) -> String {
        let mut s = String::new();
        if let Some(line) = interrupted_after {
            s.push_str(&format!("interrupted: stopped reading stdin after line {line}\n"));
        }
        let delivered = self.delivered();
        let noun = if self.read == 1 { "message" } else { "messages" };
        if delivered == self.read {
            s.push_str(&format!("{delivered} {noun} sent to {topic}"));
        } else {
            s.push_str(&format!("{delivered} of {} {noun} sent to {topic}", self.read));
        }
        if !self.delivered.is_empty() {
            let parts: Vec<String> = self.delivered.iter().map(|(p, n)| format!("partition {p}: {n}")).collect();
            s.push_str(&format!(" ({})", parts.join(", ")));
        }
        s.push('\n');
        if acks == 0 && delivered > 0 {
            s.push_str("  (acks=0: sent means written to the socket; the broker confirms nothing)\n");
        }
        let failed = self.failed();
        if failed > 0 {
            s.push_str(&format!("{failed} failed:\n"));
            for r in &self.reasons {
                let lines: Vec<String> = r.lines.iter().map(u64::to_string).collect();
                let more = if r.count > r.lines.len() as u64 { ", ..." } else { "" };
                let which = if r.count == 1 { "line" } else { "lines" };
                s.push_str(&format!("  {} ({which} {}{more}): {}\n", r.count, lines.join(", "), r.text));
            }
            if self.other > 0 {
                s.push_str(&format!("  {} for other reasons\n", self.other));
            }
            let missing = self.accepted.saturating_sub(self.results);
            if missing > 0 {
                s.push_str(&format!("  {missing} without a result: the producer stopped before reporting them\n"));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use gregor_producer::{DeliveryError, Error, RecordMetadata};

    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn keys_are_split_at_the_first_separator() {
        assert_eq!(split(b("k:v:w"), Some(b":")), (Some(b("k")), b("v:w")));
        assert_eq!(split(b(":v"), Some(b":")), (Some(b("")), b("v")));
        assert_eq!(split(b("k:"), Some(b":")), (Some(b("k")), b("")));
        assert_eq!(split(b("no key"), Some(b":")), (None, b("no key")));
        assert_eq!(split(b("a::b::c"), Some(b"::")), (Some(b("a")), b("b::c")));
        assert_eq!(split(b("k:v"), None), (None, b("k:v")));
        assert_eq!(split(b(""), Some(b":")), (None, b("")));
    }

    #[tokio::test]
    async fn lines_drop_only_the_newline() {
        let input: &[u8] = b"one\r\n\nthree\xff\nlast";
        let mut lines = Lines::new(input);
        let mut got = Vec::new();
        while let Some(line) = lines.next().await.unwrap() {
            got.push(line);
        }
        assert_eq!(got, [&b"one\r"[..], b"", b"three\xff", b"last"]);
        let mut empty = Lines::new(&b""[..]);
        assert_eq!(empty.next().await.unwrap(), None);
    }

    fn failed(partition: Option<i32>) -> DeliveryResult {
        Err(Box::new(DeliveryError {
            topic: "t".into(),
            partition,
            attempts: 1,
            error: Error::Closed { in_flight: false },
            key: None,
            value: None,
        }))
    }

    #[test]
    fn the_summary_counts_partitions_and_groups_failures() {
        let mut t = Tally { read: 5, accepted: 4, ..Tally::default() };
        t.result(1, Ok(RecordMetadata { topic: "t".into(), partition: 1, offset: 0 }));
        t.result(2, Ok(RecordMetadata { topic: "t".into(), partition: 0, offset: 0 }));
        t.result(3, failed(Some(2)));
        t.result(4, failed(Some(2)));
        t.failure(5, "queue full".into());
        assert_eq!(t.failed(), 3);
        assert_eq!(
            t.summary("t", 1, None),
            "2 of 5 messages sent to t (partition 0: 1, partition 1: 1)\n\
             3 failed:\n  \
             2 (lines 3, 4): record for t/2 not delivered after 1 attempt(s): producer closed before the record was \
             delivered\n  \
             1 (line 5): queue full\n"
        );
        let ok = Tally { read: 0, ..Tally::default() };
        assert_eq!(
            ok.summary("t", 1, Some(0)),
            "interrupted: stopped reading stdin after line 0\n0 messages sent to t\n"
        );
    }

    #[test]
    fn reasons_and_line_lists_are_bounded() {
        let mut t = Tally::default();
        for i in 0..100u64 {
            t.read += 1;
            t.failure(i, format!("reason {}", i % 40));
        }
        assert_eq!(t.reasons.len(), MAX_REASONS);
        // reasons 0..20 come 3 times each, the other 20 reasons twice
        assert_eq!(t.other, 40);
        assert_eq!(t.failed(), 100);
        for _ in 0..30 {
            t.read += 1;
            t.failure(7, "reason 0".into());
        }
        assert_eq!(t.reasons[0].count, 33);
        assert_eq!(t.reasons[0].lines.len(), MAX_LINES_PER_REASON);
        assert!(t.summary("t", 1, None).contains("  33 (lines 0, 40, 80, 7, 7, 7, 7, 7, 7, 7, ...): reason 0\n"));
        assert!(t.summary("t", 1, None).contains("  40 for other reasons\n"));
    }
}
