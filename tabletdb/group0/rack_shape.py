"""The token-owning nodes of group0's state per datacenter and rack, as DDL validation needs them.

A tablets keyspace must fit the nodes that own tokens now (``schema.rack_rules``): members in
topology state ``normal`` (a member without a topology record was admitted by the direct join,
which makes it normal). Joining nodes do not count until they are normal, and nodes that left
are no members; that is ScyllaDB's "token-owning nodes".
"""

from __future__ import annotations

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.schema.rack_rules import ClusterShape
from tabletdb.topology.states import NodeState


def token_owners_shape(cluster: ClusterState) -> ClusterShape:
    """(datacenter, rack) of every token-owning member."""
    nodes = cluster.topology_state.nodes
    return ClusterShape.of(
        (record.datacenter, record.rack)
        for host, record in cluster.topology.members.items()
        if host not in nodes or nodes[host].state is NodeState.NORMAL
    )
