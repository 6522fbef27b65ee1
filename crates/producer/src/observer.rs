//! What the engine tells an [`Observer`] of its records: a part of a producer that watches
//! every record's result and may send records of its own (the audit, `crate::audit`, is
//! one). The engine knows only this trait; the producer that makes the observer (with
//! [`AsyncProducer::with_audit`](crate::AsyncProducer::with_audit)) hands it to the engine.
//!
//! An observer's own records go through the same queues, batching and retries as the
//! application's, but have no delivery slot and take no place in
//! `queue.buffering.max.messages`; the engine tells each hook which records are whose by
//! asking (the `bool` the result hooks return), and never reports an observer's record to a
//! flush or a close.

use tokio::time::Instant;

use crate::delivery::Pending;
use crate::error::DeliveryError;

/// Hooks the engine calls on its task (keep them short: the engine waits for them).
pub(crate) trait Observer: Send {
    /// A record of `topic` was acknowledged at `offset` of `partition` (-1: unknown,
    /// `request.required.acks=0`). True when it was the observer's own record.
    fn on_acknowledged(&mut self, topic: &str, partition: i32, offset: i64, record: &Pending) -> bool;

    /// A record of `topic` failed for good with `error`. True when it was the observer's own
    /// record.
    fn on_failed(&mut self, topic: &str, record: &Pending, error: &DeliveryError) -> bool;

    /// The engine's turn at `now`: the observer's records to send now (without a slot).
    /// `last`: the producer is closing (or every handle was dropped) and holds nothing else, so
    /// whatever the observer still has to say goes now.
    fn on_tick(&mut self, now: Instant, last: bool) -> Vec<Pending>;

    /// When [`Observer::on_tick`] has something to do, if nothing else happens.
    fn next_wakeup(&self) -> Option<Instant>;
}
