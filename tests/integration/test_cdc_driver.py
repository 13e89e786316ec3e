"""CDC log tables through a real server process and scylla-driver (issue 16 item 1).

Each operation kind is compared with the delta rows ScyllaDB's CDC documentation shows for it
(docs.scylladb.com, "Basic operations in CDC" and "Advanced column types"): the operation code,
the key columns, the value and ``cdc$deleted_*`` columns, ``cdc$ttl``, and the batch numbering
(``cdc$batch_seq_no`` from 0 within one ``cdc$time``, ``cdc$end_of_batch`` on the last row).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

NTS_1 = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
KS = f"CREATE KEYSPACE IF NOT EXISTS cdc WITH replication = {NTS_1}"
TABLE = (
    "CREATE TABLE IF NOT EXISTS cdc.t (pk int, ck int, v1 int, v2 text, st bigint static, s set<int>, "
    "m map<int, text>, fl frozen<list<int>>, u uuid, b blob, d double, PRIMARY KEY (pk, ck)) "
    "WITH cdc = {'enabled': true}"
)
NODE_SHARDS = 2
"""The harness node's shard count (the `smp` default)."""


def _ensure(session: Any) -> None:
    session.execute(KS)
    session.execute(TABLE)


def _log(session: Any, table: str = "cdc.t_scylla_cdc_log") -> list[dict[str, Any]]:
    """The log rows in write order (by cdc$time, then batch sequence), as dicts without nulls."""
    rows = list(session.execute(f"SELECT * FROM {table}"))
    rows.sort(key=lambda r: (r[1].time, r[2]))  # cdc$time, cdc$batch_seq_no
    return [{k: v for k, v in r._asdict().items() if v is not None} for r in rows]


