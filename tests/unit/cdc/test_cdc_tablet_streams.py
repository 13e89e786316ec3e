"""One CDC stream per tablet (spec/cdc.md "Tablet tables"), on the tablet vectors of spec/test-vectors.md."""

from __future__ import annotations

import uuid

import pytest

from tabletdb.cdc.stream_id import parse_stream_id
from tabletdb.cdc.tablet_streams import TabletStreams
from tabletdb.dht.tablet_ids import tablet_last_tokens

TABLE = uuid.UUID("5f3a1c1e-1d2b-11ef-8000-000000000001")

# (token, tablets, that tablet's last token) from spec/test-vectors.md
VECTORS = [
    (-9223372036854775808, 8, -6917529027641081857),
    (-1, 8, -1),
    (0, 8, 2305843009213693951),
    (9223372036854775807, 8, 9223372036854775807),
    (-3758069500696749310, 8, -2305843009213693953),
    (1573573083296714675, 64, 1729382256910270463),
    (-3758069500696749310, 64, -3746994889972252673),
    (0, 1, 9223372036854775807),
]


@pytest.mark.parametrize(("token", "count", "last"), VECTORS)
def test_stream_of_a_token_is_its_tablets(token: int, count: int, last: int) -> None:
    streams = TabletStreams(TABLE, tuple(tablet_last_tokens(count)))
    parts = parse_stream_id(streams.stream_for(token))
    assert (parts.token, parts.range_index, parts.version) == (last, 0, 1)
    assert streams.stream_for(token) in streams.streams


def test_ids_are_stable_per_table_and_count_and_change_on_split() -> None:
    four = TabletStreams(TABLE, tuple(tablet_last_tokens(4)))
    assert four.streams == TabletStreams(TABLE, tuple(tablet_last_tokens(4))).streams
    eight = TabletStreams(TABLE, tuple(tablet_last_tokens(8)))
    assert not set(four.streams) & set(eight.streams)
    other = TabletStreams(uuid.UUID(int=7), tuple(tablet_last_tokens(4)))
    assert not set(four.streams) & set(other.streams)
    assert len({parse_stream_id(s).random for s in four.streams}) == 1


def test_no_tablets_refused() -> None:
    with pytest.raises(ValueError, match="no tablets"):
        TabletStreams(TABLE, ())
