"""The protocol fuzzer's frame builder and answer reader (tests.harness.cql_frames)."""

from __future__ import annotations

import random
import struct

import pytest

from tests.harness import cql_frames as cf


def _error_frame(code: int, message: str, stream: int = 3) -> bytes:
    body = struct.pack(">iH", code, len(message)) + message.encode()
    return struct.pack(">BBhBi", 0x84, 0, stream, cf.ERROR, len(body)) + body


def test_reader_cuts_frames_across_feeds_and_reads_error_codes() -> None:
    data = _error_frame(0x0000, "boom") + _error_frame(0x000A, "bad frame", stream=cf.SENTINEL_STREAM)
    reader = cf.AnswerReader()
    answers = reader.feed(data[:5]) + reader.feed(data[5:20]) + reader.feed(data[20:])
    assert [a.error() for a in answers] == [(cf.SERVER_ERROR, "boom"), (0x000A, "bad frame")]
    assert answers[1].stream == cf.SENTINEL_STREAM


@pytest.mark.parametrize("algorithm", ["lz4", "snappy"])
def test_reader_decompresses_with_the_negotiated_algorithm_or_either(algorithm: str) -> None:
    plain = _error_frame(0x2200, "invalid " * 20)
    body = cf.compress(algorithm, plain[9:])
    data = struct.pack(">BBhBi", 0x84, cf.FLAG_COMPRESSION, 1, cf.ERROR, len(body)) + body
    for negotiated in (algorithm, None):
        reader = cf.AnswerReader()
        reader.compression = negotiated
        assert [a.error() for a in reader.feed(data)] == [(0x2200, "invalid " * 20)]


def test_reader_refuses_request_frames_as_answers() -> None:
    with pytest.raises(AssertionError, match="not a response frame"):
        cf.AnswerReader().feed(cf.frame(cf.OPTIONS, b""))


def test_fuzzed_frames_replay_from_the_seed_and_say_whether_framing_holds() -> None:
    def draw(seed: int) -> list[cf.Fuzzed]:
        rng = random.Random(seed)
        return [cf.fuzzed_frame(rng, [(b"\x01" * 16, 3)], "lz4") for _ in range(300)]

    frames = draw(5)
    assert frames == draw(5)
    assert any(f.framed for f in frames) and any(not f.framed for f in frames)
    for f in frames:
        if f.framed:
            version, _flags, stream, _opcode, length = cf.HEADER.unpack_from(f.data)
            assert version == 4 and length == len(f.data) - cf.HEADER.size
            assert stream != cf.SENTINEL_STREAM
