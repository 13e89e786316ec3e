"""Which of this node's files take which part of an incoming tablet image (pure).

An image names the token range it holds (a bulk load's file: one tablet's range, or the whole
ring for a vnode table; a restore's file: its source tablet's range). A node merges into each of
its own files the partitions that file owns:

* a tablet table: each local tablet the range overlaps takes the overlap (everything when the
  image lies inside the tablet); ``covered`` says whether every tablet the range overlaps is
  local — if not, some of the image belongs to tablets this node does not hold (the map moved
  since the sender looked), which a bulk load must not take for done;
* a vnode table: the ranges this node replicates, cut by shard (a vnode table has one file per
  shard, ``dht.sharding``), each shard's file taking its runs of tokens.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from tabletdb.dht.sharding import shard_of, token_for_next_shard
from tabletdb.dht.token import MAX_TOKEN, TokenRange
from tabletdb.tablets.tablet_map import TabletMap


@dataclass(frozen=True)
class MergeTarget:
    """One local file and what it takes from the image."""

    token: int
    """A token the file owns: picks the store (``StorageService.committer``)."""
    pieces: tuple[TokenRange, ...] | None
    """The token ranges to take; None: all of the image."""


def tablet_targets(
    tablet_map: TabletMap, local_tablets: Collection[int], image_range: TokenRange
) -> tuple[list[MergeTarget], bool]:
    """The local tablets overlapping ``image_range`` and whether they are all it overlaps."""
    targets: list[MergeTarget] = []
    covered = True
    for tablet_id in range(tablet_map.tablet_count):
        owned = tablet_map.range_of(tablet_id)
        overlap = owned.intersect(image_range)
        if not overlap:
            continue
        if tablet_id not in local_tablets:
            covered = False
            continue
        inside = _within(image_range, owned)
        targets.append(MergeTarget(owned.end, None if inside else tuple(overlap)))
    return targets, covered


def _within(inner: TokenRange, outer: TokenRange) -> bool:
    """Whether every token of ``inner`` is in ``outer``."""
    return all(
        any(o.start <= piece.start and piece.end <= o.end for o in outer.unwrap()) for piece in inner.unwrap()
    )


def vnode_targets(
    local_ranges: Iterable[TokenRange], image_range: TokenRange, smp: int, ignore_msb: int
) -> list[MergeTarget]:
    """One target per shard file: the runs of its tokens in the replicated ranges the image covers."""
    by_shard: dict[int, list[TokenRange]] = {}
    for owned in local_ranges:
        for piece in owned.intersect(image_range):
            for shard, run in shard_runs(piece, smp, ignore_msb):
                by_shard.setdefault(shard, []).append(run)
    return [MergeTarget(runs[0].end, tuple(runs)) for _, runs in sorted(by_shard.items())]


def shard_runs(piece: TokenRange, smp: int, ignore_msb: int) -> Sequence[tuple[int, TokenRange]]:
    """A non-wrapping range cut into runs of tokens owned by one shard, in token order."""
    if piece.start >= piece.end:
        raise ValueError(f"shard_runs takes a non-wrapping range, got ({piece.start}, {piece.end}]")
    if smp == 1:
        return [(0, piece)]
    out: list[tuple[int, TokenRange]] = []
    start = piece.start
    while start < piece.end:
        shard = shard_of(start + 1, smp, ignore_msb)
        following = token_for_next_shard(start + 1, (shard + 1) % smp, smp, ignore_msb)
        end = piece.end if following == MAX_TOKEN else min(following - 1, piece.end)
        out.append((shard, TokenRange(start, end)))
        start = end
    return out
