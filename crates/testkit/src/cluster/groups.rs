//! The modern mode's group coordinator: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups and ListGroups, as a Kafka 3.7 broker
//! answers them.

use gregor_protocol::frame::{ApiKey, RequestHeader};
use gregor_protocol::messages::AnyRequest;

use super::handlers::{BrokerCtx, Reply};

/// The group APIs and versions the modern mode serves (none yet).
pub(crate) const SERVED: &[(ApiKey, i16, i16)] = &[];

/// Answers a group request.
pub(crate) async fn handle(_ctx: &BrokerCtx, _header: &RequestHeader, _request: AnyRequest) -> Reply {
    Reply::Close
}
