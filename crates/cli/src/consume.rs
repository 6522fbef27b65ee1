//! `gregor consume`: a member of a consumer group (the ZooKeeper-coordinated high-level
//! consumer), one message value per line of stdout, as kafka-console-consumer.sh.
//!
//! ```text
//!  ConsumerConnector ─► one KafkaStream (topic, whitelist or blacklist) ─► value lines ─► stdout
//!  stop (max, consumer.timeout.ms, Ctrl-C, closed stdout) ─► flush ─► commit ─► shutdown
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use gregor_consumer::{ConsumerConfig, ConsumerConnector, Error as ConsumerError, KafkaStream, TopicFilter};
use gregor_serde::BytesDecoder;

use crate::cli::ConsumeArgs;
use crate::error::CliError;
use crate::output::{push_field, quiet_if_closed, Out};

/// The client.id of this command, unless `--property client.id=...` says otherwise.
const CLIENT_ID: &str = "gregor-consume";
/// How long output still buffered after Ctrl-C may take to go out.
const INTERRUPTED_FLUSH: Duration = Duration::from_secs(1);
/// How long the final commit and the shutdown may take.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(15);

/// A group of its own: `gregor-console-<random>` (as the console consumer's random group).
fn random_group() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32) ^ ((nanos >> 64) as u64);
    // a cheap mix (splitmix64) so close start times give unrelated names
    let mut z = mixed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    format!("gregor-console-{:05}", z % 100_000)
}

/// The consumer settings: this command's defaults, then the `--command-config` file and the
/// `--property` values, then the flags.
fn config(args: &ConsumeArgs, group: &str) -> Result<ConsumerConfig, CliError> {
    let mut props: Vec<(String, String)> =
        vec![("client.id".into(), CLIENT_ID.into()), ("auto.offset.reset".into(), "largest".into())];
    props.extend(crate::properties::with_file(args.command_config.as_deref(), &args.properties)?);
    props.push(("zookeeper.connect".into(), args.zookeeper.clone()));
    props.push(("group.id".into(), group.to_owned()));
    if args.from_beginning {
        props.push(("auto.offset.reset".into(), "smallest".into()));
    }
    if let Some(ms) = args.timeout_ms {
        props.push(("consumer.timeout.ms".into(), ms.to_string()));
    }
    ConsumerConfig::from_properties(props).map_err(|e| CliError::usage("invalid consumer settings", e))
}

/// Runs `gregor consume`.
pub(crate) async fn run(args: ConsumeArgs) -> Result<(), CliError> {
    let group = args.group.clone().unwrap_or_else(random_group);
    let config = config(&args, &group)?;
    let filter = match (&args.whitelist, &args.blacklist) {
        (Some(re), _) => Some(TopicFilter::Whitelist(re.clone())),
        (None, Some(re)) => Some(TopicFilter::Blacklist(re.clone())),
        (None, None) => None,
    };
    if let Some(f) = &filter {
        f.validate().map_err(|e| CliError::usage("invalid topic filter", e))?;
    }
    // a static topic must exist (the connector would wait for it silently)
    if let Some(topic) = &args.topic {
        let admin = crate::admin::connect_zk(&args.zookeeper, config.zookeeper_session_timeout).await?;
        let exists = admin.describe_topic_config(topic).await;
        let _ = admin.close().await;
        exists.map_err(|e| CliError::new(format!("cannot consume topic {topic:?}"), e))?;
    }
    let connector = ConsumerConnector::new(config)
        .await
        .map_err(|e| CliError::new(format!("could not join consumer group {group:?}"), e))?;
    let decoder = Arc::new(BytesDecoder);
    let streams: Result<Vec<KafkaStream<Bytes>>, ConsumerError> = match (&args.topic, filter) {
        (Some(topic), _) => connector
            .create_message_streams(HashMap::from([(topic.clone(), 1)]), decoder)
            .await
            .map(|mut m| m.remove(topic).unwrap_or_default()),
        (None, Some(filter)) => connector.create_message_streams_by_filter(filter, 1, decoder).await,
        (None, None) => unreachable!("clap requires --topic, --whitelist or --blacklist"),
    };
    let mut stream = match streams {
        Ok(mut s) if !s.is_empty() => s.remove(0),
        Ok(_) => {
            let _ = connector.shutdown().await;
            return Err(CliError::msg("the consumer created no stream"));
        }
        Err(e) => {
            let _ = connector.shutdown().await;
            return Err(CliError::new(format!("could not subscribe consumer group {group:?}"), e));
        }
    };
    let mut out = Out::stdout();
    let (result, interrupted) = tokio::select! {
        biased;
        r = consume(&mut stream, &args, &mut out) => (r, false),
        // Ctrl-C: what was printed stays printed
        _ = tokio::signal::ctrl_c() => (Ok(()), true),
    };
    let flushed = if interrupted {
        tokio::time::timeout(INTERRUPTED_FLUSH, out.flush()).await.unwrap_or(Ok(()))
    } else {
        out.flush().await
    };
    let result = result.and(flushed.or_else(quiet_if_closed));
    // what was handed out is committed, then the group is left
    let finish = async {
        let committed = connector.commit_offsets().await;
        let shut = connector.shutdown().await;
        committed.and(shut)
    };
    let finished = match tokio::time::timeout(SHUTDOWN_TIMEOUT, finish).await {
        Ok(r) => r.map_err(|e| CliError::new(format!("could not commit the offsets of group {group:?}"), e)),
        Err(_) => Err(CliError::msg(format!(
            "could not commit the offsets of group {group:?} and leave it within {SHUTDOWN_TIMEOUT:?}"
        ))),
    };
    result.and(finished)
}

/// The loop: prints until `--max-messages` or consumer.timeout.ms; a closed stdout stops it
/// quietly.
async fn consume<W: tokio::io::AsyncWrite + Unpin>(
    stream: &mut KafkaStream<Bytes>,
    args: &ConsumeArgs,
    out: &mut Out<W>,
) -> Result<(), CliError> {
    let max = args.max_messages.unwrap_or(u64::MAX);
    let mut printed = 0u64;
    let mut line = Vec::new();
    while printed < max {
        // interactive use: the lines printed go out as soon as the stream has nothing more
        // ready (a flush per line cost a write, through tokio's blocking pool, per message:
        // 36 s, 29 of them in the kernel, for 1,000,000 lines)
        let ready = tokio::select! {
            biased;
            next = stream.next() => Some(next),
            () = std::future::ready(()) => None,
        };
        let next = match ready {
            Some(next) => next,
            None => {
                if let Err(stop) = out.flush().await {
                    return quiet_if_closed(stop);
                }
                stream.next().await
            }
        };
        let message = match next {
            None => break, // shut down
            Some(Ok(m)) => m,
            Some(Err(ConsumerError::ConsumerTimeout { .. })) => break,
            Some(Err(e)) => {
                let _ = out.flush().await;
                return Err(CliError::new("consuming failed", e));
            }
        };
        line.clear();
        push_field(&mut line, message.value.as_deref());
        if let Err(stop) = out.line(&line).await {
            return quiet_if_closed(stop);
        }
        printed += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_groups_look_like_the_console_consumers() {
        let g = random_group();
        assert!(g.starts_with("gregor-console-"), "{g}");
        assert_eq!(g.len(), "gregor-console-".len() + 5);
    }
}
