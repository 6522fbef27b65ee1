//! Results out: every record's one result, counted for flushes, close and the observer, then
//! handed (in the order it was decided) to the delivery task, which gives the queue places
//! back and calls the futures, callbacks and handlers; the flush and close reports after
//! them.

use std::sync::Arc;

use gregor_protocol::MessageSet;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::rounds::InFlight;
use super::Engine;
use crate::accumulator::{Batch, Released};
use crate::bounds::QueueBounds;
use crate::delivery::{CloseReport, DeliveryResult, FlushReport, Pending};
use crate::error::{DeliveryError, Error};
use crate::inbox::{Command, Incoming};
use crate::observer::Observer;
use crate::record::RecordMetadata;
use crate::topic::{Topic, TopicNames};

/// A flush waiting for the records queued before it.
pub(super) struct FlushWaiter {
    /// Records with a lower `seq` were queued before the flush.
    pub(super) below: u64,
    pub(super) remaining: usize,
    pub(super) failed: Vec<DeliveryError>,
    pub(super) reply: oneshot::Sender<FlushReport>,
}

/// A close waiting for every record, up to its deadline.
pub(super) struct Closing {
    pub(super) deadline: Instant,
    pub(super) reply: Option<oneshot::Sender<CloseReport>>,
    pub(super) undelivered: Vec<DeliveryError>,
}

/// Where the engine's results go, and the flushes and close waiting for them.
pub(super) struct Outbox {
    pub(super) permits: Arc<QueueBounds>,
    /// Where results go: the delivery task (see [`deliver_loop`]) once `run` started it;
    /// handed out right here before that (the hand-driven tests).
    pub(super) deliveries: Option<mpsc::UnboundedSender<Delivery>>,
    pub(super) flushes: Vec<FlushWaiter>,
    pub(super) closing: Option<Closing>,
    /// What watches the results (the audit), if anything.
    pub(super) observer: Option<Box<dyn Observer>>,
}

impl Outbox {
    pub(super) fn new(permits: Arc<QueueBounds>, observer: Option<Box<dyn Observer>>) -> Outbox {
        Outbox { permits, deliveries: None, flushes: Vec::new(), closing: None, observer }
    }

    /// A record numbered `seq` has its result: one less for the flushes that wait for it;
    /// `failed`: its error, for their reports.
    fn count_for_flushes(&mut self, seq: u64, failed: Option<&DeliveryError>) {
        for flush in &mut self.flushes {
            if seq < flush.below {
                flush.remaining = flush.remaining.saturating_sub(1);
                if let Some(e) = failed {
                    flush.failed.push(e.clone());
                }
            }
        }
    }
}

impl Engine {
    /// A batch's records are delivered: counted for the flushes and shown to the observer
    /// (when there are any), then handed to the delivery task as a whole (the observer's own
    /// records go with it: they have no slot and hold no queue place, so nothing is delivered
    /// for them).
    pub(super) fn succeed(&mut self, batch: Batch<Pending>, base_offset: i64) {
        let (topic, partition, held) = (self.result_topic(&batch.tp.topic), batch.tp.partition, batch.held);
        // the observer reads the records' messages
        let plain = if self.out.observer.is_some() { batch.plain_or_sent() } else { None };
        let mut records = self.acc.done(batch);
        restore_messages(&mut records, plain);
        if !self.out.flushes.is_empty() || self.out.observer.is_some() {
            for (i, pending) in records.iter().enumerate() {
                if let Some(observer) = &mut self.out.observer {
                    observer.on_acknowledged(&topic, partition, offset_of(base_offset, i), pending);
                }
                self.out.count_for_flushes(pending.seq, None);
            }
        }
        self.hand_out(Delivery::Acked { topic, partition, base_offset, records, held });
    }

    pub(super) fn fail_batch(&mut self, batch: Batch<Pending>, error: Error) {
        if let Some(read) = self.read_back_offloaded(&batch) {
            self.fail_batch_later(batch, read, error);
            return;
        }
        let (topic, partition, attempts) = (self.result_topic(&batch.tp.topic), batch.tp.partition, batch.attempts);
        let plain = batch.plain_or_sent();
        let records = self.acc.done(batch);
        self.fail_records(records, plain, &topic, partition, attempts, &error);
    }

