"""``system_distributed.view_build_status`` through the real driver: the coordinator of a CREATE
MATERIALIZED VIEW / CREATE INDEX records its fill in group0, so every node shows one SUCCESS row
per host once the CREATE returned — the other node too, and after a restart — and the
``system`` build tables agree with it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from tests.harness.clients import pinned_cluster
from tests.harness.node import NodeFactory, TestNode

WAIT = 60.0


def _until(check: Callable[[], Any]) -> Any:
    """Poll ``check`` until it returns something true (a peer applies group0 entries a little
    after the coordinator); its last answer otherwise."""
    deadline = time.monotonic() + WAIT
    while True:
        answer = check()
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def _statuses(node: TestNode) -> set[tuple[str, uuid.UUID, str]]:
    with pinned_cluster(node) as cluster:
        rows = cluster.connect().execute(
            "SELECT keyspace_name, view_name, host_id, status FROM system_distributed.view_build_status"
        )
        return {(r.view_name, r.host_id, r.status) for r in rows if r.keyspace_name == "vbs"}


def _host_id(node: TestNode) -> uuid.UUID:
    with pinned_cluster(node) as cluster:
        host_id: uuid.UUID = cluster.connect().execute("SELECT host_id FROM system.local").one().host_id
        return host_id


def test_every_node_shows_each_hosts_build_status_and_keeps_it_over_a_restart(
    node_factory: NodeFactory,
) -> None:
    first, second = node_factory.start_cluster(2)
    hosts = {_host_id(first), _host_id(second)}
    with pinned_cluster(first) as cluster:
        s = cluster.connect()
        s.execute(
            "CREATE KEYSPACE vbs WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 2} AND tablets = {'enabled': false}"
        )
        s.execute("CREATE TABLE vbs.t (k int PRIMARY KEY, v int, w int)")
        for k in range(20):
            s.execute("INSERT INTO vbs.t (k, v, w) VALUES (%s, %s, %s)", (k, k % 3, k % 5))
        s.execute(
            "CREATE MATERIALIZED VIEW vbs.by_v AS SELECT * FROM vbs.t WHERE v IS NOT NULL AND k IS NOT NULL "
            "PRIMARY KEY (v, k)"
        )
        s.execute("CREATE INDEX t_w ON vbs.t (w)")
    expected = {(view, host, "SUCCESS") for view in ("by_v", "t_w_index") for host in hosts}
    assert _statuses(first) == expected
    assert _until(lambda: _statuses(second) == expected), _statuses(second)

    with pinned_cluster(second) as cluster:
        s = cluster.connect()
        built = s.execute("SELECT view_name FROM system.built_views WHERE keyspace_name = 'vbs'")
        assert {r.view_name for r in built} == {"by_v", "t_w_index"}
        assert list(s.execute("SELECT * FROM system.views_builds_in_progress")) == []
        statuses = s.execute(
            "SELECT status FROM system_distributed.view_build_status "
            "WHERE keyspace_name = 'vbs' AND view_name = 'by_v'"
        )
        assert [r.status for r in statuses] == ["SUCCESS", "SUCCESS"]
        assert s.execute("SELECT count(*) FROM vbs.by_v WHERE v = 1").one()[0] == 7  # really filled

    second.restart()
    assert _until(lambda: _statuses(second) == expected), _statuses(second)
    with pinned_cluster(first) as cluster:
        s = cluster.connect()
        s.execute("DROP MATERIALIZED VIEW vbs.by_v")
    assert _until(lambda: {v for v, _, _ in _statuses(second)} == {"t_w_index"}), _statuses(second)
