#!/usr/bin/python3
"""Offline Kafka 0.8.2 wire fixtures encoded by kafka-python (an independent
implementation), used to cross-check gregor's Rust codec.

Usage:
    /usr/bin/python3 scripts/kafka_python_fixtures.py OUTDIR
    /usr/bin/python3 scripts/kafka_python_fixtures.py --check DIR

The first form writes every fixture and manifest.json into OUTDIR (files that
a previous manifest.json in OUTDIR listed but that are no longer generated are
removed).  The second regenerates into a temporary directory and exits 1,
naming each file that is missing from DIR, differs from DIR, or is in DIR but
no longer generated; it exits 0 when DIR is byte-identical to a fresh run.

Needs Debian's python3-kafka (2.0.2), python3-snappy, python3-lz4 and
python3-xxhash (kafka.codec.lz4_encode_old_kafka asserts xxhash is present):
    apt-get install -y python3-kafka python3-snappy python3-lz4 python3-xxhash
Run it with /usr/bin/python3 (a pyenv python3 on PATH lacks those packages).
No broker is contacted; nothing depends on the clock, the host or randomness.

Everything protocol-shaped is encoded by kafka-python itself:
  * request frames by kafka.protocol.parser.KafkaProtocol.send_request
    (Int32 size + kafka.protocol.api.RequestHeader + request body);
  * response bodies by the kafka.protocol.*Response[v] classes, framed as
    Int32 size + Int32 correlation_id + body (kafka-python has no response
    framer, since clients never send responses; the two Int32s are encoded
    with kafka.protocol.types.Int32);
  * messages by kafka.protocol.message.Message (magic 0), message sets by
    kafka.protocol.message.MessageSet.encode;
  * compression by kafka.codec.gzip_encode, snappy_encode(xerial_compatible=
    True, xerial_blocksize=32*1024) and lz4_encode_old_kafka.
The only bytes this script makes itself are (a) truncations of kafka-python
output for partial trailing messages, and (b) gzip's MTIME, which Python's
gzip module takes from the wall clock: while gzip_encode runs, the clock that
the gzip module sees is pinned to 0 (what Java's GZIPOutputStream writes).
Every file is decoded back with kafka-python (RequestHeader.SCHEMA.decode,
Request/Response .decode, MessageSet.decode, Message.validate_crc, kafka.codec *_decode) and
the decoded content must equal the manifest value, or the script fails.

Output files
------------
NAME.bin        one complete frame.  NAME ends in ".req" or ".resp".
                request:  int32 size | int16 api_key | int16 api_version |
                          int32 correlation_id | string client_id | body
                response: int32 size | int32 correlation_id | body
                size counts every byte after itself.
NAME.inner.bin  for a fixture with exactly one compressed wrapper message: the
NAME.inner.K.bin  uncompressed inner message set (no size prefix), i.e. the
                exact input given to the compressor.  With several wrappers
                they are numbered K = 0, 1, ... in wire order.  The wrapper's
                "inner_file" names its file.
manifest.json   JSON list, one entry per file above, sorted by "file".

Manifest schema
---------------
Entry for a frame:
  {"file": "NAME.bin", "kind": "request" | "response",
   "api_key": int, "api_version": int, "correlation_id": int,
   "client_id": "kafka-python"            (requests only),
   "frame_size": int                        (the leading size field),
   "value": {...decoded body, below...},
   "note": str}
Entry for an inner message set:
  {"file": "NAME.inner.bin", "kind": "inner_message_set",
   "api_key": null, "api_version": null, "correlation_id": null,
   "parent": "NAME.bin", "codec": "gzip" | "snappy" | "lz4",
   "compressed_hex": hex of the wrapper's value (the compressor output),
   "value": {"message_set_size", "partial_trailing_bytes", "messages"},
   "note": str}

"value" uses the Kafka 0.8.2 protocol guide's field names in snake_case, with
these conventions everywhere: an array of topics is "topics", a topic name is
"topic", an array of partitions is "partitions", a partition id is
"partition", an error is "error_code".  Per API (field order = wire order):
  produce req (0/v0):  required_acks, timeout, topics[topic,
                       partitions[partition, MESSAGE_SET]]
  produce resp:        topics[topic, partitions[partition, error_code, offset]]
  fetch req (1/v0):    replica_id, max_wait_time, min_bytes, topics[topic,
                       partitions[partition, fetch_offset, max_bytes]]
  fetch resp:          topics[topic, partitions[partition, error_code,
                       highwater_mark_offset, MESSAGE_SET]]
  offsets req (2/v0):  replica_id, topics[topic, partitions[partition, time,
                       max_number_of_offsets]]
  offsets resp:        topics[topic, partitions[partition, error_code,
                       offsets: [int64...]]]
  metadata req (3/v0): topics: [str...]
  metadata resp:       brokers[node_id, host, port], topics[error_code,
                       topic, partitions[error_code, partition, leader,
                       replicas: [int32...], isr: [int32...]]]
  offset commit req (8/v0): consumer_group, topics[topic, partitions[
                       partition, offset, metadata]]
  offset commit req (8/v1): consumer_group, consumer_group_generation_id,
                       consumer_id, topics[topic, partitions[partition,
                       offset, timestamp, metadata]]
  offset commit resp (v0, v1): topics[topic, partitions[partition,
                       error_code]]
  offset fetch req (9/v0, v1): consumer_group, topics[topic,
                       partitions: [int32...]]
  offset fetch resp (v0, v1): topics[topic, partitions[partition, offset,
                       metadata, error_code]]
  consumer metadata req (10/v0): consumer_group
  consumer metadata resp: error_code, coordinator_id, coordinator_host,
                       coordinator_port
  (strings are JSON strings; a null string would be JSON null.)

MESSAGE_SET stands for three keys in the partition object:
  "message_set_size": int32 on the wire (bytes that follow it, INCLUDING any
                      partial trailing bytes),
  "partial_trailing_bytes": number of bytes at the end of the set that do not
                      form a complete (offset, size, message) entry (0 if
                      none); they are not listed in "messages",
  "messages": [MESSAGE...] the complete entries, in wire order.
MESSAGE:
  {"offset": int64, "message_size": int32 (bytes after the size field),
   "crc": CRC32 as an UNSIGNED integer (0..2^32-1), "magic": 0,
   "attributes": int8, "codec": "none" | "gzip" | "snappy" | "lz4"
   (attributes & 7), "key_hex": hex string or null (null key),
   "value_hex": hex string or null (null value)}
  and for a wrapper (codec != "none") additionally:
  {"inner_file": name of the .inner.bin file,
   "inner_message_set_size": length of the decompressed inner set,
   "codec_info": {...what the compressor emitted, see codec_info() below...},
   "inner": [MESSAGE...] the decompressed inner messages (offsets as written
             inside the compressed set)}
"""