    /// A failed batch's `records` fail, each error with its key and value (read back from
    /// `plain`, the batch's bytes).
    pub(super) fn fail_records(
        &mut self,
        mut records: Vec<Pending>,
        plain: Option<MessageSet>,
        topic: &Topic,
        partition: i32,
        attempts: u32,
        error: &Error,
    ) {
        restore_messages(&mut records, plain);
        for pending in records {
            self.fail(pending, topic.clone(), Some(partition), attempts, error.clone());
        }
    }

    pub(super) fn fail_released(&mut self, released: Released<Pending>, error: Error) {
        let topic = self.result_topic(&released.topic);
        let mut record = released.record;
        if let Some(message) = released.message {
            record.set_message(message);
        }
        self.fail(record, topic, released.partition, released.attempts, error);
    }

    /// A record's one result is a failure: shown to the observer, counted for the flushes and
    /// the close, then handed out (its queue place given back, then its future, callback or
    /// handler). An observer's own failed record is counted for the flushes only (it is in the
    /// accumulator's count they wait for) and reported nowhere.
    pub(super) fn fail(&mut self, pending: Pending, topic: Topic, partition: Option<i32>, attempts: u32, error: Error) {
        let e = pending.error(topic, partition, attempts, error);
        let own = match &mut self.out.observer {
            Some(observer) => observer.on_failed(&e.topic, &pending, &e),
            None => false,
        };
        self.out.count_for_flushes(pending.seq, (!own).then_some(&*e));
        if own {
            return;
        }
        if let Some(closing) = &mut self.out.closing {
            closing.undelivered.push(DeliveryError::clone(&e));
        }
        self.hand_out(Delivery::Results(vec![(pending, Err(e))]));
    }

    /// Results, flush and close reports leave in the order they were decided: through the
    /// delivery task when it runs, here otherwise; behind the failures of a batch whose
    /// records are still being read back (`read_back`).
    pub(super) fn hand_out(&mut self, delivery: Delivery) {
        if let Some(delivery) = self.read_backs.hold(delivery) {
            self.hand_out_now(delivery);
        }
    }

    /// [`Engine::hand_out`], with nothing decided before it still held.
    pub(super) fn hand_out_now(&self, delivery: Delivery) {
        match &self.out.deliveries {
            Some(tx) => {
                if let Err(mpsc::error::SendError(delivery)) = tx.send(delivery) {
                    // the delivery task is gone (its runtime is shutting down): here, then
                    deliver_now(delivery, &self.out.permits);
                }
            }
            None => deliver_now(delivery, &self.out.permits),
        }
    }

    pub(super) fn finish_flushes(&mut self) {
        if self.out.flushes.iter().all(|f| f.remaining > 0) {
            return;
        }
        let (finished, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.out.flushes).into_iter().partition(|f| f.remaining == 0);
        self.out.flushes = waiting;
        for f in finished {
            self.hand_out(Delivery::Flush(f.reply, FlushReport { failed: f.failed }));
        }
    }

    /// The close bound ran out: every record still held fails with [`Error::Closed`].
    pub(super) fn abandon_everything(&mut self) {
        let rounds: Vec<InFlight> = self.rounds.in_flight.drain().map(|(_, r)| r).collect();
        tracing::warn!(records = self.acc.len(), "close timed out; failing what is left");
        self.tasks.abort_all();
        self.task_kinds.clear();
        // the records being read back, read in place (their tasks were aborted)
        self.read_back_in_place();
        // its refresh was aborted too and will report nothing
        self.meta.refreshing = None;
        self.meta.schedule.abandoned();
        for round in rounds {
            self.acc.round_done(round.broker);
            for batch in round.into_batches() {
                self.fail_batch(batch, Error::Closed { in_flight: true });
            }
        }
        for r in self.acc.drain_all() {
            self.fail_released(r, Error::Closed { in_flight: false });
        }
    }

