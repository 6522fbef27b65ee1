//! `gregor offsets`: `getOffsetsBefore` per partition, printed as Kafka 0.8's GetOffsetShell
//! prints it (`topic:partition:offset[,offset...]`).

use std::io::Write;

use gregor_simple_consumer::SimpleConsumer;
use tokio::task::JoinSet;

use crate::cli::OffsetsArgs;
use crate::error::{chain, CliError};
use crate::fetch::consumer;
use crate::output::{quiet_if_closed, Out};

/// The client.id of this command, unless `--property client.id=...` says otherwise.
const CLIENT_ID: &str = "gregor-offsets";

/// Runs `gregor offsets`.
pub(crate) async fn run(args: OffsetsArgs) -> Result<(), CliError> {
    let consumer = consumer(&args.broker_list, args.command_config.as_deref(), &args.properties, CLIENT_ID)?;
    let result = offsets(&consumer, &args).await;
    consumer.close().await;
    result
}

async fn offsets(consumer: &SimpleConsumer, args: &OffsetsArgs) -> Result<(), CliError> {
    let topic = args.topic.as_str();
    let mut partitions = if args.partition.is_empty() {
        consumer
            .partitions(topic)
            .await
            .map_err(|e| CliError::new(format!("could not list the partitions of {topic}"), e))?
    } else {
        args.partition.clone()
    };
    partitions.sort_unstable();
    partitions.dedup();
    // every leader at once
    let mut lookups = JoinSet::new();
    for &partition in &partitions {
        let (consumer, topic, time, max) = (consumer.clone(), topic.to_owned(), args.time, args.max);
        lookups.spawn(async move { (partition, consumer.offsets_before(&topic, partition, time, max).await) });
    }
    let mut results = Vec::with_capacity(partitions.len());
    while let Some(joined) = lookups.join_next().await {
        results.push(joined.map_err(|e| CliError::new("an offset lookup task failed", e))?);
    }
    results.sort_by_key(|(p, _)| *p);
    let mut out = Out::stdout();
    let mut failed = Vec::new();
    for (partition, result) in results {
        match result {
            Ok(offsets) => {
                if let Err(stop) = out.line(format_line(topic, partition, &offsets).as_bytes()).await {
                    return quiet_if_closed(stop);
                }
            }
            Err(e) => failed.push((partition, e)),
        }
    }
    if let Err(stop) = out.flush().await {
        return quiet_if_closed(stop);
    }
    match failed.len() {
        0 => Ok(()),
        1 => {
            let (partition, e) = failed.remove(0);
            Err(CliError::new(format!("could not look up the offsets of {topic}/{partition}"), e))
        }
        n => {
            let mut stderr = std::io::stderr().lock();
            for (partition, e) in &failed {
                let _ = writeln!(stderr, "{topic}/{partition}: {}", chain(e));
            }
            Err(CliError::msg(format!("could not look up the offsets of {n} partitions of {topic}")))
        }
    }
}

/// `topic:partition:o1,o2,...` (GetOffsetShell's format; nothing after the colon for none).
fn format_line(topic: &str, partition: i32, offsets: &[i64]) -> String {
    let offsets: Vec<String> = offsets.iter().map(i64::to_string).collect();
    format!("{topic}:{partition}:{}", offsets.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_get_offset_shells() {
        assert_eq!(format_line("events", 2, &[1000, 0]), "events:2:1000,0");
        assert_eq!(format_line("events", 0, &[7]), "events:0:7");
        assert_eq!(format_line("events", 1, &[]), "events:1:");
    }
}