import argparse
import binascii
import contextlib
import filecmp
import gzip
import hashlib
import io
import json
import os
import shutil
import struct
import sys
import tempfile
import types

try:
    import kafka
    from kafka import codec as kcodec
    from kafka.protocol.api import RequestHeader
    from kafka.protocol.commit import (
        GroupCoordinatorRequest, GroupCoordinatorResponse,
        OffsetCommitRequest, OffsetCommitResponse,
        OffsetFetchRequest, OffsetFetchResponse)
    from kafka.protocol.fetch import FetchRequest, FetchResponse
    from kafka.protocol.message import Message, MessageSet, PartialMessage
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse
    from kafka.protocol.offset import OffsetRequest, OffsetResponse
    from kafka.protocol.parser import KafkaProtocol
    from kafka.protocol.produce import ProduceRequest, ProduceResponse
    from kafka.protocol.types import Int32
except ImportError as e:  # pragma: no cover
    sys.exit("kafka-python is missing (%s): apt-get install -y python3-kafka "
             "python3-snappy python3-lz4 python3-xxhash, and run with "
             "/usr/bin/python3" % e)

KAFKA_PYTHON_VERSION = "2.0.2"
CLIENT_ID = "kafka-python"

CODEC_IDS = {"none": 0, "gzip": Message.CODEC_GZIP,
             "snappy": Message.CODEC_SNAPPY, "lz4": Message.CODEC_LZ4}
CODEC_NAMES = {v: k for k, v in CODEC_IDS.items()}


def hx(b):
    return None if b is None else binascii.hexlify(b).decode("ascii")


# --------------------------------------------------------------------------
# Compression through kafka.codec
# --------------------------------------------------------------------------

@contextlib.contextmanager
def gzip_clock_pinned_to_zero():
    """Python's gzip writes MTIME = time.time(); kafka.codec.gzip_encode does
    not pass mtime=, so its output changes every second.  Pin the clock the
    gzip module sees (only that module's reference) to 0 meanwhile."""
    real = gzip.time
    gzip.time = types.SimpleNamespace(time=lambda: 0)
    try:
        yield
    finally:
        gzip.time = real


def compress(codec, data):
    if codec == "gzip":
        with gzip_clock_pinned_to_zero():
            out = kcodec.gzip_encode(data)
        assert out[4:8] == b"\0\0\0\0", "gzip MTIME not pinned"
        return out
    if codec == "snappy":
        return kcodec.snappy_encode(data, xerial_compatible=True,
                                    xerial_blocksize=32 * 1024)
    if codec == "lz4":
        return kcodec.lz4_encode_old_kafka(data)
    raise ValueError(codec)


def decompress(codec, data):
    if codec == "gzip":
        return kcodec.gzip_decode(data)
    if codec == "snappy":
        return kcodec.snappy_decode(data)
    if codec == "lz4":
        return kcodec.lz4_decode_old_kafka(data)
    raise ValueError(codec)


def _uvarint(b, pos):
    shift = result = 0
    while True:
        c = b[pos]
        pos += 1
        result |= (c & 0x7F) << shift
        if not c & 0x80:
            return result, pos
        shift += 7


def codec_info(codec, data):
    """Describe the container that kafka.codec emitted (parsed here only to
    report it; nothing is re-encoded)."""
    if codec == "gzip":
        id1, id2, cm, flg, mtime, xfl, os_ = struct.unpack("<BBBBIBB", data[:10])
        crc, isize = struct.unpack("<II", data[-8:])
        assert (id1, id2, cm) == (0x1F, 0x8B, 8)
        return {
            "header_hex": hx(data[:10]), "cm": cm, "flg": flg,
            "mtime": mtime, "xfl": xfl, "os": os_,
            "trailer_crc32": crc, "trailer_isize": isize,
            "note": "kafka.codec.gzip_encode = gzip.GzipFile(compresslevel=9)"
                    " over a BytesIO: no FNAME, XFL 2 (max compression), OS "
                    "255 (unknown); MTIME is wall-clock time in kafka-python, "
                    "pinned to 0 here for determinism",
        }
    if codec == "snappy":
        hdr = data[:16]
        magic = hdr[:8]
        version, compat = struct.unpack(">ii", hdr[8:16])
        pos, blocks = 16, []
        while pos < len(data):
            (n,) = struct.unpack(">i", data[pos:pos + 4])
            ulen, _ = _uvarint(data, pos + 4)
            blocks.append({"compressed_size": n, "uncompressed_size": ulen})
            pos += 4 + n
        assert pos == len(data)
        return {
            "xerial_header_hex": hx(hdr), "magic_hex": hx(magic),
            "version": version, "compatible_version": compat,
            "xerial_blocksize": 32 * 1024, "blocks": blocks,
            "note": "xerial framing: 0x82 'SNAPPY' 0x00, int32 BE version, "
                    "int32 BE min-compatible version, then per block int32 BE "
                    "length + raw snappy block (no snappy-framing CRCs)",
        }
    if codec == "lz4":
        import xxhash
        assert data[:4] == b"\x04\x22\x4d\x18"
        flg, bd = data[4], data[5]
        pos = 6
        content_size = None
        if flg & 0x08:
            content_size = struct.unpack("<Q", data[pos:pos + 8])[0]
            pos += 8
        if flg & 0x01:
            pos += 4
        hc = data[pos]
        hc_kafka08 = (xxhash.xxh32(data[0:pos]).intdigest() >> 8) & 0xFF
        hc_spec = (xxhash.xxh32(data[4:pos]).intdigest() >> 8) & 0xFF
        pos += 1
        blocks = []
        while True:
            (n,) = struct.unpack("<I", data[pos:pos + 4])
            pos += 4
            if n == 0:
                break
            size = n & 0x7FFFFFFF
            blocks.append({"size": size, "uncompressed": bool(n & 0x80000000)})
            pos += size
            if flg & 0x10:
                pos += 4
        content_checksum = None
        if flg & 0x04:
            content_checksum = struct.unpack("<I", data[pos:pos + 4])[0]
            pos += 4
        assert pos == len(data), "trailing bytes after LZ4 frame"
        assert hc == hc_kafka08, "not the Kafka 0.8 header checksum"
        return {
            "magic_hex": hx(data[:4]), "flg": flg, "bd": bd,
            "flg_bits": {"version": flg >> 6,
                         "block_independence": (flg >> 5) & 1,
                         "block_checksum": (flg >> 4) & 1,
                         "content_size": (flg >> 3) & 1,
                         "content_checksum": (flg >> 2) & 1,
                         "dict_id": flg & 1},
            "block_max_size": {4: 64 << 10, 5: 256 << 10, 6: 1 << 20,
                               7: 4 << 20}.get((bd >> 4) & 7),
            "content_size": content_size,
            "hc": hc, "hc_kafka08_over_magic_flg_bd": hc_kafka08,
            "hc_lz4_spec_over_flg_bd": hc_spec,
            "blocks": blocks, "end_mark_hex": "00000000",
            "content_checksum": content_checksum,
            "note": "lz4.frame.compress(block_linked=False) then "
                    "lz4_encode_old_kafka clears the content-size flag, drops "
                    "the 8-byte content size and rewrites HC as "
                    "(xxh32(magic+FLG+BD) >> 8) & 0xFF (the Kafka 0.8 bug)",
        }
    raise ValueError(codec)