    pub(super) fn finish_close(&mut self) {
        let Some(closing) = &self.out.closing else { return };
        if !self.input.incoming.is_empty()
            || !self.acc.is_empty()
            || !self.rounds.in_flight.is_empty()
            || !self.read_backs.is_empty()
            || closing.reply.is_none()
        {
            return;
        }
        // records sent while the close command was on its way
        self.input.inbox.close();
        let mut late = Incoming::default();
        self.input.inbox.try_recv_all(&mut late);
        while let Some(command) = late.next() {
            match command {
                Command::Record(mut pending) => {
                    pending.seq = self.input.next_seq;
                    self.input.next_seq += 1;
                    let topic = pending.topic().map_or_else(Topic::unknown, |id| self.topic_of(id));
                    self.fail(pending, topic, None, 0, Error::Closed { in_flight: false });
                }
                Command::Flush { reply } => self.hand_out(Delivery::Flush(reply, FlushReport::default())),
                Command::Close { reply, .. } => self.hand_out(Delivery::Close(reply, CloseReport::default())),
            }
        }
        for f in std::mem::take(&mut self.out.flushes) {
            self.hand_out(Delivery::Flush(f.reply, FlushReport { failed: f.failed }));
        }
        let closing = self.out.closing.as_mut().expect("checked above");
        let report = CloseReport { undelivered: std::mem::take(&mut closing.undelivered) };
        if let Some(reply) = closing.reply.take() {
            tracing::debug!(undelivered = report.undelivered.len(), "producer closed");
            self.hand_out(Delivery::Close(reply, report));
        }
        self.input.open = false;
        self.done = true;
    }
}

impl Drop for Engine {
    /// The task was dropped with records still held (its runtime is shutting down): each gets
    /// its [`Error::Closed`] here, with its topic, key and value (a record whose bytes are in
    /// its partition's log or its batch's set would have neither, dropped on its own).
    fn drop(&mut self) {
        if self.acc.is_empty() && self.rounds.in_flight.is_empty() && self.read_backs.is_empty() {
            return;
        }
        // no task runs any more: every read-back in place
        self.rounds.compressing = None;
        self.read_back_in_place();
        let rounds: Vec<InFlight> = self.rounds.in_flight.drain().map(|(_, r)| r).collect();
        for round in rounds {
            for batch in round.into_batches() {
                self.fail_batch(batch, Error::Closed { in_flight: true });
            }
        }
        for r in self.acc.drain_all() {
            self.fail_released(r, Error::Closed { in_flight: false });
        }
    }
}

/// What the engine hands to the delivery task, in the order it decided it.
pub(super) enum Delivery {
    /// A batch of `topic`/`partition` acknowledged, none of its records counted yet: offsets
    /// from `base_offset` (-1: unknown, acks=0); `held`: what its records with a delivery
    /// slot weigh in `queue.buffering.max.bytes`.
    Acked { topic: Topic, partition: i32, base_offset: i64, records: Vec<Pending>, held: usize },
    /// Results already counted for flushes and close.
    Results(Vec<(Pending, DeliveryResult)>),
    /// A flush's report: after the results of every record queued before it.
    Flush(oneshot::Sender<FlushReport>, FlushReport),
    /// A close's report: after every result.
    Close(oneshot::Sender<CloseReport>, CloseReport),
}

