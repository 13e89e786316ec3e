"""Vnode keyspaces through a topology change: which token ring serves reads and which rings take
writes at each transition state, which ranges change hands, and where their data comes from.

Pure. Tokens live in group0's membership records; who *owns* them is the topology state's
business: a node owns its tokens once it is normal (and until it has left), so a joining node
owns nothing until its ranges were streamed, and a leaving one keeps its ranges until the new
owners hold their data. During a request's vnode phase both rings exist at once:

* ``write both read old``: writes go to the old and the new replica set of every token (the
  consistency level met on each set alone), reads to the old set; the ranges are streamed now;
* ``write both read new``: the same writes, reads from the new set;
* once the request is finished the new ring is the ring.

A range's new replicas (``receivers``) are filled from the replicas that lose it, when there are
as many of them as there are gainers and all are alive: a write acknowledged by a quorum of the
old set is then on a quorum of the new one (each loser that held it hands it to a gainer).
Otherwise (a removed or replaced node, a loser that died, a set that grows) every other old
replica is read, as a rebuild does: a quorum write reached at least one of the survivors.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tabletdb.dht.ring import Location, ReplicaTable, TokenRing
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, TokenRange
from tabletdb.schema.model import EVERYWHERE, SIMPLE, Replication
from tabletdb.topology.state import Request, TopologyState
from tabletdb.topology.states import NodeState, RequestKind, TransitionState

Tokens = Mapping[uuid.UUID, tuple[int, ...]]
"""Ring tokens by host id (group0's membership records)."""
Ring = dict[uuid.UUID, tuple[int, ...]]
"""The tokens of the nodes that own them in one ring."""

OWNING = frozenset({NodeState.NORMAL, NodeState.DECOMMISSIONING, NodeState.REMOVING})
"""States whose node owns its tokens outside a vnode phase (a leaving node until it left)."""
VNODE_PHASE = frozenset({TransitionState.WRITE_BOTH_READ_OLD, TransitionState.WRITE_BOTH_READ_NEW})


@dataclass(frozen=True)
class Rings:
    """The ring reads use and the rings writes go to (one, or old and new during a vnode phase)."""

    read: Ring
    writes: tuple[Ring, ...]


def owners(topology: TopologyState, tokens: Tokens) -> Ring:
    """The token owners outside a vnode phase. With no node records at all (a state from before
    the coordinator existed, or a test without one) every member owns its tokens, as it always
    did; otherwise a member without a record (a joiner not yet queued) owns nothing."""
    if not topology.nodes:
        return {h: tuple(t) for h, t in tokens.items() if t}
    return {
        h: tuple(t)
        for h, t in tokens.items()
        if t and h in topology.nodes and topology.nodes[h].state in OWNING
    }


def token_map(topology: TopologyState, tokens: Tokens) -> dict[int, uuid.UUID]:
    """Each token of any member and the one node it names, for views of the whole ring that are
    not a replica placement (nodetool ring, ownership, the ring a CDC generation is built for):
    its owner (``owners``), else the member that brings it (a joining node). A replacing node
    that took a dead node's tokens over shares them with it until the replace ends (two records,
    one token): the owner is named until the ring switches, never both, never an error."""
    named: dict[int, uuid.UUID] = {}
    for host, ring_tokens in owners(topology, tokens).items():
        for token in ring_tokens:
            named[token] = host
    for host in sorted(tokens, key=lambda h: h.bytes):
        for token in tokens[host]:
            named.setdefault(token, host)
    return named


def target_ring(request: Request, old: Ring, tokens: Tokens) -> Ring:
    """The ring once ``request`` is done, as the membership records will make it: a joining
    node's tokens added, a leaving or removed node's taken away, a replaced node's taken away and
    its replacement's added (the same tokens when the replacing node took them over; if it came
    with others, the ranges move by the difference like a removal and a join at once)."""
    new = dict(old)
    host = request.host_id
    if request.kind in (RequestKind.LEAVE, RequestKind.REMOVE):
        new.pop(host, None)
    if request.kind is RequestKind.REPLACE and request.replaced_id is not None:
        new.pop(request.replaced_id, None)
    if request.kind in (RequestKind.JOIN, RequestKind.REPLACE) and tokens.get(host):
        new[host] = tuple(tokens[host])
    return new


def rings(topology: TopologyState, tokens: Tokens) -> Rings:
    """Which ring serves reads and which take writes in ``topology`` (see the module docstring)."""
    old = owners(topology, tokens)
    tr = topology.transition
    if tr is None or tr.state not in VNODE_PHASE:
        return Rings(old, (old,))
    new = target_ring(tr.request, old, tokens)
    if new == old:
        return Rings(old, (old,))
    read = old if tr.state is TransitionState.WRITE_BOTH_READ_OLD else new
    return Rings(read, (old, new))


def strategy_table(
    ring: TokenRing[uuid.UUID], replication: Replication, locations: Mapping[uuid.UUID, Location]
) -> ReplicaTable[uuid.UUID]:
    """Replicas of every range of ``ring`` under the keyspace's strategy (Simple, Everywhere or
    NetworkTopology), as every coordinator places them."""
    options = dict(replication.options)
    if replication.strategy_class == SIMPLE:
        return ReplicaTable.simple(ring, int(str(options.get("replication_factor", "1"))))
    if replication.strategy_class == EVERYWHERE:
        return ReplicaTable.simple(ring, len(ring.hosts()))
    rf_by_dc = {dc: replication.factor(dc) for dc in options if dc not in ("class", "replication_factor")}
    return ReplicaTable.network_topology(ring, rf_by_dc, locations)


@dataclass(frozen=True)
class RangeMove:
    """A non-wrapping token range whose replica set differs between two rings."""

    token_range: TokenRange
    old: tuple[uuid.UUID, ...]
    new: tuple[uuid.UUID, ...]

    @property
    def gained(self) -> tuple[uuid.UUID, ...]:
        return tuple(h for h in self.new if h not in self.old)

    @property
    def lost(self) -> tuple[uuid.UUID, ...]:
        return tuple(h for h in self.old if h not in self.new)


def _table(
    ring: Tokens, replication: Replication, locations: Mapping[uuid.UUID, Location]
) -> ReplicaTable[uuid.UUID]:
    return strategy_table(TokenRing.from_assignments(ring), replication, locations)


def range_moves(
    old: Tokens, new: Tokens, replication: Replication, locations: Mapping[uuid.UUID, Location]
) -> list[RangeMove]:
    """Every range whose replicas differ between ``old`` and ``new``, in token order, adjacent
    ranges with the same change merged. Empty when either ring is (no data, or no owner left)."""
    if not old or not new or old == new:
        return []
    before, after = _table(old, replication, locations), _table(new, replication, locations)
    bounds = sorted({t for ts in (*old.values(), *new.values()) for t in ts})
    pieces: list[RangeMove] = []
    for i, end in enumerate(bounds):
        start = bounds[i - 1]  # the first range wraps from the last bound
        a, b = before.for_token(end), after.for_token(end)
        if set(a) == set(b):
            continue
        for piece in TokenRange(start, end).unwrap():  # one bound: (t, t] is the whole ring
            pieces.append(RangeMove(piece, a, b))
    pieces.sort(key=lambda m: m.token_range.start)
    merged: list[RangeMove] = []
    for m in pieces:
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.token_range.end == m.token_range.start
            and (set(last.old), set(last.new)) == (set(m.old), set(m.new))
        ):
            merged[-1] = RangeMove(TokenRange(last.token_range.start, m.token_range.end), last.old, last.new)
        else:
            merged.append(m)
    return merged


