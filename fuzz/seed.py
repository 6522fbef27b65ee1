#!/usr/bin/env python3
"""Builds the seed corpus of every fuzz target from the wire fixtures.

    python3 fuzz/seed.py [OUT_DIR]        (default: fuzz/corpus)

Reads crates/protocol/tests/data/*/*.bin (kafka-0.8.2.2, kafka-python, ...: whole frames with
their 4-byte size prefix; *.inner.bin are raw decompressed inner message sets) and writes, per target,
OUT_DIR/<target>/<fixture name>:

* decode_response_<api>: a response frame less its size prefix and correlation id (the targets
  put a correlation id back in front), by the API the fixture's name starts with;
* decode_request: a request frame less its size prefix;
* message_set: every *.inner.bin, and every message set inside a Fetch response or a Produce
  request;
* message_set_wrapped: codec selector byte + each of those sets (the target compresses it);
* decompress: codec byte + value of every compressed wrapper in those sets, and byte 0 + set;
* record_batches: every non-empty Records field of the Kafka 3.7.0 captures (decoded/*.json),
  and every message set above;
* split_frame: selector byte 0xff (max frame 4080 bytes, chunks of 3) + a request frame followed
  by its response frame;
* net_connection: a selector byte + Metadata v0 and Fetch v0 response frames whose correlation
  ids are rewritten to 0, 1, ... (the ids the target's requests get);

and, not from the fixtures, hand-made seeds for the other crates' parsers: avro_datum,
avro_schema and avro_framed (datums of the schemas in fuzz/src/avro.rs, encoded here by a small
Avro writer), zk_payloads (every znode document of DESIGN.md section 3, in Kafka's field order
and another), admin_json (reassignment plans, topics-to-move lists, replica assignments, topic
configs).

Existing files in OUT_DIR are kept (libFuzzer adds what it finds there); standard library only.
"""

import pathlib
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "crates" / "protocol" / "tests" / "data"
SHARED = pathlib.Path("/work/shared/fixtures/kafka-0.8.2.2")

# fixture name prefix -> response target (longest prefixes first)
RESPONSE_TARGETS = [
    ("java_console_producer_metadata", "decode_response_metadata"),
    ("java_console_producer_produce", "decode_response_produce"),
    ("consumer_metadata", "decode_response_consumer_metadata"),
    ("offset_commit_v0", "decode_response_offset_commit_v0"),
    ("offset_commit_v1", "decode_response_offset_commit_v1"),
    ("offset_fetch", "decode_response_offset_fetch"),
    ("offsets", "decode_response_offsets"),
    ("metadata", "decode_response_metadata"),
    ("produce", "decode_response_produce"),
    ("fetch", "decode_response_fetch"),
]


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def string(self):
        n = self.i16()
        return b"" if n == -1 else self.take(n)

    def bytes_(self):
        n = self.i32()
        return b"" if n == -1 else self.take(n)


def fetch_sets(frame):
    r = Reader(frame[8:])  # size, correlation id
    sets = []
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            r.i32(), r.i16(), r.i64()
            sets.append(r.bytes_())
    return sets


def produce_sets(frame):
    r = Reader(frame[4:])
    r.i16(), r.i16(), r.i32(), r.string()  # header
    r.i16(), r.i32()  # acks, timeout
    sets = []
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            r.i32()
            sets.append(r.bytes_())
    return sets


def wrapper_values(message_set):
    """(codec, compressed value) of each top-level wrapper of a set."""
    r, out = Reader(message_set), []
    try:
        while r.pos < len(r.data):
            r.i64()
            m = Reader(r.take(r.i32()))
            m.take(5)  # crc, magic
            codec = m.take(1)[0] & 7
            m.bytes_()
            value = m.bytes_()
            if codec:
                out.append((codec, value))
    except ValueError:
        pass  # partial trailing message
    return out


# --- hand-made seeds of the targets beyond gregor-protocol ------------------------------------


