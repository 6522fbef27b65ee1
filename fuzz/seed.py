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
* split_frame: selector byte 0xff (max frame 4080 bytes, chunks of 3) + a request frame followed
  by its response frame.

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


def main():
    out_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "fuzz" / "corpus"
    files = []
    for folder in sorted(d for d in DATA.iterdir() if d.is_dir()):
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
                add("message_set_wrapped", f"{name}.set{i}", bytes([i % 3]) + s)
                add("decompress", f"{name}.set{i}.none", b"\x00" + s)
                for j, (codec, value) in enumerate(wrapper_values(s)):
                    add("decompress", f"{name}.set{i}.wrapper{j}", bytes([codec]) + value)
    for stem, pair in frames.items():
        add("split_frame", stem, b"\xff" + pair.get("req", b"") + pair.get("resp", b""))

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
