"""The pure half of tablet load statistics: a node's report on the wire, and the merge."""

from __future__ import annotations

import uuid

import pytest

from tabletdb.tablets.load_stats import decode, encode, merge

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def test_a_report_survives_the_wire() -> None:
    sizes = {(T1, 0): 10, (T1, 3): 0, (T2, 1): 1 << 40}
    assert decode(encode(sizes)) == sizes


@pytest.mark.parametrize(
    "payload",
    [None, [["zz", 0, 1]], [[T1.hex, -1, 1]], [[T1.hex, 0, -5]], [[T1.hex, 0]], [[T1.hex, "0", 1]]],
)
def test_a_malformed_report_is_refused_with_the_entry(payload: object) -> None:
    with pytest.raises(ValueError, match="tablet load"):
        decode(payload)


def test_merge_keeps_the_largest_replica() -> None:
    # a replica being filled by streaming is smaller than the tablet it will hold
    merged = merge([{(T1, 0): 100, (T1, 1): 5}, {(T1, 0): 40, (T2, 0): 7}, {}])
    assert merged == {(T1, 0): 100, (T1, 1): 5, (T2, 0): 7}
