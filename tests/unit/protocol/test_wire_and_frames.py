"""Primitive notations, framing and compression: round trips, limits, and the driver's codecs as oracle."""

from __future__ import annotations

import io
import struct

import pytest
from cassandra import marshal
from cassandra import protocol as dp
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql.errors import ProtocolError
from tabletdb.cql.values import UNSET
from tabletdb.protocol import wire
from tabletdb.protocol.frames import (
    FIRST_FRAME_MAX_BODY,
    Frame,
    FrameDecoder,
    Lz4Compressor,
    RefusedFrame,
    SnappyCompressor,
    VersionMismatch,
    compressor_for,
    encode_frame,
)
from tabletdb.protocol.wire import Reader

texts = st.text(max_size=40)


@given(
    st.integers(0, 255),
    st.integers(0, 0xFFFF),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1),
    texts,
    st.one_of(st.none(), st.binary(max_size=30)),
    st.lists(texts, max_size=4),
    st.dictionaries(texts, texts, max_size=4),
    st.dictionaries(texts, st.lists(texts, max_size=3), max_size=4),
    st.dictionaries(texts, st.one_of(st.none(), st.binary(max_size=8)), max_size=4),
)
def test_primitive_round_trip(
    b: int,
    s: int,
    i: int,
    lng: int,
    text: str,
    blob: bytes | None,
    slist: list[str],
    smap: dict[str, str],
    mmap: dict[str, list[str]],
    bmap: dict[str, bytes | None],
) -> None:
    out = bytearray()
    wire.write_byte(out, b)
    wire.write_short(out, s)
    wire.write_int(out, i)
    wire.write_long(out, lng)
    wire.write_string(out, text)
    wire.write_long_string(out, text)
    wire.write_bytes(out, blob)
    wire.write_short_bytes(out, blob or b"")
    wire.write_string_list(out, slist)
    wire.write_string_map(out, smap)
    wire.write_string_multimap(out, mmap)
    wire.write_bytes_map(out, bmap)
    r = Reader(bytes(out))
    assert r.byte() == b
    assert r.short() == s
    assert r.i32() == i
    assert r.i64() == lng
    assert r.string() == text
    assert r.long_string() == text
    assert r.blob() == blob
    assert r.short_bytes() == (blob or b"")
    assert r.string_list() == slist
    assert r.string_map() == smap
    assert r.string_multimap() == mmap
    assert r.bytes_map() == bmap
    r.expect_end("test")


def test_value_null_and_unset() -> None:
    out = bytearray()
    for v in (b"x", None, UNSET, b""):
        wire.write_value(out, v)
    r = Reader(bytes(out))
    assert [r.value() for _ in range(4)] == [b"x", None, UNSET, b""]
    with pytest.raises(ProtocolError, match="Invalid \\[value\\] length -3"):
        Reader(struct.pack(">i", -3)).value()


@pytest.mark.parametrize(("address", "port"), [("10.1.2.3", 9042), ("::1", 19042)])
def test_inet_matches_driver(address: str, port: int) -> None:
    out = bytearray()
    wire.write_inet(out, address, port)
    assert dp.read_inet(io.BytesIO(bytes(out))) == (address, port)
    assert Reader(bytes(out)).inet() == (address, port)


@given(st.binary(max_size=40), st.integers(0, 40))
def test_truncated_input_raises_protocol_error(data: bytes, cut: int) -> None:
    out = bytearray()
    wire.write_long_string(out, "select")
    wire.write_bytes(out, data)
    wire.write_string_list(out, ["a", "b"])
    truncated = bytes(out)[: max(0, len(out) - 1 - cut)]
    r = Reader(truncated)
    with pytest.raises(ProtocolError, match="Truncated"):
        r.long_string()
        r.blob()
        r.string_list()


def test_invalid_utf8_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="Invalid UTF-8 in \\[string\\]"):
        Reader(b"\x00\x02\xff\xfe").string()


def _frame(stream: int, opcode: int, body: bytes, version: int = 4, flags: int = 0) -> bytes:
    return encode_frame(version, flags, stream, opcode, body)


@given(st.lists(st.binary(max_size=50), min_size=1, max_size=5), st.data())
def test_decoder_reassembles_frames_split_anywhere(bodies: list[bytes], data: st.DataObject) -> None:
    stream_bytes = b"".join(_frame(i, 0x07, body) for i, body in enumerate(bodies))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream_bytes)), max_size=6)))
    dec = FrameDecoder()
    got = []
    prev = 0
    for cut in [*cuts, len(stream_bytes)]:
        got += dec.feed(stream_bytes[prev:cut])
        prev = cut
    assert [(f.stream, f.body) for f in got] == list(enumerate(bodies))
    assert dec.fatal is None


