"""A ring change waits for a CDC generation that fits the ring after it (issue 16, pure).

Each base replica writes a write's log row into its own copy of the log, under the stream the
generation operating at the write's time gives the base token. Those rows are read back from
the stream token's replicas. A generation whose ranges are the vnodes of the ring (or split
them further) puts every stream in its base tokens' vnode, so the two sets of replicas are one.
A join adds tokens: the old generation's ranges no longer fit the new ring, and a row written
under an old stream while writes go to the new ring would sit on the base's replicas but be read
from the stream's, which may be other nodes.

ScyllaDB's answer, followed here: the generation for the ring after the change operates before
writes use that ring. The group0 leader commits it (``node.group0_shell.cdc_generations``, on
the coordinator's turns, for the members' ring, which includes a joiner's tokens) to operate a
few seconds after it is decided; the topology coordinator enters a request's vnode phase only
once the latest generation's ranges split every vnode of the target ring and its time has come
(``waits``). A decommission or removal only merges vnodes, which the old generation already
splits: nothing waits. Tablet keyspaces have one stream per tablet and are not concerned.
"""

from __future__ import annotations

from dataclasses import dataclass

from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.state import TopologyState, Transition


@dataclass(frozen=True)
class LatestGeneration:
    """The latest CDC generation of vnode keyspaces, when a vnode CDC table exists."""

    time_us: int
    range_ends: frozenset[int]


def waits(
    t: TopologyState,
    tr: Transition,
    tokens: vr.Tokens,
    latest: LatestGeneration | None,
    wall_us: int,
) -> str:
    """Why the request's vnode phase may not begin yet ("" when it may)."""
    if latest is None:
        return ""
    target = vr.target_ring(tr.request, vr.owners(t, tokens), tokens)
    ends = {token for ring_tokens in target.values() for token in ring_tokens}
    what = f"{tr.request.kind.value} of {tr.request.host_id}"
    if not ends <= latest.range_ends:
        return f"{what} waits for a CDC generation built for the new ring"
    if latest.time_us > wall_us:
        return f"{what} waits for the new ring's CDC generation to operate (at {latest.time_us} µs)"
    return ""
