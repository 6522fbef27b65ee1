//! Bytes read as the data of every znode `gregor-zk` parses (`/brokers/ids/N`,
//! `/brokers/topics/T`, partition state, `/controller`, `/controller_epoch`, topic configs and
//! config change notices, `/admin/reassign_partitions`, `/admin/preferred_replica_election`,
//! consumer registrations, consumer offsets), and as text by the path, topic name and
//! `zookeeper.connect` checks. No panic; whatever parses writes back (`to_json`) to a document
//! that parses to the same value.
#![no_main]

use gregor_zk::payloads::{
    decode_config_change, decode_controller_epoch, decode_offset, encode_config_change, encode_controller_epoch,
    encode_offset, BrokerRegistration, ConsumerRegistration, ControllerRegistration, PartitionState,
    PreferredReplicaElection, ReassignPartitions, TopicAssignment, TopicConfig,
};
use gregor_zk::{paths, validate_connect_string};
use libfuzzer_sys::fuzz_target;

macro_rules! round_trip {
    ($ty:ty, $data:expr) => {
        if let Ok(v) = <$ty>::from_json($data) {
            let json = v.to_json();
            let again = <$ty>::from_json(&json).unwrap_or_else(|e| {
                panic!("{} wrote {:?}, which does not parse: {e}", stringify!($ty), String::from_utf8_lossy(&json))
            });
            assert_eq!(again, v, "{} did not round-trip", stringify!($ty));
            assert_eq!(again.to_json(), json, "{} writes two documents for one value", stringify!($ty));
            Some(v)
        } else {
            None
        }
    };
}

fuzz_target!(|data: &[u8]| {
    if let Some(b) = round_trip!(BrokerRegistration, data) {
        let _ = b.timestamp_ms();
    }
    round_trip!(TopicAssignment, data);
    round_trip!(PartitionState, data);
    if let Some(c) = round_trip!(ControllerRegistration, data) {
        let _ = c.timestamp_ms();
    }
    round_trip!(TopicConfig, data);
    round_trip!(ReassignPartitions, data);
    round_trip!(PreferredReplicaElection, data);
    if let Some(c) = round_trip!(ConsumerRegistration, data) {
        let _ = c.timestamp_ms();
    }
    if let Ok(topic) = decode_config_change(data) {
        assert_eq!(decode_config_change(&encode_config_change(&topic)).unwrap(), topic);
    }
    if let Ok(offset) = decode_offset(data) {
        assert_eq!(decode_offset(&encode_offset(offset)).unwrap(), offset);
    }
    if let Ok(epoch) = decode_controller_epoch(data) {
        assert_eq!(decode_controller_epoch(&encode_controller_epoch(epoch)).unwrap(), epoch);
    }
    let text = String::from_utf8_lossy(data);
    if paths::validate_topic_name(&text).is_ok() {
        // a legal topic name makes legal paths
        paths::validate_path(&paths::topic(&text)).unwrap();
        paths::validate_path(&paths::partition_state(&text, 0)).unwrap();
        paths::validate_path(&paths::topic_config(&text)).unwrap();
    }
    if paths::validate_path(&text).is_ok() {
        for a in paths::ancestors(&text) {
            paths::validate_path(&a).unwrap_or_else(|e| panic!("ancestor {a:?} of {text:?}: {e}"));
        }
    }
    let _ = validate_connect_string(&text);
});
