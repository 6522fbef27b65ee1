//! `gregor api-versions`: every broker of the cluster, the versions of each API it speaks and
//! the one gregor sends of each (Kafka's `kafka-broker-api-versions.sh`).
//!
//! ```text
//! 127.0.0.1:9092 (id: 0) -> negotiated (ApiVersions) (
//!     Produce(0): 3 to 13 [usable: 12],
//!     ...
//!     DescribeQuorum(55): 0 to 2 [gregor: none],
//! )
//! ```
//!
//! "usable" is the highest version gregor's clients can send ([`gregor_net::client_versions`];
//! the high-level consumer's offset commits and fetches still pin v0/v1). A broker
//! that does not answer ApiVersions (Kafka 0.8/0.9) shows `fallback 0.8.2` and the fallback
//! release's versions.

use gregor_net::{BrokerVersions, VersionSource};

use gregor_protocol::frame::ApiKey;

use crate::cli::ApiVersionsArgs;
use crate::error::CliError;
use crate::fetch::consumer;
use crate::output::{quiet_if_closed, Out};

/// The client.id of this command, unless `--property client.id=...` says otherwise.
const CLIENT_ID: &str = "gregor-api-versions";

/// Runs `gregor api-versions`.
pub(crate) async fn run(args: ApiVersionsArgs) -> Result<(), CliError> {
    let consumer = consumer(&args.broker_list, args.command_config.as_deref(), &args.properties, CLIENT_ID)?;
    let result = print(&consumer).await;
    consumer.close().await;
    result
}

async fn print(consumer: &gregor_simple_consumer::SimpleConsumer) -> Result<(), CliError> {
    let cache = consumer.metadata();
    cache.refresh(&[]).await.map_err(|e| CliError::new("could not read the cluster's metadata", e))?;
    let snapshot = cache.snapshot();
    let mut brokers: Vec<_> = snapshot.brokers().cloned().collect();
    brokers.sort_by_key(|b| b.id);
    let mut out = Out::stdout();
    for broker in brokers {
        let text = match cache.pool().get(broker.id).await {
            Ok(conn) => match conn.versions() {
                Some(versions) => format_broker(&broker.addr(), broker.id, versions),
                None => format!("{} (id: {}) -> versions unknown\n", broker.addr(), broker.id),
            },
            Err(e) => format!("{} (id: {}) -> unreachable: {e}\n", broker.addr(), broker.id),
        };
        if let Err(stop) = out.line(text.trim_end().as_bytes()).await {
            return quiet_if_closed(stop);
        }
    }
    if let Err(stop) = out.flush().await {
        return quiet_if_closed(stop);
    }
    Ok(())
}

/// One broker's block (pure).
fn format_broker(addr: &str, id: i32, versions: &BrokerVersions) -> String {
    let source = match versions.source() {
        VersionSource::Negotiated => "negotiated (ApiVersions)".to_owned(),
        VersionSource::Fallback(release) => format!("fallback {release} (no ApiVersions)"),
    };
    let mut text = format!("{addr} (id: {id}) -> {source} (\n");
    for (api, min, max) in versions.apis() {
        let code = api.code();
        let usable = match versions.pick(api, gregor_net::client_versions(api)) {
            Ok(v) => format!("usable: {v}"),
            Err(e) => match e.ours {
                Some((lo, hi)) => format!("unusable: gregor implements {lo} to {hi}"),
                None => "gregor: none".to_owned(),
            },
        };
        text.push_str(&format!("\t{}({code}): {min} to {max} [{usable}],\n", name(api)));
    }
    text.push_str(")\n");
    text
}

/// Kafka's name of the API (an unknown key by its number).
fn name(api: ApiKey) -> String {
    match api {
        ApiKey::Other(k) => format!("Api{k}"),
        ApiKey::Offsets => "ListOffsets".to_owned(),
        ApiKey::ConsumerMetadata => "FindCoordinator".to_owned(),
        known => known.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use gregor_net::BrokerVersionFallback;
    use gregor_protocol::messages::{ApiVersion, ApiVersionsResponse};

    use super::*;

    #[test]
    fn a_block_lists_each_api_with_the_version_gregor_uses() {
        let answer = ApiVersionsResponse {
            api_keys: [(0, 3, 11), (1, 4, 17), (55, 0, 2)]
                .into_iter()
                .map(|(api_key, min_version, max_version)| ApiVersion {
                    api_key,
                    min_version,
                    max_version,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let text = format_broker("b:9092", 3, &BrokerVersions::negotiated(&answer));
        assert_eq!(
            text,
            "b:9092 (id: 3) -> negotiated (ApiVersions) (\n\
             \tProduce(0): 3 to 11 [usable: 11],\n\
             \tFetch(1): 4 to 17 [usable: 12],\n\
             \tApi55(55): 0 to 2 [gregor: none],\n)\n"
        );
        let old = format_broker("o:9092", 0, &BrokerVersions::fallback(BrokerVersionFallback::V0_8_2));
        assert!(
            old.starts_with("o:9092 (id: 0) -> fallback 0.8.2 (no ApiVersions) (\n\tProduce(0): 0 to 0 [usable: 0],")
        );
        assert!(old.contains("\tFindCoordinator(10): 0 to 0 [usable: 0],"), "{old}");
    }
}
