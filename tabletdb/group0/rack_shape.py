"""The token-owning nodes of group0's state per datacenter and rack, as DDL validation needs them.

A tablets keyspace must fit the nodes that own tokens now (``schema.rack_rules``): members in
topology state ``normal`` (a member without a topology record was admitted by the direct join,
which makes it normal). Joining nodes do not count until they are normal, and nodes that left
are no members; that is ScyllaDB's "token-owning nodes".
"""

from __future__ import annotations

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.schema.rack_rules import ClusterShape
from tabletdb.topology.rack_admission import rack_change_error
from tabletdb.topology.requests import RackCheck
from tabletdb.topology.state import Request
from tabletdb.topology.states import NodeState


def token_owners_shape(cluster: ClusterState) -> ClusterShape:
    """(datacenter, rack) of every token-owning member."""
    nodes = cluster.topology_state.nodes
    return ClusterShape.of(
        (record.datacenter, record.rack)
        for host, record in cluster.topology.members.items()
        if host not in nodes or nodes[host].state is NodeState.NORMAL
    )


def rack_check(cluster: ClusterState, rf_rack_valid_keyspaces: bool) -> RackCheck:
    """The admission predicate of topology requests on ``cluster`` (``topology.rack_admission``):
    token owners' locations and the catalog from group0, the joiner's location from its member
    record when it has one."""
    nodes = cluster.topology_state.nodes
    members = cluster.topology.members
    owners = {
        host: (record.datacenter, record.rack)
        for host, record in members.items()
        if host not in nodes or nodes[host].state is NodeState.NORMAL
    }

    def check(request: Request) -> str | None:
        record = members.get(request.host_id)
        where = None if record is None else (record.datacenter, record.rack)
        catalog = cluster.metadata.catalog
        return rack_change_error(
            catalog, owners, request.kind, request.host_id, where, rf_rack_valid_keyspaces
        )

    return check
