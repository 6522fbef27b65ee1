#!/usr/bin/python3
"""kafka-python 2.0.2 (Debian's python3-kafka) reading what gregor wrote, and writing what
gregor reads, against a gregor-testkit FakeCluster in Kafka 0.8.2 mode (api_version=(0, 8, 2)).

Run by crates/producer/tests/interop.rs (consume) and crates/simple-consumer/tests/interop.rs
(produce), one command per run:

    interop_client.py consume BOOTSTRAP EXPECTED TOPIC [TOPIC ...]
        Assigns every partition of the topics (no group), seeks to the beginning and reads until
        EXPECTED messages arrived (or fails after a deadline). Prints, in the order received:
            consumed<TAB>TOPIC<TAB>PARTITION<TAB>OFFSET<TAB>KEY<TAB>VALUE
        then one line per partition with the consumer's position:
            position<TAB>TOPIC<TAB>PARTITION<TAB>POSITION
        and finally `done<TAB>N`.

    interop_client.py produce BOOTSTRAP COUNT TOPIC:CODEC [TOPIC:CODEC ...]
        Sends COUNT messages per topic with acks=all and the codec (none, gzip, snappy, lz4),
        keyed and null-keyed, then prints, in send order:
            produced<TAB>TOPIC<TAB>PARTITION<TAB>OFFSET<TAB>KEY<TAB>VALUE
        and finally `done<TAB>N`.

KEY and VALUE are hex (so bytes survive exactly); a null key or value is `-`. The output is
plain text because the Rust tests that parse it have no JSON parser among their dependencies.
Anything unexpected raises, which exits non-zero with a traceback on stderr.
"""

import logging
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

API = (0, 8, 2)
# every blocking call of kafka-python is bounded by this (the Rust side also kills the process)
REQUEST_TIMEOUT_MS = 10000
CONSUME_DEADLINE_S = 20


def hexs(b):
    return "-" if b is None else b.hex()


def line(*fields):
    sys.stdout.write("\t".join(str(f) for f in fields) + "\n")


# ----------------------------------------------------------------------------------------------
# consume
# ----------------------------------------------------------------------------------------------

def cmd_consume(bootstrap, expected, *topics):
    expected = int(expected)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        api_version=API,
        group_id=None,
        enable_auto_commit=False,
        request_timeout_ms=REQUEST_TIMEOUT_MS + 1000,
        fetch_max_wait_ms=100,
        # large enough for any single message the tests write
        max_partition_fetch_bytes=4 * 1024 * 1024,
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
    deadline = time.time() + CONSUME_DEADLINE_S
    while n < expected:
        if time.time() > deadline:
            raise RuntimeError("only %d of %d messages within %d s" % (n, expected, CONSUME_DEADLINE_S))
        batches = consumer.poll(timeout_ms=200)
        # poll() returns a dict per partition: the order within a partition is the log's
        for tp in sorted(batches, key=lambda t: (t.topic, t.partition)):
            for r in batches[tp]:
                line("consumed", r.topic, r.partition, r.offset, hexs(r.key), hexs(r.value))
                n += 1
    # anything beyond what was expected would show up here
    extra = consumer.poll(timeout_ms=300)
    for tp in sorted(extra, key=lambda t: (t.topic, t.partition)):
        for r in extra[tp]:
            line("consumed", r.topic, r.partition, r.offset, hexs(r.key), hexs(r.value))
            n += 1
    for tp in tps:
        line("position", tp.topic, tp.partition, consumer.position(tp))
    # closing cancels the fetch still in flight, which kafka-python logs as an ERROR
    logging.getLogger("kafka.consumer.fetcher").setLevel(logging.CRITICAL)
    consumer.close(autocommit=False)
    line("done", n)
    sys.stdout.flush()


# ----------------------------------------------------------------------------------------------
# produce
# ----------------------------------------------------------------------------------------------

KEYS = [b"user-1", b"user-2", "ключ-3".encode(), "鍵-4 🔑".encode(), b"\x00\xff\x01\xfe\t\n", b""]


def message(topic, i):
    """Key and value of message i of a topic: a null key every 4th, the empty key sometimes;
    values compressible, with bytes that are not UTF-8, every 13th one large."""
    key = None if i % 4 == 0 else KEYS[i % len(KEYS)]
    head = ("%s|%05d|" % (topic, i)).encode()
    body = ("kafka-python é value %d " % i).encode() * (400 if i % 13 == 0 else 3)
    return key, head + body + bytes([0, 0xFF, i % 256, 0x0A])


def cmd_produce(bootstrap, count, *cases):
    count = int(count)
    n = 0
    for case in cases:
        topic, codec = case.split(":")
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            api_version=API,
            acks="all",
            compression_type=None if codec == "none" else codec,
            linger_ms=10,
            batch_size=4096,
            retries=0,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            max_block_ms=REQUEST_TIMEOUT_MS,
        )
        sent = []
        for i in range(count):
            key, value = message(topic, i)
            sent.append((key, value, producer.send(topic, key=key, value=value)))
        producer.flush(timeout=REQUEST_TIMEOUT_MS / 1000)
        for key, value, f in sent:
            md = f.get(timeout=REQUEST_TIMEOUT_MS / 1000)
            line("produced", md.topic, md.partition, md.offset, hexs(key), hexs(value))
            n += 1
        producer.close(timeout=5)
    line("done", n)
    sys.stdout.flush()


COMMANDS = {"consume": cmd_consume, "produce": cmd_produce}


def main():
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    COMMANDS[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
