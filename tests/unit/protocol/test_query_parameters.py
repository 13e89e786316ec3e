"""The one-pass <query_parameters> decoder agrees with the checked one on every body."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql.errors import ProtocolError
from tabletdb.protocol.requests import (
    QF_DEFAULT_TIMESTAMP,
    QF_PAGE_SIZE,
    QF_PAGING_STATE,
    QF_SERIAL_CONSISTENCY,
    QF_SKIP_METADATA,
    QF_VALUES,
    DecodeContext,
    QueryParameters,
    _checked_execute,
    _checked_query_parameters,
    _execute,
    read_query_parameters,
)
from tabletdb.protocol.wire import Reader

values = st.lists(st.one_of(st.binary(max_size=20), st.sampled_from([-1, -2, -3])), max_size=5)


def body(consistency: int, flags: int, vals: list[bytes | int], page: int, ts: int) -> bytes:
    out = bytearray(struct.pack(">HB", consistency, flags))
    if flags & QF_VALUES:
        out += struct.pack(">H", len(vals))
        for v in vals:
            out += struct.pack(">i", v) if isinstance(v, int) else struct.pack(">i", len(v)) + v
    if flags & QF_PAGE_SIZE:
        out += struct.pack(">i", page)
    if flags & QF_PAGING_STATE:
        out += struct.pack(">i", 3) + b"abc"
    if flags & QF_SERIAL_CONSISTENCY:
        out += struct.pack(">H", 0x0008)
    if flags & QF_DEFAULT_TIMESTAMP:
        out += struct.pack(">q", ts)
    return bytes(out)


def decode(decoder: object, data: bytes, version: int) -> tuple[QueryParameters | None, str | None, int]:
    reader = Reader(data)
    try:
        params = decoder(reader, version)  # type: ignore[operator]
    except ProtocolError as exc:
        return None, str(exc), -1
    return params, None, reader.position()[1]


@given(
    consistency=st.sampled_from([0, 1, 4, 6, 10, 0x33]),
    flags=st.integers(0, 0x7F),
    vals=values,
    page=st.integers(-(2**31), 2**31 - 1),
    ts=st.sampled_from([-(2**63), -(2**63) + 1, 0, 1_700_000_000_000_000]),
    version=st.sampled_from([3, 4]),
    cut=st.integers(0, 8),
)
def test_fast_and_checked_decoders_agree(
    consistency: int, flags: int, vals: list[bytes | int], page: int, ts: int, version: int, cut: int
) -> None:
    data = body(consistency, flags, vals, page, ts)
    data = data[: len(data) - cut] if cut else data  # truncated bodies must fail the same way
    assert decode(read_query_parameters, data, version) == decode(_checked_query_parameters, data, version)


def test_common_shape_is_read_in_full() -> None:
    flags = QF_VALUES | QF_SKIP_METADATA | QF_PAGE_SIZE | QF_DEFAULT_TIMESTAMP
    data = body(6, flags, [b"\x00\x00\x00\x07", -1, -2], 5000, 42) + b"trailing"
    params, error, end = decode(read_query_parameters, data, 4)
    assert error is None and params is not None
    assert params.values[0] == b"\x00\x00\x00\x07" and params.values[1] is None
    assert params.page_size == 5000 and params.timestamp == 42 and params.skip_metadata
    assert end == len(data) - len(b"trailing")


def decode_execute(decoder: object, data: bytes, use_metadata_id: bool, version: int) -> object:
    ctx = DecodeContext(use_metadata_id=use_metadata_id, version=version)
    try:
        return decoder(Reader(data), ctx)  # type: ignore[operator]
    except ProtocolError as exc:
        return str(exc)


@given(
    query_id=st.binary(max_size=20),
    metadata_id=st.binary(max_size=20),
    id_length_delta=st.sampled_from([0, 0, 0, 1, -1, 100]),
    use_metadata_id=st.booleans(),
    consistency=st.sampled_from([0, 1, 6, 10, 0x33]),
    flags=st.integers(0, 0x7F),
    vals=values,
    page=st.integers(-(2**31), 2**31 - 1),
    ts=st.sampled_from([-(2**63), 0, 1_700_000_000_000_000]),
    version=st.sampled_from([3, 4]),
    cut=st.integers(0, 40),
)
def test_execute_fast_and_checked_decoders_agree(
    query_id: bytes,
    metadata_id: bytes,
    id_length_delta: int,
    use_metadata_id: bool,
    consistency: int,
    flags: int,
    vals: list[bytes | int],
    page: int,
    ts: int,
    version: int,
    cut: int,
) -> None:
    """EXECUTE's one-pass decode (ids and parameters) gives the same request, or the same error,
    as the checked readers - including ids whose length lies and truncated bodies."""
    head = struct.pack(">H", max(0, len(query_id) + id_length_delta)) + query_id
    if use_metadata_id:
        head += struct.pack(">H", len(metadata_id)) + metadata_id
    data = head + body(consistency, flags, vals, page, ts)
    data = data[: max(0, len(data) - cut)]
    fast = decode_execute(_execute, data, use_metadata_id, version)
    assert fast == decode_execute(_checked_execute, data, use_metadata_id, version)
