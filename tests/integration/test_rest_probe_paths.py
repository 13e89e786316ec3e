"""The REST paths ScyllaDB's own test tools probe to decide whether a node has a REST API
(``GET /column_family/name/keyspace``: cqlpy's and alternator's nodetool.py), answered from the
real node's catalog."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.harness.clients import pinned_cluster
from tests.harness.node import TestNode


def _get(node: TestNode, path: str) -> Any:
    with urllib.request.urlopen(node.api_url + path, timeout=30) as response:
        assert response.status == 200
        return json.loads(response.read())


def test_column_family_names_answer_the_probe_with_keyspaces_and_tables(node: TestNode) -> None:
    with pinned_cluster(node) as cluster:
        s = cluster.connect()
        nts = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        s.execute(f"CREATE KEYSPACE probe WITH replication = {nts}")
        s.execute("CREATE TABLE probe.t (k int PRIMARY KEY, v int)")
        s.execute(
            "CREATE MATERIALIZED VIEW probe.by_v AS SELECT * FROM probe.t "
            "WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)"
        )
    keyspaces = _get(node, "/column_family/name/keyspace")
    assert "probe" in keyspaces and "system" in keyspaces and keyspaces == sorted(keyspaces)
    tables = _get(node, "/column_family/name")
    assert {"probe:t", "probe:by_v"} <= set(tables)
