"""A join that would make a keyspace RF-rack-invalid is refused (issue #15 item 6), on real nodes.

Two nodes in racks r1 and r2, both with ``rf_rack_valid_keyspaces: true``, and a tablets keyspace
at RF=2: one replica per rack, valid. A third node in a new rack r3 would leave RF=2 over three
racks, so the leader refuses its join before recording it: the node exits 1 with ScyllaDB's
words and the cluster keeps its two members. A node in an existing rack joins as usual.
(Removals that would break a keyspace's racks: ``test_tablet_racks.py``.)
"""

from __future__ import annotations

from tests.harness.node import NodeFactory
from tests.harness.process import wait_for_exit
from tests.harness.topology_workload import wait_for
from tests.integration.test_replicated_data import OPTIONS, pinned, run

STRICT = {**OPTIONS, "rf_rack_valid_keyspaces": "true"}


def test_a_join_in_a_new_rack_that_breaks_a_keyspace_is_refused(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(2, options=STRICT, racks=["r1", "r2"])
    with pinned(nodes[0]) as s:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(
            f"CREATE KEYSPACE racked WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 2}} "
            "AND tablets = {'enabled': true}"
        )
    newcomer = node_factory.create(seeds=[nodes[0].host], options={**STRICT, "rack": "r3"})
    newcomer.start(wait=False)
    assert wait_for_exit(newcomer.process, 120) == 1
    tail = newcomer.log_tail()
    assert (
        "node join rejected: Cannot add the node because its addition would make some existing keyspace "
        "RF-rack-invalid" in tail
    ), tail
    with pinned(nodes[0]) as s:
        assert len(run(s, "SELECT peer FROM system.peers", "ONE")) == 1

    same_rack = node_factory.create(seeds=[nodes[0].host], options={**STRICT, "rack": "r2"})
    same_rack.start()
    with pinned(nodes[0]) as s:
        wait_for(lambda: len(run(s, "SELECT peer FROM system.peers", "ONE")) == 2, "the r2 node as a peer")