# --------------------------------------------------------------------------
# Message sets
# --------------------------------------------------------------------------

class Msg(object):
    def __init__(self, offset, key, value):
        self.offset, self.key, self.value = offset, key, value


class Wrapper(object):
    """A compressed wrapper message (magic 0, key null) whose value is the
    compressed inner message set."""
    def __init__(self, offset, codec, inner):
        self.offset, self.codec, self.inner = offset, codec, inner


class MessageSetSpec(object):
    """items: Msg/Wrapper list.  partial: optional (Msg, keep) - the entry
    kafka-python encodes for Msg is appended but cut after `keep` bytes."""
    def __init__(self, items, partial=None):
        self.items, self.partial = items, partial


class Ctx(object):
    """Per-fixture state: inner message sets in wire order."""
    def __init__(self, name):
        self.name = name
        self.inners = []      # (inner_bytes, codec, compressed, messages_json)
        self.decode_index = 0

    def inner_name(self, k, total):
        if total == 1:
            return "%s.inner.bin" % self.name
        return "%s.inner.%d.bin" % (self.name, k)


def message_json(offset, mbytes, m):
    codec = CODEC_NAMES[m.attributes & Message.CODEC_MASK]
    return {"offset": offset, "message_size": len(mbytes),
            "crc": m.crc & 0xFFFFFFFF, "magic": m.magic,
            "attributes": m.attributes, "codec": codec,
            "key_hex": hx(m.key), "value_hex": hx(m.value)}


def encode_plain(msg):
    m = Message(msg.value, key=msg.key, magic=0, attributes=0)
    mb = m.encode()
    return mb, message_json(msg.offset, mb, m)


def encode_set(ctx, spec):
    """-> (set_bytes, json dict with message_set_size/partial/messages).
    Wrapper "inner_file" names are filled in later (need the total count)."""
    entries, msgs = [], []
    for it in spec.items:
        if isinstance(it, Msg):
            mb, js = encode_plain(it)
        else:
            inner_entries, inner_js = [], []
            for im in it.inner:
                imb, ijs = encode_plain(im)
                inner_entries.append((im.offset, imb))
                inner_js.append(ijs)
            inner_bytes = MessageSet.encode(inner_entries, prepend_size=False)
            compressed = compress(it.codec, inner_bytes)
            m = Message(compressed, key=None, magic=0,
                        attributes=CODEC_IDS[it.codec])
            mb = m.encode()
            js = message_json(it.offset, mb, m)
            js["inner_file"] = len(ctx.inners)          # index, named later
            js["inner_message_set_size"] = len(inner_bytes)
            js["codec_info"] = codec_info(it.codec, compressed)
            js["inner"] = inner_js
            ctx.inners.append((inner_bytes, it.codec, compressed, inner_js))
        entries.append((it.offset, mb))
        msgs.append(js)
    data = MessageSet.encode(entries, prepend_size=False)
    partial = 0
    if spec.partial is not None:
        pmsg, keep = spec.partial
        pm = Message(pmsg.value, key=pmsg.key, magic=0, attributes=0)
        full = MessageSet.encode([(pmsg.offset, pm.encode())],
                                 prepend_size=False)
        assert 0 < keep < len(full)
        data += full[:keep]
        partial = keep
    return data, {"message_set_size": len(data),
                  "partial_trailing_bytes": partial, "messages": msgs}


def decode_set(ctx, data):
    """Decode set bytes with kafka-python into the same JSON shape."""
    items = MessageSet.decode(data, bytes_to_read=len(data))
    msgs, used, partial = [], 0, 0
    for item in items:
        if isinstance(item[2], PartialMessage):
            partial = len(data) - used
            continue
        offset, size, m = item
        assert m.validate_crc(), "bad CRC at offset %d" % offset
        mbytes = m._encode_self(recalc_crc=False)
        assert len(mbytes) == size
        js = message_json(offset, mbytes, m)
        if m.is_compressed():
            codec = js["codec"]
            inner_bytes = decompress(codec, m.value)
            k = ctx.decode_index
            ctx.decode_index += 1
            assert ctx.inners[k][0] == inner_bytes, "inner set mismatch"
            js["inner_file"] = k
            js["inner_message_set_size"] = len(inner_bytes)
            js["codec_info"] = codec_info(codec, m.value)
            inner = decode_set(ctx, inner_bytes)
            assert inner["partial_trailing_bytes"] == 0
            js["inner"] = inner["messages"]
            # kafka-python's own wrapper path must agree as well
            via_msg = [(o, s) for o, s, _ in m.decompress()]
            assert via_msg == [(x["offset"], x["message_size"])
                               for x in js["inner"]]
        used += 12 + size
        msgs.append(js)
    if partial == 0:
        assert used == len(data)
    return {"message_set_size": len(data), "partial_trailing_bytes": partial,
            "messages": msgs}


