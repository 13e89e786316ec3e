"""A DDL that group0 cannot take in time answers WriteTimeout naming what it waited for, never
ServerError (issue #15: DDL beside co-location rounds timed out as ServerError).

Three nodes, two killed -9: the survivor has no group0 quorum, so a CREATE TABLE through it can
neither get its turn nor be committed. After the node's budget for a schema change (30 s) the
driver gets a WriteTimeout (SIMPLE, QUORUM, none of the 2 voters it needed) whose message says
what the change was still waiting for. Once the nodes are back the same statement succeeds
(nothing half-made stands in its way) and every node has the table.
"""

from __future__ import annotations

import pytest
from cassandra import ConsistencyLevel, WriteTimeout, WriteType

from tests.harness.node import NodeFactory
from tests.harness.topology_workload import wait_for
from tests.integration.test_replicated_data import pinned, run

CREATE = "CREATE TABLE dt.t (k int PRIMARY KEY)"


@pytest.mark.timeout(600)
def test_a_ddl_without_a_group0_quorum_is_a_write_timeout_saying_what_it_waited_for(
    node_factory: NodeFactory,
) -> None:
    nodes = node_factory.start_cluster(3)
    with pinned(nodes[0]) as s:
        s.execute(
            "CREATE KEYSPACE dt WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
        )
    for node in nodes[1:]:
        node.kill()
    with pinned(nodes[0]) as s, pytest.raises(WriteTimeout) as timed_out:
        s.execute(CREATE)
    error = timed_out.value
    assert error.consistency == ConsistencyLevel.QUORUM and error.write_type == WriteType.SIMPLE
    assert error.required_responses == 2 and error.received_responses == 0
    assert "schema change not applied within 30s: still waiting for" in str(error), str(error)
    assert "ServerError" not in str(error)
    for node in nodes[1:]:
        node.start()

    def created() -> bool:
        with pinned(nodes[0]) as s:
            try:
                s.execute(CREATE)
            except Exception as exc:  # an AlreadyExists means the timed-out one took effect after all
                return "already exists" in str(exc)
        return True

    wait_for(created, "the CREATE TABLE to succeed once group0 has its quorum again")
    for node in nodes:
        with pinned(node) as s:
            wait_for(
                lambda s=s: bool(
                    run(
                        s,
                        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'dt'",
                        "ONE",
                    )
                ),
                f"{node.host} to have dt.t",
            )