def receivers(move: RangeMove) -> tuple[uuid.UUID, ...]:
    """The nodes that pull ``move``'s range: its gainers, and when the set shrinks (fewer nodes
    than the replication factor) every new replica, since a staying replica may lack a write
    that only the leaving one had, and the smaller set's quorum needs it."""
    return move.gained if len(move.new) >= len(move.old) else move.new


def sources(move: RangeMove, request: Request, alive: Iterable[uuid.UUID]) -> tuple[uuid.UUID, ...]:
    """The replicas a gainer of ``move`` reads the range from (see the module docstring)."""
    up = set(alive)
    gone = set(request.ignore_nodes)  # dead nodes the operator said to ignore: best effort without them
    if request.kind is RequestKind.REMOVE:
        gone.add(request.host_id)
    if request.kind is RequestKind.REPLACE and request.replaced_id is not None:
        gone.add(request.replaced_id)
    lost = move.lost
    if not gone & set(move.old) and lost and len(lost) >= len(move.gained) and up.issuperset(lost):
        return lost
    return tuple(h for h in move.old if h not in gone and not (h in lost and h not in up))


def losers(moves: Iterable[RangeMove], request: Request) -> frozenset[uuid.UUID]:
    """Nodes left holding data of ranges they no longer replicate: they need a cleanup (a node
    that leaves, is removed or is replaced takes its files with it)."""
    gone = {request.host_id} if request.kind in (RequestKind.LEAVE, RequestKind.REMOVE) else set()
    if request.replaced_id is not None:
        gone.add(request.replaced_id)
    return frozenset(h for m in moves for h in m.lost if h not in gone)


def owned_ranges(
    ring: Tokens, host: uuid.UUID, replication: Replication, locations: Mapping[uuid.UUID, Location]
) -> list[TokenRange]:
    """The non-wrapping ranges ``host`` replicates in ``ring``, in token order, merged."""
    if not ring:
        return []
    table = _table(ring, replication, locations)
    out: list[TokenRange] = []
    for i, row in enumerate(table.replicas):
        if host in row:
            out.extend(table.ring.range_ending_at(i).unwrap())
    out.sort(key=lambda r: r.start)
    merged: list[TokenRange] = []
    for r in out:
        if merged and merged[-1].end == r.start:
            merged[-1] = TokenRange(merged[-1].start, r.end)
        else:
            merged.append(r)
    return merged


def kept_ranges(
    found: Rings, host: uuid.UUID, replication: Replication, locations: Mapping[uuid.UUID, Location]
) -> list[TokenRange]:
    """What ``host`` must keep of a vnode keyspace: the ranges it replicates in any ring reads or
    writes use now (sorted, merged)."""
    every = sorted(
        (r for ring in (found.read, *found.writes) for r in owned_ranges(ring, host, replication, locations)),
        key=lambda r: r.start,
    )
    merged: list[TokenRange] = []
    for r in every:
        if merged and merged[-1].end >= r.start:
            merged[-1] = TokenRange(merged[-1].start, max(merged[-1].end, r.end))
        else:
            merged.append(r)
    return merged


def complement(ranges: list[TokenRange]) -> list[TokenRange]:
    """The non-wrapping ranges of the ring not in ``ranges`` (sorted, non-overlapping)."""
    out: list[TokenRange] = []
    position = MIN_TOKEN
    for r in ranges:
        if r.start > position:
            out.append(TokenRange(position, r.start))
        position = max(position, r.end)
    if position < MAX_TOKEN:
        out.append(TokenRange(position, MAX_TOKEN))
    return out