# --------------------------------------------------------------------------
# Schemas: guide names, positionally matching kafka-python's Schema fields.
# A field is "name" (scalar or array of scalars), ("name", [fields]) (array of
# structs) or ("name", SET) (a message set carried as Bytes).
# --------------------------------------------------------------------------

SET = "MESSAGE_SET"

SCHEMAS = {
    ("request", 0, 0): ["required_acks", "timeout", ("topics", [
        "topic", ("partitions", ["partition", ("messages", SET)])])],
    ("response", 0, 0): [("topics", [
        "topic", ("partitions", ["partition", "error_code", "offset"])])],
    ("request", 1, 0): ["replica_id", "max_wait_time", "min_bytes", ("topics", [
        "topic", ("partitions", ["partition", "fetch_offset", "max_bytes"])])],
    ("response", 1, 0): [("topics", [
        "topic", ("partitions", ["partition", "error_code",
                                 "highwater_mark_offset", ("messages", SET)])])],
    ("request", 2, 0): ["replica_id", ("topics", [
        "topic", ("partitions", ["partition", "time",
                                 "max_number_of_offsets"])])],
    ("response", 2, 0): [("topics", [
        "topic", ("partitions", ["partition", "error_code", "offsets"])])],
    ("request", 3, 0): ["topics"],
    ("response", 3, 0): [("brokers", ["node_id", "host", "port"]), ("topics", [
        "error_code", "topic", ("partitions", [
            "error_code", "partition", "leader", "replicas", "isr"])])],
    ("request", 8, 0): ["consumer_group", ("topics", [
        "topic", ("partitions", ["partition", "offset", "metadata"])])],
    ("request", 8, 1): ["consumer_group", "consumer_group_generation_id",
                        "consumer_id", ("topics", [
                            "topic", ("partitions", [
                                "partition", "offset", "timestamp",
                                "metadata"])])],
    ("response", 8, 0): [("topics", [
        "topic", ("partitions", ["partition", "error_code"])])],
    ("request", 9, 0): ["consumer_group", ("topics", ["topic", "partitions"])],
    ("response", 9, 0): [("topics", [
        "topic", ("partitions", ["partition", "offset", "metadata",
                                 "error_code"])])],
    ("request", 10, 0): ["consumer_group"],
    ("response", 10, 0): ["error_code", "coordinator_id", "coordinator_host",
                          "coordinator_port"],
}
SCHEMAS[("response", 8, 1)] = SCHEMAS[("response", 8, 0)]
SCHEMAS[("request", 9, 1)] = SCHEMAS[("request", 9, 0)]
SCHEMAS[("response", 9, 1)] = SCHEMAS[("response", 9, 0)]

CLASSES = {
    ("request", 0, 0): ProduceRequest[0], ("response", 0, 0): ProduceResponse[0],
    ("request", 1, 0): FetchRequest[0], ("response", 1, 0): FetchResponse[0],
    ("request", 2, 0): OffsetRequest[0], ("response", 2, 0): OffsetResponse[0],
    ("request", 3, 0): MetadataRequest[0],
    ("response", 3, 0): MetadataResponse[0],
    ("request", 8, 0): OffsetCommitRequest[0],
    ("request", 8, 1): OffsetCommitRequest[1],
    ("response", 8, 0): OffsetCommitResponse[0],
    ("response", 8, 1): OffsetCommitResponse[1],
    ("request", 9, 0): OffsetFetchRequest[0],
    ("request", 9, 1): OffsetFetchRequest[1],
    ("response", 9, 0): OffsetFetchResponse[0],
    ("response", 9, 1): OffsetFetchResponse[1],
    ("request", 10, 0): GroupCoordinatorRequest[0],
    ("response", 10, 0): GroupCoordinatorResponse[0],
}


def _fname(f):
    return f if isinstance(f, str) else f[0]


def to_kp(ctx, fields, obj):
    """Spec (guide names, MessageSetSpec leaves) -> (kafka-python positional
    tuple, manifest JSON)."""
    tup, js = [], {}
    for f in fields:
        if isinstance(f, str):
            tup.append(obj[f])
            js[f] = obj[f]
        elif f[1] == SET:
            data, sjs = encode_set(ctx, obj[f[0]])
            tup.append(data)
            js.update(sjs)
        else:
            subs = [to_kp(ctx, f[1], x) for x in obj[f[0]]]
            tup.append([t for t, _ in subs])
            js[f[0]] = [j for _, j in subs]
    assert set(obj) == set(_fname(f) for f in fields), (fields, obj)
    return tuple(tup), js


def from_kp(ctx, fields, values):
    """kafka-python decoded positional values -> manifest JSON."""
    js = {}
    assert len(values) == len(fields)
    for f, v in zip(fields, values):
        if isinstance(f, str):
            js[f] = v
        elif f[1] == SET:
            js.update(decode_set(ctx, v))
        else:
            js[f[0]] = [from_kp(ctx, f[1], x) for x in v]
    return js


def name_inner_files(ctx, value):
    total = len(ctx.inners)

    def walk(o):
        if isinstance(o, dict):
            if "inner_file" in o and isinstance(o["inner_file"], int):
                o["inner_file"] = ctx.inner_name(o["inner_file"], total)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(value)


# --------------------------------------------------------------------------
# Frames
# --------------------------------------------------------------------------

