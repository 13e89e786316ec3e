"""ScyllaDB's virtual tables that tools read, through the real driver: ``system.config`` (read,
and UPDATE of live keys with ScyllaDB's refusals), ``token_ring``, ``runtime_info``,
``protocol_servers``, ``snapshots`` and ``one_row``. Every row is checked against what the node
really has: its command line, its ring and tablets, its listeners, its snapshot files."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import InvalidRequest, WriteFailure

from tests.harness.clients import run_cqlsh, scylla_cluster
from tests.harness.node import TestNode


@pytest.fixture(scope="module")
def session(node: TestNode) -> Iterator[Any]:
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute(
            "CREATE KEYSPACE vt_v WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 1} AND tablets = {'enabled': false}"
        )
        s.execute(
            "CREATE KEYSPACE vt_t WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 1} AND tablets = {'initial': 4}"
        )
        s.execute("CREATE TABLE vt_t.a (k int PRIMARY KEY, v int)")
        s.execute("CREATE TABLE vt_v.a (k int PRIMARY KEY, v int)")
        yield s


def _config(session: Any) -> dict[str, Any]:
    return {r.name: r for r in session.execute("SELECT name, type, source, status, value FROM system.config")}


def test_config_rows_say_value_type_and_where_each_came_from(session: Any, node: TestNode) -> None:
    rows = _config(session)
    port = rows["native_transport_port"]
    assert (port.type, port.source, port.status) == ("integer", "cli", "Used")
    assert json.loads(port.value) == node.port
    assert json.loads(rows["listen_address"].value) == node.host
    name = rows["cluster_name"]
    assert (name.source, json.loads(name.value)) == ("default", "Test Cluster")
    assert name.value.startswith('"')  # strings appear as in a JSON config file
    assert rows["enable_cql_config_updates"].type == "bool"
    assert rows["tablets_mode_for_new_keyspaces"].type == "tablets mode"
    one = session.execute("SELECT value FROM system.config WHERE name = 'num_tokens'").one()
    assert int(one.value) == int(rows["num_tokens"].value)


def test_update_of_a_live_key_acts_and_is_shown_as_set_by_cql(session: Any) -> None:
    key = "read_request_timeout_in_ms"
    before = _config(session)[key]
    session.execute(f"UPDATE system.config SET value = '4321' WHERE name = '{key}'")
    after = _config(session)[key]
    assert (after.value, after.source) == ("4321", "cql")
    prepared = session.prepare("UPDATE system.config SET value = ? WHERE name = ?")
    session.execute(prepared, [before.value, key])
    assert _config(session)[key].value == before.value


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE system.config SET value = '1' WHERE name = 'no_such_key'", "no such option"),
        ("UPDATE system.config SET value = '9' WHERE name = 'num_tokens'", "option is not live-updateable"),
        (
            "UPDATE system.config SET value = 'soon' WHERE name = 'write_request_timeout_in_ms'",
            "cannot parse option value",
        ),
        (
            "UPDATE system.config SET value = '1', type = 'x' WHERE name = 'write_request_timeout_in_ms'",
            "option type is immutable",
        ),
        ("DELETE FROM system.config WHERE name = 'write_request_timeout_in_ms'", "option value is required"),
        ("INSERT INTO system.one_row (\"system$dummy\") VALUES ('Y')", "virtual table"),
        (
            "UPDATE system.snapshots SET live = 1 WHERE keyspace_name = 'a' AND table_name = 'b' "
            "AND snapshot_name = 'c'",
            "virtual table",
        ),
    ],
)
def test_refused_virtual_table_writes_fail_with_scylladb_messages(
    session: Any, statement: str, message: str
) -> None:
    with pytest.raises(WriteFailure, match=message):
        session.execute(statement)


def test_config_update_with_ttl_is_refused_not_ignored(session: Any) -> None:
    with pytest.raises(InvalidRequest, match="USING TTL and USING TIMESTAMP are not supported"):
        session.execute(
            "UPDATE system.config USING TTL 10 SET value = '10' WHERE name = 'read_request_timeout_in_ms'"
        )


def test_config_update_in_a_batch_is_refused_clearly(session: Any) -> None:
    with pytest.raises(InvalidRequest, match="not in a BATCH"):
        session.execute(
            "BEGIN BATCH UPDATE system.config SET value = '10' WHERE name = 'read_request_timeout_in_ms'; "
            "APPLY BATCH"
        )


def test_token_ring_shows_vnode_ranges_under_all_and_tablets_per_table(session: Any, node: TestNode) -> None:
    num_tokens = int(_config(session)["num_tokens"].value)
    vnodes = list(session.execute("SELECT * FROM system.token_ring WHERE keyspace_name = 'vt_v'"))
    assert len(vnodes) == num_tokens
    assert {(r.table_name, str(r.endpoint), r.dc, r.rack) for r in vnodes} == {
        ("<ALL>", node.host, "datacenter1", "rack1")
    }
    ends = {r.end_token for r in vnodes}
    assert {r.start_token for r in vnodes} == ends  # each range starts where another ends
    tablets = list(
        session.execute("SELECT * FROM system.token_ring WHERE keyspace_name = 'vt_t' AND table_name = 'a'")
    )
    last_tokens = {
        str(r.last_token)
        for r in session.execute(
            "SELECT table_name, last_token FROM system.tablets WHERE keyspace_name = 'vt_t'"
        )
        if r.table_name == "a"
    }
    assert {r.end_token for r in tablets} == last_tokens
    assert len(tablets) == 4
    assert [r.start_token for r in tablets] == sorted(r.start_token for r in tablets)


def test_runtime_info_and_protocol_servers_describe_this_process(session: Any, node: TestNode) -> None:
    info = {(r.group, r.item): r.value for r in session.execute("SELECT * FROM system.runtime_info")}
    assert info[("generic", "gossip_active")] == "true"
    assert info[("generic", "uptime")].endswith(" seconds")
    total, used = int(info[("memory", "total")]), int(info[("memory", "used")])
    assert 0 < used < total and int(info[("memory", "free")]) == total - used
    assert int(info[("generic", "load")]) >= 0
    servers = list(session.execute("SELECT * FROM system.protocol_servers"))
    assert [(s.name, s.protocol, s.protocol_version) for s in servers] == [
        ("native transport", "cql", "3.3.1")
    ]
    assert f"{node.host}:{node.port}" in servers[0].listen_addresses


def test_snapshots_lists_the_snapshot_files_the_node_took(session: Any, node: TestNode) -> None:
    session.execute("INSERT INTO vt_t.a (k, v) VALUES (1, 1)")
    request = urllib.request.Request(
        f"{node.api_url}/storage_service/snapshots?tag=vt1&kn=vt_t", method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        files = json.load(reply)["files"]
    on_disk = sum(f["size"] for f in files)
    rows = list(session.execute("SELECT * FROM system.snapshots WHERE keyspace_name = 'vt_t'"))
    assert [(r.table_name, r.snapshot_name) for r in rows] == [("a", "vt1")]
    assert rows[0].total == rows[0].live == on_disk > 0


def test_one_row_has_exactly_one_row(session: Any) -> None:
    row = session.execute("SELECT * FROM system.one_row").one()
    assert row.system_dummy == ""
    assert session.execute("SELECT count(*) FROM system.one_row").one()[0] == 1


def test_views_and_indexes_are_listed_as_built_once_their_create_returns(session: Any) -> None:
    session.execute("CREATE TABLE vt_v.b (k int PRIMARY KEY, v int, w int)")
    session.execute("INSERT INTO vt_v.b (k, v, w) VALUES (1, 2, 3)")
    session.execute(
        "CREATE MATERIALIZED VIEW vt_v.b_by_v AS SELECT * FROM vt_v.b WHERE v IS NOT NULL AND k IS NOT NULL "
        "PRIMARY KEY (v, k)"
    )
    session.execute("CREATE INDEX b_w ON vt_v.b (w)")
    built = {
        r.view_name for r in session.execute("SELECT * FROM system.built_views WHERE keyspace_name = 'vt_v'")
    }
    assert {"b_by_v", "b_w_index"} <= built
    indexes = session.execute("SELECT * FROM system.\"IndexInfo\" WHERE table_name = 'vt_v'")
    assert [r.index_name for r in indexes] == ["b_w"]
    assert list(session.execute("SELECT * FROM system.views_builds_in_progress")) == []
    assert session.execute("SELECT k FROM vt_v.b WHERE w = 3").one().k == 1


def test_cqlsh_prints_virtual_table_rows(node: TestNode) -> None:
    result = run_cqlsh(
        node,
        "SELECT name, source, value FROM system.config WHERE name = 'cluster_name'; "
        "SELECT name, protocol, listen_addresses FROM system.protocol_servers;",
    ).check()
    assert ' cluster_name | default | "Test Cluster"' in result.stdout
    assert f"native transport |      cql | ['{node.host}:{node.port}'" in result.stdout
