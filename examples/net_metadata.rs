//! gregor-net directly: the metadata cache, a pooled connection to a partition's leader, and a
//! raw request on it (what the producer and consumers are built on).
//!
//! Run: `cargo run --example net_metadata`

mod common;

use gregor::net::{ConnectionConfig, MetadataCache, Pool};
use gregor::protocol::messages::{OffsetsPartition, OffsetsRequest, OffsetsTopic, CONSUMER_REPLICA_ID, LATEST_TIME};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = common::cluster("metrics", 4).await?;
    let pool = Pool::new(ConnectionConfig::builder().client_id("net-example").build()?);
    let metadata = MetadataCache::new(&cluster.brokers, pool)?;
    metadata.refresh(&["metrics".to_owned()]).await?;
    for b in metadata.brokers() {
        println!("broker {} at {}:{}", b.id, b.host, b.port);
    }
    for p in metadata.partitions("metrics") {
        let conn = metadata.leader_connection("metrics", p).await?;
        // Offsets v0 (getOffsetsBefore) must go to the leader; a follower answers 6
        let request = OffsetsRequest {
            replica_id: CONSUMER_REPLICA_ID,
            topics: vec![OffsetsTopic::new(
                "metrics",
                vec![OffsetsPartition {
                    partition: p,
                    time: LATEST_TIME,
                    max_number_of_offsets: 1,
                    ..Default::default()
                }],
            )],
            ..Default::default()
        };
        let response = conn.request(0, &request).await?;
        let answer = &response.topics[0].partitions[0];
        println!(
            "metrics/{p}: leader {:?} at {}, log end {:?}, error {:?}",
            metadata.leader("metrics", p),
            conn.addr(),
            answer.offsets.first(),
            answer.error()
        );
    }
    Ok(())
}
