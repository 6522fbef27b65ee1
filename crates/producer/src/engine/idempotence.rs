//! The idempotent producer (`enable.idempotence`, KIP-98): every RecordBatch v2 carries the
//! producer's id and epoch and the sequence number of its first record in its partition, so
//! the broker writes a batch once however often it is sent, and refuses one that skips ahead.
//!
//! ```text
//!  send_round ─► a batch built for the first time gets the partition's next sequence
//!                (kept on the batch: a batch built again reuses it, a retry resends its bytes)
//!  round task ─► producer_id(generation): InitProducerId on the round's connection, once
//!  answer 46 DUPLICATE_SEQUENCE_NUMBER ─► delivered, 45 OUT_OF_ORDER ─► retried
//!                (crate::outcome decides, told the producer is idempotent)
//!  a numbered batch that fails for good ─► reset: a new generation for the next batches, every
//!                partition numbered from 0 (what the broker holds of the failed batch is
//!                unknown, so the old numbering cannot go on). Its producer id: with
//!                InitProducerId v3+ (Kafka 2.5+, KIP-360) the same id at the next epoch, asked
//!                by naming the last generation's id and epoch (the broker then refuses the old
//!                epoch's batches still in flight: 47 INVALID_PRODUCER_EPOCH); from an older
//!                broker, or if the bump is refused, a new producer id
//! ```
//!
//! Sequences wrap from `i32::MAX` to 0, as Kafka's do.

use std::collections::HashMap;
use std::sync::Arc;

use gregor_net::BrokerConnection;
use gregor_protocol::messages::InitProducerIdRequest;
use gregor_protocol::ErrorCode;
use tokio::sync::Mutex;

use crate::accumulator::PartitionKey;

/// The producer ids of the generations so far, shared with the rounds' tasks.
#[derive(Debug, Default)]
pub(super) struct ProducerIds {
    ids: HashMap<u64, (i64, i16)>,
}

/// The engine's side: the generation the next batches are numbered for and each partition's
/// next sequence in it.
#[derive(Debug, Default)]
pub(super) struct Idempotence {
    pub(super) ids: Arc<Mutex<ProducerIds>>,
    pub(super) generation: u64,
    next: HashMap<PartitionKey, i32>,
}

impl Idempotence {
    /// The place of a batch of `records` records of `tp` built for the first time in this
    /// generation: (generation, its first record's sequence), the partition's next; the one
    /// after it moves on by `records`.
    pub(super) fn number(&mut self, tp: &PartitionKey, records: usize) -> (u64, i32) {
        let next = self.next.entry(tp.clone()).or_insert(0);
        let base = *next;
        *next = ((i64::from(base) + records as i64) % (i64::from(i32::MAX) + 1)) as i32;
        (self.generation, base)
    }

    /// A numbered batch failed for good: the next batches get a new producer id, numbered
    /// from 0 in every partition.
    pub(super) fn reset(&mut self) {
        self.generation += 1;
        self.next.clear();
        tracing::warn!(
            generation = self.generation,
            "a numbered batch failed: the next batches go under a new producer id"
        );
    }
}

/// The producer id and epoch of `generation`: asked of `conn` (InitProducerId, no
/// transactional id) the first time a round of that generation needs it.
pub(super) async fn producer_id(
    ids: &Mutex<ProducerIds>,
    conn: &BrokerConnection,
    generation: u64,
) -> Result<(i64, i16), gregor_net::Error> {
    let mut ids = ids.lock().await;
    if let Some(&id) = ids.ids.get(&generation) {
        return Ok(id);
    }
    let version = conn.client_version::<InitProducerIdRequest>()?;
    // KIP-360: a later generation bumps the epoch of the last one's producer id
    let last = ids
        .ids
        .iter()
        .filter(|(g, _)| **g < generation)
        .max_by_key(|(g, _)| **g)
        .map(|(_, id)| *id)
        .filter(|_| version >= 3);
    let mut answer = None;
    if let Some((producer_id, producer_epoch)) = last {
        let bump = InitProducerIdRequest { producer_id, producer_epoch, ..Default::default() };
        let bumped = conn.request(version, &bump).await?;
        if bumped.error_code == 0 {
            answer = Some(bumped);
        } else {
            tracing::debug!(code = bumped.error_code, "the epoch bump was refused: asking for a new producer id");
        }
    }
    let answer = match answer {
        Some(a) => a,
        None => conn.request(version, &InitProducerIdRequest::default()).await?,
    };
    if let Some(code) = ErrorCode::from_i16(answer.error_code) {
        return Err(gregor_net::Error::broker(code, format!("InitProducerId at {}", conn.addr())));
    }
    let id = (answer.producer_id, answer.producer_epoch);
    tracing::debug!(generation, producer_id = id.0, epoch = id.1, "producer id");
    ids.ids.insert(generation, id);
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_numbered_apart_and_a_reset_starts_them_over() {
        let a = PartitionKey { topic: Arc::from("a"), partition: 0 };
        let b = PartitionKey { topic: Arc::from("a"), partition: 1 };
        let mut idem = Idempotence::default();
        assert_eq!(idem.number(&a, 3), (0, 0));
        assert_eq!(idem.number(&a, 2), (0, 3));
        assert_eq!(idem.number(&b, 1), (0, 0));
        idem.reset();
        assert_eq!(idem.number(&a, 1), (1, 0));
        // the numbering wraps from i32::MAX to 0
        idem.next.insert(b.clone(), i32::MAX - 1);
        assert_eq!(idem.number(&b, 3), (1, i32::MAX - 1));
        assert_eq!(idem.number(&b, 1), (1, 1));
    }
}
