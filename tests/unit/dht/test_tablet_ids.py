"""Tablet boundaries and ids against spec vectors, and the general-N split points."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.dht import MAX_TOKEN, MIN_TOKEN, TokenRange, bias
from tabletdb.dht.tablet_ids import (
    tablet_id_in,
    tablet_id_of,
    tablet_last_token,
    tablet_last_tokens,
    tablet_range,
)

# (token, tablet count, tablet id, that tablet's last token) from spec/test-vectors.md
TABLET_VECTORS = [
    (-9223372036854775808, 1, 0, 9223372036854775807),
    (-1, 1, 0, 9223372036854775807),
    (0, 1, 0, 9223372036854775807),
    (9223372036854775807, 1, 0, 9223372036854775807),
    (-3758069500696749310, 1, 0, 9223372036854775807),
    (1573573083296714675, 1, 0, 9223372036854775807),
    (-9223372036854775808, 2, 0, -1),
    (-1, 2, 0, -1),
    (0, 2, 1, 9223372036854775807),
    (9223372036854775807, 2, 1, 9223372036854775807),
    (-3758069500696749310, 2, 0, -1),
    (1573573083296714675, 2, 1, 9223372036854775807),
    (-9223372036854775808, 8, 0, -6917529027641081857),
    (-1, 8, 3, -1),
    (0, 8, 4, 2305843009213693951),
    (9223372036854775807, 8, 7, 9223372036854775807),
    (-3758069500696749310, 8, 2, -2305843009213693953),
    (1573573083296714675, 8, 4, 2305843009213693951),
    (-9223372036854775808, 64, 0, -8935141660703064065),
    (-1, 64, 31, -1),
    (0, 64, 32, 288230376151711743),
    (9223372036854775807, 64, 63, 9223372036854775807),
    (-3758069500696749310, 64, 18, -3746994889972252673),
    (1573573083296714675, 64, 37, 1729382256910270463),
]

tokens = st.integers(min_value=MIN_TOKEN, max_value=MAX_TOKEN)
pow2_counts = st.integers(min_value=0, max_value=16).map(lambda k: 1 << k)
any_counts = st.integers(min_value=1, max_value=300)


@pytest.mark.parametrize(("token", "count", "tablet_id", "last"), TABLET_VECTORS)
def test_tablet_vectors(token: int, count: int, tablet_id: int, last: int) -> None:
    assert tablet_id_of(token, count) == tablet_id
    assert tablet_last_tokens(count)[tablet_id] == last
    assert tablet_last_token(tablet_id, count) == last


def test_general_count_formula() -> None:
    # last[i-1] = bias(floor(i * (2^64 - 1) / N))
    assert tablet_last_tokens(3) == [bias((1 * (2**64 - 1)) // 3), bias((2 * (2**64 - 1)) // 3), MAX_TOKEN]


@given(any_counts)
def test_last_tokens_sorted_and_end_at_max(count: int) -> None:
    lasts = tablet_last_tokens(count)
    assert len(lasts) == count
    assert lasts == sorted(set(lasts))
    assert lasts[-1] == MAX_TOKEN
    assert [tablet_last_token(i, count) for i in range(count)] == lasts


@given(tokens, any_counts)
def test_id_is_first_tablet_whose_last_token_is_not_below(token: int, count: int) -> None:
    lasts = tablet_last_tokens(count)
    tid = tablet_id_of(token, count)
    assert token <= lasts[tid]
    assert tid == 0 or lasts[tid - 1] < token
    assert tid == tablet_id_in(token, lasts)


@given(tokens, pow2_counts)
def test_token_is_inside_its_tablet_range(token: int, count: int) -> None:
    tid = tablet_id_of(token, count)
    rng = tablet_range(tid, count)
    assert rng.contains(token) or (tid == 0 and token == MIN_TOKEN)


@given(tokens, st.integers(min_value=0, max_value=15).map(lambda k: 1 << k))
def test_split_sends_token_to_child(token: int, count: int) -> None:
    parent = tablet_id_of(token, count)
    assert tablet_id_of(token, 2 * count) in (2 * parent, 2 * parent + 1)
    assert tablet_last_token(2 * parent + 1, 2 * count) == tablet_last_token(parent, count)


def test_tablet_range_edges() -> None:
    assert tablet_range(0, 1) == TokenRange(MIN_TOKEN, MAX_TOKEN)
    assert tablet_range(1, 2) == TokenRange(-1, MAX_TOKEN)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tablet_last_tokens(0), "at least one tablet"),
        (lambda: tablet_range(4, 4), "tablet id 4"),
        (lambda: tablet_id_in(5, [1, 2]), "after the last tablet"),
    ],
)
def test_invalid_inputs(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=message):
        call()
