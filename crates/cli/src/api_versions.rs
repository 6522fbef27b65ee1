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

use gregor_net::{BrokerVersions, NoCommonVersion, Pool, VersionSource};

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
        let addr = broker.addr();
        let text = match Reach::connect(cache.pool(), &addr).await {
            Reach::Versions(versions) => format_broker(&addr, broker.id, &versions),
            Reach::Unknown => format!("{addr} (id: {}) -> versions unknown\n", broker.id),
            Reach::Unreachable(e) => format!("{addr} (id: {}) -> unreachable: {e}\n", broker.id),
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

/// What connecting to one broker told of how gregor speaks to it (shared by `api-versions`
/// and `brokers --bootstrap-server`, so both say the same of the same broker).
#[derive(Debug)]
pub(crate) enum Reach {
    /// The versions it speaks: its ApiVersions answer, or the fallback release's.
    Versions(BrokerVersions),
    /// Connected, but the connection carries no versions (not negotiated).
    Unknown,
    /// The connection failed.
    Unreachable(gregor_net::Error),
}

impl Reach {
    /// Connects to `addr` through `pool` (negotiating as gregor's clients do: ApiVersions,
    /// or the fallback release for a broker that closes the connection on it).
    pub(crate) async fn connect(pool: &Pool, addr: &str) -> Reach {
        match pool.get_addr(addr).await {
            Ok(conn) => conn.versions().map_or(Reach::Unknown, |v| Reach::Versions(v.clone())),
            Err(e) => Reach::Unreachable(e),
        }
    }
}

/// Where a broker's versions came from, in a word or two: `negotiated` (it answered
/// ApiVersions) or `fallback 0.8.2` (it closed the connection on ApiVersions).
pub(crate) fn source_name(source: VersionSource) -> String {
    match source {
        VersionSource::Negotiated => "negotiated".to_owned(),
        VersionSource::Fallback(release) => format!("fallback {release}"),
    }
}

/// The version of `api` gregor's clients send to a broker that speaks `versions`: the highest
/// both gregor's clients ([`gregor_net::client_versions`]) and the broker speak.
///
/// # Errors
///
/// [`NoCommonVersion`] when gregor cannot speak the API to this broker.
pub(crate) fn usable(versions: &BrokerVersions, api: ApiKey) -> Result<i16, NoCommonVersion> {
    versions.pick(api, gregor_net::client_versions(api))
}

/// One broker's block (pure).
fn format_broker(addr: &str, id: i32, versions: &BrokerVersions) -> String {
    let source = match versions.source() {
        VersionSource::Negotiated => "(ApiVersions)",
        VersionSource::Fallback(_) => "(no ApiVersions)",
    };
    let mut text = format!("{addr} (id: {id}) -> {} {source} (\n", source_name(versions.source()));
    for (api, min, max) in versions.apis() {
        let code = api.code();
        let usable = match usable(versions, api) {
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
    use gregor_protocol::messages::ApiVersionsResponse;

    use super::*;

    #[test]
    fn a_block_lists_each_api_with_the_version_gregor_uses() {
        let answer = ApiVersionsResponse::listing([(0, 3, 11), (1, 4, 17), (55, 0, 2)]);
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