def zz(n):
    """An Avro long: zigzag, then a little-endian base-128 varint."""
    n = (n << 1) ^ (n >> 63)
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def av_bytes(b):
    return zz(len(b)) + b


def av_str(s):
    return av_bytes(s.encode())


def avro_seeds():
    """(name, writer index, datum) of each schema in fuzz/src/avro.rs."""
    inner = zz(3) + zz(0)  # Inner {x: 3, c: RED}
    all_ = (
        b""  # n: null
        + b"\x01"  # b: true
        + zz(5)  # i
        + zz(-300)  # l
        + struct.pack("<f", 1.5)
        + struct.pack("<d", -2.25)
        + av_bytes(b"\x00\xff")
        + av_str("h\u00e9llo")
        + zz(2)  # e: BLUE
        + b"abcd"  # fx
        + zz(2) + zz(1) + zz(2) + zz(0)  # a: [1, 2]
        + zz(1) + av_str("k") + av_str("v") + zz(0)  # m: {k: v}
        + zz(1) + av_str("x")  # u: branch 1, string
        + av_bytes(b"\x01\x00")  # dec: 2.56
        + b"\x00" * 7 + b"\x2a"  # decf
        + av_str("67e55044-10b1-426f-9247-bb680e5fe0c8")  # uuid
        + zz(19000)  # date
        + zz(3_600_000)  # time-millis
        + zz(3_600_000_000)  # time-micros
        + zz(1_427_000_000_000)  # timestamp-millis
        + zz(1_427_000_000_000_000)  # timestamp-micros
        + zz(1_427_000_000_000)  # local-timestamp-millis
        + zz(1_427_000_000_000_000)  # local-timestamp-micros
        + struct.pack("<III", 1, 2, 3)  # duration
        + zz(1) + zz(1) + av_str("k") + zz(1) + inner + zz(0) + zz(0)  # nested: [{k: Inner}]
    )
    # the same array as one block with its byte size (a negative count)
    all_sized = all_.replace(zz(2) + zz(1) + zz(2) + zz(0), zz(-2) + zz(2) + zz(1) + zz(2) + zz(0), 1)
    node = zz(1) + zz(1) + zz(2) + zz(1) + zz(3) + zz(0)  # 1 -> 2 -> 3
    tree = av_str("root") + zz(2) + av_str("a") + zz(0) + av_str("b") + zz(1) + av_str("c") + zz(0) + zz(0) + zz(0)
    return [
        ("all", 0, all_),
        ("all-sized-block", 0, all_sized),
        ("node", 1, node),
        ("tree", 2, tree),
        ("union-null", 3, zz(0)),
        ("union-string", 3, zz(2) + av_str("hi")),
        ("union-bytes-array", 3, zz(3) + zz(2) + av_bytes(b"a") + av_bytes(b"") + zz(0)),
        ("union-map", 3, zz(4) + zz(1) + av_str("pi") + struct.pack("<d", 3.14) + zz(0)),
        ("union-float", 3, zz(5) + struct.pack("<f", float("nan"))),
        ("nulls", 4, zz(2) + zz(3) + zz(0) + zz(0) + zz(0)),
        ("empties", 5, zz(3) + av_str("a") + zz(1) + av_str("b") + zz(2) + av_str("c") + zz(0) + zz(0)),
        ("big", 6, av_bytes(av_bytes(b"\x01\x00") + zz(2)) + av_bytes(b"raw")),
    ]


def schema_texts():
    """The writer and reader schemas of fuzz/src/avro.rs, from its raw string literals."""
    import re

    text = (ROOT / "fuzz" / "src" / "avro.rs").read_text()
    literals = re.findall(r'r#"(.*?)"#', text, re.S)
    half = len(literals) // 2
    return literals[:half], literals[half:]