/// The delivery task: calls the records' futures, callbacks and handlers off the engine's
/// task, in the engine's order (so a partition's results come in offset order, and a flush
/// or close reports after them). On a multi-thread runtime the application's callbacks then
/// run on another worker while the engine goes on routing records and building requests (as
/// librdkafka serves delivery reports outside its broker threads). Ends when the engine is
/// gone and everything is handed out.
pub(super) async fn deliver_loop(
    rx: mpsc::UnboundedReceiver<Delivery>,
    permits: Arc<QueueBounds>,
    names: Arc<TopicNames>,
) {
    // dropped field by field in this order, also when the runtime drops the task: the records
    // still in the channel (dropped undelivered, they read their topic's name) before the
    // producer's names
    struct Task {
        rx: mpsc::UnboundedReceiver<Delivery>,
        permits: Arc<QueueBounds>,
        _names: Arc<TopicNames>,
    }
    impl Drop for Task {
        /// The runtime dropped the task (it is shutting down): the results the engine handed
        /// out are handed on here, rather than each record's Closed.
        fn drop(&mut self) {
            self.rx.close();
            while let Ok(delivery) = self.rx.try_recv() {
                deliver_now(delivery, &self.permits);
            }
        }
    }
    let mut task = Task { rx, permits, _names: names };
    let mut buf = Vec::with_capacity(64);
    while task.rx.recv_many(&mut buf, 64).await > 0 {
        for delivery in buf.drain(..) {
            deliver_now(delivery, &task.permits);
        }
    }
}

/// Gives a batch's records their messages back from its bytes `plain` (they hold a
/// placeholder while their bytes are the batch's), for their errors and the observer.
fn restore_messages(records: &mut [Pending], plain: Option<MessageSet>) {
    if let Some(plain) = plain {
        for (pending, message) in records.iter_mut().zip(crate::log::messages(&plain)) {
            pending.set_message(message);
        }
    }
}

/// The offset of the `i`th record of a batch acknowledged at `base_offset` (-1: unknown,
/// acks=0).
fn offset_of(base_offset: i64, i: usize) -> i64 {
    if base_offset >= 0 {
        base_offset + i as i64
    } else {
        -1
    }
}

/// One delivery: queue places back first (one semaphore update per batch, and an application
/// that sends again from a callback finds room), then each record its result. Every record
/// with a delivery slot holds a place (the observer's own have neither).
fn deliver_now(delivery: Delivery, permits: &QueueBounds) {
    match delivery {
        Delivery::Acked { topic, partition, base_offset, records, held } => {
            permits.release_counted(records.iter().filter(|p| p.has_slot()).count(), held);
            // each result gets a clone of the engine's copy of the name for results: made and
            // dropped on this side (the engine changes its count once per batch)
            for (i, mut pending) in records.into_iter().enumerate() {
                if pending.has_slot() {
                    let offset = offset_of(base_offset, i);
                    let metadata = RecordMetadata { topic: topic.clone(), partition, offset };
                    pending.deliver(Ok(metadata), &topic);
                }
            }
        }
        Delivery::Results(results) => {
            permits.release(results.iter().map(|(p, _)| p));
            for (mut pending, result) in results {
                let topic = match &result {
                    Ok(m) => m.topic.clone(),
                    Err(e) => e.topic.clone(),
                };
                pending.deliver(result, &topic);
            }
        }
        Delivery::Flush(reply, report) => {
            let _ = reply.send(report);
        }
        Delivery::Close(reply, report) => {
            let _ = reply.send(report);
        }
    }
}

#[cfg(test)]
mod tests {
    //! What the engine shows its observer and what it keeps from it, driven by hand (no
    //! delivery task: results are handed out in place).

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use gregor_protocol::{Compression, EncodedMessage, Message};
    use tokio::sync::oneshot;
    use tokio::time::Instant;

    use super::*;
    use crate::accumulator::PartitionKey;
    use crate::delivery::Slot;
    use crate::engine::testing::engine_observed;
    use crate::topic::TopicId;

    /// What the fake observer was shown: acknowledged (topic, partition, offset, own?) and
    /// failed (topic, own?).
    #[derive(Default)]
    struct Shown {
        acked: Vec<(String, i32, i64, bool)>,
        failed: Vec<(String, bool)>,
    }

    /// Calls every record without a slot its own (as the auditor's are).
    struct Fake(Arc<Mutex<Shown>>);

    impl Observer for Fake {
        fn on_acknowledged(&mut self, topic: &str, partition: i32, offset: i64, record: &Pending) -> bool {
            let own = !record.has_slot();
            self.0.lock().unwrap().acked.push((topic.to_owned(), partition, offset, own));
            own
        }

        fn on_failed(&mut self, topic: &str, record: &Pending, _error: &DeliveryError) -> bool {
            let own = !record.has_slot();
            self.0.lock().unwrap().failed.push((topic.to_owned(), own));
            own
        }