def encode_frame(kind, api_key, version, cid, ctx, spec):
    fields = SCHEMAS[(kind, api_key, version)]
    cls = CLASSES[(kind, api_key, version)]
    assert (cls.API_KEY, cls.API_VERSION) == (api_key, version)
    tup, js = to_kp(ctx, fields, spec)
    obj = cls(*tup)
    if kind == "request":
        proto = KafkaProtocol(client_id=CLIENT_ID)
        proto.send_request(obj, correlation_id=cid)
        frame = proto.send_bytes()
    else:
        body = Int32.encode(cid) + obj.encode()
        frame = Int32.encode(len(body)) + body
    return frame, js


def decode_frame(kind, api_key, version, ctx, frame):
    buf = io.BytesIO(frame)
    size = Int32.decode(buf)
    assert size == len(frame) - 4, "frame size field"
    cls = CLASSES[(kind, api_key, version)]
    if kind == "request":
        # RequestHeader.decode() is unusable in kafka-python 2.0.2 (its
        # __init__ takes a request object), so decode with its SCHEMA.
        hkey, hver, cid, client_id = RequestHeader.SCHEMA.decode(buf)
        assert (hkey, hver) == (api_key, version)
        assert client_id == CLIENT_ID
    else:
        cid = Int32.decode(buf)
    obj = cls.decode(buf)
    assert buf.read() == b"", "trailing bytes after body"
    values = [obj.get_item(n) for n in cls.SCHEMA.names]
    return cid, from_kp(ctx, SCHEMAS[(kind, api_key, version)], values)


# --------------------------------------------------------------------------
# Fixture data
# --------------------------------------------------------------------------

def filler(n, seed):
    """n deterministic pseudo-random (incompressible) bytes."""
    out, block = b"", seed.encode()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return out[:n]


