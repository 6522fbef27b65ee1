#!/usr/bin/python3
"""kafka-python 2.0.2 (Debian's python3-kafka) against a gregor-testkit FakeCluster.

Run by crates/testkit/tests/kafka_python.rs, one scenario per run:

    kafka_python_client.py produce-consume BOOTSTRAP COUNT TOPIC:ACKS:CODEC [TOPIC:ACKS:CODEC ...]
    kafka_python_client.py offsets-v0 BOOTSTRAP commit|fetch GROUP TOPIC OFFSET
    kafka_python_client.py consumer-zk BOOTSTRAP GROUP TOPIC PARTITION OFFSET
    kafka_python_client.py offsets-v1 BOOTSTRAP GROUP TOPIC OFFSET METADATA
    kafka_python_client.py consumer-kafka BOOTSTRAP GROUP TOPIC PARTITION OFFSET METADATA
    kafka_python_client.py capture BOOTSTRAP GROUP

Every result is one JSON object per line on stdout (keys and values hex-encoded, so bytes
survive exactly); the Rust test parses them and checks them against the cluster. Anything
unexpected raises, which exits non-zero with a traceback on stderr. kafka-python is pinned to
Kafka 0.8.2 with api_version=(0, 8, 2) everywhere except `consumer-zk`, which uses (0, 8, 1):
that is how kafka-python selects ZooKeeper offset storage (OffsetCommit/OffsetFetch v0 sent to
any broker) instead of Kafka storage (v1 through the group coordinator).
"""

import json
import logging
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.client_async import KafkaClient
from kafka.protocol.commit import (GroupCoordinatorRequest, OffsetCommitRequest,
                                   OffsetFetchRequest)
from kafka.structs import OffsetAndMetadata

API = (0, 8, 2)
# every blocking call of kafka-python is bounded by this (the Rust side also kills the process)
REQUEST_TIMEOUT_MS = 10000


def emit(event, **fields):
    fields["event"] = event
    sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


def hexs(b):
    return None if b is None else b.hex()


def codec_arg(name):
    return None if name == "none" else name


def acks_arg(name):
    return "all" if name == "all" else int(name)


# ----------------------------------------------------------------------------------------------
# produce and consume
# ----------------------------------------------------------------------------------------------

def message(topic, i):
    key = ("key-%d" % i).encode()
    # mostly compressible, with a few bytes that are not UTF-8, and every 7th value larger
    value = ("%s value %d " % (topic, i)).encode() * (40 if i % 7 == 0 else 3) + bytes([0, 0xff, i % 256])
    return key, value


def produce(bootstrap, topic, acks, codec, count, linger_ms=5):
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        api_version=API,
        acks=acks_arg(acks),
        compression_type=codec_arg(codec),
        linger_ms=linger_ms,
        retries=0,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        max_block_ms=REQUEST_TIMEOUT_MS,
    )
    futures = []
    for i in range(count):
        key, value = message(topic, i)
        futures.append((key, value, producer.send(topic, key=key, value=value)))
    producer.flush(timeout=REQUEST_TIMEOUT_MS / 1000)
    for key, value, f in futures:
        md = f.get(timeout=REQUEST_TIMEOUT_MS / 1000)
        emit("produced", topic=md.topic, partition=md.partition, offset=md.offset,
             key=hexs(key), value=hexs(value), acks=acks, codec=codec)
    producer.close(timeout=5)


