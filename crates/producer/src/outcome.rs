//! What became of a batch, and what the producer does about it: a pure function fed `now`.
//! The engine hands it a batch's [`Answer`] (its partition's entry in the Produce response, the
//! entry's absence, or the request's failure), how many times the batch was sent and the
//! retry settings; [`classify`] says whether the batch is delivered, sent again (and when),
//! or failed, and whether the metadata must be refreshed first.
//!
//! ```text
//!  Answer ──┬─ Written (acks=0) / Partition { code: none } ───────────► Deliver { base_offset }
//!           ├─ Partition { code: retriable }, Missing, Failed { retriable } ─► Retry { not_before }
//!           │        (out of retries: Fail)                                   + refresh?
//!           └─ Partition { code: final }, Failed { not retriable } ───► Fail
//! ```
//!
//! Rules (each has a row in the table test below):
//!
//! * **Delivered** — with `request.required.acks=0` a request written to the socket is
//!   delivered, its offsets unknown (-1); otherwise a partition answered without an error code
//!   is delivered from the base offset it gave.
//! * **Retried** — a retriable code ([`ErrorCode::is_retriable`]: 3 UnknownTopicOrPartition,
//!   5 LeaderNotAvailable, 6 NotLeaderForPartition, 7 RequestTimedOut, 8 BrokerNotAvailable,
//!   9 ReplicaNotAvailable, 19 NotEnoughReplicas, 20 NotEnoughReplicasAfterAppend, ...), a
//!   partition missing from the response, and a request that failed in a way worth retrying
//!   (connection refused, closed or timed out) are sent again `retry.backoff.ms` after `now`,
//!   at the front of their partition.
//! * **Metadata first** — a code that says the leader moved ([`ErrorCode::needs_metadata_refresh`])
//!   makes the producer forget the partition's leader and refresh its topic: the retry waits
//!   for a leader. A partition missing from the response, and a failed request that says the
//!   producer's view may be stale, ask for a refresh (the leader is kept meanwhile).
//! * **Maybe twice** — after 7 RequestTimedOut and 20 NotEnoughReplicasAfterAppend the leader
//!   kept the records: the retry may store them twice (the engine logs it).
//! * **Failed** — a final code (2 InvalidMessage, 10 MessageSizeTooLarge, 17 InvalidTopic, 18
//!   RecordListTooLarge, an unknown code ...) and a request that failed in a way not worth
//!   retrying (it cannot be sent at all: larger than the max frame size) fail at once.
//! * **Idempotent** — with `enable.idempotence`, 46 DUPLICATE_SEQUENCE_NUMBER is a delivery
//!   (the broker wrote the batch on an earlier send whose answer was lost) and 45
//!   OUT_OF_ORDER_SEQUENCE_NUMBER a retry (an earlier batch of the partition goes again
//!   first); without it both are final codes like any other the producer does not know.
//! * **Retry budget** — a batch is sent at most `message.send.max.retries + 1` times: a retry
//!   decided for a batch already sent that often fails instead (its metadata action still
//!   applies: the next batches of the partition need the leader as much).
//! * **Out of time** — with `delivery.timeout.ms`, a retry decided at or after the batch's
//!   oldest record arrived that long ago expires it instead ([`Action::Expire`]; its metadata
//!   action still applies). Kafka 0.8's producer bounds a record by its sends alone.
//!
//! When the refresh a verdict asks for runs is `crate::refresh`'s decision.

use std::time::Duration;

use gregor_protocol::ErrorCode;
use tokio::time::Instant;

/// What became of a batch of a round (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// `request.required.acks=0`: the request was written to the connection; no response comes.
    Written,
    /// The batch's partition in the Produce response: its error code (`None` for 0) and the
    /// offset of its first record.
    Partition { code: Option<ErrorCode>, base_offset: i64 },
    /// The Produce response has no entry for the batch's partition.
    Missing,
    /// The request failed (not sent, or no response): whether the failure is worth a retry,
    /// and whether it says the producer's view of the cluster may be stale.
    Failed { retriable: bool, stale_metadata: bool },
}