def text_value(i, size):
    base = ("record-%06d|" % i).encode() + b"the quick brown fox jumps over "
    return (base * (size // len(base) + 1))[:size]


def entry_size(key, value):
    """bytes of one magic-0 message set entry: offset 8, size 4, crc 4,
    magic 1, attributes 1, key 4+len, value 4+len."""
    return 26 + len(key or b"") + len(value or b"")


def three_inner(first):
    return [Msg(first, b"k0", b"value-0"),
            Msg(first + 1, None, b"value-1 (null key)"),
            Msg(first + 2, b"k2", b"value-2")]


def fixtures():
    """(name, kind, api_key, api_version, correlation_id, spec, note)"""
    F = []

    def add(name, kind, key, ver, cid, spec, note):
        F.append((name, kind, key, ver, cid, spec, note))

    # ---------------- produce v0 requests -------------------------------
    add("produce_v0_acks1.req", "request", 0, 0, 1, {
        "required_acks": 1, "timeout": 1000, "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "messages": MessageSetSpec([
                    Msg(0, b"key-0", b"value-0"),
                    Msg(1, None, None),
                    Msg(2, b"", b"empty key"),
                ])},
                {"partition": 1, "messages": MessageSetSpec([
                    Msg(0, None, b"null key, non-null value"),
                    Msg(1, b"key, null value", None),
                    Msg(2, b"\x00\xff\x80binary", b""),
                ])},
            ]},
            {"topic": "topic-b", "partitions": [
                {"partition": 7, "messages": MessageSetSpec([
                    Msg(0, b"k", b"v")])},
            ]},
        ]},
        "acks 1, uncompressed; topic-a/0 offset 1 has null key AND null value "
        "(CRC a7ec6803), offset 2 an empty (non-null) key; topic-a/1 has a "
        "null key, a null value, an empty value; offsets 0,1,2 as a producer "
        "writes them")
    add("produce_v0_acks_all.req", "request", 0, 0, 2, {
        "required_acks": -1, "timeout": 30000, "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 2, "messages": MessageSetSpec([
                    Msg(0, b"key", b"acks=-1")])}]}]},
        "acks -1 (all in-sync replicas), one message")
    add("produce_v0_acks0.req", "request", 0, 0, 3, {
        "required_acks": 0, "timeout": 0, "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "messages": MessageSetSpec([
                    Msg(0, None, b"fire and forget")])}]}]},
        "acks 0: the broker sends no response (kafka-python's "
        "ProduceRequest.expect_response() is False)")
    for cid, codec in ((4, "gzip"), (5, "snappy"), (6, "lz4")):
        add("produce_v0_%s.req" % codec, "request", 0, 0, cid, {
            "required_acks": 1, "timeout": 1000, "topics": [
                {"topic": "topic-a", "partitions": [
                    {"partition": 0, "messages": MessageSetSpec([
                        Wrapper(2, codec, three_inner(0))])}]}]},
            "one %s wrapper (key null, wrapper offset 2 = last inner offset, "
            "as Kafka's producer writes it) holding inner offsets 0,1,2; "
            "the inner set is in the .inner.bin file" % codec)
    add("produce_v0_snappy_two_blocks.req", "request", 0, 0, 7, {
        "required_acks": 1, "timeout": 1000, "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "messages": MessageSetSpec([
                    Wrapper(39, "snappy", [
                        Msg(i, ("key-%02d" % i).encode(), text_value(i, 1000))
                        for i in range(40)])])}]}]},
        "snappy xerial with an inner set larger than the 32 KiB xerial "
        "block size, so the stream has 2 blocks; wrapper offset 39 holds "
        "inner 0..39")
    add("produce_v0_lz4_two_blocks.req", "request", 0, 0, 8, {
        "required_acks": 1, "timeout": 1000, "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "messages": MessageSetSpec([
                    Wrapper(69, "lz4", [
                        Msg(i, ("key-%02d" % i).encode(), text_value(i, 1000))
                        for i in range(70)])])}]}]},
        "lz4 old-kafka frame with an inner set larger than the 64 KiB LZ4 "
        "block maximum, so the frame has 2 blocks; wrapper offset 69 holds "
        "inner 0..69")
    add("produce_v0_lz4_incompressible.req", "request", 0, 0, 9, {
        "required_acks": 1, "timeout": 1000, "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "messages": MessageSetSpec([
                    Wrapper(0, "lz4", [
                        Msg(0, None, filler(4096, "lz4-incompressible"))])])}]}]},
        "lz4 with incompressible (sha256-chain) data: liblz4 stores the block "
        "uncompressed (high bit of the block size set, see codec_info); one "
        "inner message, wrapper offset 0")

    # ---------------- produce v0 response -------------------------------
    add("produce_v0.resp", "response", 0, 0, 1, {"topics": [
        {"topic": "topic-a", "partitions": [
            {"partition": 0, "error_code": 0, "offset": 42},
            {"partition": 1, "error_code": 0, "offset": 4294967296},
            {"partition": 2, "error_code": 6, "offset": -1},
        ]},
        {"topic": "topic-b", "partitions": [
            {"partition": 7, "error_code": 3, "offset": -1}]},
    ]}, "offsets are base offsets; error 6 NotLeaderForPartition and error 3 "
        "UnknownTopicOrPartition with offset -1; partition 1 offset > 2^32")

    # ---------------- fetch v0 -------------------------------------------
    add("fetch_v0.req", "request", 1, 0, 10, {
        "replica_id": -1, "max_wait_time": 100, "min_bytes": 1, "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "fetch_offset": 0, "max_bytes": 1048576},
                {"partition": 1, "fetch_offset": 12345678901,
                 "max_bytes": 65536},
            ]},
            {"topic": "topic-b", "partitions": [
                {"partition": 7, "fetch_offset": 5, "max_bytes": 1024}]},
        ]},
        "consumer fetch (replica_id -1), three partitions over two topics")
    add("fetch_v0_plain.resp", "response", 1, 0, 10, {"topics": [
        {"topic": "topic-a", "partitions": [
            {"partition": 0, "error_code": 0, "highwater_mark_offset": 3,
             "messages": MessageSetSpec([
                 Msg(0, b"key-0", b"value-0"),
                 Msg(1, None, None),
                 Msg(2, b"", b"empty key")])},
            {"partition": 1, "error_code": 0,
             "highwater_mark_offset": 12345678901,
             "messages": MessageSetSpec([])},
        ]},
        {"topic": "topic-b", "partitions": [
            {"partition": 7, "error_code": 0, "highwater_mark_offset": 7,
             "messages": MessageSetSpec([Msg(5, b"k", b"v"),
                                         Msg(6, None, b"six")])}]},
    ]}, "uncompressed; topic-a/1 has an empty set (caught up)")
    for cid, codec in ((11, "gzip"), (12, "snappy"), (13, "lz4")):
        add("fetch_v0_%s.resp" % codec, "response", 1, 0, cid, {"topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "error_code": 0, "highwater_mark_offset": 6,
                 "messages": MessageSetSpec([
                     Wrapper(5, codec, three_inner(3))])}]}]},
            "one %s wrapper at offset 5 holding inner messages with absolute "
            "offsets 3,4,5 (as a 0.8.2 broker stores them)" % codec)
    add("fetch_v0_mixed_codecs.resp", "response", 1, 0, 14, {"topics": [
        {"topic": "topic-a", "partitions": [
            {"partition": 0, "error_code": 0, "highwater_mark_offset": 10,
             "messages": MessageSetSpec([
                 Wrapper(2, "gzip", three_inner(0)),
                 Wrapper(5, "snappy", three_inner(3)),
                 Msg(6, b"plain", b"uncompressed between wrappers"),
                 Wrapper(9, "lz4", three_inner(7))])}]}]},
        "gzip wrapper (inner 0-2), snappy wrapper (3-5), a plain message at "
        "6, lz4 wrapper (7-9) in one set; inner sets are .inner.0/1/2.bin")
    add("fetch_v0_partial.resp", "response", 1, 0, 15, {"topics": [
        {"topic": "topic-a", "partitions": [
            {"partition": 0, "error_code": 0, "highwater_mark_offset": 100,
             "messages": MessageSetSpec(
                 [Msg(0, b"key-0", b"value-0"), Msg(1, b"key-1", b"value-1")],
                 partial=(Msg(2, b"key-2", text_value(2, 200)), 40))},
            {"partition": 1, "error_code": 0, "highwater_mark_offset": 100,
             "messages": MessageSetSpec(
                 [], partial=(Msg(0, b"big", text_value(0, 5000)), 1024))},
        ]}]},
        "max_bytes cut: partition 0 has 2 complete messages then the first 40 "
        "bytes of the %d-byte entry for offset 2 (the 12-byte offset+size and "
        "28 bytes of its %d-byte message); partition 1 has ONLY the first "
        "1024 bytes of a %d-byte entry (a message larger than max_bytes). "
        "message_set_size counts the cut bytes. kafka-python cannot encode a "
        "partial message: the cut entries are kafka-python MessageSet bytes "
        "truncated by this script" % (
            entry_size(b"key-2", text_value(2, 200)),
            entry_size(b"key-2", text_value(2, 200)) - 12,
            entry_size(b"big", text_value(0, 5000))))
    add("fetch_v0_partial_header.resp", "response", 1, 0, 16, {"topics": [
        {"topic": "topic-a", "partitions": [
            {"partition": 0, "error_code": 0, "highwater_mark_offset": 100,
             "messages": MessageSetSpec(
                 [Msg(0, b"key-0", b"value-0")],
                 partial=(Msg(1, b"key-1", b"value-1"), 7))}]}]},
        "cut inside the 12-byte log overhead: one complete message, then 7 "
        "bytes (the first 7 of the next entry's int64 offset); made by "
        "truncating kafka-python MessageSet bytes")
    add("fetch_v0_error.resp", "response", 1, 0, 17, {"topics": [
        {"topic": "topic-a", "partitions": [
            {"partition": 0, "error_code": 1, "highwater_mark_offset": -1,
             "messages": MessageSetSpec([])},
            {"partition": 1, "error_code": 6, "highwater_mark_offset": -1,
             "messages": MessageSetSpec([])},
            {"partition": 2, "error_code": 0, "highwater_mark_offset": 1,
             "messages": MessageSetSpec([Msg(0, None, b"ok")])},
        ]},
        {"topic": "no-such-topic", "partitions": [
            {"partition": 0, "error_code": 3, "highwater_mark_offset": -1,
             "messages": MessageSetSpec([])}]},
    ]}, "error partitions with high watermark -1 and an empty set: 1 "
        "OffsetOutOfRange, 6 NotLeaderForPartition, 3 UnknownTopicOrPartition"
        "; topic-a/2 is a healthy partition in the same response")

    # ---------------- offsets (ListOffsets) v0 --------------------------
    add("offsets_v0.req", "request", 2, 0, 20, {
        "replica_id": -1, "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "time": -1, "max_number_of_offsets": 1},
                {"partition": 1, "time": -2, "max_number_of_offsets": 1},
                {"partition": 2, "time": 1420070400000,
                 "max_number_of_offsets": 10},
            ]}]},
        "time -1 latest, -2 earliest, 1420070400000 ms (2015-01-01T00:00Z) "
        "with max 10 offsets")
    add("offsets_v0.resp", "response", 2, 0, 20, {"topics": [
        {"topic": "topic-a", "partitions": [
            {"partition": 0, "error_code": 0, "offsets": [6, 0]},
            {"partition": 1, "error_code": 0, "offsets": [0]},
            {"partition": 2, "error_code": 6, "offsets": []},
        ]}]},
        "offsets [6, 0] (newest first), [0], and an empty list with error 6 "
        "NotLeaderForPartition")

    # ---------------- metadata v0 ----------------------------------------
    add("metadata_v0_all_topics.req", "request", 3, 0, 30, {"topics": []},
        "empty topic list = all topics in 0.8.2 (encoded as count 0; note "
        "kafka-python's MetadataRequest[0].ALL_TOPICS is None, which it "
        "would encode as a null array, count -1)")
    add("metadata_v0_two_topics.req", "request", 3, 0, 31,
        {"topics": ["topic-a", "topic-b"]}, "two named topics")
    add("metadata_v0.resp", "response", 3, 0, 31, {
        "brokers": [
            {"node_id": 0, "host": "broker0.example.com", "port": 9092},
            {"node_id": 1, "host": "broker1.example.com", "port": 9093},
            {"node_id": 2, "host": "10.0.0.3", "port": 19092},
        ],
        "topics": [
            {"error_code": 0, "topic": "topic-a", "partitions": [
                {"error_code": 0, "partition": 0, "leader": 0,
                 "replicas": [0, 1, 2], "isr": [0, 1, 2]},
                {"error_code": 9, "partition": 1, "leader": 1,
                 "replicas": [1, 2, 0], "isr": [1]},
                {"error_code": 5, "partition": 2, "leader": -1,
                 "replicas": [], "isr": []},
                {"error_code": 9, "partition": 3, "leader": -1,
                 "replicas": [], "isr": []},
            ]},
            {"error_code": 5, "topic": "topic-b", "partitions": []},
            {"error_code": 3, "topic": "no-such-topic", "partitions": []},
        ]},
        "3 brokers; topic-a: partition 0 healthy, 1 error 9 "
        "ReplicaNotAvailable with a leader, 2 error 5 LeaderNotAvailable and "
        "3 error 9, both leader -1 with empty replicas/isr; topic-b error 5 "
        "(being auto-created) and no-such-topic error 3, both with no "
        "partitions")

    # ---------------- offset commit v0 / v1 -----------------------------
    add("offset_commit_v0.req", "request", 8, 0, 40, {
        "consumer_group": "group-1", "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "offset": 10, "metadata": "meta-0"},
                {"partition": 1, "offset": 0, "metadata": ""},
            ]},
            {"topic": "topic-b", "partitions": [
                {"partition": 7, "offset": 4294967296, "metadata": "m"}]},
        ]},
        "ZooKeeper-backed commit (v0): no generation/consumer id/timestamp")
    add("offset_commit_v0.resp", "response", 8, 0, 40, {"topics": [
        {"topic": "topic-a", "partitions": [
            {"partition": 0, "error_code": 0},
            {"partition": 1, "error_code": 12}]},
        {"topic": "topic-b", "partitions": [
            {"partition": 7, "error_code": 3}]},
    ]}, "errors 0, 12 OffsetMetadataTooLarge, 3 UnknownTopicOrPartition")
    add("offset_commit_v1.req", "request", 8, 1, 41, {
        "consumer_group": "group-1", "consumer_group_generation_id": 3,
        "consumer_id": "consumer-1-6f1c2a7e", "topics": [
            {"topic": "topic-a", "partitions": [
                {"partition": 0, "offset": 10, "timestamp": -1,
                 "metadata": ""},
                {"partition": 1, "offset": 20, "timestamp": 1420070400000,
                 "metadata": "host=a"},
            ]}]},
        "Kafka-backed commit (v1): generation 3, consumer id, per-partition "
        "timestamp -1 (broker fills in now) and a real millisecond time")
    add("offset_commit_v1.resp", "response", 8, 1, 41, {"topics": [
        {"topic": "topic-a", "partitions": [
            {"partition": 0, "error_code": 0},
            {"partition": 1, "error_code": 16}]},
    ]}, "errors 0 and 16 NotCoordinatorForConsumer")

    # ---------------- offset fetch v0 / v1 ------------------------------
    for ver, cid, group in ((0, 50, "group-zk"), (1, 51, "group-1")):
        add("offset_fetch_v%d.req" % ver, "request", 9, ver, cid, {
            "consumer_group": group, "topics": [
                {"topic": "topic-a", "partitions": [0, 1, 2]},
                {"topic": "topic-b", "partitions": [7]}]},
            "v%d (%s-backed offsets)" % (ver, "ZooKeeper" if ver == 0
                                         else "Kafka"))
        add("offset_fetch_v%d.resp" % ver, "response", 9, ver, cid, {
            "topics": [
                {"topic": "topic-a", "partitions": [
                    {"partition": 0, "offset": 10, "metadata": "meta-0",
                     "error_code": 0},
                    {"partition": 1, "offset": -1, "metadata": "",
                     "error_code": 3},
                    {"partition": 2, "offset": 4294967296,
                     "metadata": "host=a", "error_code": 0},
                ]},
                {"topic": "topic-b", "partitions": [
                    {"partition": 7, "offset": 0, "metadata": "",
                     "error_code": 0}]},
            ]},
            "partition 1: error 3 UnknownTopicOrPartition (no offset stored) "
            "with offset -1 and empty metadata; others carry metadata strings")

    # ---------------- consumer metadata (GroupCoordinator) v0 -----------
    add("consumer_metadata_v0.req", "request", 10, 0, 60,
        {"consumer_group": "group-1"},
        "ConsumerMetadataRequest (kafka-python: GroupCoordinatorRequest[0])")
    add("consumer_metadata_v0.resp", "response", 10, 0, 60, {
        "error_code": 0, "coordinator_id": 2,
        "coordinator_host": "broker2.example.com", "coordinator_port": 9092},
        "coordinator found")
    add("consumer_metadata_v0_unavailable.resp", "response", 10, 0, 61, {
        "error_code": 15, "coordinator_id": -1, "coordinator_host": "",
        "coordinator_port": -1},
        "error 15 ConsumerCoordinatorNotAvailable: id -1, host \"\", port -1")
    return F


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def sanity_checks():
    m = Message(None, key=None, magic=0, attributes=0)
    b = m.encode()
    assert b[:4] == bytes.fromhex("a7ec6803"), b.hex()
    assert b == bytes.fromhex("a7ec68030000ffffffffffffffff"), b.hex()


