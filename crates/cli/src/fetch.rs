//! `gregor fetch`: one partition from an offset, one message per line of stdout.

use gregor_protocol::record::TimestampType;
use std::time::Duration;

use gregor_simple_consumer::{FetchedMessage, SimpleConsumer, SimpleConsumerConfig};
use tokio::time::Instant;

use crate::cli::{FetchArgs, StartOffset};
use crate::error::CliError;
use crate::output::{push_field, quiet_if_closed, Out};

/// The client.id of this command, unless `--property client.id=...` says otherwise.
const CLIENT_ID: &str = "gregor-fetch";

/// The shortest time between two fetches that found nothing (a broker that does not honour
/// `fetch.wait.max.ms` must not make the command spin).
const MIN_EMPTY_POLL: Duration = Duration::from_millis(10);

/// How long output still buffered after Ctrl-C may take to go out.
const INTERRUPTED_FLUSH: Duration = Duration::from_secs(1);

/// A SimpleConsumer from the flags, the `--command-config` file and the `--property` values
/// (defaults first, then the file, then the properties, then the flags).
pub(crate) fn consumer(
    broker_list: &str,
    command_config: Option<&std::path::Path>,
    properties: &[(String, String)],
    client_id: &str,
) -> Result<SimpleConsumer, CliError> {
    let mut props: Vec<(String, String)> = vec![("client.id".into(), client_id.into())];
    props.extend(crate::properties::with_file(command_config, properties)?);
    props.push(("metadata.broker.list".into(), broker_list.into()));
    let config =
        SimpleConsumerConfig::from_properties(props).map_err(|e| CliError::usage("invalid consumer settings", e))?;
    SimpleConsumer::new(config).map_err(|e| CliError::usage("invalid consumer settings", e))
}

/// Runs `gregor fetch`.
pub(crate) async fn run(args: FetchArgs) -> Result<(), CliError> {
    let consumer = consumer(&args.broker_list, args.command_config.as_deref(), &args.properties, CLIENT_ID)?;
    let mut out = Out::stdout();
    let fetching = fetch(&consumer, &args, &mut out);
    let (result, interrupted) = tokio::select! {
        biased;
        r = fetching => (r, false),
        // Ctrl-C: what was printed stays printed
        _ = tokio::signal::ctrl_c() => (Ok(()), true),
    };
    // what is buffered goes out, also before an error; after Ctrl-C only if the reader keeps up
    let flushed = if interrupted {
        tokio::time::timeout(INTERRUPTED_FLUSH, out.flush()).await.unwrap_or(Ok(()))
    } else {
        out.flush().await
    };
    let result = result.and(flushed.or_else(quiet_if_closed));
    consumer.close().await;
    result
}

/// Where to start, asked of the leader for `earliest` and `latest`.
async fn start(consumer: &SimpleConsumer, args: &FetchArgs) -> Result<i64, CliError> {
    let (topic, partition) = (args.topic.as_str(), args.partition);
    match args.offset {
        StartOffset::At(offset) => Ok(offset),
        StartOffset::Earliest => consumer
            .earliest_offset(topic, partition)
            .await
            .map_err(|e| CliError::new(format!("could not look up the earliest offset of {topic}/{partition}"), e)),
        StartOffset::Latest => consumer
            .latest_offset(topic, partition)
            .await
            .map_err(|e| CliError::new(format!("could not look up the latest offset of {topic}/{partition}"), e)),
    }
}

/// The fetch loop: prints until `--max-messages`, the high watermark, or `--timeout-ms` of
/// silence.
async fn fetch<W: tokio::io::AsyncWrite + Unpin>(
    consumer: &SimpleConsumer,
    args: &FetchArgs,
    out: &mut Out<W>,
) -> Result<(), CliError> {
    let (topic, partition) = (args.topic.as_str(), args.partition);
    let mut offset = start(consumer, args).await?;
    let max = args.max_messages.unwrap_or(u64::MAX);
    let silence = args.timeout_ms.map(Duration::from_millis);
    let mut printed = 0u64;
    let mut last_message = Instant::now();
    let mut line = Vec::new();
    let printing = Printing {
        offset: args.print_offset,
        timestamp: args.print_timestamp,
        headers: args.print_headers,
        key: args.print_key,
    };
    while printed < max {
        let asked = Instant::now();
        let fetch = consumer.fetch_partition(topic, partition, offset);
        let data = match silence {
            None => fetch.await,
            Some(silence) => match tokio::time::timeout_at(last_message + silence, fetch).await {
                Ok(r) => r,
                Err(_) => break,
            },
        }
        .map_err(|e| CliError::new(format!("could not fetch {topic}/{partition} at offset {offset}"), e))?;
        let found = !data.messages.is_empty();
        for message in data.messages.iter().take((max - printed).try_into().unwrap_or(usize::MAX)) {
            format_message(&mut line, message, &printing);
            if let Err(stop) = out.line(&line).await {
                return quiet_if_closed(stop);
            }
            printed += 1;
            offset = message.offset + 1;
        }
        if let Err(stop) = out.flush().await {
            return quiet_if_closed(stop);
        }
        if found {
            last_message = Instant::now();
        } else {
            offset = offset.max(data.next_offset);
        }
        match silence {
            None if offset >= data.high_watermark => break,
            Some(silence) if !found && last_message.elapsed() >= silence => break,
            _ if !found => tokio::time::sleep_until(asked + MIN_EMPTY_POLL).await,
            _ => {}
        }
    }
    Ok(())
}

