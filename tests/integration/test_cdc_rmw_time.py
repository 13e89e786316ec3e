"""The CDC write-time leeway applies to read-modify-writes too (issue 16).

List element updates and removals by value read the list before they write; on a replicated
table they run as a Paxos round. A CDC write stamped more than the leeway ahead of the clock is
refused with ScyllaDB's error before anything is read or written, whichever path it takes, and a
batch is refused whole; one within the leeway is logged like any other write.
"""

from __future__ import annotations

import time

import pytest
from cassandra import InvalidRequest

from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, pinned, run


def test_read_modify_writes_beyond_the_leeway_are_refused(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(2, options=OPTIONS)
    with pinned(nodes[0]) as s:
        s.execute(
            "CREATE KEYSPACE rw WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 2} AND tablets = {'initial': 2}"
        )
        s.execute("CREATE TABLE rw.t (k int PRIMARY KEY, l list<int>) WITH cdc = {'enabled': true}")
        s.execute("CREATE TABLE rw.plain (k int PRIMARY KEY, v int)")
        run(s, "UPDATE rw.t SET l = [1, 2, 1] WHERE k = 0", "ALL")
        ahead = time.time_ns() // 1000 + 60_000_000
        for statement in (
            f"UPDATE rw.t USING TIMESTAMP {ahead} SET l[0] = 5 WHERE k = 0",
            f"UPDATE rw.t USING TIMESTAMP {ahead} SET l = l - [1] WHERE k = 0",
            f"DELETE l[1] FROM rw.t USING TIMESTAMP {ahead} WHERE k = 0",
            "BEGIN UNLOGGED BATCH INSERT INTO rw.plain (k, v) VALUES (0, 0); "
            f"UPDATE rw.t USING TIMESTAMP {ahead} SET l[0] = 5 WHERE k = 0; APPLY BATCH",
        ):
            with pytest.raises(InvalidRequest, match='cdc: attempted to get a stream "from the future"'):
                s.execute(statement)
        assert [r.l for r in run(s, "SELECT l FROM rw.t WHERE k = 0", "ALL")] == [[1, 2, 1]]
        assert run(s, "SELECT * FROM rw.plain", "ALL") == []  # none of the batch
        assert len(run(s, 'SELECT "cdc$operation" FROM rw.t_scylla_cdc_log', "ALL")) == 1

        run(s, "UPDATE rw.t SET l = l - [1] WHERE k = 0", "QUORUM")  # within the leeway: logged
        rows = run(s, 'SELECT "cdc$deleted_elements_l" FROM rw.t_scylla_cdc_log', "ALL")
        assert sorted(len(r.cdc_deleted_elements_l or ()) for r in rows) == [0, 2]
        assert [r.l for r in run(s, "SELECT l FROM rw.t WHERE k = 0", "ALL")] == [[2]]