def generate(outdir):
    sanity_checks()
    os.makedirs(outdir, exist_ok=True)
    entries = []
    names = set()
    for name, kind, api_key, ver, cid, spec, note in fixtures():
        assert name not in names, name
        names.add(name)
        ctx = Ctx(name)
        frame, value = encode_frame(kind, api_key, ver, cid, ctx, spec)
        # decode back with kafka-python and require identical content
        dctx = Ctx(name)
        dctx.inners = ctx.inners
        dcid, decoded = decode_frame(kind, api_key, ver, dctx, frame)
        assert dcid == cid
        assert dctx.decode_index == len(ctx.inners)
        assert decoded == value, "%s: decoded content differs:\n%s\n%s" % (
            name, json.dumps(decoded), json.dumps(value))
        name_inner_files(ctx, value)
        fname = name + ".bin"
        with open(os.path.join(outdir, fname), "wb") as f:
            f.write(frame)
        entry = {"file": fname, "kind": kind, "api_key": api_key,
                 "api_version": ver, "correlation_id": cid}
        if kind == "request":
            entry["client_id"] = CLIENT_ID
        entry["frame_size"] = len(frame) - 4
        entry["value"] = value
        entry["note"] = note
        entries.append(entry)

        total = len(ctx.inners)
        for k, (inner_bytes, codec, compressed, inner_js) in enumerate(
                ctx.inners):
            iname = ctx.inner_name(k, total)
            with open(os.path.join(outdir, iname), "wb") as f:
                f.write(inner_bytes)
            entries.append({
                "file": iname, "kind": "inner_message_set", "api_key": None,
                "api_version": None, "correlation_id": None,
                "parent": fname, "codec": codec,
                "compressed_hex": hx(compressed),
                "value": {"message_set_size": len(inner_bytes),
                          "partial_trailing_bytes": 0,
                          "messages": inner_js},
                "note": "uncompressed inner message set (no size prefix) of "
                        "wrapper #%d in %s: the exact input that kafka.codec "
                        "compressed into compressed_hex" % (k, fname),
            })
    entries.sort(key=lambda e: e["file"])
    manifest_path = os.path.join(outdir, "manifest.json")
    # drop files that an earlier run generated but this one does not
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            try:
                old = json.load(f)
            except ValueError:
                old = []
        keep = set(e["file"] for e in entries)
        for e in old:
            fn = e.get("file") if isinstance(e, dict) else None
            if (fn and fn not in keep and os.path.basename(fn) == fn
                    and os.path.exists(os.path.join(outdir, fn))):
                os.remove(os.path.join(outdir, fn))
    with open(manifest_path, "w") as f:
        json.dump(entries, f, indent=1, sort_keys=False)
        f.write("\n")
    return [e["file"] for e in entries] + ["manifest.json"]


