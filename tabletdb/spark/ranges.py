"""Which token ranges the data source reads, one Spark input partition per tablet (or vnode range).

A tablet table's map gives each tablet's last token: tablet i holds `(last[i-1], last[i]]` and
tablet 0 starts at the ring's minimum. A vnode table's ranges come from every node's tokens:
`(previous, token]`, the first one wrapping. A user-given token range narrows either plan, and
each piece is split into non-wrapping ranges because `token(pk) > ? AND token(pk) <= ?` cannot wrap.
Writes use the same boundaries to group rows by tablet.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tabletdb.dht.token import FULL_RING, MAX_TOKEN, MIN_TOKEN, TokenRange, check_token, ranges_between


@dataclass(frozen=True)
class ScanPlan:
    """One input partition: `index` (tablet id or vnode range index) and its non-wrapping ranges."""

    index: int
    ranges: tuple[tuple[int, int], ...]


def tablet_ranges(last_tokens: Sequence[int]) -> list[TokenRange]:
    """Tablet ranges from the sorted last tokens of system.tablets; the last must be MAX_TOKEN."""
    if not last_tokens:
        raise ValueError("a tablet map has at least one tablet; got no last tokens")
    if list(last_tokens) != sorted(set(last_tokens)):
        raise ValueError(f"tablet last tokens must be strictly increasing, got {list(last_tokens)[:8]}...")
    if last_tokens[-1] != MAX_TOKEN:
        raise ValueError(f"the last tablet must end at {MAX_TOKEN}, got {last_tokens[-1]}")
    starts = [MIN_TOKEN, *last_tokens[:-1]]
    return [TokenRange(check_token(s), check_token(e)) for s, e in zip(starts, last_tokens)]


def ring_ranges(tokens: Iterable[int]) -> list[TokenRange]:
    """The vnode ranges of a ring, in token order (the first wraps round from the last token)."""
    ordered = sorted(set(tokens))
    if not ordered:
        return [FULL_RING]
    return list(ranges_between(ordered))


def parse_token_range(text: str) -> TokenRange:
    """The `token_range` option: `start,end` meaning `(start, end]` (a start >= end wraps)."""
    start_text, sep, end_text = text.partition(",")
    try:
        if not sep:
            raise ValueError("missing ','")
        return TokenRange(int(start_text.strip()), int(end_text.strip()))
    except ValueError as exc:
        raise ValueError(f"token_range must be 'start,end' with int64 tokens, got {text!r}: {exc}") from None


def plan_scans(ranges: Sequence[TokenRange], restrict: TokenRange | None = None) -> list[ScanPlan]:
    """One plan per range that overlaps `restrict` (all of them without it), keeping indexes."""
    plans = []
    for index, owned in enumerate(ranges):
        pieces = owned.unwrap() if restrict is None else owned.intersect(restrict)
        if pieces:
            plans.append(ScanPlan(index, tuple((p.start, p.end) for p in pieces)))
    return plans


def range_index(token: int, last_tokens: Sequence[int]) -> int:
    """The index of the range holding `token` among ranges ending at sorted `last_tokens`
    (past the last end means the wrapping first range, as in a vnode ring)."""
    index = bisect_left(last_tokens, token)
    return 0 if index == len(last_tokens) else index