/// The retry settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// `message.send.max.retries`: a batch is sent at most this plus one times.
    pub(crate) max_retries: u32,
    /// `retry.backoff.ms`: how long a failed batch waits before it is sent again.
    pub(crate) backoff: Duration,
    /// `enable.idempotence`: the batches carry producer ids and sequences, which give the
    /// broker two answers of their own (see the module docs).
    pub(crate) idempotent: bool,
    /// `delivery.timeout.ms`: how long after its oldest record arrived a batch may still be
    /// retried (`None`: no bound).
    pub(crate) delivery_timeout: Option<Duration>,
}

/// `DUPLICATE_SEQUENCE_NUMBER` (Kafka 0.11+): the broker already wrote that batch.
pub(crate) const DUPLICATE_SEQUENCE_NUMBER: i16 = 46;
/// `OUT_OF_ORDER_SEQUENCE_NUMBER` (Kafka 0.11+): a batch's sequence is not the next the broker
/// expects (an earlier batch of the partition is on its way again).
pub(crate) const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;

/// What happens to the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Its records are delivered, at offsets from `base_offset` (-1: unknown, acks=0).
    Deliver { base_offset: i64 },
    /// It goes back to the front of its partition, to be sent again not before this.
    Retry { not_before: Instant },
    /// Its records fail; `out_of_retries` when a retry was due but the batch had had its sends.
    Fail { out_of_retries: bool },
    /// A retry was due past the batch's `delivery.timeout.ms` (`timeout`): its records fail
    /// for that.
    Expire { timeout: Duration },
}

/// What happens to the metadata before anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetadataAction {
    /// Nothing.
    Keep,
    /// A refresh is wanted now; the partition keeps its leader meanwhile.
    Refresh,
    /// The partition's leader is forgotten (its batches wait for a new one) and its topic
    /// refreshed now.
    ForgetLeader,
}

/// The decision on a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) action: Action,
    pub(crate) metadata: MetadataAction,
    /// The leader kept the records although it answered an error: a retry may store them
    /// twice.
    pub(crate) may_duplicate: bool,
}