def versions():
    import lz4
    import zlib
    return "kafka-python %s, zlib %s, lz4 %s (liblz4 %s)" % (
        kafka.__version__, zlib.ZLIB_RUNTIME_VERSION,
        getattr(lz4, "__version__", "?"), lz4.library_version_string())


def check(target):
    tmp = tempfile.mkdtemp(prefix="kafka_python_fixtures.")
    try:
        files = generate(tmp)
        bad = []
        for fn in files:
            p = os.path.join(target, fn)
            if not os.path.exists(p):
                bad.append("missing: %s" % fn)
            elif not filecmp.cmp(p, os.path.join(tmp, fn), shallow=False):
                bad.append("differs: %s" % fn)
        if os.path.isdir(target):
            for fn in sorted(os.listdir(target)):
                if fn not in files:
                    bad.append("not generated (stale): %s" % fn)
        if bad:
            for b in bad:
                print(b, file=sys.stderr)
            print("%d of %d files do not match a fresh run (%s); regenerate "
                  "with: /usr/bin/python3 scripts/kafka_python_fixtures.py %s"
                  % (len(bad), len(files), versions(), target),
                  file=sys.stderr)
            return 1
        print("ok: %d files in %s match a fresh run" % (len(files), target))
        return 0
    finally:
        shutil.rmtree(tmp)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", help="directory to write into")
    ap.add_argument("--check", metavar="DIR",
                    help="regenerate into a temp dir and compare with DIR")
    args = ap.parse_args(argv)
    if kafka.__version__ != KAFKA_PYTHON_VERSION:
        print("warning: kafka-python %s, fixtures were made with %s"
              % (kafka.__version__, KAFKA_PYTHON_VERSION), file=sys.stderr)
    if args.check:
        if args.outdir:
            ap.error("give either OUTDIR or --check DIR")
        return check(args.check)
    if not args.outdir:
        ap.error("OUTDIR is required")
    files = generate(args.outdir)
    print("wrote %d files to %s (%s)" % (len(files), args.outdir, versions()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
