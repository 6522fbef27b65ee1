//! `gregor brokers --bootstrap-server`: the brokers as a Metadata answer lists them (a KRaft
//! cluster has no ZooKeeper to read them from), each with how gregor speaks to it.
//!
//! ```text
//! ID  HOST       PORT   RACK  CONTROLLER  VERSIONS        PRODUCE  FETCH  METADATA
//! 0   127.0.0.1  9092   -     yes         negotiated      10       12     12
//! 1   127.0.0.1  9093   -                 fallback 0.8.2  0        0      0
//! ```
//!
//! One Metadata request (for no topic) goes to the first `--bootstrap-server` broker that
//! answers, in the highest version both speak (v1+ names the controller and the racks; v0, all
//! a Kafka 0.8 broker speaks, names neither). Then each listed broker is connected to as
//! gregor's clients connect (ApiVersions, or the fallback release for a broker that closes the
//! connection on it), and the versions of Produce, Fetch and Metadata they would send it are
//! shown: the same choice `gregor api-versions` prints in full ([`crate::api_versions`]).

use gregor_net::{BrokerVersions, MetadataCache};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::{MetadataRequest, MetadataResponse};
use serde_json::{json, Value};

use crate::api_versions::{source_name, usable, Reach};
use crate::cli::OutputFormat;
use crate::error::{chain, CliError};
use crate::fetch::consumer;
use crate::table::{opt, print, print_json, Table};

/// The client.id of this command, unless `--property client.id=...` says otherwise.
const CLIENT_ID: &str = "gregor-brokers";

/// The APIs whose versions the listing shows: what gregor's producer and consumers send.
const SHOWN: [ApiKey; 3] = [ApiKey::Produce, ApiKey::Fetch, ApiKey::Metadata];

/// The flags of `gregor brokers` that the Metadata source reads.
#[derive(Debug)]
pub(crate) struct MetadataSource<'a> {
    /// `--bootstrap-server`/`--broker-list`.
    pub(crate) broker_list: &'a str,
    /// `--command-config`.
    pub(crate) command_config: Option<&'a std::path::Path>,
    /// `--property` values.
    pub(crate) properties: &'a [(String, String)],
    /// `--output`.
    pub(crate) output: OutputFormat,
}

/// Runs `gregor brokers --bootstrap-server`.
pub(crate) async fn run(source: MetadataSource<'_>) -> Result<(), CliError> {
    let consumer = consumer(source.broker_list, source.command_config, source.properties, CLIENT_ID)?;
    let listing = list(consumer.metadata()).await;
    consumer.close().await;
    let listing = listing?;
    match source.output {
        OutputFormat::Json => print_json(&listing.json()).await,
        OutputFormat::Table => print(&listing.text()).await,
    }
}

/// The cluster as one Metadata answer describes it, and how gregor speaks to each broker.
#[derive(Debug)]
struct Listing {
    /// The broker that answered Metadata, and the version it answered.
    answered_by: (String, i16),
    /// The cluster id (Metadata v2+), if named.
    cluster_id: Option<String>,
    /// The controller (Metadata v1+), if named.
    controller: Option<i32>,
    /// The brokers, by id.
    brokers: Vec<Row>,
}

/// One broker of the listing.
#[derive(Debug)]
struct Row {
    id: i32,
    host: String,
    port: i32,
    rack: Option<String>,
    /// Its versions, or why they are unknown.
    reach: Reach,
}

