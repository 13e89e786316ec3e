"""The vnode token ring and replica placement for keyspaces that do not use tablets.

Each node owns ``num_tokens`` random tokens; a token's replicas are found by walking the sorted
ring clockwise from the first token >= it. Walking per request is wasteful, so callers build a
``ReplicaTable`` once per (ring, strategy) and look tokens up with a binary search.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from collections.abc import Collection, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, TokenRange

H = TypeVar("H", bound=Hashable)


class Location(NamedTuple):
    """Where a host sits in the cluster's topology."""

    dc: str
    rack: str


def random_tokens(rng: random.Random, num_tokens: int, taken: Collection[int] = ()) -> list[int]:
    """``num_tokens`` distinct random tokens, none in ``taken``, sorted.

    The minimum token is never chosen: it marks the ring's start and no key hashes to it.
    Randomness comes only from ``rng`` so a seeded simulation picks the same tokens every run.
    """
    if num_tokens < 1:
        raise ValueError(f"num_tokens must be at least 1, got {num_tokens}")
    chosen: set[int] = set()
    while len(chosen) < num_tokens:
        token = rng.randint(MIN_TOKEN + 1, MAX_TOKEN)
        if token not in taken:
            chosen.add(token)
    return sorted(chosen)


@dataclass(frozen=True)
class TokenRing(Generic[H]):
    """Sorted ring tokens and the host owning each (parallel tuples)."""

    tokens: tuple[int, ...]
    owners: tuple[H, ...]

    def __post_init__(self) -> None:
        if len(self.tokens) != len(self.owners):
            raise ValueError(f"{len(self.tokens)} tokens but {len(self.owners)} owners")
        if not self.tokens:
            raise ValueError("a token ring needs at least one token")
        for a, b in zip(self.tokens, self.tokens[1:]):
            if a >= b:
                raise ValueError(f"ring tokens must be strictly increasing; {a} is followed by {b}")

    @classmethod
    def from_assignments(cls, assignments: Mapping[H, Iterable[int]]) -> TokenRing[H]:
        """Build a ring from host -> tokens; a token claimed by two hosts is an error."""
        owner_of: dict[int, H] = {}
        for host, tokens in assignments.items():
            for token in tokens:
                if token in owner_of:
                    raise ValueError(f"token {token} is claimed by both {owner_of[token]!r} and {host!r}")
                owner_of[token] = host
        ordered = sorted(owner_of)
        return cls(tuple(ordered), tuple(owner_of[t] for t in ordered))

    def index_of(self, token: int) -> int:
        """Index of the first ring token >= ``token``, wrapping to 0 past the last one."""
        index = bisect_left(self.tokens, token)
        return 0 if index == len(self.tokens) else index

    def primary(self, token: int) -> H:
        return self.owners[self.index_of(token)]

    def range_ending_at(self, index: int) -> TokenRange:
        """The range ``(previous token, tokens[index]]`` that the token at ``index`` owns."""
        return TokenRange(self.tokens[index - 1], self.tokens[index])

    def ranges_of(self, host: H) -> list[TokenRange]:
        """The primary ranges of ``host`` (the one ending at its tokens), in ring order."""
        return [self.range_ending_at(i) for i, owner in enumerate(self.owners) if owner == host]

    def walk(self, start_index: int) -> Iterator[H]:
        """Owners clockwise from ``start_index``, once around the ring (hosts repeat)."""
        n = len(self.tokens)
        for step in range(n):
            yield self.owners[(start_index + step) % n]

    def hosts(self) -> set[H]:
        return set(self.owners)


def simple_strategy_replicas(ring: TokenRing[H], start_index: int, rf: int) -> list[H]:
    """SimpleStrategy: the next ``rf`` distinct hosts clockwise (fewer if the ring has fewer)."""
    replicas: list[H] = []
    seen: set[H] = set()
    for host in ring.walk(start_index):
        if host not in seen:
            seen.add(host)
            replicas.append(host)
            if len(replicas) == rf:
                break
    return replicas


