"""The pure parts of replica repair: slicing a range, and finding a data file's table."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tabletdb.coordinator.replica_repair import slices, table_id_of
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, TokenRange

tokens = st.integers(MIN_TOKEN, MAX_TOKEN)


@given(tokens, tokens, st.integers(1, 100))
def test_slices_cover_the_range_exactly_in_order(a: int, b: int, count: int) -> None:
    if a == b:
        return
    start, end = min(a, b), max(a, b)
    pieces = slices(TokenRange(start, end), count)
    assert 1 <= len(pieces) <= count
    assert pieces[0].start == start and pieces[-1].end == end
    assert all(p.end == q.start for p, q in itertools.pairwise(pieces))
    assert all(p.start < p.end for p in pieces)


def test_table_id_of_a_data_file_path() -> None:
    table_id = uuid.uuid4()
    path = Path("/w/data/ks") / f"my-table-{table_id.hex}" / "shard-0" / "tablet-3.db"
    assert table_id_of(path) == table_id
    assert table_id_of(Path("/w/data/ks/t/shard-0/tablet-3.db")) is None