def consume_all(bootstrap, topics, expected):
    """Reads every partition of `topics` from the beginning, without a group."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        api_version=API,
        group_id=None,
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
        request_timeout_ms=REQUEST_TIMEOUT_MS + 1000,
        fetch_max_wait_ms=100,
    )
    tps = []
    for topic in topics:
        parts = None
        deadline = time.time() + 10
        while not parts:
            parts = consumer.partitions_for_topic(topic)
            if not parts:
                if time.time() > deadline:
                    raise RuntimeError("no partitions for %s" % topic)
                time.sleep(0.1)
        tps.extend(TopicPartition(topic, p) for p in sorted(parts))
    consumer.assign(tps)
    consumer.seek_to_beginning()
    n = 0
    for record in consumer:  # ends after consumer_timeout_ms without a message
        emit("consumed", topic=record.topic, partition=record.partition, offset=record.offset,
             key=hexs(record.key), value=hexs(record.value))
        n += 1
        if n >= expected:
            break
    positions = {"%s/%d" % (tp.topic, tp.partition): consumer.position(tp) for tp in tps}
    emit("positions", positions=positions)
    # closing cancels the fetch still in flight, which kafka-python logs as an ERROR
    logging.getLogger("kafka.consumer.fetcher").setLevel(logging.CRITICAL)
    consumer.close(autocommit=False)
    return n


def cmd_produce_consume(bootstrap, count, *cases):
    count = int(count)
    topics = []
    for case in cases:
        topic, acks, codec = case.split(":")
        produce(bootstrap, topic, acks, codec, count)
        topics.append(topic)
    n = consume_all(bootstrap, topics, count * len(topics))
    emit("done", consumed=n)


# ----------------------------------------------------------------------------------------------
# the low-level client
# ----------------------------------------------------------------------------------------------

def low_level_client(bootstrap):
    client = KafkaClient(bootstrap_servers=bootstrap, api_version=API,
                         request_timeout_ms=REQUEST_TIMEOUT_MS)
    deadline = time.time() + REQUEST_TIMEOUT_MS / 1000
    # until the first Metadata answer, cluster.brokers() lists the bootstrap servers
    # ("bootstrap-0", ...) instead of the brokers' ids
    while not brokers(client):
        if time.time() > deadline:
            raise RuntimeError("no metadata from %s" % bootstrap)
        f = client.cluster.request_update()
        client.poll(future=f)
    return client


def call(client, node_id, request):
    deadline = time.time() + REQUEST_TIMEOUT_MS / 1000
    while not client.ready(node_id):
        if time.time() > deadline:
            raise RuntimeError("broker %s not ready" % node_id)
        client.poll(timeout_ms=50)
    f = client.send(node_id, request)
    client.poll(future=f)
    if f.failed():
        raise f.exception
    return f.value


def brokers(client):
    ids = [b.nodeId for b in client.cluster.brokers()]
    return sorted(ids) if all(isinstance(i, int) for i in ids) else []


def commit_results(response):
    return [[t, p, e] for t, parts in response.topics for p, e in parts]


def fetch_results(response):
    return [[t, p, o, m, e] for t, parts in response.topics for p, o, m, e in parts]


def cmd_offsets_v0(bootstrap, phase, group, topic, offset):
    client = low_level_client(bootstrap)
    node = brokers(client)[0]
    if phase == "commit":
        # the metadata is sent, but ZooKeeper storage keeps only the offset
        req = OffsetCommitRequest[0](group, [(topic, [(0, int(offset), "dropped-by-v0")])])
        emit("commit_v0", node=node, results=commit_results(call(client, node, req)))
    else:
        for node in brokers(client):  # any broker answers v0 from ZooKeeper
            req = OffsetFetchRequest[0](group, [(topic, [0, 1, 2])])
            emit("fetch_v0", node=node, results=fetch_results(call(client, node, req)))
    client.close()


def group_consumer(bootstrap, group, api):
    # api_version < (0, 10, 1): session_timeout_ms doubles as max_poll_interval_ms, and the
    # request timeout must exceed it
    return KafkaConsumer(bootstrap_servers=bootstrap, api_version=api, group_id=group,
                         enable_auto_commit=False, session_timeout_ms=6000,
                         request_timeout_ms=REQUEST_TIMEOUT_MS, retry_backoff_ms=50)


def cmd_consumer_zk(bootstrap, group, topic, partition, offset):
    consumer = group_consumer(bootstrap, group, (0, 8, 1))
    tp = TopicPartition(topic, int(partition))
    consumer.commit({tp: OffsetAndMetadata(int(offset), "dropped-by-v0")})
    got = consumer.committed(tp, metadata=True)
    emit("consumer_zk", offset=got.offset, metadata=got.metadata)
    consumer.close(autocommit=False)


def find_coordinator(client, group, node):
    errors = []
    deadline = time.time() + 15
    while True:
        r = call(client, node, GroupCoordinatorRequest[0](group))
        errors.append(r.error_code)
        if r.error_code == 0:
            return r, errors
        if time.time() > deadline:
            raise RuntimeError("no coordinator for %s: %s" % (group, errors))
        time.sleep(0.05)


def cmd_offsets_v1(bootstrap, group, topic, offset, metadata):
    client = low_level_client(bootstrap)
    asked = brokers(client)[0]
    r, errors = find_coordinator(client, group, asked)
    emit("coordinator", asked=asked, errors=errors, coordinator_id=r.coordinator_id,
         host=r.host, port=r.port)
    coordinator = r.coordinator_id
    commit = OffsetCommitRequest[1](group, -1, "", [(topic, [(0, int(offset), -1, metadata)])])
    fetch = OffsetFetchRequest[1](group, [(topic, [0, 1])])
    for node in brokers(client):
        if node != coordinator:
            emit("commit_v1", node=node, coordinator=False,
                 results=commit_results(call(client, node, commit)))
            emit("fetch_v1", node=node, coordinator=False,
                 results=fetch_results(call(client, node, fetch)))
    emit("commit_v1", node=coordinator, coordinator=True,
         results=commit_results(call(client, coordinator, commit)))
    emit("fetch_v1", node=coordinator, coordinator=True,
         results=fetch_results(call(client, coordinator, fetch)))
    client.close()


def cmd_consumer_kafka(bootstrap, group, topic, partition, offset, metadata):
    consumer = group_consumer(bootstrap, group, API)
    tp = TopicPartition(topic, int(partition))
    before = consumer.committed(tp, metadata=True)
    consumer.commit({tp: OffsetAndMetadata(int(offset), metadata)})
    got = consumer.committed(tp, metadata=True)
    coordinator = consumer._coordinator.coordinator_id  # pylint: disable=protected-access
    emit("consumer_kafka", before=None if before is None else before.offset,
         offset=got.offset, metadata=got.metadata, coordinator=coordinator)
    consumer.close(autocommit=False)


# ----------------------------------------------------------------------------------------------
# capture: one request of each kind, for crates/protocol/tests/data/kafka-python-live
# ----------------------------------------------------------------------------------------------

CAPTURE_CODECS = ["none", "gzip", "snappy", "lz4"]


def cmd_capture(bootstrap, group):
    topics = []
    for codec in CAPTURE_CODECS:
        topic = "kp-" + codec
        # a long linger puts the three messages in one batch, so one Produce request
        produce(bootstrap, topic, "1", codec, 3, linger_ms=500)
        topics.append(topic)
    consume_all(bootstrap, topics, 3 * len(topics))
    client = low_level_client(bootstrap)
    node = brokers(client)[0]
    # Kafka storage first: the cluster is fresh, so the coordinator answers 15 at first
    r, errors = find_coordinator(client, group, node)
    emit("coordinator", errors=errors, coordinator_id=r.coordinator_id)
    tp = [("kp-none", [(0, 3, -1, "kp-meta")])]
    emit("commit_v1", results=commit_results(
        call(client, r.coordinator_id, OffsetCommitRequest[1](group, -1, "", tp))))
    emit("fetch_v1", results=fetch_results(
        call(client, r.coordinator_id, OffsetFetchRequest[1](group, [("kp-none", [0])]))))
    emit("commit_v0", results=commit_results(
        call(client, node, OffsetCommitRequest[0](group, [("kp-gzip", [(0, 2, "")])]))))
    emit("fetch_v0", results=fetch_results(
        call(client, node, OffsetFetchRequest[0](group, [("kp-gzip", [0])]))))
    client.close()
    emit("done")


COMMANDS = {
    "produce-consume": cmd_produce_consume,
    "offsets-v0": cmd_offsets_v0,
    "consumer-zk": cmd_consumer_zk,
    "offsets-v1": cmd_offsets_v1,
    "consumer-kafka": cmd_consumer_kafka,
    "capture": cmd_capture,
}


def main():
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    COMMANDS[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