def _new_rows(session: Any, seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    now = _log(session)
    fresh = now[len(seen) :]
    seen[:] = now
    return [{_short(k): v for k, v in r.items() if k != "cdc_stream_id"} for r in fresh]


def _rows(session: Any, seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The new log rows without their cdc$time (compared on its own where it matters)."""
    return [{k: v for k, v in r.items() if k != "time"} for r in _new_rows(session, seen)]


def _short(name: str) -> str:
    return name.removeprefix("cdc_")


def test_log_rows_of_every_operation_kind(session: Any) -> None:
    _ensure(session)
    seen = _log(session)
    one = {"batch_seq_no": 0, "end_of_batch": True}

    session.execute("UPDATE cdc.t SET v1 = 0 WHERE pk = 0 AND ck = 0")
    assert _rows(session, seen) == [{**one, "operation": 1, "pk": 0, "ck": 0, "v1": 0}]
    session.execute("UPDATE cdc.t SET v2 = null WHERE pk = 0 AND ck = 0")
    assert _rows(session, seen) == [{**one, "operation": 1, "pk": 0, "ck": 0, "deleted_v2": True}]

    uid = uuid.UUID("12345678-1234-5678-1234-567812345678")
    insert = session.prepare(
        "INSERT INTO cdc.t (pk, ck, v1, v2, fl, u, b, d) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )
    session.execute(insert, (1, 2, 3, "ząb", [3, 1, 3], uid, b"\x00\xff", 2.5))
    expected = {"pk": 1, "ck": 2, "v1": 3, "v2": "ząb", "fl": [3, 1, 3], "u": uid, "b": b"\x00\xff", "d": 2.5}
    assert _rows(session, seen) == [{**one, "operation": 2, **expected}]

    session.execute("INSERT INTO cdc.t (pk, ck, v1) VALUES (1, 3, 7) USING TTL 1000")
    assert _rows(session, seen) == [{**one, "operation": 2, "pk": 1, "ck": 3, "v1": 7, "ttl": 1000}]

    session.execute("DELETE v1 FROM cdc.t WHERE pk = 1 AND ck = 3")
    assert _rows(session, seen) == [{**one, "operation": 1, "pk": 1, "ck": 3, "deleted_v1": True}]
    session.execute("DELETE FROM cdc.t WHERE pk = 1 AND ck = 2")
    assert _rows(session, seen) == [{**one, "operation": 3, "pk": 1, "ck": 2}]
    session.execute("DELETE FROM cdc.t WHERE pk = 1")
    assert _rows(session, seen) == [{**one, "operation": 4, "pk": 1}]

    session.execute("DELETE FROM cdc.t WHERE pk = 2 AND ck > 0 AND ck <= 5")
    assert _rows(session, seen) == [
        {"batch_seq_no": 0, "operation": 6, "pk": 2, "ck": 0},
        {"batch_seq_no": 1, "end_of_batch": True, "operation": 7, "pk": 2, "ck": 5},
    ]
    session.execute("DELETE FROM cdc.t WHERE pk = 2 AND ck >= 1 AND ck < 4")
    assert [(r["operation"], r["ck"]) for r in _rows(session, seen)] == [(5, 1), (8, 4)]
    session.execute("DELETE FROM cdc.t WHERE pk = 2 AND ck < 4")
    assert _rows(session, seen) == [
        {"batch_seq_no": 0, "operation": 5, "pk": 2},
        {"batch_seq_no": 1, "end_of_batch": True, "operation": 8, "pk": 2, "ck": 4},
    ]

    session.execute("UPDATE cdc.t SET st = 9 WHERE pk = 3")
    assert _rows(session, seen) == [{**one, "operation": 1, "pk": 3, "st": 9}]


def test_log_rows_of_collections(session: Any) -> None:
    _ensure(session)
    seen = _log(session)
    session.execute("UPDATE cdc.t SET s = s + {1, 2}, m = m + {1: 'a'} WHERE pk = 4 AND ck = 0")
    assert _rows(session, seen) == [
        {
            "batch_seq_no": 0,
            "end_of_batch": True,
            "operation": 1,
            "pk": 4,
            "ck": 0,
            "s": {1, 2},
            "m": {1: "a"},
        }
    ]
    session.execute("UPDATE cdc.t SET s = s - {1}, m = m - {1} WHERE pk = 4 AND ck = 0")
    (row,) = _rows(session, seen)
    assert (row["deleted_elements_s"], row["deleted_elements_m"]) == ({1}, {1})
    assert "s" not in row and "deleted_s" not in row
    session.execute("DELETE m[7] FROM cdc.t WHERE pk = 4 AND ck = 0")
    (row,) = _rows(session, seen)
    assert (row["operation"], row["deleted_elements_m"]) == (1, {7})
    session.execute("UPDATE cdc.t SET s = {5} WHERE pk = 4 AND ck = 0")  # a whole-collection overwrite
    (row,) = _rows(session, seen)
    assert (row["s"], row["deleted_s"]) == ({5}, True)
    session.execute("DELETE s FROM cdc.t WHERE pk = 4 AND ck = 0")
    (row,) = _rows(session, seen)
    assert row["deleted_s"] is True and "s" not in row


def test_batches_and_lwt(session: Any) -> None:
    _ensure(session)
    seen = _log(session)
    session.execute(
        "BEGIN UNLOGGED BATCH "
        "UPDATE cdc.t SET v1 = 1 WHERE pk = 5 AND ck = 1; "
        "INSERT INTO cdc.t (pk, ck, v1) VALUES (5, 2, 2); "
        "DELETE FROM cdc.t WHERE pk = 5 AND ck = 3; "
        "APPLY BATCH"
    )
    rows = _new_rows(session, seen)
    assert len({r["time"] for r in rows}) == 1  # one write time: one batch in the stream
    assert [(r["batch_seq_no"], r.get("end_of_batch")) for r in rows] == [(0, None), (1, None), (2, True)]
    assert sorted((r["operation"], r["ck"]) for r in rows) == [(1, 1), (2, 2), (3, 3)]

    applied = session.execute("INSERT INTO cdc.t (pk, ck, v1) VALUES (6, 0, 60) IF NOT EXISTS").one()
    assert applied[0] is True
    assert _rows(session, seen) == [
        {"batch_seq_no": 0, "end_of_batch": True, "operation": 2, "pk": 6, "ck": 0, "v1": 60}
    ]
    refused = session.execute("INSERT INTO cdc.t (pk, ck, v1) VALUES (6, 0, 61) IF NOT EXISTS").one()
    assert refused[0] is False
    assert _rows(session, seen) == []  # a condition that fails writes nothing, so logs nothing
    session.execute("UPDATE cdc.t SET v1 = 62 WHERE pk = 6 AND ck = 0 IF v1 = 60")
    assert [(r["operation"], r["v1"]) for r in _rows(session, seen)] == [(1, 62)]


def test_streams_are_the_tablets_of_the_base(session: Any) -> None:
    """Each log partition is the stream of the base tablet holding the write: its token is that
    tablet's last token, and the log table has the base's tablets on the same replicas."""
    from cassandra.murmur3 import murmur3

    _ensure(session)
    tablets = {
        r.table_name: sorted(
            (r.last_token, tuple(map(tuple, r.replicas))) for r in rows_of(session, r.table_name)
        )
        for r in session.execute(
            "SELECT table_name FROM system.tablets WHERE keyspace_name = 'cdc' ALLOW FILTERING"
        )
    }
    assert tablets["t_scylla_cdc_log"] == tablets["t"]
    lasts = [last for last, _ in tablets["t"]]
    logged = list(session.execute('SELECT "cdc$stream_id", pk FROM cdc.t_scylla_cdc_log'))
    assert logged
    for row in logged:
        base_token = murmur3(row.pk.to_bytes(4, "big", signed=True))
        stream_token = int.from_bytes(row.cdc_stream_id[:8], "big", signed=True)
        assert stream_token == min(t for t in lasts if t >= base_token)
    some = session.execute('SELECT "cdc$stream_id" FROM cdc.t_scylla_cdc_log LIMIT 1').one().cdc_stream_id
    by_stream = session.execute('SELECT pk FROM cdc.t_scylla_cdc_log WHERE "cdc$stream_id" = %s', (some,))
    assert list(by_stream)


def rows_of(session: Any, table: str) -> list[Any]:
    return list(
        session.execute(
            "SELECT last_token, replicas FROM system.tablets WHERE keyspace_name = 'cdc' AND table_name = %s "
            "ALLOW FILTERING",
            (table,),
        )
    )


def test_describe_alter_and_drop(session: Any) -> None:
    _ensure(session)
    rows = list(session.execute("DESCRIBE TABLE cdc.t"))
    statements = [r.create_statement for r in rows]
    shown = "cdc = {'delta': 'full', 'enabled': 'true', 'postimage': 'false', 'preimage': 'false', "
    shown += "'ttl': '86400'}"
    assert shown in statements[0]
    assert statements[-1].startswith("ALTER TABLE cdc.t_scylla_cdc_log WITH ")
    assert "default_time_to_live = 86400" in statements[-1]
    keyspace = [r.create_statement for r in session.execute("DESCRIBE KEYSPACE cdc")]
    assert not any(s.startswith("CREATE TABLE cdc.t_scylla_cdc_log") for s in keyspace)
    (own,) = [r.create_statement for r in session.execute("DESCRIBE TABLE cdc.t_scylla_cdc_log")]
    assert own.startswith("/* Do NOT execute this statement!")

    session.execute("ALTER TABLE cdc.t ADD w int")
    columns = {
        r.column_name
        for r in session.execute(
            "SELECT column_name FROM system_schema.columns "
            "WHERE keyspace_name = 'cdc' AND table_name = 't_scylla_cdc_log'"
        )
    }
    assert {"w", "cdc$deleted_w"} <= columns
    session.execute("ALTER TABLE cdc.t WITH cdc = {'enabled': true, 'ttl': 60}")
    ttl = session.execute(
        "SELECT default_time_to_live FROM system_schema.tables WHERE keyspace_name = 'cdc' "
        "AND table_name = 't_scylla_cdc_log'"
    ).one()
    assert ttl.default_time_to_live == 60

    from cassandra import InvalidRequest

    with pytest.raises(InvalidRequest, match="it is a CDC log table"):
        session.execute("ALTER TABLE cdc.t_scylla_cdc_log WITH cdc = {'enabled': true}")
    session.execute("ALTER TABLE cdc.t_scylla_cdc_log WITH comment = 'mine'")  # its own options: allowed
    assert "comment = 'mine'" in list(session.execute("DESCRIBE TABLE cdc.t"))[-1].create_statement
    with pytest.raises(InvalidRequest, match="dropped with its base"):
        session.execute("DROP TABLE cdc.t_scylla_cdc_log")
    session.execute("DROP TABLE cdc.t")
    left = session.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'cdc'")
    assert [r.table_name for r in left] == []


def test_disabling_keeps_the_log_and_logs_nothing(session: Any) -> None:
    _ensure(session)
    session.execute("CREATE TABLE cdc.r (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    session.execute("ALTER TABLE cdc.r WITH cdc = {'enabled': false}")
    session.execute("INSERT INTO cdc.r (k, v) VALUES (1, 1)")  # CDC off: the kept log gets nothing
    assert list(session.execute("SELECT * FROM cdc.r_scylla_cdc_log")) == []
    session.execute("ALTER TABLE cdc.r WITH cdc = {'enabled': true, 'delta': 'keys'}")
    session.execute("INSERT INTO cdc.r (k, v) VALUES (2, 2)")
    (row,) = session.execute('SELECT k, v, "cdc$operation" FROM cdc.r_scylla_cdc_log')
    assert (row.k, row.v, row.cdc_operation) == (2, None, 2)


def test_vnode_keyspaces_log_through_the_generation(session: Any) -> None:
    """A vnode CDC table logs into the streams of the generation committed with it: a row's
    stream token lies in its base token's vnode range (the same replicas) and on its shard."""
    from cassandra.murmur3 import murmur3

    from tabletdb.dht.sharding import shard_of

    session.execute(f"CREATE KEYSPACE cdcv WITH replication = {NTS_1} AND tablets = {{'enabled': false}}")
    session.execute("CREATE TABLE cdcv.r (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    insert = session.prepare("INSERT INTO cdcv.r (k, v) VALUES (?, ?)")
    for k in range(30):
        session.execute(insert, (k, k * 10))
    ends = sorted(int(t) for t in session.execute("SELECT tokens FROM system.local").one().tokens)
    rows = list(session.execute('SELECT "cdc$stream_id", k, v, "cdc$operation" FROM cdcv.r_scylla_cdc_log'))
    assert sorted((r.k, r.v, r.cdc_operation) for r in rows) == [(k, k * 10, 2) for k in range(30)]
    for row in rows:
        token = murmur3(row.k.to_bytes(4, "big", signed=True))
        stream_token = int.from_bytes(row.cdc_stream_id[:8], "big", signed=True)
        assert next((e for e in ends if e >= stream_token), ends[0]) == next(
            (e for e in ends if e >= token), ends[0]
        )
        assert shard_of(stream_token, NODE_SHARDS, 12) == shard_of(token, NODE_SHARDS, 12)
    session.execute("DROP KEYSPACE cdcv")


def test_write_timestamps_beyond_the_leeway_are_refused(session: Any) -> None:
    """ScyllaDB's generation leeway: a CDC write may not be stamped more than 5 s ahead of the
    server's clock (its streams may not be known); a plain table takes any timestamp."""
    import time

    from cassandra import InvalidRequest

    _ensure(session)
    session.execute("CREATE TABLE IF NOT EXISTS cdc.plain (k int PRIMARY KEY, v int)")
    ahead = time.time_ns() // 1000 + 60_000_000
    with pytest.raises(InvalidRequest, match='cdc: attempted to get a stream "from the future"'):
        session.execute(f"INSERT INTO cdc.t (pk, ck, v1) VALUES (90, 0, 1) USING TIMESTAMP {ahead}")
    with pytest.raises(InvalidRequest, match="from the future"):
        session.execute(
            f"BEGIN UNLOGGED BATCH INSERT INTO cdc.plain (k, v) VALUES (1, 1); "
            f"INSERT INTO cdc.t (pk, ck, v1) VALUES (90, 0, 1) USING TIMESTAMP {ahead}; APPLY BATCH"
        )
    assert list(session.execute("SELECT * FROM cdc.t WHERE pk = 90")) == []
    assert list(session.execute("SELECT * FROM cdc.plain WHERE k = 1")) == []  # none of the batch
    session.execute(f"INSERT INTO cdc.plain (k, v) VALUES (2, 2) USING TIMESTAMP {ahead}")
    session.execute(
        "INSERT INTO cdc.t (pk, ck, v1) VALUES (91, 0, 1) USING TIMESTAMP 1000"
    )  # the first streams
    assert [r.v1 for r in session.execute("SELECT v1 FROM cdc.t WHERE pk = 91")] == [1]


def test_non_frozen_lists_log_elements_by_timeuuid_key(session: Any) -> None:
    """ScyllaDB's "Advanced column types" examples for ``list<int>``: the log column is the map
    of elements by timeuuid key, removals list the keys, whole-list writes set
    ``cdc$deleted_v``, and ``SCYLLA_TIMEUUID_LIST_INDEX(key)`` writes the element a key names."""
    _ensure(session)
    session.execute("CREATE TABLE IF NOT EXISTS cdc.l (pk int, ck int, v list<int>, PRIMARY KEY (pk, ck))")
    session.execute("ALTER TABLE cdc.l WITH cdc = {'enabled': true}")
    types = {
        r.column_name: r.type
        for r in session.execute(
            "SELECT column_name, type FROM system_schema.columns "
            "WHERE keyspace_name = 'cdc' AND table_name = 'l_scylla_cdc_log'"
        )
    }
    assert types["v"] == "frozen<map<timeuuid, int>>"
    assert types["cdc$deleted_elements_v"] == "frozen<set<timeuuid>>"
    assert types["cdc$deleted_v"] == "boolean"
    seen: list[Any] = []

    def new() -> list[tuple[Any, Any, Any]]:
        rows = _log(session, "cdc.l_scylla_cdc_log")
        fresh = rows[len(seen) :]
        seen[:] = rows
        return [(r.get("v"), r.get("cdc_deleted_v"), r.get("cdc_deleted_elements_v")) for r in fresh]

    def listed() -> list[int]:
        return list(session.execute("SELECT v FROM cdc.l WHERE pk = 0 AND ck = 0").one().v or [])

    session.execute("UPDATE cdc.l SET v = v + [1, 2] WHERE pk = 0 AND ck = 0")
    ((added, deleted, removed),) = new()
    assert list(added.values()) == [1, 2] and deleted is None and removed is None
    assert all(k.version == 1 for k in added) and list(added) == sorted(added, key=lambda k: k.time)
    first, second = list(added)

    session.execute("UPDATE cdc.l SET v = v + [1, 3] WHERE pk = 0 AND ck = 0")
    ((more, _, _),) = new()
    session.execute("UPDATE cdc.l SET v = v - [1] WHERE pk = 0 AND ck = 0")
    ((added, deleted, removed),) = new()
    ones = {k for k, v in {**dict(zip([first, second], [1, 2])), **more}.items() if v == 1}
    assert added is None and deleted is None and set(removed) == ones
    assert listed() == [2, 3]

    session.execute(f"UPDATE cdc.l SET v[SCYLLA_TIMEUUID_LIST_INDEX({second})] = 20 WHERE pk = 0 AND ck = 0")
    assert new() == [({second: 20}, None, None)]
    assert listed() == [20, 3]
    session.execute(
        f"UPDATE cdc.l SET v[SCYLLA_TIMEUUID_LIST_INDEX({second})] = null WHERE pk = 0 AND ck = 0"
    )
    ((added, deleted, removed),) = new()
    assert added is None and set(removed) == {second}
    assert listed() == [3]

    session.execute("UPDATE cdc.l SET v = [0] + v WHERE pk = 0 AND ck = 0")  # a prepend: a lower key
    ((added, _, _),) = new()
    assert list(added.values()) == [0] and next(iter(added)).time < first.time
    session.execute("UPDATE cdc.l SET v[1] = 30 WHERE pk = 0 AND ck = 0")  # by index: the element's key
    ((added, _, _),) = new()
    assert list(added.values()) == [30] and listed() == [0, 30]

    session.execute("UPDATE cdc.l SET v = null WHERE pk = 0 AND ck = 0")
    session.execute("UPDATE cdc.l SET v = [] WHERE pk = 0 AND ck = 0")
    assert new() == [(None, True, None), (None, True, None)]
    session.execute("UPDATE cdc.l SET v = [1, 2] WHERE pk = 0 AND ck = 0")
    ((added, deleted, removed),) = new()
    assert list(added.values()) == [1, 2] and deleted is True and removed is None

    from cassandra import InvalidRequest

    with pytest.raises(InvalidRequest, match="version 1"):
        session.execute(
            "UPDATE cdc.l SET v[SCYLLA_TIMEUUID_LIST_INDEX(5ad27d6e-3f5b-4a0a-9f4e-000000000001)] = 1 "
            "WHERE pk = 0 AND ck = 0"
        )
    with pytest.raises(InvalidRequest, match="non-frozen list"):
        session.execute(
            f"UPDATE cdc.t SET s[SCYLLA_TIMEUUID_LIST_INDEX({first})] = 1 WHERE pk = 0 AND ck = 0"
        )
