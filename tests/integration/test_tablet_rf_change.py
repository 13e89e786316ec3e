"""ALTER KEYSPACE changing a tablets keyspace's RF on real node processes (issue #15 item 4).

The ALTER is a topology request: it answers once every tablet has its new replicas (filled by
streaming the old replicas' files), and only then does the schema show the new RF. RF 1 -> 2 -> 3
on a loaded keyspace with a CDC table: afterwards every node alone (the two others stopped)
returns every row at CL=ONE, and the CDC log's tablets have their base's replicas. RF 3 -> 2
drops one replica per tablet and deletes its file. ScyllaDB's refusals come with its words.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for

ROWS = 3000
ALTER_TIMEOUT = 300.0


def _alter(session: Any, dc: str, rf: int) -> None:
    session.execute(
        f"ALTER KEYSPACE rfk WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': {rf}}}",
        timeout=ALTER_TIMEOUT,
    )


def _load(session: Any) -> None:
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    insert = session.prepare("INSERT INTO rfk.t (k, v) VALUES (?, ?)")
    insert.consistency_level = ConsistencyLevel.ONE
    results = execute_concurrent_with_args(
        session, insert, [(k, f"v{k}") for k in range(ROWS)], concurrency=32
    )
    assert all(ok for ok, _ in results)


def _tablets(session: Any, table: str) -> list[tuple[int, list[tuple[Any, int]]]]:
    rows = run(
        session,
        "SELECT last_token, replicas, stage FROM system.tablets "
        f"WHERE keyspace_name = 'rfk' AND table_name = '{table}'",
        "ONE",
    )
    assert rows and all(r.stage is None for r in rows), "a tablet is still in transition"
    return sorted((r.last_token, [(h, s) for h, s in r.replicas]) for r in rows)


def _files(node: TestNode, tablet_id: int, shard: int) -> list[Path]:
    return list(node.workdir.glob(f"**/rfk/t-*/shard-{shard}/tablet-{tablet_id}.db"))


def _every_row_alone(node: TestNode) -> bool:
    try:
        with pinned(node) as s:
            return len(run(s, "SELECT k, v FROM rfk.t", "ONE", fetch_size=500)) == ROWS
    except Exception:  # the failure detector may still call the stopped nodes up for a moment
        return False


@pytest.mark.slow
def test_rf_1_2_3_then_each_node_alone_has_every_row_and_3_to_2_drops_files(
    node_factory: NodeFactory,
) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS, racks=["r1", "r2", "r3"])
    with pinned(nodes[0]) as s:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(
            f"CREATE KEYSPACE rfk WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 1}} "
            "AND tablets = {'enabled': true}"
        )
        s.execute("CREATE TABLE rfk.t (k int PRIMARY KEY, v text) WITH tablets = {'min_tablet_count': 4}")
        # a floor of its own: without it the per-shard floor (tablets_initial_scale_factor) drops
        # as the RF rises and the table would merge while this test reads its tablets
        s.execute(
            "CREATE TABLE rfk.c (k int PRIMARY KEY, v int) "
            "WITH cdc = {'enabled': true} AND tablets = {'min_tablet_count': 8}"
        )
        _load(s)
        for k in range(50):
            run(s, "INSERT INTO rfk.c (k, v) VALUES (%s, %s)", "ONE", (k, k))
        from cassandra import InvalidRequest

        with pytest.raises(
            InvalidRequest, match="Only one DC's RF can be changed at a time and not by more than 1"
        ):
            _alter(s, dc, 3)
        for rf in (2, 3):
            _alter(s, dc, rf)
            replication = run(
                s, "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = 'rfk'", "ONE"
            )
            assert replication[0].replication[dc] == str(rf)
            for table in ("t", "c", "c_scylla_cdc_log"):
                for _, replicas in _tablets(s, table):
                    assert len({h for h, _ in replicas}) == rf
            assert [r for _, r in _tablets(s, "c")] == [r for _, r in _tablets(s, "c_scylla_cdc_log")]
            described = s.execute("DESC KEYSPACE rfk").one()
            assert f"'{dc}': '{rf}'" in described.create_statement
    for alone in nodes:
        others = [n for n in nodes if n is not alone]
        for n in others:
            n.stop()
        wait_for(lambda alone=alone: _every_row_alone(alone), f"every row from {alone.host} alone")  # type: ignore[misc]
        for n in others:
            n.start()
    hosts = {}
    for node in nodes:
        with pinned(node) as p:
            hosts[run(p, "SELECT host_id FROM system.local", "ONE")[0].host_id] = node
    with pinned(nodes[0]) as s:
        wait_for(
            lambda: len(run(s, "SELECT k FROM rfk.t", "ALL")) == ROWS, "every row at ALL with all nodes up"
        )
        before = _tablets(s, "t")
        _alter(s, dc, 2)
        after = _tablets(s, "t")
        assert len(run(s, "SELECT k FROM rfk.t", "ALL")) == ROWS
    deadline = time.monotonic() + 60
    for tablet_id, ((_, old), (_, new)) in enumerate(zip(before, after, strict=True)):
        (gone,) = set(old) - set(new)
        for host_id, shard in new:
            assert _files(hosts[host_id], tablet_id, shard), (
                f"tablet {tablet_id} kept on {host_id} has no file"
            )
        while _files(hosts[gone[0]], tablet_id, gone[1]) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _files(hosts[gone[0]], tablet_id, gone[1]), (
            f"tablet {tablet_id} dropped but its file stayed"
        )


def test_rf_up_and_down_through_the_driver_which_sees_the_new_rf_when_alter_answers(
    node_factory: NodeFactory,
) -> None:
    """The quick one for ``make test``: 2 nodes, a few rows, RF 1 -> 2 -> 1 through a driver with
    schema metadata on (it waits for schema agreement after the ALTER and refreshes the
    keyspace's metadata, which must already show the new RF)."""
    nodes = node_factory.start_cluster(2, options=OPTIONS)
    with scylla_cluster(nodes) as cluster:
        s = cluster.connect()
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(
            f"CREATE KEYSPACE rfk WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 1}} "
            "AND tablets = {'enabled': true}"
        )
        s.execute("CREATE TABLE rfk.t (k int PRIMARY KEY, v text) WITH tablets = {'min_tablet_count': 2}")
        for k in range(40):
            run(s, "INSERT INTO rfk.t (k, v) VALUES (%s, %s)", "ONE", (k, f"v{k}"))
        _alter(s, dc, 2)
        assert cluster.metadata.keyspaces["rfk"].replication_strategy.dc_replication_factors[dc] == 2
        assert all(len(replicas) == 2 for _, replicas in _tablets(s, "t"))
        assert len(run(s, "SELECT k FROM rfk.t", "ALL")) == 40
        requests = run(s, "SELECT * FROM system.topology_requests", "ONE")
        (done,) = [r for r in requests if r.request_type == "keyspace_rf_change"]
        assert done.done and done.error is None and done.new_keyspace_rf_change_ks_name == "rfk"
        assert done.new_keyspace_rf_change_data[dc] == "2"
        _alter(s, dc, 1)
        assert cluster.metadata.keyspaces["rfk"].replication_strategy.dc_replication_factors[dc] == 1
        assert all(len(replicas) == 1 for _, replicas in _tablets(s, "t"))
        assert len(run(s, "SELECT k FROM rfk.t", "ALL")) == 40


@pytest.mark.slow
def test_an_rf_change_a_dead_node_would_need_fails_with_the_reason_and_keeps_the_old_rf(
    node_factory: NodeFactory,
) -> None:
    """RF 2 -> 3 on three nodes, one of them stopped: no live node can take the third replica
    (or, if the coordinator still sees it up, streaming to it fails until the request rolls
    back). The ALTER answers InvalidRequest with the reason, the schema and the tablets keep RF 2,
    and once the node is back the same ALTER succeeds."""
    from cassandra import InvalidRequest

    nodes = node_factory.start_cluster(3, options=OPTIONS)
    with pinned(nodes[0]) as s:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(
            f"CREATE KEYSPACE rfk WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 2}} "
            "AND tablets = {'enabled': true}"
        )
        s.execute("CREATE TABLE rfk.t (k int PRIMARY KEY, v text) WITH tablets = {'min_tablet_count': 2}")
        for k in range(20):
            run(s, "INSERT INTO rfk.t (k, v) VALUES (%s, %s)", "ALL", (k, f"v{k}"))
        nodes[2].stop()
        wait_for(lambda: _seen_down(nodes[:2], nodes[2]), "the stopped node to be seen down")
        with pytest.raises(
            InvalidRequest, match="ALTER KEYSPACE rfk failed and its replication is unchanged"
        ):
            _alter(s, dc, 3)
        replication = run(
            s, "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = 'rfk'", "ONE"
        )
        assert replication[0].replication[dc] == "2"
        assert all(len(replicas) == 2 for _, replicas in _tablets(s, "t"))
        nodes[2].start()
        wait_for(lambda: _altered(s, dc, 3), "the ALTER to succeed once the node is back")
        assert all(len(replicas) == 3 for _, replicas in _tablets(s, "t"))
        assert len(run(s, "SELECT k FROM rfk.t", "ALL")) == 20


def _altered(session: Any, dc: str, rf: int) -> bool:
    from cassandra import InvalidRequest

    try:
        _alter(session, dc, rf)
    except InvalidRequest:  # the coordinator may not see the restarted node up yet
        return False
    return True


def _seen_down(watchers: list[TestNode], node: TestNode) -> bool:
    """Whether every watcher's failure detector calls ``node`` down (REST ``gossiper/endpoint/down``)."""
    for watcher in watchers:
        with urllib.request.urlopen(watcher.api_url + "/gossiper/endpoint/down", timeout=10) as response:
            if node.host not in json.loads(response.read()):
                return False
    return True
