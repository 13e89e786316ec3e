"""Token ranges: (start, end] membership, wrap-around, unwrap and intersection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.dht import FULL_RING, MAX_TOKEN, MIN_TOKEN, TokenRange, bias, unbias
from tabletdb.dht.token import ranges_between

tokens = st.integers(min_value=MIN_TOKEN, max_value=MAX_TOKEN)


@given(tokens)
def test_bias_inverts_unbias(token: int) -> None:
    assert bias(unbias(token)) == token
    assert 0 <= unbias(token) < 2**64


def test_unbias_preserves_order_at_the_edges() -> None:
    assert unbias(MIN_TOKEN) == 0
    assert unbias(-1) == 2**63 - 1
    assert unbias(MAX_TOKEN) == 2**64 - 1


def test_range_is_left_open_right_closed() -> None:
    r = TokenRange(10, 20)
    assert not r.contains(10)
    assert r.contains(11) and r.contains(20)
    assert not r.contains(21)


def test_wrapping_range() -> None:
    r = TokenRange(100, -100)
    assert r.wraps
    assert r.contains(MAX_TOKEN) and r.contains(MIN_TOKEN) and r.contains(-100)
    assert not r.contains(0) and not r.contains(100)
    assert r.unwrap() == [TokenRange(MIN_TOKEN, -100), TokenRange(100, MAX_TOKEN)]


def test_full_ring() -> None:
    assert FULL_RING.is_full_ring
    assert FULL_RING.width() == 2**64
    assert FULL_RING.unwrap() == [TokenRange(MIN_TOKEN, MAX_TOKEN)]


def test_out_of_range_token_rejected() -> None:
    with pytest.raises(ValueError, match="outside the int64 range"):
        TokenRange(0, 2**63)


@given(tokens, tokens, tokens)
def test_unwrap_preserves_membership(start: int, end: int, token: int) -> None:
    r = TokenRange(start, end)
    pieces = r.unwrap()
    assert all(p.start < p.end for p in pieces)
    if token != MIN_TOKEN:
        assert r.contains(token) == any(p.contains(token) for p in pieces)
    # a wrapping range also holds MIN_TOKEN, which the unwrapped pieces leave out
    assert sum(p.width() for p in pieces) == r.width() - (1 if r.wraps else 0)


@given(tokens, tokens, tokens, tokens, tokens)
def test_intersection_membership(a: int, b: int, c: int, d: int, token: int) -> None:
    left, right = TokenRange(a, b), TokenRange(c, d)
    if token == MIN_TOKEN:
        return
    both = left.contains(token) and right.contains(token)
    assert both == any(p.contains(token) for p in left.intersect(right))


def test_ranges_between_ring_tokens() -> None:
    assert list(ranges_between([-5, 0, 7])) == [TokenRange(7, -5), TokenRange(-5, 0), TokenRange(0, 7)]
    assert list(ranges_between([3])) == [TokenRange(3, 3)]