/// Asks for the brokers, then connects to each of them.
async fn list(cache: &MetadataCache) -> Result<Listing, CliError> {
    let (addr, version, response) = metadata(cache).await?;
    if response.brokers.is_empty() {
        return Err(CliError::msg(format!(
            "{addr} answered Metadata v{version} with no broker: a Kafka 0.8.2 cluster without \
             topics does that (KAFKA-1867); create a topic, or list the brokers with --zookeeper"
        )));
    }
    let mut listed: Vec<_> = response.brokers.iter().collect();
    listed.sort_by_key(|b| b.node_id);
    let known = |b: &&gregor_protocol::messages::BrokerMetadata| {
        (b.node_id, gregor_net::Broker { id: b.node_id, host: b.host.clone(), port: b.port }.addr())
    };
    cache.pool().set_brokers(listed.iter().map(known));
    let mut brokers = Vec::with_capacity(listed.len());
    for b in listed {
        let (_, broker_addr) = known(&b);
        let reach = Reach::connect(cache.pool(), &broker_addr).await;
        brokers.push(Row { id: b.node_id, host: b.host.clone(), port: b.port, rack: b.rack.clone(), reach });
    }
    Ok(Listing {
        answered_by: (addr, version),
        cluster_id: response.cluster_id.clone(),
        controller: (response.controller_id >= 0).then_some(response.controller_id),
        brokers,
    })
}

/// Metadata for no topic (v0, which cannot say "none", lists them all) from the first
/// bootstrap broker that answers, in the version gregor's clients send it.
async fn metadata(cache: &MetadataCache) -> Result<(String, i16, MetadataResponse), CliError> {
    let request = MetadataRequest::for_topics(Vec::<String>::new());
    let mut last = None;
    for addr in cache.bootstrap() {
        let answer = async {
            let conn = cache.pool().get_addr(addr).await?;
            let version = conn.client_version::<MetadataRequest>()?;
            Ok::<_, gregor_net::Error>((version, conn.request(version, &request).await?))
        };
        match answer.await {
            Ok((version, response)) => return Ok((addr.clone(), version, response)),
            // the next bootstrap broker may answer; the error stays for the report if none does
            Err(e) => last = Some(Box::new(e)),
        }
    }
    let tried = cache.bootstrap().to_vec();
    Err(CliError::new("could not read the brokers", gregor_net::Error::NoBrokerAvailable { tried, last }))
}

impl Row {
    /// The broker's versions, if known.
    fn versions(&self) -> Option<&BrokerVersions> {
        match &self.reach {
            Reach::Versions(v) => Some(v),
            Reach::Unknown | Reach::Unreachable(_) => None,
        }
    }

    /// `negotiated` or `fallback 0.8.2`, else `unknown` or `unreachable`.
    fn source(&self) -> String {
        match &self.reach {
            Reach::Versions(v) => source_name(v.source()),
            Reach::Unknown => "unknown".to_owned(),
            Reach::Unreachable(_) => "unreachable".to_owned(),
        }
    }

    /// Why the versions are unknown, if they are.
    fn error(&self) -> Option<String> {
        match &self.reach {
            Reach::Versions(_) => None,
            Reach::Unknown => Some("connected, but the versions were not negotiated".to_owned()),
            Reach::Unreachable(e) => Some(format!("unreachable: {}", chain(e))),
        }
    }

    /// The version gregor sends of `api` (`None`: none both speak, or the versions are unknown).
    fn version(&self, api: ApiKey) -> Option<i16> {
        self.versions().and_then(|v| usable(v, api).ok())
    }
}

impl Listing {
    /// The table, then a line per broker that could not be asked (pure).
    fn text(&self) -> String {
        let mut t =
            Table::new(&["ID", "HOST", "PORT", "RACK", "CONTROLLER", "VERSIONS", "PRODUCE", "FETCH", "METADATA"]);
        let mut notes = String::new();
        for b in &self.brokers {
            if let Some(why) = b.error() {
                notes.push_str(&format!("broker {} ({}:{}): {why}\n", b.id, b.host, b.port));
            }
            let mut row = vec![
                b.id.to_string(),
                b.host.clone(),
                b.port.to_string(),
                opt(b.rack.as_deref()),
                if self.controller == Some(b.id) { "yes" } else { "" }.to_owned(),
                b.source(),
            ];
            row.extend(SHOWN.iter().map(|&api| b.version(api).map_or_else(|| "none".to_owned(), |v| v.to_string())));
            t.row(row);
        }
        let mut text = t.render();
        if self.controller.is_none() {
            let (addr, version) = &self.answered_by;
            notes.push_str(&format!("controller unknown: {addr} answered Metadata v{version}, which names none\n"));
        }
        if !notes.is_empty() {
            text.push('\n');
            text.push_str(&notes);
        }
        text
    }

