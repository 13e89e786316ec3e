"""Protocol fuzzing's pure parts: mutated CQL v4 request frames and a reader of the answers.

Sans-I/O and driven by a `random.Random` (hypothesis hands in its own, so cases shrink; the soak
run a seeded one, so a case replays from its seed). Frames start from valid request bodies of
every opcode (real statement texts, prepared ids the server knows, query parameters with every
flag) and are then damaged: flipped bits, cuts, insertions, extreme lengths inside the body, bad
versions, flag bits, compression, stream ids and header lengths.

A frame whose header length matches its body keeps the connection's framing intact
(`Fuzzed.framed`); the others leave the server waiting for bytes or reading garbage as a header.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import cramjam
import lz4.block

HEADER = struct.Struct(">BBhBi")
STARTUP, OPTIONS, QUERY, PREPARE, EXECUTE, REGISTER, BATCH, AUTH_RESPONSE = 1, 5, 7, 9, 10, 11, 13, 15
CREDENTIALS = 4
REQUEST_OPCODES = (STARTUP, CREDENTIALS, OPTIONS, QUERY, PREPARE, EXECUTE, REGISTER, BATCH, AUTH_RESPONSE)
RESPONSE_OPCODES = (0x00, 0x02, 0x03, 0x06, 0x08, 0x0C, 0x0E, 0x10)
ERROR, READY, AUTHENTICATE, SUPPORTED, AUTH_SUCCESS = 0x00, 0x02, 0x03, 0x06, 0x10
SERVER_ERROR = 0x0000
SENTINEL_STREAM = 32767
"""The stream of the OPTIONS frame that marks the end of a case; fuzzed frames never use it."""
FLAG_COMPRESSION = 0x01
CREDENTIALS_TEXT = b"\x00cassandra\x00cassandra"
STATEMENTS = (
    "SELECT key, release_version FROM system.local",
    "SELECT * FROM system.peers",
    "SELECT k, v, m FROM fuzz.t WHERE k = ?",
    "INSERT INTO fuzz.t (k, v, m) VALUES (?, ?, ?)",
    "UPDATE fuzz.t SET v = ? WHERE k = ? IF v = ?",
    "SELECT * FROM fuzz.t WHERE token(k) > ? LIMIT 5",
    "USE fuzz",
    "SELECT * FROM system_schema.tables WHERE keyspace_name = 'fuzz'",
    "INSERT INTO fuzz.w (k, a, b, c, d, e, f, g, h, i, j, l, n, o, p, q, r, s, t, u, x, y, z) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "SELECT * FROM fuzz.w WHERE k = ? AND a = ? AND b > ?",
    "UPDATE fuzz.t SET m = m + ? WHERE k = ?",
)
SCHEMA = (
    "CREATE KEYSPACE IF NOT EXISTS fuzz WITH replication = "
    "{'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TABLE IF NOT EXISTS fuzz.t (k int PRIMARY KEY, v text, m map<text, frozen<list<int>>>)",
    "CREATE TYPE IF NOT EXISTS fuzz.pt (x int, y text)",
    "CREATE TABLE IF NOT EXISTS fuzz.w (k blob, a varint, b decimal, c duration, d inet, e date, f time, "
    "g timestamp, h uuid, i timeuuid, j boolean, l tinyint, n smallint, o float, p double, q ascii, "
    "r frozen<tuple<int, text, list<bigint>>>, s set<frozen<map<int, text>>>, t frozen<pt>, u text, "
    "x bigint, y list<varint>, z map<timestamp, decimal>, PRIMARY KEY (k, a, b))",
)
"""What the node under fuzzing must hold for the statements above to be valid."""
EXTREMES = (
    b"\xff\xff\xff\xff",
    b"\x7f\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\xff\xff",
    b"\x7f\xff",
    b"\x00\x00",
)


def _short(n: int) -> bytes:
    return struct.pack(">H", n)


def _string(text: str) -> bytes:
    data = text.encode()
    return _short(len(data)) + data


def _long_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">i", len(data)) + data


def _bytes(data: bytes | None) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def _string_map(items: dict[str, str]) -> bytes:
    return _short(len(items)) + b"".join(_string(k) + _string(v) for k, v in items.items())


def startup_body(compression: str | None = None) -> bytes:
    options = {"CQL_VERSION": "3.0.0"}
    if compression:
        options["COMPRESSION"] = compression
    return _string_map(options)


def frame(opcode: int, body: bytes, stream: int = 0, flags: int = 0, version: int = 4) -> bytes:
    return HEADER.pack(version, flags, stream, opcode, len(body)) + body


_TYPED_VALUES = (
    struct.pack(">q", -(2**63)),
    b"\x80" + b"\x00" * 40,  # a varint far beyond bigint
    struct.pack(">i", -(2**31)) + b"\x01",  # decimal: extreme scale
    struct.pack(">i", 2**31 - 1) + b"\xff" * 20,
    struct.pack(">i", -2_000_000) + b"\x01",  # beyond the default decimal context's exponents
    struct.pack(">i", 0) + (10**30 + 1).to_bytes(13, "big"),  # 31 digits: beyond its precision
    b"\xfe" * 3,  # duration: vints with bad continuation
    b"\xff" * 9 + b"\xff" * 9 + b"\xff" * 9,
    b"\x7f\x00\x00\x01",  # inet v4
    b"\x00" * 16,
    struct.pack(">I", 0) + b"",  # date: the minimum
    struct.pack(">q", 86_400 * 10**9),  # time: one past the maximum
    struct.pack(">q", -1),
    struct.pack(">i", 3) + _bytes(b"\x00\x00\x00\x01") + _bytes(None) + _bytes(b"\x00"),  # list with a null
    struct.pack(">i", 2**31 - 1) + _bytes(b"x"),  # collection claiming 2**31 elements
    struct.pack(">i", -5),
    _bytes(b"\x00\x00\x00\x05") + _bytes(b"\xc3\x28"),  # tuple/udt: int then invalid UTF-8
    _bytes(b"\x00\x00\x00\x05") + _bytes(b"t") + _bytes(b"\x00\x00\x00\x00") + _bytes(b"extra"),
    struct.pack(">f", float("nan")),
    struct.pack(">d", float("inf")),
    b"\x02",  # boolean other than 0/1
)
"""Edge values for the typed columns of fuzz.w: extremes, bad lengths, nulls inside collections."""


def _value(rng: random.Random) -> bytes | None:
    choice = rng.randrange(6)
    if choice == 0:
        return None
    if choice == 1:
        return struct.pack(">i", rng.randrange(-(2**31), 2**31))
    if choice == 2:
        return rng.choice([b"", b"text", "\u00e9\u4e2d".encode(), b"\xff\xfe"])
    if choice == 3:  # a map<text, frozen<list<int>>>: count, then key and value each as [bytes]
        return (
            struct.pack(">i", 1) + _bytes(b"a") + _bytes(struct.pack(">i", 1) + _bytes(b"\x00\x00\x00\x07"))
        )
    if choice == 4:
        return rng.choice(_TYPED_VALUES)
    return rng.randbytes(rng.choice([0, 1, 2, 3, 4, 5, 8, 9, 12, 16, 17, rng.randrange(0, 40)]))


def query_parameters(rng: random.Random, markers: int | None = None) -> bytes:
    """<consistency><flags>[values][page_size][paging_state][serial][timestamp], flags drawn.

    With `markers` (the statement's bind markers) most value lists have the right length, so
    the values reach their type's decoder instead of failing the count check.
    """
    flags = rng.getrandbits(7)
    out = _short(rng.choice([0x0001, 0x0004, 0x000A, 0x0006, rng.getrandbits(16)])) + bytes([flags])
    if flags & 0x01:
        count = markers if markers is not None and rng.random() < 0.8 else rng.randrange(0, 4)
        values = [_value(rng) for _ in range(count)]
        names = flags & 0x40
        out += _short(len(values))
        for i, value in enumerate(values):
            out += (_string(f"n{i}") if names else b"") + _bytes(value)
    if flags & 0x04:
        out += struct.pack(">i", rng.choice([1, 100, 5000, 0, -1]))
    if flags & 0x08:
        out += _bytes(rng.randbytes(rng.randrange(0, 24)))
    if flags & 0x10:
        out += _short(rng.choice([0x0008, 0x0009, 0x0001]))
    if flags & 0x20:
        out += struct.pack(">q", rng.getrandbits(63))
    return out


Prepared = Sequence[tuple[bytes, int]]
"""Statement ids the server has prepared, each with its number of bind markers."""


def prepared_statements() -> list[str]:
    return [text for text in STATEMENTS if "?" in text]


def valid_body(rng: random.Random, opcode: int, prepared: Prepared) -> bytes:
    """A well-formed body for a request opcode (before mutation)."""
    statement = rng.choice(STATEMENTS)
    if opcode == STARTUP:
        return startup_body(rng.choice([None, "lz4", "snappy", "zstd"]))
    if opcode in (OPTIONS,):
        return b""
    if opcode == QUERY:
        return _long_string(statement) + query_parameters(rng)
    if opcode == PREPARE:
        return _long_string(statement)
    if opcode == EXECUTE:
        query_id, markers = (
            rng.choice(prepared) if prepared and rng.random() < 0.8 else (rng.randbytes(16), 2)
        )
        return _short(len(query_id)) + query_id + query_parameters(rng, markers)
    if opcode == REGISTER:
        events = rng.sample(
            ["TOPOLOGY_CHANGE", "STATUS_CHANGE", "SCHEMA_CHANGE", "BOGUS"], rng.randrange(0, 4)
        )
        return _short(len(events)) + b"".join(_string(e) for e in events)
    if opcode == BATCH:
        count = rng.randrange(0, 4)
        body = bytes([rng.randrange(0, 4)]) + _short(count)
        for _ in range(count):
            if prepared and rng.random() < 0.5:
                query_id, _markers = rng.choice(prepared)
                body += b"\x01" + _short(len(query_id)) + query_id
            else:
                body += b"\x00" + _long_string(rng.choice(STATEMENTS))
            values = [_value(rng) for _ in range(rng.randrange(0, 4))]
            body += _short(len(values)) + b"".join(_bytes(v) for v in values)
        flags = rng.getrandbits(7) & 0x70
        body += _short(rng.choice([0x0001, 0x0004])) + bytes([flags])
        if flags & 0x10:
            body += _short(0x0008)
        if flags & 0x20:
            body += struct.pack(">q", rng.getrandbits(63))
        return body
    if opcode in (AUTH_RESPONSE,):
        return _bytes(rng.choice([CREDENTIALS_TEXT, b"\x00cassandra\x00wrong", b"", b"\x00\x00"]))
    if opcode == CREDENTIALS:
        return _string_map({"username": "cassandra", "password": "cassandra"})
    return rng.randbytes(rng.randrange(0, 32))


def mutate(rng: random.Random, body: bytes) -> bytes:
    """Up to three damages; a third of bodies keep none, so valid requests reach the statement
    layer and keep the session's state (keyspace, prepared ids) moving."""
    data = bytearray(body)
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        kind = rng.randrange(6)
        pos = rng.randrange(len(data) + 1)
        if kind == 0 and data:
            at = rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del data[pos:]
        elif kind == 2:
            data[pos:pos] = rng.randbytes(rng.randrange(1, 9))
        elif kind == 3:
            extreme = rng.choice(EXTREMES)
            data[pos : pos + len(extreme)] = extreme
        elif kind == 4 and data:
            start = rng.randrange(len(data))
            data[pos:pos] = data[start : start + rng.randrange(1, 16)]
        else:
            data = bytearray(rng.randbytes(rng.randrange(0, 64)))
    return bytes(data)


def compress(algorithm: str, body: bytes) -> bytes:
    if algorithm == "lz4":
        return struct.pack(">i", len(body)) + lz4.block.compress(body, store_size=False)
    return bytes(cramjam.snappy.compress_raw(body))


@dataclass(frozen=True)
class Fuzzed:
    data: bytes
    framed: bool
    """The header's length matches the body and the header is sane: the next frame's header
    starts where the server expects it."""


STATE_OPCODES = {
    "fresh": (STARTUP, OPTIONS),
    "startup": (AUTH_RESPONSE,),
    "authed": (QUERY, PREPARE, EXECUTE, EXECUTE, EXECUTE, BATCH, BATCH, REGISTER, OPTIONS),
}
"""The requests each connection state accepts: most frames use them, so they get past the state
check into decoding and execution."""


def fuzzed_frame(
    rng: random.Random, prepared: Prepared, compression: str | None, state: str = "authed"
) -> Fuzzed:
    if rng.random() < 0.03:  # bytes that are no frame at all
        return Fuzzed(rng.randbytes(rng.randrange(1, 300)), framed=False)
    roll = rng.random()
    opcode = (
        rng.choice(STATE_OPCODES[state])
        if roll < 0.7
        else rng.choice(REQUEST_OPCODES)
        if roll < 0.88
        else rng.choice(RESPONSE_OPCODES)
        if roll < 0.94
        else rng.randrange(256)
    )
    body = mutate(rng, valid_body(rng, opcode, prepared))
    flags = (
        0
        if rng.random() < 0.6
        else rng.choice([FLAG_COMPRESSION, 0x02, 0x04, 0x08, 0x10, rng.getrandbits(8)])
    )
    if flags & FLAG_COMPRESSION and compression and rng.random() < 0.7:
        body = compress(compression, body) if rng.random() < 0.7 else mutate(rng, compress(compression, body))
    version = 4 if rng.random() < 0.9 else rng.choice([0, 1, 2, 3, 5, 6, 0x84, rng.randrange(256)])
    stream = rng.choice([0, 1, rng.randrange(0, SENTINEL_STREAM), -1, -rng.randrange(1, 32769)])
    length = len(body)
    if rng.random() < 0.1:
        length = rng.choice([length - 1, length + 1, 0, -1, 2**31 - 1, rng.getrandbits(31), length + 100])
    header = HEADER.pack(version, flags, stream, opcode, length)
    return Fuzzed(header + body, framed=length == len(body) and version == 4)


def sentinel() -> bytes:
    return frame(OPTIONS, b"", stream=SENTINEL_STREAM)


@dataclass(frozen=True)
class Answer:
    version: int
    flags: int
    stream: int
    opcode: int
    body: bytes

    def error(self) -> tuple[int, str] | None:
        if self.opcode != ERROR or len(self.body) < 6:
            return None
        code, size = struct.unpack(">iH", self.body[:6])
        return code, self.body[6 : 6 + size].decode("utf-8", "replace")


class AnswerReader:
    """Cuts the server's byte stream into response frames, decompressing bodies if asked."""

    def __init__(self) -> None:
        self.buffer = b""
        self.compression: str | None = None

    def feed(self, data: bytes) -> list[Answer]:
        self.buffer += data
        answers = []
        while len(self.buffer) >= HEADER.size:
            version, flags, stream, opcode, length = HEADER.unpack_from(self.buffer)
            if version & 0x80 == 0:
                raise AssertionError(f"not a response frame: {self.buffer[:20]!r}")
            if len(self.buffer) < HEADER.size + length:
                break
            body = self.buffer[HEADER.size : HEADER.size + length]
            self.buffer = self.buffer[HEADER.size + length :]
            if flags & FLAG_COMPRESSION:
                body = self._decompress(body)
            answers.append(Answer(version, flags, stream, opcode, body))
        return answers

    def _decompress(self, body: bytes) -> bytes:
        """With the negotiated algorithm; a fuzzed STARTUP may have negotiated one: try both."""
        for algorithm in [self.compression] if self.compression else ["lz4", "snappy"]:
            try:
                if algorithm == "lz4":
                    (size,) = struct.unpack(">i", body[:4])
                    return bytes(lz4.block.decompress(body[4:], uncompressed_size=size))
                return bytes(cramjam.snappy.decompress_raw(body))
            except Exception:  # lz4 and cramjam raise their own error classes
                continue
        raise AssertionError(f"a compressed response no algorithm decodes: {body[:40]!r}")