ZK_DOCS = {
    "broker": b'{"version":1,"host":"127.0.0.1","port":9092,"jmx_port":-1,"timestamp":"1427000000000"}',
    "broker-kafka-order": b'{"jmx_port":-1,"timestamp":"1427000000000","host":"kafka1","version":1,"port":9092}',
    "broker-number-timestamp": b'{"version":1,"host":"h","port":1,"jmx_port":9999,"timestamp":1427000000000}',
    "topic": b'{"version":1,"partitions":{"0":[1,2],"1":[2,0],"2":[0,1]}}',
    "state": b'{"version":1,"leader":1,"leader_epoch":3,"controller_epoch":2,"isr":[1,2]}',
    "state-kafka-order": b'{"controller_epoch":2,"leader":-1,"version":1,"leader_epoch":0,"isr":[]}',
    "controller": b'{"version":1,"brokerid":2,"timestamp":"1427000000000"}',
    "topic-config": b'{"version":1,"config":{"retention.ms":"86400000","cleanup.policy":"compact"}}',
    "config-change": b'"events"',
    "reassign": b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]},'
    b'{"topic":"t","partition":1,"replicas":[2,0]}]}',
    "election": b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}',
    "consumer": b'{"version":1,"subscription":{"events":2},"pattern":"static","timestamp":"1427000000000"}',
    "consumer-whitelist": b'{"pattern":"white_list","subscription":{"ev.*":1},"timestamp":"1","version":1}',
    "offset": b"42",
    "offset-negative": b"-1",
    "epoch": b" 7\n",
    "path": b"/brokers/topics/events/partitions/0/state",
    "topic-name": b"my.topic_name-1",
    "connect": b"zk1:2181,zk2:2182/kafka/prod",
    "connect-ipv6": b"[::1]:2181,127.0.0.1/chroot",
}

ADMIN_DOCS = {
    "plan": b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]},'
    b'{"topic":"u","partition":3,"replicas":[0]}]}',
    "plan-no-version": b'{"partitions":[{"replicas":[2,1],"partition":1,"topic":"t","extra":true}]}',
    "topics-to-move": b'{"topics":[{"topic":"foo"},{"topic":"bar"}],"version":1}',
    "replica-assignment": b"0:1,1:2,2:0",
    "replica-assignment-spaces": b" 3 : 4 ",
    "topic-config": b"retention.ms=86400000\nsegment.bytes=1073741824\nmin.cleanable.dirty.ratio=0.5\n"
    b"cleanup.policy=compact\nunclean.leader.election.enable=false",
}


def add_new_target_seeds(add, frames):
    writers, readers = schema_texts()
    for name, index, datum in avro_seeds():
        add("avro_datum", name, bytes([index]) + datum)
        add("avro_datum", name + "-resolved", bytes([index | 0x80]) + datum)
        add("avro_framed", name, b"\x00" + struct.pack(">i", index) + datum)
        w, r = writers[index].encode(), readers[index].encode()
        add("avro_schema", name, struct.pack(">H", len(w)) + w + struct.pack(">H", 0) + datum)
        add("avro_schema", name + "-resolved", struct.pack(">H", len(w)) + w + struct.pack(">H", len(r)) + r + datum)
    add("avro_framed", "unknown-id", b"\x00\x00\x00\x00\x63\x00")
    add("avro_framed", "not-framed", "caf\u00e9".encode())
    for name, doc in ZK_DOCS.items():
        add("zk_payloads", name, doc)
    for name, doc in ADMIN_DOCS.items():
        add("admin_json", name, doc)
    add("admin_json", "reassign-znode", ZK_DOCS["reassign"])

    def with_id(frame, cid):
        return frame[:4] + struct.pack(">i", cid) + frame[8:]

    metadata = [p["resp"] for s, p in frames.items() if "-metadata_v0" in s and "resp" in p]
    fetch = [p["resp"] for s, p in frames.items() if "-fetch_v0" in s and "resp" in p]
    for i, md in enumerate(metadata[:6]):
        # max frame 1 MiB, whole stream at once, one request
        add("net_connection", f"metadata{i}", bytes([2 | 7 << 2]) + with_id(md, 0))
        # max frame 64 bytes: too large
        add("net_connection", f"metadata{i}-too-large", bytes([0 | 7 << 2]) + with_id(md, 0))
    for i, (md, fe) in enumerate(zip(metadata, fetch[:6])):
        # two requests, chunks of 16 bytes
        add("net_connection", f"metadata-fetch{i}", bytes([2 | 3 << 2 | 1 << 5]) + with_id(md, 0) + with_id(fe, 1))
        # four requests, one byte at a time, answered out of order
        stream = with_id(fe, 1) + with_id(md, 0) + with_id(fe, 3) + with_id(md, 2)
        add("net_connection", f"four{i}", bytes([2 | 0 << 2 | 3 << 5]) + stream)


