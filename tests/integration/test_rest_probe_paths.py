"""The REST paths ScyllaDB's own test tools probe to decide whether a node has a REST API
(``GET /column_family/name/keyspace``: cqlpy's and alternator's nodetool.py), answered from the
real node's catalog."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

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


def _call(node: TestNode, method: str, path: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        node.api_url + path, method=method, data=b"" if method != "GET" else None
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
            return response.status, json.loads(body) if body else None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_snapshots_path_with_a_slash_takes_named_tables_and_skips_the_flush(node: TestNode) -> None:
    with pinned_cluster(node) as cluster:
        s = cluster.connect()
        nts = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        s.execute(f"CREATE KEYSPACE snapcf WITH replication = {nts}")
        s.execute("CREATE TABLE snapcf.t (k int PRIMARY KEY, v int)")
        s.execute("CREATE TABLE snapcf.u (k int PRIMARY KEY, v int)")
        s.execute(
            "CREATE MATERIALIZED VIEW snapcf.by_v AS SELECT * FROM snapcf.t "
            "WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)"
        )
        for k in range(20):
            s.execute(f"INSERT INTO snapcf.t (k, v) VALUES ({k}, {k})")
            s.execute(f"INSERT INTO snapcf.u (k, v) VALUES ({k}, {k})")
    status, taken = _call(node, "POST", "/storage_service/snapshots/?tag=cf1&kn=snapcf&cf=t")
    assert status == 200, taken
    assert {f["table"] for f in taken["files"]} == {"t", "by_v"}
    assert sum(f["rows"] for f in taken["files"] if f["table"] == "t") == 20
    status, skipped = _call(node, "POST", "/storage_service/snapshots/?tag=cf2&kn=snapcf&cf=u&sf=true")
    assert status == 200 and {f["table"] for f in skipped["files"]} == {"u"}
    assert _call(node, "POST", "/storage_service/snapshots/?tag=cf3&kn=snapcf,system&cf=t") == (
        400,
        "Only one keyspace allowed when specifying a column family",
    )
    assert _call(node, "POST", "/storage_service/snapshots/?tag=cf3&cf=t") == (
        400,
        "The keyspace of column families must be specified",
    )
    status, text = _call(node, "POST", "/storage_service/snapshots/?tag=cf3&kn=snapcf&cf=by_v")
    assert status == 400 and "Run snapshot on the base table instead" in text
    assert _call(node, "DELETE", "/storage_service/snapshots/?tag=cf1") == (200, {"removed": True})


def test_native_transport_and_automatic_compaction_switches(node: TestNode) -> None:
    from cassandra.cluster import NoHostAvailable

    from tests.integration.test_nodetool import nodetool, ok

    with pinned_cluster(node) as cluster:
        s = cluster.connect()
        nts = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        s.execute(f"CREATE KEYSPACE switch WITH replication = {nts}")
        s.execute("CREATE TABLE switch.t (k int PRIMARY KEY, v int)")
    assert _call(node, "GET", "/column_family/autocompaction/switch:t") == (200, True)
    assert ok(nodetool(node, "disableautocompaction", "switch")) == []
    assert _call(node, "GET", "/column_family/autocompaction/switch:t") == (200, False)
    assert _call(node, "POST", "/column_family/autocompaction/switch:t") == (200, None)
    assert _call(node, "GET", "/column_family/autocompaction/switch:t") == (200, True)
    assert _call(node, "DELETE", "/storage_service/auto_compaction/switch?cf=t") == (200, None)
    assert _call(node, "GET", "/column_family/autocompaction/switch:t") == (200, False)
    ok(nodetool(node, "enableautocompaction"))
    assert _call(node, "GET", "/column_family/autocompaction/switch:t") == (200, True)
    status, text = _call(node, "GET", "/column_family/autocompaction/switch:nope")
    assert status == 400 and "nope" in text

    assert ok(nodetool(node, "statusbinary")) == ["running"]
    ok(nodetool(node, "disablebinary"))
    assert _call(node, "GET", "/storage_service/native_transport") == (200, False)
    assert ok(nodetool(node, "statusbinary")) == ["not running"]
    with pytest.raises(NoHostAvailable), pinned_cluster(node) as cluster:
        cluster.connect()
    ok(nodetool(node, "enablebinary"))
    assert ok(nodetool(node, "statusbinary")) == ["running"]
    with pinned_cluster(node) as cluster:
        assert cluster.connect().execute("SELECT k FROM switch.t").all() == []
