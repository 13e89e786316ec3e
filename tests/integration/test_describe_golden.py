"""Exact DESCRIBE text, as the server answers it through the driver, for representative objects
(spec/describe.md); and how the configured authenticator/authorizer change the auth rows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra.auth import PlainTextAuthProvider

from tests.harness.clients import scylla_cluster
from tests.harness.node import UDF_OPTIONS, NodeFactory

AUTH_OPTIONS = {"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer", **UDF_OPTIONS}
NTS = "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"
HASH = "$6$abcdefgh$SOMEHASHVALUEwithnoquotes/."
TABLE_OPTIONS = (
    "    AND bloom_filter_fp_chance = 0.01\n"
    "    AND caching = {'keys': 'ALL', 'rows_per_partition': 'ALL'}\n"
    "    AND comment = 'golden'\n"
    "    AND compaction = {'class': 'IncrementalCompactionStrategy'}\n"
    "    AND compression = {'sstable_compression': 'org.apache.cassandra.io.compress.LZ4Compressor'}\n"
    "    AND crc_check_chance = 1\n"
    "    AND default_time_to_live = 0\n"
    "    AND gc_grace_seconds = 864000\n"
    "    AND max_index_interval = 2048\n"
    "    AND memtable_flush_period_in_ms = 0\n"
    "    AND min_index_interval = 128\n"
    "    AND speculative_retry = '99.0PERCENTILE'\n"
    "    AND tombstone_gc = {'mode': 'repair', 'propagation_delay_in_seconds': '3600'};\n"
)
SETUP = [
    f"CREATE KEYSPACE gold WITH replication = {NTS} AND tablets = {{'enabled': false}}",
    "CREATE TYPE gold.addr (street text, zip int)",
    "CREATE FUNCTION gold.plus(a int, b int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return a + b'",
    "CREATE AGGREGATE gold.sum2(int) SFUNC plus STYPE int INITCOND 0",
    "CREATE TABLE gold.t (pk int, ck int, a frozen<addr>, PRIMARY KEY (pk, ck)) "
    "WITH CLUSTERING ORDER BY (ck DESC) AND comment = 'golden'",
    "CREATE INDEX t_a ON gold.t (a)",
    f"CREATE ROLE \"Role One\" WITH HASHED PASSWORD = '{HASH}' AND LOGIN = true",
    "CREATE ROLE two",
    'GRANT two TO "Role One"',
    "GRANT SELECT ON gold.t TO two",
    "GRANT EXECUTE ON FUNCTION gold.plus(int, int) TO two",
    "CREATE SERVICE LEVEL sl WITH TIMEOUT = 1s AND SHARES = 10",
    "ATTACH SERVICE LEVEL sl TO two",
]


def rows(session: Any, query: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in session.execute(query)]


@pytest.fixture(scope="module")
def session(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("golden"))
    try:
        node = factory.start_node(options=AUTH_OPTIONS)
        with scylla_cluster(node, auth_provider=PlainTextAuthProvider("cassandra", "cassandra")) as cluster:
            s = cluster.connect()
            for statement in SETUP:
                s.execute(statement)
            yield s
    finally:
        assert not factory.cleanup()


def test_keyspace_type_function_aggregate(session: Any) -> None:
    assert rows(session, "DESC ONLY KEYSPACE gold") == [
        (
            "gold",
            "keyspace",
            "gold",
            "CREATE KEYSPACE gold WITH replication = {'class': "
            "'org.apache.cassandra.locator.NetworkTopologyStrategy', 'datacenter1': '1'} "
            "AND durable_writes = true AND tablets = {'enabled': false};\n",
        )
    ]
    assert rows(session, "DESC TYPE gold.addr") == [
        ("gold", "type", "addr", "CREATE TYPE gold.addr (\n    street text,\n    zip int\n);\n")
    ]
    assert rows(session, "DESC FUNCTION gold.plus") == [
        (
            "gold",
            "function",
            "plus",
            "CREATE FUNCTION gold.plus(a int, b int)\nCALLED ON NULL INPUT\nRETURNS int\nLANGUAGE lua\n"
            "AS $$\nreturn a + b\n$$;\n",
        )
    ]
    assert rows(session, "DESC AGGREGATE gold.sum2") == [
        ("gold", "aggregate", "sum2", "CREATE AGGREGATE gold.sum2(int)\nSFUNC plus\nSTYPE int\nINITCOND 0;\n")
    ]


def test_table_with_its_index(session: Any) -> None:
    table = (
        "CREATE TABLE gold.t (\n    pk int,\n    ck int,\n    a frozen<addr>,\n    PRIMARY KEY (pk, ck)\n"
        ") WITH CLUSTERING ORDER BY (ck DESC)\n" + TABLE_OPTIONS
    )
    assert rows(session, "DESC TABLE gold.t") == [
        ("gold", "table", "t", table),
        ("gold", "index", "t_a", "CREATE INDEX t_a ON gold.t(a);\n"),
    ]


def auth_rows(session: Any, query: str) -> list[tuple[Any, ...]]:
    return [r for r in rows(session, query) if r[0] is None]


def expected_auth(with_hashes: bool, with_grants: bool, default_hash: str) -> list[tuple[Any, ...]]:
    one_hash = f"HASHED PASSWORD = '{HASH}' AND " if with_hashes else ""
    cassandra_hash = f"HASHED PASSWORD = '{default_hash}' AND " if with_hashes else ""
    out: list[tuple[Any, ...]] = [
        (
            None,
            "role",
            '"Role One"',
            f'CREATE ROLE "Role One" WITH {one_hash}LOGIN = true AND SUPERUSER = false;',
        ),
        (
            None,
            "role",
            "cassandra",
            f"CREATE ROLE IF NOT EXISTS cassandra WITH {cassandra_hash}LOGIN = true AND SUPERUSER = true;",
        ),
        (None, "role", "two", "CREATE ROLE two WITH LOGIN = false AND SUPERUSER = false;"),
        (None, "grant_role", "two", 'GRANT two TO "Role One";'),
    ]
    if with_grants:
        out += [
            (None, "grant_permission", "two", "GRANT SELECT ON gold.t TO two;"),
            (None, "grant_permission", "two", "GRANT EXECUTE ON FUNCTION gold.plus(int, int) TO two;"),
        ]
    out += [
        (
            None,
            "service_level",
            "driver",
            "CREATE SERVICE LEVEL IF NOT EXISTS driver WITH WORKLOAD_TYPE = 'batch' AND SHARES = 200;",
        ),
        (
            None,
            "service_level",
            "driver",
            "ALTER SERVICE LEVEL driver WITH WORKLOAD_TYPE = 'batch' AND SHARES = 200;",
        ),
        (None, "service_level", "sl", "CREATE SERVICE LEVEL sl WITH TIMEOUT = 1000ms AND SHARES = 10;"),
        (None, "service_level_attachment", "sl", "ATTACH SERVICE LEVEL sl TO two;"),
    ]
    return out


def test_auth_rows_with_and_without_passwords(session: Any) -> None:
    default_hash = session.execute("SELECT salted_hash FROM system.roles WHERE role = 'cassandra'").one()[0]
    with_passwords = auth_rows(session, "DESC SCHEMA WITH INTERNALS AND PASSWORDS")
    assert with_passwords == expected_auth(True, True, default_hash)
    assert auth_rows(session, "DESC SCHEMA WITH INTERNALS") == expected_auth(False, True, default_hash)
    assert auth_rows(session, "DESC SCHEMA") == []


@pytest.mark.parametrize(
    ("options", "with_grants"),
    [({"authenticator": "PasswordAuthenticator"}, False), ({"authorizer": "CassandraAuthorizer"}, True)],
    ids=["allow-all-authorizer", "allow-all-authenticator"],
)
def test_configuration_decides_what_is_printed(
    node_factory: NodeFactory, options: dict[str, str], with_grants: bool
) -> None:
    """No hashes without PasswordAuthenticator, no permission grants without CassandraAuthorizer."""
    node = node_factory.start_node(options=options)
    provider = PlainTextAuthProvider("cassandra", "cassandra") if "authenticator" in options else None
    with scylla_cluster(node, auth_provider=provider) as cluster:
        s = cluster.connect()
        s.execute(f"CREATE KEYSPACE gold WITH replication = {NTS}")
        s.execute("CREATE TABLE gold.t (k int PRIMARY KEY)")
        s.execute("CREATE ROLE r")
        if with_grants:
            s.execute("GRANT SELECT ON gold.t TO r")
        texts = [r[3] for r in auth_rows(s, "DESC SCHEMA WITH INTERNALS AND PASSWORDS")]
    assert ("HASHED PASSWORD" in "".join(texts)) == ("authenticator" in options)
    assert ("GRANT SELECT ON gold.t TO r;" in texts) == with_grants
    assert "CREATE ROLE r WITH LOGIN = false AND SUPERUSER = false;" in texts


def test_internals_layout_as_scylladb_prints_it(session: Any) -> None:
    """WITH ID = x then the next option at column 0; a blank line before the dropped-column
    history, each DROP followed by its ADD (STATIC kept), no newline after the last; speculative
    retry in ScyllaDB's '200.00ms' form; views get the same ID layout."""
    session.execute(
        "CREATE TABLE gold.d (k int, c int, s int STATIC, v int, PRIMARY KEY (k, c)) "
        "WITH speculative_retry = '200ms'"
    )
    for statement in ("DROP v", "ADD v int", "DROP s", "ADD s int STATIC"):
        session.execute(f"ALTER TABLE gold.d {statement}")
    session.execute(
        "CREATE MATERIALIZED VIEW gold.d_by_c AS SELECT k, c FROM gold.d WHERE k IS NOT NULL AND "
        "c IS NOT NULL PRIMARY KEY (c, k)"
    )
    ids = {
        r.table_name: r.id
        for r in session.execute(
            "SELECT table_name, id FROM system_schema.tables WHERE keyspace_name = 'gold'"
        )
    }
    view_id = session.execute(
        "SELECT id FROM system_schema.views WHERE keyspace_name = 'gold' AND view_name = 'd_by_c'"
    ).one()[0]
    plain = session.execute("DESC TABLE gold.d").one().create_statement
    assert "    AND speculative_retry = '200.00ms'\n" in plain and "ALTER TABLE" not in plain
    rows = {
        r.name: r.create_statement for r in session.execute("DESC SCHEMA WITH INTERNALS") if r.keyspace_name
    }
    table = rows["d"]
    assert table.startswith(
        "CREATE TABLE gold.d (\n    k int,\n    c int,\n    s int,\n    v int,\n    PRIMARY KEY (k, c)\n"
        f") WITH ID = {ids['d']}\nAND CLUSTERING ORDER BY (c ASC)\n    AND bloom_filter_fp_chance = 0.01\n"
    ), table
    assert re.search(
        r"propagation_delay_in_seconds': '3600'\};\n"
        r"\nALTER TABLE gold\.d DROP s USING TIMESTAMP \d+;\nALTER TABLE gold\.d ADD s int STATIC;"
        r"\nALTER TABLE gold\.d DROP v USING TIMESTAMP \d+;\nALTER TABLE gold\.d ADD v int;\Z",
        table,
    ), table
    assert (
        f"    PRIMARY KEY (c, k)\n    WITH ID = {view_id}\nAND CLUSTERING ORDER BY (k ASC)\n"
        in rows["d_by_c"]
    )