    /// The JSON document (pure).
    fn json(&self) -> Value {
        let brokers: Vec<Value> = self
            .brokers
            .iter()
            .map(|b| {
                let versions = b.versions().map(|v| {
                    json!({
                        "source": source_name(v.source()),
                        "produce": b.version(ApiKey::Produce),
                        "fetch": b.version(ApiKey::Fetch),
                        "metadata": b.version(ApiKey::Metadata),
                    })
                });
                json!({
                    "id": b.id,
                    "host": b.host,
                    "port": b.port,
                    "rack": b.rack,
                    "controller": self.controller == Some(b.id),
                    "versions": versions,
                    "error": b.error(),
                })
            })
            .collect();
        let (addr, version) = &self.answered_by;
        json!({
            "source": "metadata",
            "metadata_from": { "broker": addr, "version": version },
            "cluster_id": self.cluster_id,
            "controller": self.controller,
            "brokers": brokers,
        })
    }
}

#[cfg(test)]
mod tests {
    use gregor_net::BrokerVersionFallback;
    use gregor_protocol::messages::ApiVersionsResponse;

    use super::*;

    fn negotiated() -> BrokerVersions {
        BrokerVersions::negotiated(&ApiVersionsResponse::listing([(0, 3, 11), (1, 4, 17), (3, 0, 12)]))
    }

    fn row(id: i32, rack: Option<&str>, reach: Reach) -> Row {
        Row { id, host: "h".into(), port: 9092 + id, rack: rack.map(str::to_owned), reach }
    }

    #[test]
    fn the_table_shows_how_gregor_speaks_to_each_broker() {
        let listing = Listing {
            answered_by: ("h:9092".into(), 12),
            cluster_id: Some("c".into()),
            controller: Some(1),
            brokers: vec![
                row(0, Some("r1"), Reach::Versions(negotiated())),
                row(1, None, Reach::Versions(BrokerVersions::fallback(BrokerVersionFallback::V0_8_2))),
                row(2, None, Reach::Unreachable(gregor_net::Error::UnknownBroker { broker_id: 2 })),
            ],
        };
        assert_eq!(
            listing.text(),
            "ID  HOST  PORT  RACK  CONTROLLER  VERSIONS        PRODUCE  FETCH  METADATA\n\
             0   h     9092  r1                negotiated      11       12     12\n\
             1   h     9093  -     yes         fallback 0.8.2  0        0      0\n\
             2   h     9094  -                 unreachable     none     none   none\n\
             \n\
             broker 2 (h:9094): unreachable: broker 2 is not in the known metadata; refresh metadata\n"
        );
        let j = listing.json();
        assert_eq!(j["controller"], 1);
        assert_eq!(j["cluster_id"], "c");
        assert_eq!(j["brokers"][0]["rack"], "r1");
        assert_eq!(
            j["brokers"][0]["versions"],
            json!({"source": "negotiated", "produce": 11, "fetch": 12, "metadata": 12})
        );
        assert_eq!(j["brokers"][1]["versions"]["source"], "fallback 0.8.2");
        assert_eq!(j["brokers"][1]["controller"], true);
        assert_eq!(j["brokers"][2]["versions"], Value::Null);
        assert_eq!(j["brokers"][2]["error"], "unreachable: broker 2 is not in the known metadata; refresh metadata");
    }

    #[test]
    fn a_metadata_v0_answer_leaves_the_controller_unknown_and_says_why() {
        let listing = Listing {
            answered_by: ("h:9092".into(), 0),
            cluster_id: None,
            controller: None,
            brokers: vec![row(0, None, Reach::Versions(BrokerVersions::fallback(BrokerVersionFallback::V0_8_2)))],
        };
        let text = listing.text();
        assert!(text.ends_with("\ncontroller unknown: h:9092 answered Metadata v0, which names none\n"), "{text}");
        assert_eq!(listing.json()["controller"], Value::Null);
    }
}