def add_record_seeds(add):
    """record_batches: every non-empty Records field of the Kafka 3.7.0 captures (RecordBatch v2,
    each codec), found through decoded/*.json, and every message set above (magic 0)."""
    import json

    def walk(value, found):
        if isinstance(value, dict):
            if isinstance(value.get("Records"), str) and value["Records"]:
                found.append(bytes.fromhex(value["Records"]))
            for v in value.values():
                walk(v, found)
        elif isinstance(value, list):
            for v in value:
                walk(v, found)

    for path in sorted((DATA / "kafka-3.7.0" / "decoded").glob("*.json")):
        found = []
        walk(json.loads(path.read_text()), found)
        for i, blob in enumerate(found):
            add("record_batches", f"kafka-3.7.0-{path.stem}.records{i}", blob)


def main():
    out_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "fuzz" / "corpus"
    files = []
    for folder in sorted(d for d in DATA.iterdir() if d.is_dir()):
        if folder.name == "kafka-3.7.0":
            # modern API versions the 0.8 targets do not read; their records seed
            # record_batches through decoded/ (add_record_seeds)
            continue
        found = sorted(folder.glob("*.bin"))
        if not found and folder.name == "kafka-0.8.2.2":
            found = sorted(SHARED.glob("*.bin"))
        files += [(folder.name, f) for f in found]
    if not files:
        sys.exit(f"no fixtures under {DATA}")

    seeds = {}

    def add(target, name, data):
        seeds.setdefault(target, {})[name] = data

    frames = {}
    for tag, path in files:
        data = path.read_bytes()
        stem = path.name[: -len(".bin")]
        name = f"{tag}-{stem}"
        if stem.endswith(".resp"):
            target = next((t for p, t in RESPONSE_TARGETS if stem.startswith(p)), None)
            if target is None:
                sys.exit(f"no target for {path}")
            add(target, name, data[8:])
            sets = fetch_sets(data) if target == "decode_response_fetch" else []
            frames.setdefault(f"{tag}-{stem[: -len('.resp')]}", {})["resp"] = data
        elif stem.endswith(".req"):
            add("decode_request", name, data[4:])
            sets = produce_sets(data) if stem.startswith(("produce", "java_console_producer_produce")) else []
            frames.setdefault(f"{tag}-{stem[: -len('.req')]}", {})["req"] = data
        else:  # *.inner.bin: a raw inner message set
            sets = [data]
        for i, s in enumerate(sets):
            if s:
                add("message_set", f"{name}.set{i}", s)
                add("record_batches", f"{name}.set{i}", s)
                add("message_set_wrapped", f"{name}.set{i}", bytes([i % 3]) + s)
                add("decompress", f"{name}.set{i}.none", b"\x00" + s)
                for j, (codec, value) in enumerate(wrapper_values(s)):
                    add("decompress", f"{name}.set{i}.wrapper{j}", bytes([codec]) + value)
    for stem, pair in frames.items():
        add("split_frame", stem, b"\xff" + pair.get("req", b"") + pair.get("resp", b""))
    add_new_target_seeds(add, frames)
    add_record_seeds(add)

    total = 0
    for target, named in sorted(seeds.items()):
        d = out_dir / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in named.items():
            (d / name).write_bytes(data)
        total += len(named)
        print(f"{target:36} {len(named):4} seeds")
    print(f"{total} seeds in {out_dir}")


if __name__ == "__main__":
    main()