/// The decision on a batch sent `attempts` times (counting the send answered now), its oldest
/// record arrived at `created`, whose answer is `answer` (see the [module docs](self) for the
/// rules).
pub(crate) fn classify(answer: Answer, attempts: u32, created: Instant, policy: RetryPolicy, now: Instant) -> Verdict {
    let verdict = |action, metadata| Verdict { action, metadata, may_duplicate: false };
    let (retriable, metadata, may_duplicate) = match answer {
        Answer::Written => return verdict(Action::Deliver { base_offset: -1 }, MetadataAction::Keep),
        Answer::Partition { code: None, base_offset } => {
            return verdict(Action::Deliver { base_offset }, MetadataAction::Keep);
        }
        Answer::Partition { code: Some(code), base_offset }
            if policy.idempotent && code.code() == DUPLICATE_SEQUENCE_NUMBER =>
        {
            // written by an earlier send whose answer was lost: delivered (offset as answered)
            return verdict(Action::Deliver { base_offset }, MetadataAction::Keep);
        }
        Answer::Partition { code: Some(code), .. }
            if policy.idempotent && code.code() == OUT_OF_ORDER_SEQUENCE_NUMBER =>
        {
            (true, MetadataAction::Keep, false)
        }
        Answer::Partition { code: Some(code), .. } => {
            let metadata = if code.is_retriable() && code.needs_metadata_refresh() {
                MetadataAction::ForgetLeader
            } else {
                MetadataAction::Keep
            };
            let kept = matches!(code, ErrorCode::RequestTimedOut | ErrorCode::NotEnoughReplicasAfterAppend);
            (code.is_retriable(), metadata, kept)
        }
        Answer::Missing => (true, MetadataAction::Refresh, false),
        Answer::Failed { retriable, stale_metadata } => {
            (retriable, if stale_metadata { MetadataAction::Refresh } else { MetadataAction::Keep }, false)
        }
    };
    let action = if !retriable {
        Action::Fail { out_of_retries: false }
    } else if attempts > policy.max_retries {
        Action::Fail { out_of_retries: true }
    } else if let Some(timeout) =
        policy.delivery_timeout.filter(|t| created.checked_add(*t).is_some_and(|deadline| deadline <= now))
    {
        Action::Expire { timeout }
    } else {
        Action::Retry { not_before: now + policy.backoff }
    };
    Verdict { action, metadata, may_duplicate: may_duplicate && matches!(action, Action::Retry { .. }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RetryPolicy =
        RetryPolicy { max_retries: 2, backoff: Duration::from_millis(100), idempotent: false, delivery_timeout: None };

    fn code(c: ErrorCode) -> Answer {
        Answer::Partition { code: Some(c), base_offset: -1 }
    }

    #[test]
    fn every_answer_has_its_verdict() {
        use Action::{Deliver, Fail};
        use MetadataAction::{ForgetLeader, Keep, Refresh};
        let now = Instant::now();
        let retry = Action::Retry { not_before: now + Duration::from_millis(100) };
        let out = Fail { out_of_retries: true };
        let fatal = Fail { out_of_retries: false };
        let net = |retriable, stale_metadata| Answer::Failed { retriable, stale_metadata };
        // (answer, attempts) -> (action, metadata, may_duplicate)
        #[rustfmt::skip]
        let table: &[(Answer, u32, Action, MetadataAction, bool)] = &[
            // delivered, whatever the attempt
            (Answer::Written, 1, Deliver { base_offset: -1 }, Keep, false),
            (Answer::Written, 3, Deliver { base_offset: -1 }, Keep, false),
            (Answer::Partition { code: None, base_offset: 4000 }, 1, Deliver { base_offset: 4000 }, Keep, false),
            (Answer::Partition { code: None, base_offset: 0 }, 3, Deliver { base_offset: 0 }, Keep, false),
            // the leader moved: forget it, refresh, retry while the budget lasts
            (code(ErrorCode::NotLeaderForPartition), 1, retry, ForgetLeader, false),
            (code(ErrorCode::NotLeaderForPartition), 2, retry, ForgetLeader, false),
            (code(ErrorCode::NotLeaderForPartition), 3, out, ForgetLeader, false),
            (code(ErrorCode::UnknownTopicOrPartition), 1, retry, ForgetLeader, false),
            (code(ErrorCode::LeaderNotAvailable), 1, retry, ForgetLeader, false),
            (code(ErrorCode::BrokerNotAvailable), 3, out, ForgetLeader, false),
            // today's brokers say the same with later codes: a failed log directory, a stale or
            // newer leader epoch, a topic id the broker does not know (yet)
            (code(ErrorCode::KafkaStorageError), 1, retry, ForgetLeader, false),
            (code(ErrorCode::FencedLeaderEpoch), 1, retry, ForgetLeader, false),
            (code(ErrorCode::UnknownLeaderEpoch), 2, retry, ForgetLeader, false),
            (code(ErrorCode::UnknownTopicId), 3, out, ForgetLeader, false),
            // retriable on the same leader
            (code(ErrorCode::ReplicaNotAvailable), 1, retry, Keep, false),
            (code(ErrorCode::NotEnoughReplicas), 2, retry, Keep, false),
            (code(ErrorCode::NotEnoughReplicas), 3, out, Keep, false),
            // the leader kept the records: a retry may store them twice (not said when none comes)
            (code(ErrorCode::RequestTimedOut), 1, retry, Keep, true),
            (code(ErrorCode::NotEnoughReplicasAfterAppend), 2, retry, Keep, true),
            (code(ErrorCode::RequestTimedOut), 3, out, Keep, false),
            // final codes fail at once, on the first send too
            (code(ErrorCode::MessageSizeTooLarge), 1, fatal, Keep, false),
            (code(ErrorCode::InvalidMessage), 1, fatal, Keep, false),
            (code(ErrorCode::InvalidTopic), 2, fatal, Keep, false),
            (code(ErrorCode::Unknown(99)), 1, fatal, Keep, false),
            (code(ErrorCode::InvalidRecord), 1, fatal, Keep, false),
            (code(ErrorCode::UnsupportedCompressionType), 1, fatal, Keep, false),
            (code(ErrorCode::TopicAuthorizationFailed), 1, fatal, Keep, false),
            // the partition missing from the response: refresh, retry
            (Answer::Missing, 1, retry, Refresh, false),
            (Answer::Missing, 3, out, Refresh, false),
            // the request failed
            (net(true, true), 1, retry, Refresh, false),
            (net(true, false), 2, retry, Keep, false),
            (net(true, true), 3, out, Refresh, false),
            (net(false, false), 1, fatal, Keep, false),
            (net(false, true), 1, fatal, Refresh, false),
        ];
        for &(answer, attempts, action, metadata, may_duplicate) in table {
            assert_eq!(
                classify(answer, attempts, now, POLICY, now),
                Verdict { action, metadata, may_duplicate },
                "{answer:?} after {attempts} sends"
            );
        }
    }

    #[test]
    fn idempotence_reads_the_sequence_codes() {
        let now = Instant::now();
        let idempotent = RetryPolicy { idempotent: true, ..POLICY };
        let dup = Answer::Partition { code: ErrorCode::from_i16(DUPLICATE_SEQUENCE_NUMBER), base_offset: -1 };
        let gap = code(ErrorCode::from_i16(OUT_OF_ORDER_SEQUENCE_NUMBER).unwrap());
        assert_eq!(classify(dup, 2, now, idempotent, now).action, Action::Deliver { base_offset: -1 });
        assert_eq!(classify(gap, 1, now, idempotent, now).action, Action::Retry { not_before: now + POLICY.backoff });
        assert_eq!(classify(gap, 3, now, idempotent, now).action, Action::Fail { out_of_retries: true });
        // without idempotence they are codes like any other the producer does not know
        assert_eq!(classify(dup, 1, now, POLICY, now).action, Action::Fail { out_of_retries: false });
        assert_eq!(classify(gap, 1, now, POLICY, now).action, Action::Fail { out_of_retries: false });
    }

    #[test]
    fn the_budget_is_max_retries_plus_one_sends() {
        let now = Instant::now();
        for max_retries in [0, 1, 3] {
            let policy = RetryPolicy { max_retries, ..POLICY };
            let sends = (1..10)
                .take_while(|&attempts| {
                    matches!(classify(Answer::Missing, attempts, now, policy, now).action, Action::Retry { .. })
                })
                .count() as u32
                + 1;
            assert_eq!(sends, max_retries + 1, "message.send.max.retries={max_retries}");
        }
    }

    /// With `delivery.timeout.ms`, a retry due at or past the batch's deadline expires it
    /// (the metadata action stays); deliveries, final codes and the retry budget are as without.
    #[test]
    fn a_retry_past_the_delivery_timeout_expires_the_batch() {
        let created = Instant::now();
        let timed = RetryPolicy { delivery_timeout: Some(Duration::from_millis(500)), ..POLICY };
        let at = |ms| created + Duration::from_millis(ms);
        let leader_moved = code(ErrorCode::NotLeaderForPartition);
        assert!(matches!(classify(leader_moved, 1, created, timed, at(499)).action, Action::Retry { .. }));
        let expired = classify(leader_moved, 1, created, timed, at(500));
        let timeout = Duration::from_millis(500);
        assert_eq!((expired.action, expired.metadata), (Action::Expire { timeout }, MetadataAction::ForgetLeader));
        assert_eq!(classify(Answer::Missing, 3, created, timed, at(900)).action, Action::Fail { out_of_retries: true });
        let fatal = code(ErrorCode::MessageSizeTooLarge);
        assert_eq!(classify(fatal, 1, created, timed, at(900)).action, Action::Fail { out_of_retries: false });
        let ok = Answer::Partition { code: None, base_offset: 7 };
        assert_eq!(classify(ok, 1, created, timed, at(900)).action, Action::Deliver { base_offset: 7 });
        // without the setting, time does not count
        assert!(matches!(classify(leader_moved, 1, created, POLICY, at(10_000)).action, Action::Retry { .. }));
    }

    #[test]
    fn a_retry_waits_the_backoff_from_now() {
        let now = Instant::now();
        let later = now + Duration::from_secs(3);
        let policy = RetryPolicy { max_retries: 5, backoff: Duration::from_millis(250), ..POLICY };
        let at = |now| match classify(Answer::Missing, 1, now, policy, now).action {
            Action::Retry { not_before } => not_before,
            other => panic!("{other:?}"),
        };
        assert_eq!(at(now), now + Duration::from_millis(250));
        assert_eq!(at(later), later + Duration::from_millis(250));
    }
}
