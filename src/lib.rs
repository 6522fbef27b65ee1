//! The `gregor` facade: one dependency for the whole SDK, re-exporting each crate under a
//! short name. The test cluster (`gregor-testkit`) is a separate dev-dependency. The README
//! follows.
//!
//! * [`protocol`] (`gregor-protocol`): the pure Kafka 0.8.2 wire codec, and
//!   [`protocol::TopicPartition`], Kafka's `TopicAndPartition`: the one name of a partition
//!   every crate uses (the admin and the consumer re-export it).
//! * [`net`] (`gregor-net`): pipelined broker connections, a pool, the metadata cache.
//! * [`producer`] (`gregor-producer`): `AsyncProducer` and `SyncProducer`.
//! * [`simple_consumer`] (`gregor-simple-consumer`): partition-addressed fetches and offsets.
//! * [`consumer`] (`gregor-consumer`): the high-level consumer, groups coordinated through
//!   ZooKeeper.
//! * [`admin`] (`gregor-admin`): topics, reassignment, elections, groups and lag, health.
//! * [`serde`] (`gregor-serde`): encoders and decoders (string, bytes, Avro).
//! * [`zk`] (`gregor-zk`): Kafka's ZooKeeper layout and a ZooKeeper client.
//! * [`config`] (`gregor-config`): the configuration error every client returns, the Kafka
//!   properties reader and Kafka's naming rules.
//!
//! ```
//! use std::collections::BTreeMap;
//! use gregor::protocol::TopicPartition;
//!
//! // one type, whichever crate names it
//! let tp = TopicPartition::new("events", 0);
//! let owned: BTreeMap<gregor::consumer::TopicPartition, String> = [(tp.clone(), "g_c-0".into())].into();
//! let elect: Vec<gregor::admin::TopicPartition> = vec![tp];
//! assert_eq!(owned.keys().next(), elect.first());
//! ```
//!
#![doc = include_str!("../README.md")]

pub use gregor_admin as admin;
pub use gregor_config as config;
pub use gregor_consumer as consumer;
pub use gregor_net as net;
pub use gregor_producer as producer;
pub use gregor_protocol as protocol;
pub use gregor_serde as serde;
pub use gregor_simple_consumer as simple_consumer;
pub use gregor_zk as zk;