/// Which fields a line shows besides the value.
#[derive(Debug, Clone, Copy, Default)]
struct Printing {
    offset: bool,
    timestamp: bool,
    headers: bool,
    key: bool,
}

/// One output line (without the newline): `[offset\t][timestamp\t][headers\t][key\t]value`.
fn format_message(line: &mut Vec<u8>, message: &FetchedMessage, printing: &Printing) {
    line.clear();
    if printing.offset {
        line.extend_from_slice(message.offset.to_string().as_bytes());
        line.push(b'\t');
    }
    if printing.timestamp {
        match message.timestamp_type {
            TimestampType::NoTimestamp => line.extend_from_slice(b"NO_TIMESTAMP"),
            kind => line.extend_from_slice(format!("{}:{}", kind.name(), message.timestamp).as_bytes()),
        }
        line.push(b'\t');
    }
    if printing.headers {
        if message.headers.is_empty() {
            line.extend_from_slice(b"NO_HEADERS");
        }
        for (i, h) in message.headers.iter().enumerate() {
            if i > 0 {
                line.push(b',');
            }
            line.extend_from_slice(&h.key);
            line.push(b':');
            push_field(line, h.value.as_deref());
        }
        line.push(b'\t');
    }
    if printing.key {
        push_field(line, message.key.as_deref());
        line.push(b'\t');
    }
    push_field(line, message.value.as_deref());
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn lines_put_offset_key_and_value_in_that_order() {
        let m = FetchedMessage::from(gregor_protocol::MessageAndOffset::new(
            41,
            gregor_protocol::Message::new(Some(Bytes::from_static(b"k")), Some(Bytes::from_static(b"v"))),
        ));
        let mut line = Vec::new();
        let p = |offset, key| Printing { offset, key, ..Printing::default() };
        format_message(&mut line, &m, &p(true, true));
        assert_eq!(line, b"41\tk\tv");
        format_message(&mut line, &m, &p(false, true));
        assert_eq!(line, b"k\tv");
        format_message(&mut line, &m, &p(true, false));
        assert_eq!(line, b"41\tv");
        let null =
            FetchedMessage::from(gregor_protocol::MessageAndOffset::new(0, gregor_protocol::Message::new(None, None)));
        format_message(&mut line, &null, &p(false, true));
        assert_eq!(line, b"null\tnull");
        // a message v0 has no timestamp and no headers
        let all = Printing { offset: true, timestamp: true, headers: true, key: true };
        format_message(&mut line, &m, &all);
        assert_eq!(line, b"41\tNO_TIMESTAMP\tNO_HEADERS\tk\tv");
    }

    #[test]
    fn timestamps_and_headers_print_as_kafkas_console_consumer_prints_them() {
        use gregor_protocol::record::{Batches, RecordBatchBuilder};
        let mut b = RecordBatchBuilder::new(gregor_protocol::Compression::None);
        b.append_with_headers(1_700_000_000_000, Some(b"k"), Some(b"v"), &[("h1", Some(b"a")), ("h2", None)]).unwrap();
        let blob = b.finish().unwrap();
        let batch = Batches::new(blob, &gregor_protocol::message::DecodeOptions::default()).next().unwrap().unwrap();
        let m = batch.records().next().unwrap().unwrap();
        let mut line = Vec::new();
        format_message(&mut line, &m, &Printing { offset: true, timestamp: true, headers: true, key: false });
        assert_eq!(line, b"0\tCreateTime:1700000000000\th1:a,h2:null\tv");
    }
}