def test_version_mismatch_answers_on_the_request_stream() -> None:
    dec = FrameDecoder()
    assert dec.feed(b"\x05\x00") == []  # wait for the stream id
    assert dec.feed(b"\x00\x07\x05\x00\x00\x00\x00") == []
    assert isinstance(dec.fatal, VersionMismatch)
    assert dec.fatal.stream == 7
    assert dec.fatal.message == "Invalid or unsupported protocol version: 5"


def test_response_bit_and_dse_versions_are_refused() -> None:
    for first in (0x84, 0x42, 0x41, 0x02):
        dec = FrameDecoder()
        dec.feed(bytes([first]) + b"\x00\x00\x01\x05\x00\x00\x00\x00")
        assert isinstance(dec.fatal, VersionMismatch)


def test_first_frame_limit_and_max_frame_size() -> None:
    dec = FrameDecoder()
    dec.feed(struct.pack(">BBhBi", 4, 0, 3, 5, FIRST_FRAME_MAX_BODY + 1))
    assert dec.fatal is not None and dec.fatal.stream == 3
    assert "Initial message size too large" in dec.fatal.message

    dec = FrameDecoder(max_frame_size=1000)
    assert len(dec.feed(_frame(0, 5, b""))) == 1
    (refused,) = dec.feed(struct.pack(">BBhBi", 4, 0, 9, 7, 1001) + b"x" * 1000)
    assert isinstance(refused, RefusedFrame) and refused.stream == 9
    assert "exceeds maximum allowed 1000" in refused.error.message and dec.fatal is None
    (after,) = dec.feed(b"x" + _frame(0, 5, b""))  # the body skipped, the next frame read
    assert isinstance(after, Frame) and after.opcode == 5


def test_negative_length_and_version_change_are_fatal() -> None:
    dec = FrameDecoder()
    dec.feed(struct.pack(">BBhBi", 4, 0, 1, 7, -5))
    assert dec.fatal is not None and "Invalid frame body length -5" in dec.fatal.message
    dec = FrameDecoder()
    frames = dec.feed(_frame(0, 5, b"") + _frame(1, 5, b"", version=3))
    assert len(frames) == 1 and dec.fatal is not None and "version changed" in dec.fatal.message


@given(st.binary(max_size=3000))
def test_lz4_matches_driver_format(data: bytes) -> None:
    c = Lz4Compressor()
    compressed = c.compress(data)
    assert compressed[:4] == struct.pack(">i", len(data))
    assert c.decompress(compressed) == data
    # What scylla-driver sends: the same 4-byte BE length + raw block layout.
    import lz4.block

    driver_style = struct.pack(">i", len(data)) + lz4.block.compress(data, store_size=False)
    assert c.decompress(driver_style) == data


@given(st.binary(max_size=3000))
def test_snappy_round_trip(data: bytes) -> None:
    c = SnappyCompressor()
    assert c.decompress(c.compress(data)) == data


def test_corrupt_and_oversized_compressed_bodies() -> None:
    with pytest.raises(ProtocolError, match="lz4"):
        Lz4Compressor().decompress(struct.pack(">i", 100) + b"\xff\xff\xff")
    with pytest.raises(ProtocolError, match="lz4 decompressed length 11 exceeds maximum allowed 10"):
        Lz4Compressor(max_size=10).decompress(struct.pack(">i", 11) + b"\x00")
    with pytest.raises(ProtocolError, match="snappy"):
        SnappyCompressor().decompress(b"\x05garbage")
    with pytest.raises(ProtocolError, match="snappy decompressed length 127 exceeds maximum allowed 10"):
        SnappyCompressor(max_size=10).decompress(b"\x7f" + b"\x00" * 10)


def test_compressor_names_are_case_insensitive() -> None:
    assert compressor_for("LZ4").name == "lz4"
    assert compressor_for("Snappy").name == "snappy"
    with pytest.raises(ProtocolError, match="Unknown compression algorithm: zstd"):
        compressor_for("zstd")


def test_unused_marshal_import_guard() -> None:
    # The driver's int32 packer agrees with our [int] writer (sanity check on byte order).
    out = bytearray()
    wire.write_int(out, -2)
    assert bytes(out) == marshal.int32_pack(-2)
