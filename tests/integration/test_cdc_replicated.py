"""CDC on three real nodes: every acknowledged write has exactly one log row, on its base replicas.

RF=1: each node coordinates writes whose only replica is often another node; the log row is
written by that replica into its own copy of the log tablet (a write whose replica held no log
tablet would fail), and every write has one row. The same on a vnode keyspace, whose streams
come from the generation committed with the table: a log row written anywhere but on its
stream's replica would be missing from the log's reads. RF=3 with a node killed -9: QUORUM writes go
on logging; when the node is back, the ALL reads that repair the base write no log rows of their
own, and once the log is repaired too the returning node holds every row, alone.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, available_at_all, pinned, run, wait_for

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': %d}"
Logged = set[tuple[int, int, str, int]]
"""(k, c, v, cdc$operation) of the log rows."""


def _schema(session: Any, ks: str, rf: int, tablets: str = "{'initial': 4}") -> None:
    session.execute(f"CREATE KEYSPACE {ks} WITH replication = {NTS % rf} AND tablets = {tablets}")
    session.execute(
        f"CREATE TABLE {ks}.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH cdc = {{'enabled': true}}"
    )


def _write(session: Any, ks: str, keys: range, cl: str) -> Logged:
    for k in keys:
        run(session, f"INSERT INTO {ks}.t (k, c, v) VALUES (%s, %s, %s)", cl, (k, k % 3, f"v{k}"))
    return {(k, k % 3, f"v{k}", 2) for k in keys}


def _log(session: Any, ks: str, cl: str) -> list[tuple[int, int, str, int]]:
    rows = run(session, f'SELECT k, c, v, "cdc$operation" FROM {ks}.t_scylla_cdc_log', cl, fetch_size=7)
    return sorted((r.k, r.c, r.v, r.cdc_operation) for r in rows)


@pytest.mark.slow
def test_one_log_row_per_write_on_its_replicas_through_a_kill(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    with pinned(nodes[0]) as s0:
        _schema(s0, "c1", 1)
        _schema(s0, "c3", 3)
        _schema(s0, "v1", 1, "{'enabled': false}")  # vnodes: streams of the generation built with it
    expected: dict[str, Logged] = {"c1": set(), "c3": set(), "v1": set()}
    for i, node in enumerate(nodes):
        with pinned(node) as s:
            expected["c1"] |= _write(s, "c1", range(i * 20, i * 20 + 20), "ONE")
            expected["v1"] |= _write(s, "v1", range(i * 20, i * 20 + 20), "ONE")
            expected["c3"] |= _write(s, "c3", range(i * 10, i * 10 + 10), "QUORUM")
    for node in nodes:
        with pinned(node) as s:
            assert _log(s, "c1", "ONE") == sorted(expected["c1"])
            assert _log(s, "v1", "ONE") == sorted(expected["v1"])  # each on its stream's only replica
            assert _log(s, "c3", "ALL") == sorted(expected["c3"])

    victim = nodes[2]
    victim.kill()
    with pinned(nodes[0]) as s0:
        expected["c3"] |= _write(s0, "c3", range(100, 110), "QUORUM")
        for k in range(0, 30, 3):  # rows node 2 holds, changed while it is away
            run(s0, "UPDATE c3.t SET v = 'new' WHERE k = %s AND c = %s", "QUORUM", (k, k % 3))
            expected["c3"].add((k, k % 3, "new", 1))
        assert _log(s0, "c3", "QUORUM") == sorted(expected["c3"])
    victim.start()
    with pinned(victim) as s2:
        wait_for(lambda: available_at_all(s2, "c3"), "node 2 to see its peers up")
        base = run(s2, "SELECT k, c, v FROM c3.t", "ALL", fetch_size=7)  # repairs the base
        assert len(base) == len({(k, c) for k, c, _, _ in expected["c3"]})
        assert _log(s2, "c3", "ALL") == sorted(expected["c3"])  # no row made up by the repair
        assert _log(s2, "c3", "ONE") == sorted(expected["c3"])  # node 2 alone now has them all


@pytest.mark.slow
def test_a_joining_node_gets_a_new_generation(node_factory: NodeFactory) -> None:
    """When a node joins a cluster with a vnode CDC table, the group0 leader commits a
    generation for the new ring (operating a few seconds later); writes after that log into its
    streams: each stream's token in its base token's new vnode range, on the same node and
    shard, one row per write, readable there."""
    import time

    from cassandra.murmur3 import murmur3

    from tabletdb.dht.sharding import shard_of

    first = node_factory.start_node(options=OPTIONS)
    with pinned(first) as s0:
        _schema(s0, "v1", 1, "{'enabled': false}")
        before = _write(s0, "v1", range(0, 20), "ONE")
        (gen0,) = run(s0, "SELECT time FROM system_distributed.cdc_generation_timestamps", "ONE")
    second = node_factory.start_node(seeds=[first.host], options=OPTIONS)
    with pinned(second) as s1:

        def generations() -> list[Any]:
            return run(s1, "SELECT time, expired FROM system_distributed.cdc_generation_timestamps", "ONE")

        wait_for(lambda: len(generations()) == 2, "a generation for the grown ring")
        newest, oldest = generations()
        assert oldest.time == gen0.time and newest.time > gen0.time
        assert oldest.expired is not None and newest.expired is None  # superseded: expires after its TTL
        ends = sorted(
            int(t)
            for r in run(s1, "SELECT tokens FROM system.local", "ONE")
            + run(s1, "SELECT tokens FROM system.peers", "ONE")
            for t in r.tokens
        )
        described = run(
            s1,
            "SELECT range_end FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = %s",
            "ONE",
            (newest.time,),
        )
        assert [r.range_end for r in described] == ends
        wait_for(
            lambda: time.time() * 1000 > newest.time.timestamp() * 1000 + 1000, "the generation to operate"
        )
        after = _write(s1, "v1", range(100, 140), "ONE")
        logged = run(
            s1,
            'SELECT "cdc$stream_id", k, c, v, "cdc$operation" FROM v1.t_scylla_cdc_log',
            "ONE",
            fetch_size=7,
        )
    rows = {(r.k, r.c, r.v, r.cdc_operation): r.cdc_stream_id for r in logged}
    assert set(after) <= set(rows)  # every write after the switch: its row, once (a set of rows)
    assert len([r for r in logged if r.k >= 100]) == len(after)
    for (k, *_), stream in rows.items():
        if k < 100:
            continue
        token = murmur3(k.to_bytes(4, "big", signed=True))
        stream_token = int.from_bytes(stream[:8], "big", signed=True)
        assert next((e for e in ends if e >= stream_token), ends[0]) == next(
            (e for e in ends if e >= token), ends[0]
        )
        assert shard_of(stream_token, 2, 12) == shard_of(token, 2, 12)
    assert before  # written under the first generation (streamed data is the vnode join's business)


@pytest.mark.slow
def test_writes_during_a_join_each_have_one_log_row_in_their_generation(node_factory: NodeFactory) -> None:
    """A writer keeps inserting (CL ONE, RF 1, each write stamped by the client) while a second
    node joins. Afterwards every acknowledged write has exactly one log row, found by a read of
    the whole log (each range read from its owner), stamped with the write's time, in a stream
    of the generation operating at that time whose range holds the base token — the same vnode,
    so the same replicas, as its base row when it was written. The join's ring change waits for
    the new ring's generation to operate (``topology.cdc_switch``): without that, rows written
    under the old streams once writes reach the new ring are stored with the base but read from
    the stream's new owner, and go missing here."""
    import bisect
    import threading
    import time

    from cassandra.murmur3 import murmur3

    first = node_factory.start_node(options=OPTIONS)
    with pinned(first) as s0:
        _schema(s0, "vj", 1, "{'enabled': false}")
    acked: dict[int, int] = {}
    failed: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        with pinned(first) as s:
            insert = s.prepare("INSERT INTO vj.t (k, c, v) VALUES (?, 0, 'w') USING TIMESTAMP ?")
            k = 0
            while not stop.is_set():
                ts = time.time_ns() // 1000
                try:
                    s.execute(insert, (k, ts))
                    acked[k] = ts
                except Exception as exc:  # not acknowledged: its row may or may not exist
                    failed.append(f"{k}: {exc}")
                k += 1
                time.sleep(0.01)

    thread = threading.Thread(target=writer, name="cdc-join-writer", daemon=True)
    thread.start()
    try:
        time.sleep(2)
        second = node_factory.start_node(seeds=[first.host], options=OPTIONS)
        with pinned(second) as s1:

            def generations() -> list[Any]:
                return run(s1, "SELECT time FROM system_distributed.cdc_generation_timestamps", "ONE")

            wait_for(lambda: len(generations()) == 2, "a generation for the grown ring")
            newest = generations()[0].time
            wait_for(lambda: time.time() > newest.timestamp() + 2, "writes under the new generation")
    finally:
        stop.set()
        thread.join()
    assert len(acked) > 50, failed[:5]
    with pinned(second) as s1:
        described: dict[int, list[tuple[int, set[bytes]]]] = {}
        for g in generations():
            rows = run(
                s1,
                "SELECT range_end, streams FROM system_distributed.cdc_streams_descriptions_v2 "
                "WHERE time = %s",
                "ONE",
                (g.time,),
            )
            gen_us = int(g.time.timestamp() * 1000) * 1000
            described[gen_us] = sorted((r.range_end, set(r.streams)) for r in rows)
        logged = run(
            s1, 'SELECT "cdc$stream_id", "cdc$time", k FROM vj.t_scylla_cdc_log', "ONE", fetch_size=500
        )
    starts = sorted(described)
    by_key: dict[int, list[Any]] = {}
    for r in logged:
        by_key.setdefault(r.k, []).append(r)
    used = set()
    for k, ts in acked.items():
        rows = by_key.get(k, [])
        assert len(rows) == 1, f"write {k} at {ts} µs has {len(rows)} log rows"
        (row,) = rows
        assert (row.cdc_time.time - 0x01B21DD213814000) // 10 == ts
        gen = starts[bisect.bisect_right(starts, ts) - 1]
        used.add(gen)
        ends = [end for end, _ in described[gen]]
        stream = bytes(row.cdc_stream_id)
        base_token = murmur3(k.to_bytes(4, "big", signed=True))
        index = bisect.bisect_left(ends, int.from_bytes(stream[:8], "big", signed=True)) % len(ends)
        assert stream in described[gen][index][1], f"write {k}: stream not of the generation at {gen}"
        assert index == bisect.bisect_left(ends, base_token) % len(ends), f"write {k}: stream off its vnode"
    assert used == set(starts)  # writes logged under both generations
    assert all(len(rows) == 1 for rows in by_key.values())  # no write logged twice