class _DcPlacement(Generic[H]):
    """Replica choice inside one DC: new racks first; once every rack has one, fill in ring order."""

    def __init__(self, wanted: int, racks_total: int) -> None:
        self.wanted = wanted
        self.racks_total = racks_total
        self.chosen: list[H] = []
        self.racks_seen: set[str] = set()
        self.skipped: list[H] = []

    @property
    def done(self) -> bool:
        return len(self.chosen) >= self.wanted

    def offer(self, host: H, rack: str) -> list[H]:
        """Consider the next host of this DC; returns the hosts that became replicas, in order."""
        if self.done:
            return []
        if len(self.racks_seen) >= self.racks_total:
            self.chosen.append(host)
            return [host]
        if rack in self.racks_seen:
            self.skipped.append(host)
            return []
        self.racks_seen.add(rack)
        added = [host]
        self.chosen.append(host)
        if len(self.racks_seen) >= self.racks_total:
            while self.skipped and not self.done:
                filler = self.skipped.pop(0)
                self.chosen.append(filler)
                added.append(filler)
        return added


def network_topology_replicas(
    ring: TokenRing[H],
    start_index: int,
    rf_by_dc: Mapping[str, int],
    locations: Mapping[H, Location],
) -> list[H]:
    """NetworkTopologyStrategy: per DC, ``rf`` hosts on distinct racks first, then any others.

    A DC's RF is capped at its host count. Hosts missing from ``locations`` are an error, since
    placing data without knowing where a host lives would silently break rack safety.
    """
    ring_hosts = ring.hosts()
    for host in ring_hosts:
        if host not in locations:
            raise ValueError(f"host {host!r} owns ring tokens but has no known dc/rack")
    hosts_in_dc: dict[str, set[H]] = {}
    racks_in_dc: dict[str, set[str]] = {}
    for host in ring_hosts:
        dc, rack = locations[host]
        hosts_in_dc.setdefault(dc, set()).add(host)
        racks_in_dc.setdefault(dc, set()).add(rack)
    placements: dict[str, _DcPlacement[H]] = {}
    for dc, rf in rf_by_dc.items():
        if rf < 0:
            raise ValueError(f"replication factor for {dc!r} must not be negative, got {rf}")
        wanted = min(rf, len(hosts_in_dc.get(dc, ())))
        if wanted:
            placements[dc] = _DcPlacement(wanted, len(racks_in_dc[dc]))
    replicas: list[H] = []
    seen: set[H] = set()
    for host in ring.walk(start_index):
        if all(p.done for p in placements.values()):
            break
        if host in seen:
            continue
        seen.add(host)
        dc, rack = locations[host]
        placement = placements.get(dc)
        if placement is not None:
            replicas.extend(placement.offer(host, rack))
    return replicas


@dataclass(frozen=True)
class ReplicaTable(Generic[H]):
    """Precomputed replicas for every ring range: token -> replicas is a binary search."""

    ring: TokenRing[H]
    replicas: tuple[tuple[H, ...], ...]

    @classmethod
    def simple(cls, ring: TokenRing[H], rf: int) -> ReplicaTable[H]:
        rows = tuple(tuple(simple_strategy_replicas(ring, i, rf)) for i in range(len(ring.tokens)))
        return cls(ring, rows)

    @classmethod
    def network_topology(
        cls, ring: TokenRing[H], rf_by_dc: Mapping[str, int], locations: Mapping[H, Location]
    ) -> ReplicaTable[H]:
        rows = tuple(
            tuple(network_topology_replicas(ring, i, rf_by_dc, locations)) for i in range(len(ring.tokens))
        )
        return cls(ring, rows)

    def for_token(self, token: int) -> tuple[H, ...]:
        return self.replicas[self.ring.index_of(token)]

    def ranges_replicated_by(self, host: H) -> list[TokenRange]:
        """Every ring range for which ``host`` is a replica (what a node must store)."""
        return [self.ring.range_ending_at(i) for i, row in enumerate(self.replicas) if host in row]