        fn on_tick(&mut self, _now: Instant, _last: bool) -> Vec<Pending> {
            Vec::new()
        }

        fn next_wakeup(&self) -> Option<Instant> {
            None
        }
    }

    fn record(topic: TopicId, value: &str, slot: Option<Slot>) -> Command {
        let message =
            EncodedMessage::encode(&Message::new(None, Some(bytes::Bytes::copy_from_slice(value.as_bytes()))));
        Command::Record(Pending::new(topic, Some(0), message.unwrap(), slot, None))
    }

    /// Sends `values` (`None`: the observer's own record) to t/0, and drains them as one
    /// batch; the futures of the application's records.
    fn batch_of(
        e: &mut Engine,
        topic: TopicId,
        values: &[Option<&str>],
    ) -> (Batch<Pending>, Vec<oneshot::Receiver<DeliveryResult>>) {
        let now = Instant::now();
        let mut futures = Vec::new();
        for value in values {
            let slot = value.map(|_| {
                let (tx, rx) = oneshot::channel();
                futures.push(rx);
                Slot::Future(tx)
            });
            e.on_command(record(topic, value.unwrap_or("own"), slot), now);
        }
        let tp = PartitionKey::new("t", 0);
        e.acc.set_leader(&tp, Some(1));
        e.acc.set_flushing(true);
        let mut rounds = e.acc.drain(now);
        e.acc.set_flushing(false);
        e.acc.round_done(1);
        (rounds.pop().unwrap().batches.pop().unwrap(), futures)
    }

    #[tokio::test]
    async fn the_observer_sees_every_result_and_its_own_records_are_reported_nowhere() {
        let shown = Arc::new(Mutex::new(Shown::default()));
        let mut e = engine_observed(Compression::None, Some(Box::new(Fake(shown.clone()))));
        let t = e.names.register("t").0;

        // acknowledged: every record shown with its offset; the application's get results
        let (batch, mut futures) = batch_of(&mut e, t, &[Some("a"), None, Some("b")]);
        let (reply, mut flushed) = oneshot::channel();
        e.on_command(Command::Flush { reply }, Instant::now());
        e.succeed(batch, 100);
        let shown_acked = std::mem::take(&mut shown.lock().unwrap().acked);
        let acked = |offset, own| ("t".to_owned(), 0, offset, own);
        assert_eq!(shown_acked, [acked(100, false), acked(101, true), acked(102, false)]);
        let offsets: Vec<i64> = futures.iter_mut().map(|f| f.try_recv().unwrap().unwrap().offset).collect();
        assert_eq!(offsets, [100, 102]);
        e.finish_flushes();
        assert!(flushed.try_recv().expect("the flush counted all three").is_ok());

        // failed: every record shown; the observer's own is in no report
        let (batch, mut futures) = batch_of(&mut e, t, &[None, Some("c")]);
        let (reply, mut flushed) = oneshot::channel();
        e.on_command(Command::Flush { reply }, Instant::now());
        let (reply, _closed) = oneshot::channel();
        e.on_command(Command::Close { deadline: Instant::now() + Duration::from_secs(60), reply }, Instant::now());
        e.fail_batch(batch, Error::Broker { broker: 1, code: gregor_protocol::ErrorCode::MessageSizeTooLarge });
        assert_eq!(shown.lock().unwrap().failed, [("t".to_owned(), true), ("t".to_owned(), false)]);
        let error = futures[0].try_recv().unwrap().unwrap_err();
        assert_eq!((error.topic.as_str(), error.value.as_deref()), ("t", Some(&b"c"[..])));
        e.finish_flushes();
        let report = flushed.try_recv().expect("the flush counted both");
        assert_eq!(report.failed.len(), 1, "only the application's record");
        let closing = e.out.closing.as_ref().unwrap();
        assert_eq!(closing.undelivered.len(), 1, "only the application's record");
        assert_eq!(closing.undelivered[0].value.as_deref(), Some(&b"c"[..]));
    }
}
