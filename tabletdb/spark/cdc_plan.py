"""What one pass of ``tabletdb cdc export`` reads, pure: stream windows, spans and groups.

An export advances a watermark: a pass reads, from every stream, the log rows whose
``cdc$time`` lies in ``[from, to)`` where ``from`` is the previous pass's ``to`` and ``to`` lags
the clock by ``SAFETY_US`` (a CDC write may be stamped up to the generation leeway in the past
of a node's clock, so rows younger than that may still arrive). A batch's rows share one
``cdc$time`` and are written together, so a time bound never splits one. A stream is read only
over the part of ``[from, to)`` its stream set (generation) operated in; the first set of a table
also owns every older time (writes stamped before it went to it).

A pass's rows are committed by renaming its output directory to ``pass-<from>-<to>``: the
committed passes are the checkpoint, so a pass killed at any point leaves nothing committed and
the next run starts again from the last committed ``to`` — no row twice, none missed.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tabletdb.cdc.stream_id import stream_id_token

SAFETY_US = 10_000_000
"""Rows younger than this are left to the next pass: twice the 5 s generation leeway."""
_UUID_EPOCH_OFFSET = 0x01B21DD213814000
_PASS = re.compile(r"pass-(\d+)-(\d+)\Z")


@dataclass(frozen=True, slots=True)
class StreamWindow:
    """A stream and when its set operated: ``[start, end)`` µs (end None: still operating)."""

    stream: bytes
    start: int
    end: int | None


@dataclass(frozen=True, slots=True)
class StreamSpan:
    """Read ``stream``'s rows with ``cdc$time`` in ``[lower, upper)`` (µs)."""

    stream: bytes
    lower: int
    upper: int


def windows(sets: Sequence[tuple[int, Iterable[bytes]]]) -> list[StreamWindow]:
    """Each stream of each set, operating until the next set starts; the first set from time 0."""
    ordered = sorted(sets, key=lambda s: s[0])
    out = []
    for index, (start, streams) in enumerate(ordered):
        end = ordered[index + 1][0] if index + 1 < len(ordered) else None
        out += [StreamWindow(s, 0 if index == 0 else start, end) for s in streams]
    return out


def spans(stream_windows: Iterable[StreamWindow], lower: int, upper: int) -> list[StreamSpan]:
    """The part of ``[lower, upper)`` each stream operated in (streams that did not, left out)."""
    out = []
    for w in stream_windows:
        start, end = max(lower, w.start), upper if w.end is None else min(upper, w.end)
        if start < end:
            out.append(StreamSpan(w.stream, start, end))
    return out


def groups(stream_spans: Sequence[StreamSpan], count: int) -> list[list[StreamSpan]]:
    """At most ``count`` groups of streams adjacent in token order (so a group's streams mostly
    sit in the same tablets, on the same replicas), for one Spark task each."""
    ordered = sorted(stream_spans, key=lambda s: (stream_id_token(s.stream), s.stream, s.lower))
    if not ordered:
        return []
    count = max(1, min(count, len(ordered)))
    size, extra = divmod(len(ordered), count)
    out, at = [], 0
    for i in range(count):
        n = size + (1 if i < extra else 0)
        out.append(ordered[at : at + n])
        at += n
    return out


def time_bound(micros: int) -> uuid.UUID:
    """The smallest timeuuid at ``micros``: every row of that µs compares >= it (CQL orders
    timeuuids by time, then the low 8 bytes as signed bytes, so 0x80 bytes are the least)."""
    t = micros * 10 + _UUID_EPOCH_OFFSET
    time_low, time_mid, time_hi = t & 0xFFFF_FFFF, (t >> 32) & 0xFFFF, ((t >> 48) & 0x0FFF) | 0x1000
    raw = time_low.to_bytes(4, "big") + time_mid.to_bytes(2, "big") + time_hi.to_bytes(2, "big")
    return uuid.UUID(bytes=raw + b"\x80" * 8)


def micros_of(time_uuid: uuid.UUID) -> int:
    return (time_uuid.time - _UUID_EPOCH_OFFSET) // 10


def pass_name(lower: int, upper: int) -> str:
    return f"pass-{lower}-{upper}"


def committed_upto(names: Iterable[str], since: int) -> int:
    """Where the next pass starts: the end of the committed passes (``since`` if none). Passes
    chain (each starts where the last ended); one that does not is refused, as a directory
    holding another export's output would be."""
    passes = sorted((int(m.group(1)), int(m.group(2))) for m in map(_PASS.match, names) if m)
    at = passes[0][0] if passes else since
    for lower, upper in passes:
        if lower != at:
            raise ValueError(f"committed passes do not chain: one ends at {at}, the next starts at {lower}")
        at = upper
    return at
