"""A split of a CDC tablet table under writes (issue 16 acceptance), on a real node process.

A tablets table with CDC, 4 tablets, ``max_tablet_count`` 8 and a 32 KiB target tablet size is
loaded past twice the target while a writer keeps inserting: the topology coordinator splits base
and log in one cut-over. ``system.cdc_timestamps`` then shows a second stream set, and
``system.cdc_streams`` shows ScyllaDB's states for it: the 4 old streams CLOSED, the 8 new ones
OPENED and CURRENT. Every acknowledged write has exactly one log row, before and after the split,
and each log row sits in a stream of the set operating at its write time.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any

import pytest

from tests.harness.node import NodeFactory
from tests.harness.topology_workload import wait_for
from tests.integration.test_replicated_data import OPTIONS, pinned, run

TARGET = 32 * 1024
VALUE = "x" * 1000
OPTIONS_SPLIT = {**OPTIONS, "target_tablet_size_in_bytes": TARGET}


def _tablets(session: Any) -> int:
    rows = run(session, "SELECT table_name FROM system.tablets WHERE keyspace_name = 'cs'", "ONE")
    return sum(1 for r in rows if r.table_name == "t")


def _streams(session: Any, ts: Any, state: int) -> set[bytes]:
    rows = run(
        session,
        "SELECT stream_id FROM system.cdc_streams WHERE keyspace_name = 'cs' AND table_name = 't' "
        "AND timestamp = %s AND stream_state = %s",
        "ONE",
        (ts, state),
    )
    return {bytes(r.stream_id) for r in rows}


@pytest.mark.slow  # a minute and a half under load: the size poll, the split and its writes
def test_split_under_writes_closes_and_opens_streams_and_loses_no_log_row(node_factory: NodeFactory) -> None:
    node = node_factory.start_node(options=OPTIONS_SPLIT)
    with pinned(node) as s:
        s.execute(
            "CREATE KEYSPACE cs WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 1} AND tablets = {'initial': 4}"
        )
        s.execute(
            "CREATE TABLE cs.t (k int PRIMARY KEY, v text) "
            "WITH cdc = {'enabled': true} AND tablets = {'max_tablet_count': 8}"
        )
        assert _tablets(s) == 4
        insert = s.prepare("INSERT INTO cs.t (k, v) VALUES (?, ?)")
        acked: list[int] = []
        stop = threading.Event()

        def writer() -> None:
            k = 0
            while not stop.is_set():
                k += 1
                try:
                    s.execute(insert, (k, VALUE))
                except Exception:  # unacknowledged: nothing is claimed of it
                    continue
                acked.append(k)

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            wait_for(lambda: _tablets(s) == 8, "the CDC table to split", seconds=300)
            at_split = len(acked)
            wait_for(lambda: len(acked) > at_split + 20, "writes after the split")
        finally:
            stop.set()
            thread.join(120)

        (first, second) = sorted(
            r.timestamp
            for r in run(
                s,
                "SELECT timestamp FROM system.cdc_timestamps WHERE keyspace_name = 'cs' AND table_name = 't'",
                "ONE",
            )
        )
        old, new = _streams(s, first, 0), _streams(s, second, 0)  # 0: CURRENT
        assert len(old) == 4 and len(new) == 8
        assert _streams(s, second, 1) == old  # 1: CLOSED
        assert _streams(s, second, 2) == new  # 2: OPENED

        log = run(s, 'SELECT "cdc$stream_id", "cdc$time", k FROM cs.t_scylla_cdc_log', "ONE")
        keys = [r.k for r in log]
        assert sorted(keys) == sorted(set(keys)), "a write logged twice"
        assert set(acked) <= set(keys), (
            f"acknowledged writes without a log row: {sorted(set(acked) - set(keys))[:10]}"
        )
        split_ms = int(second.replace(tzinfo=datetime.UTC).timestamp() * 1000)
        for r in log:
            written_ms = (r.cdc_time.time - 0x01B21DD213814000) // 10_000
            expected = new if written_ms >= split_ms else old
            assert bytes(r.cdc_stream_id) in expected, f"log row of {r.k} in a stream of another set"