def test_simple_strategy_keyspace_says_tablets_are_off(session: Any) -> None:
    session.execute(
        "CREATE KEYSPACE simple WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    assert session.execute("DESC KEYSPACE simple").one().create_statement == (
        "CREATE KEYSPACE simple WITH replication = {'class': 'org.apache.cassandra.locator.SimpleStrategy', "
        "'replication_factor': '1'} AND durable_writes = true AND tablets = {'enabled': false};\n"
    )


def test_desc_cluster_shows_range_ownership_of_the_vnode_keyspace_in_use(session: Any) -> None:
    assert list(session.execute("DESC CLUSTER").one()._fields) == ["cluster", "partitioner", "snitch"]
    in_gold = session.cluster.connect("gold")
    try:
        row = in_gold.execute("DESC CLUSTER").one()
        local = in_gold.execute("SELECT tokens, broadcast_address FROM system.local").one()
    finally:
        in_gold.shutdown()
    assert (row.cluster, row.partitioner) == ("Test Cluster", "org.apache.cassandra.dht.Murmur3Partitioner")
    ownership = row.range_ownership
    assert set(ownership) == set(local.tokens)
    assert all(list(v) == [str(local.broadcast_address)] for v in ownership.values())


def test_internals_give_an_index_its_entries_table_id_and_a_restore_keeps_it(session: Any) -> None:
    """DESC ... WITH INTERNALS prints an index's ID first, indented as its other properties;
    running the printed statement after a DROP INDEX brings the index back under the same ID."""
    session.execute("CREATE TABLE gold.ix (k int PRIMARY KEY, v int, w int)")
    session.execute("CREATE INDEX ix_v ON gold.ix (v)")
    session.execute("CREATE INDEX ix_w ON gold.ix (w) WITH gc_grace_seconds = 100")
    plain = {r.name: r.create_statement for r in session.execute("DESC TABLE gold.ix")}
    assert plain["ix_v"] == "CREATE INDEX ix_v ON gold.ix(v);\n"
    internals = {r.name: r.create_statement for r in session.execute("DESC TABLE gold.ix WITH INTERNALS")}
    expected = r"CREATE INDEX ix_v ON gold\.ix\(v\) WITH ID = [0-9a-f-]{36};\n"
    assert re.fullmatch(expected, internals["ix_v"]), internals["ix_v"]
    assert re.fullmatch(
        r"CREATE INDEX ix_w ON gold\.ix\(w\) WITH ID = [0-9a-f-]{36}\n    AND gc_grace_seconds = 100;\n",
        internals["ix_w"],
    ), internals["ix_w"]
    assert internals["ix_v"] != internals["ix_w"].split("\n")[0]
    session.execute("DROP INDEX gold.ix_v")
    session.execute(internals["ix_v"])
    again = session.execute("DESC INDEX gold.ix_v WITH INTERNALS").one().create_statement
    assert again == internals["ix_v"]
    session.execute("INSERT INTO gold.ix (k, v, w) VALUES (1, 2, 3)")
    assert [r.k for r in session.execute("SELECT k FROM gold.ix WHERE v = 2")] == [1]
