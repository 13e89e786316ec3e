"""system.topology through a real driver on a real node: the row for the node, ScyllaDB's columns."""

from __future__ import annotations

import time
from typing import Any


def test_system_topology_shows_the_node_as_normal(session: Any) -> None:
    local = session.execute("SELECT host_id, data_center, rack FROM system.local").one()
    rows = list(session.execute("SELECT * FROM system.topology"))
    assert [r.host_id for r in rows] == [local.host_id]
    row = rows[0]
    assert row.key == "topology" and row.node_state == "normal" and row.topology_request is None
    assert (row.datacenter, row.rack) == (local.data_center, local.rack)
    assert row.num_tokens == len(row.tokens) and row.shard_count >= 1
    assert row.transition_state is None and row.version == 0 and "TABLETS" in row.enabled_features
    one = session.execute(
        "SELECT node_state FROM system.topology WHERE key = 'topology' AND host_id = %s", [local.host_id]
    )
    assert one.one().node_state == "normal"
    assert list(session.execute("SELECT * FROM system.topology_requests")) == []


def test_every_member_of_a_cluster_is_a_normal_row(node_factory: Any) -> None:
    from tests.harness.clients import pinned_cluster

    nodes = node_factory.start_cluster(3)
    with pinned_cluster(nodes[1]) as cluster:  # system tables answer for the node asked
        session = cluster.connect()
        deadline = time.monotonic() + 60  # a liveness bound: the node applies the last join
        while True:
            rows = list(session.execute("SELECT host_id, node_state, version FROM system.topology"))
            if len(rows) == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        peers = {r.host_id for r in session.execute("SELECT host_id FROM system.peers")}
        local = session.execute("SELECT host_id FROM system.local").one().host_id
    assert {r.host_id for r in rows} == peers | {local} and len(rows) == 3
    assert {r.node_state for r in rows} == {"normal"}
