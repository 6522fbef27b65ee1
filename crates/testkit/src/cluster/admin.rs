//! The modern mode's admin APIs: DeleteTopics, DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs and CreatePartitions, as a Kafka 3.7 KRaft broker answers them.

use gregor_protocol::frame::{ApiKey, RequestHeader};
use gregor_protocol::messages::AnyRequest;

use super::handlers::{BrokerCtx, Reply};

/// The admin APIs and versions the modern mode serves (none yet).
pub(crate) const SERVED: &[(ApiKey, i16, i16)] = &[];

/// Answers an admin request.
pub(crate) async fn handle(_ctx: &BrokerCtx, _header: &RequestHeader, _request: AnyRequest) -> Reply {
    Reply::Close
}
