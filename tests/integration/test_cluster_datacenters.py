"""`'replication_factor': N` means every datacenter of the cluster, whichever node is asked.

One node in dc1 and one in dc2: the same CREATE KEYSPACE makes the same keyspace through either
node, naming the other node's datacenter is accepted, and a datacenter the cluster does not have
is refused with ScyllaDB's message.
"""

from __future__ import annotations

import pytest

from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, pinned, run


def test_replication_factor_expands_to_every_datacenter_of_the_cluster(node_factory: NodeFactory) -> None:
    first = node_factory.create(options={**OPTIONS, "dc": "dc1"})
    first.start()
    second = node_factory.create(seeds=[first.host], options={**OPTIONS, "dc": "dc2"})
    second.start()
    for node, name in ((first, "via_dc1"), (second, "via_dc2")):
        with pinned(node) as s:
            run(
                s,
                f"CREATE KEYSPACE {name} WITH replication = "
                "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}",
                "ONE",
            )
    with pinned(first) as s:
        run(
            s,
            "CREATE KEYSPACE names_dc2 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc2': 1}",
            "ONE",
        )
        rows = run(s, "SELECT keyspace_name, replication FROM system_schema.keyspaces", "ONE")
        replication = {r.keyspace_name: dict(r.replication) for r in rows}
        nts = "org.apache.cassandra.locator.NetworkTopologyStrategy"
        for name in ("via_dc1", "via_dc2"):
            assert replication[name] == {"class": nts, "dc1": "1", "dc2": "1"}, replication[name]
        assert replication["names_dc2"] == {"class": nts, "dc2": "1"}

        from cassandra.protocol import ConfigurationException

        with pytest.raises(ConfigurationException, match=r"Unrecognized strategy option \{dc3\}"):
            run(
                s,
                "CREATE KEYSPACE bad WITH replication = {'class': 'NetworkTopologyStrategy', 'dc3': 1}",
                "ONE",
            )
        # both datacenters hold a replica: a write at EACH_QUORUM needs one in each
        run(s, "CREATE TABLE via_dc2.t (k int PRIMARY KEY, v int)", "ONE")
        run(s, "INSERT INTO via_dc2.t (k, v) VALUES (1, 1)", "EACH_QUORUM")
    with pinned(second) as s:
        assert [r.v for r in run(s, "SELECT v FROM via_dc2.t WHERE k = 1", "LOCAL_ONE")] == [1]
