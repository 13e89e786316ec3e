"""Whether a node joining or leaving would break a keyspace's rack rules (pure; used by admission).

Tablet replicas of an RF-rack-valid keyspace sit one per rack, and a rack list names the racks
its replicas live in. A topology change that takes the last token owner out of a listed rack, or
that changes a DC's rack count under a keyspace whose RF must equal it (``rf_rack_valid_keyspaces``,
or views/indexes on the keyspace), leaves replicas nobody can place: ScyllaDB refuses such a
request when it is made, and so does ``topology.requests.enqueue`` with this predicate.

Only what the change *breaks* is refused: a keyspace that is already RF-rack-invalid (accepted
while the rule was off) does not block unrelated topology changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from tabletdb.schema.model import Catalog, KeyspaceSchema
from tabletdb.schema.rack_rules import ClusterShape, needs_rack_validity, rack_invalid_dc
from tabletdb.topology.states import RequestKind

Location = tuple[str, str]
"""(datacenter, rack) of a node."""


def shape_after(
    owners: Mapping[uuid.UUID, Location], kind: RequestKind, host: uuid.UUID, where: Location
) -> ClusterShape:
    """The token owners' shape once ``host`` (at ``where``) has joined or left."""
    locations = dict(owners)
    if kind is RequestKind.JOIN:
        locations[host] = where
    elif kind in (RequestKind.LEAVE, RequestKind.REMOVE):
        locations.pop(host, None)
    return ClusterShape.of(locations.values())


def _broken(ks: KeyspaceSchema, before: ClusterShape, after: ClusterShape, strict: bool) -> str | None:
    definition = ks.definition
    if not definition.uses_tablets:
        return None
    for dc, value in definition.replication.options:
        if isinstance(value, tuple):
            gone = [r for r in value if r in before.racks_in(dc) and r not in after.racks_in(dc)]
            if gone:
                name = definition.name
                return f"keyspace {name} lists rack {gone[0]} of datacenter {dc}, which would have no nodes"
    if not (strict or needs_rack_validity(ks)) or rack_invalid_dc(definition, before) is not None:
        return None
    found = rack_invalid_dc(definition, after)
    if found is None:
        return None
    dc, rf, racks = found
    name = definition.name
    return f"keyspace {name} would have replication factor {rf} in datacenter {dc} with {racks} rack(s)"


def rack_change_error(
    catalog: Catalog,
    owners: Mapping[uuid.UUID, Location],
    kind: RequestKind,
    host: uuid.UUID,
    where: Location | None,
    rf_rack_valid_keyspaces: bool,
) -> str | None:
    """Why ``kind`` of ``host`` may not be admitted (ScyllaDB's words first), or None.

    ``owners``: (dc, rack) of every token-owning node; ``where``: the node's own location (for a
    join; None when not known yet, which checks nothing)."""
    if kind not in (RequestKind.JOIN, RequestKind.LEAVE, RequestKind.REMOVE):
        return None
    location = where if where is not None else owners.get(host)
    if location is None:
        return None
    before = ClusterShape.of(owners.values())
    after = shape_after(owners, kind, host, location)
    for name in sorted(catalog.keyspaces):
        why = _broken(catalog.keyspaces[name], before, after, rf_rack_valid_keyspaces)
        if why is None:
            continue
        if kind is RequestKind.JOIN:
            return (
                "node join rejected: Cannot add the node because its addition would make some existing "
                f"keyspace RF-rack-invalid ({why}); add it to an existing rack instead"
            )
        op = "decommission" if kind is RequestKind.LEAVE else "remove"
        return (
            f"node {op} rejected: Cannot remove the node because its removal would make some existing "
            f"keyspace RF-rack-invalid ({why}); add a node to its rack first"
        )
    return None
