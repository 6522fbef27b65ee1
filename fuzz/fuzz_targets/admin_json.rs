//! Text read as the files of `kafka-reassign-partitions.sh` (a reassignment plan, a
//! topics-to-move list), a `--replica-assignment` and a `name=value` topic config, by
//! `gregor-admin`'s parsers. No panic; what parses is valid and writes back to text that parses
//! to the same value; the admin plan parser and the znode parser of `gregor-zk` agree.
#![no_main]

use gregor_admin::config::{validate_config, validate_config_name};
use gregor_admin::placement::parse_replica_assignment;
use gregor_admin::{parse_reassignment_json, parse_topics_to_move_json, topics_to_move_json, ReassignmentPlan};
use gregor_zk::payloads::ReassignPartitions;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);

    if let Ok(plan) = parse_reassignment_json(&text) {
        plan.validate().expect("a parsed plan is valid");
        let json = plan.to_json();
        let again = ReassignmentPlan::from_json(&json).unwrap_or_else(|e| panic!("{json} does not parse: {e}"));
        assert_eq!(again, plan);
        // what /admin/reassign_partitions holds: the znode parser reads the same plan
        let znode = ReassignPartitions::from_json(json.as_bytes()).expect("the plan's JSON is a znode document");
        assert_eq!(znode.partitions, plan.partitions);
        if let Ok(doc) = ReassignPartitions::from_json(data) {
            assert_eq!(doc.partitions, plan.partitions, "admin and zk read the same document differently");
        }
    }

    if let Ok(topics) = parse_topics_to_move_json(&text) {
        assert!(!topics.is_empty());
        let json = topics_to_move_json(&topics);
        assert_eq!(parse_topics_to_move_json(&json).unwrap_or_else(|e| panic!("{json}: {e}")), topics);
    }

    if let Ok(assignment) = parse_replica_assignment(&text) {
        assert!(!assignment.is_empty() && assignment.iter().all(|r| !r.is_empty()));
        let written = assignment
            .iter()
            .map(|r| r.iter().map(i32::to_string).collect::<Vec<_>>().join(":"))
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(parse_replica_assignment(&written).unwrap(), assignment);
    }

    for line in text.lines() {
        if let Some((name, value)) = line.split_once('=') {
            if validate_config(name, value).is_ok() {
                validate_config_name(name).expect("a valid config has a known name");
            }
        }
    }
});
