"""CDC description tables through a real server and scylla-driver (issue 16 items 4-5).

A client finds every log row of a vnode table by following ``system_distributed``'s
generation timestamps to ``cdc_streams_descriptions_v2`` and reading each stream, as ScyllaDB's
"Querying CDC Streams" describes; for a tablets table it follows ``system.cdc_timestamps`` to
``system.cdc_streams``. Both must name exactly the streams the log rows sit in.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

NTS_1 = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"


def _log_by_streams(session: Any, table: str, streams: set[bytes]) -> list[tuple[int, int]]:
    prepared = session.prepare(f'SELECT k, v FROM {table} WHERE "cdc$stream_id" = ?')
    return sorted((r.k, r.v) for s in streams for r in session.execute(prepared, (s,)))


def _of_table(session: Any, system_table: str) -> list[Any]:
    where = "keyspace_name = 'cdct' AND table_name = 'r'"
    return list(session.execute(f"SELECT * FROM system.{system_table} WHERE {where}"))


def test_vnode_generation_is_found_through_system_distributed(session: Any) -> None:
    session.execute(f"CREATE KEYSPACE cdcd WITH replication = {NTS_1} AND tablets = {{'enabled': false}}")
    session.execute("CREATE TABLE cdcd.r (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    insert = session.prepare("INSERT INTO cdcd.r (k, v) VALUES (?, ?)")
    for k in range(20):
        session.execute(insert, (k, k + 100))

    times = list(
        session.execute(
            "SELECT time, expired FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'"
        )
    )
    assert len(times) == 1 and times[0].expired is None
    current = times[0].time
    described = list(
        session.execute(
            "SELECT range_end, streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = %s",
            (current,),
        )
    )
    ends = sorted(int(t) for t in session.execute("SELECT tokens FROM system.local").one().tokens)
    assert [r.range_end for r in described] == ends  # one row per vnode range, in token order
    streams = {s for r in described for s in r.streams}
    assert _log_by_streams(session, "cdcd.r_scylla_cdc_log", streams) == [(k, k + 100) for k in range(20)]

    (legacy,) = session.execute(
        "SELECT time, streams, expired FROM system_distributed.cdc_streams_descriptions"
    )
    assert (legacy.time, set(legacy.streams), legacy.expired) == (current, streams, None)
    local = {r.key: r.streams_timestamp for r in session.execute("SELECT * FROM system.cdc_local")}
    assert local == {"cdc_local": current, "rewritten": None}

    keyspace = session.cluster.metadata.keyspaces["system_distributed"]
    assert keyspace.replication_strategy.replication_factor_info.all_replicas == 3
    assert set(keyspace.tables) == {
        "cdc_generation_timestamps",
        "cdc_streams_descriptions_v2",
        "cdc_streams_descriptions",
        "view_build_status",
    }

    from cassandra import InvalidRequest

    with pytest.raises(InvalidRequest, match="Cannot modify the system keyspace system_distributed"):
        session.execute(
            "INSERT INTO system_distributed.cdc_generation_timestamps (key, time) VALUES ('timestamps', 0)"
        )
    session.execute("DROP KEYSPACE cdcd")


def test_tablet_stream_sets_are_found_through_system_tables(session: Any) -> None:
    session.execute(f"CREATE KEYSPACE cdct WITH replication = {NTS_1} AND tablets = {{'initial': 4}}")
    before = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(seconds=1)
    session.execute("CREATE TABLE cdct.r (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    insert = session.prepare("INSERT INTO cdct.r (k, v) VALUES (?, ?)")
    for k in range(20):
        session.execute(insert, (k, -k))

    (stamp,) = session.execute(
        "SELECT timestamp FROM system.cdc_timestamps WHERE keyspace_name = 'cdct' AND table_name = 'r'"
    )
    assert stamp.timestamp >= before
    rows = list(
        session.execute(
            "SELECT stream_state, stream_id FROM system.cdc_streams WHERE keyspace_name = 'cdct' AND "
            "table_name = 'r' AND timestamp = %s",
            (stamp.timestamp,),
        )
    )
    current = {r.stream_id for r in rows if r.stream_state == 0}
    opened = {r.stream_id for r in rows if r.stream_state == 2}
    assert len(current) == 4 and opened == current and not [r for r in rows if r.stream_state == 1]
    lasts = sorted(
        r.last_token
        for r in session.execute(
            "SELECT last_token FROM system.tablets WHERE keyspace_name = 'cdct' AND table_name = 'r' "
            "ALLOW FILTERING"
        )
    )
    assert sorted(int.from_bytes(s[:8], "big", signed=True) for s in current) == lasts
    assert _log_by_streams(session, "cdct.r_scylla_cdc_log", current) == [(k, -k) for k in range(20)]

    session.execute("ALTER TABLE cdct.r WITH cdc = {'enabled': false}")
    session.execute("ALTER TABLE cdct.r WITH cdc = {'enabled': true, 'ttl': 60}")  # same tablets: same set
    assert len(_of_table(session, "cdc_timestamps")) == 1
    session.execute("DROP TABLE cdct.r")
    assert _of_table(session, "cdc_streams") == []
    session.execute("DROP KEYSPACE cdct")
