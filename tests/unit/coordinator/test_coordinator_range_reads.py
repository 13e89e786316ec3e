"""Counts and value pages over three in-process replicas (``coordinator.range_reads`` behind
``query.scan_select``): remote replicas over the real verbs (msgpack round trip), one replica per
range at ONE, a replica that fails replaced by the next, and at QUORUM / ALL a count that equals
what the replicated read returns even when every replica misses some rows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tabletdb.coordinator.consistency import ALL, ONE, QUORUM
from tabletdb.coordinator.range_reads import RangeReads
from tabletdb.coordinator.reads import ConsistentReads
from tabletdb.cql import ast
from tabletdb.cql.errors import ReadFailure
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.results import RowsResult
from tabletdb.group0.topology import raft_id_of
from tabletdb.query.scan_select import scan_select
from tabletdb.query.select import execute_select
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.keys import encode_clustering
from tests.unit.coordinator.replica_cluster import Cluster, host, table_def
from tests.unit.coordinator.test_coordinator_replicated import NOW, ROOMY, delete, row

KEYS = [f"key{i}".encode() for i in range(30)]
CA, CB = (encode_clustering(table_def(), [c]) for c in (b"a", b"b"))


def _bound(cluster: Cluster, text: str, page: int | None = None, state: bytes | None = None) -> BoundSelect:
    stmt = parse_statement(text)
    assert isinstance(stmt, ast.SelectStatement)
    return BoundSelect(stmt, cluster.table, [], page, state)


async def _short(
    cluster: Cluster, node: int, text: str, cl: int, page: int | None = None
) -> list[RowsResult]:
    ranges = RangeReads(cluster.replicas[node])
    source = ConsistentReads(cluster.reader(node), cl)
    out: list[RowsResult] = []
    state = None
    while True:
        result = await scan_select(_bound(cluster, text, page, state), ranges, source, cl, NOW)
        assert result is not None, text
        out.append(result)
        state = result.metadata.paging_state
        if state is None:
            return out


async def _general(
    cluster: Cluster, node: int, text: str, cl: int, page: int | None = None
) -> list[RowsResult]:
    source = ConsistentReads(cluster.reader(node), cl)
    out: list[RowsResult] = []
    state = None
    while True:
        result = await execute_select(_bound(cluster, text, page, state), source, NOW)
        out.append(result)
        state = result.metadata.paging_state
        if state is None:
            return out


def _count(results: list[RowsResult]) -> int:
    assert len(results) == 1
    return int.from_bytes(results[0].rows[0][0], "big")


@pytest.mark.parametrize("tablets", [False, True], ids=["vnodes", "tablets"])
def test_one_replica_per_range_over_the_verbs(tmp_path: Path, tablets: bool) -> None:
    async def body() -> None:
        cluster = Cluster(tmp_path, 3, 1, tablets=tablets, timeouts=ROOMY)
        try:
            table = cluster.table
            for n, key in enumerate(KEYS):
                await cluster.writer(n % 3).write(table, [row(key, CA, key, 5), row(key, CB, key, 5)], ONE)
            await cluster.writer(0).write(table, [delete(KEYS[0], 6)], ONE)
            text = "SELECT k, c, v FROM ks.t"
            for page in (None, 7):
                short = await _short(cluster, 0, text, ONE, page)
                general = await _general(cluster, 0, text, ONE, page)
                assert [r.rows for r in short] == [r.rows for r in general]
                assert sum(len(r.rows) for r in short) == 2 * (len(KEYS) - 1)
            assert _count(await _short(cluster, 0, "SELECT count(*) FROM ks.t", ONE)) == 2 * (len(KEYS) - 1)
            verbs = {verb for _, verb in cluster.net.calls}
            assert {"data.count", "data.values"} <= verbs  # other nodes' ranges were asked remotely
            # RF=1: a range whose only replica refuses fails the read, naming the table
            cluster.net.refuse.add(raft_id_of(host(1)))
            with pytest.raises(ReadFailure, match=r"ks\.t"):
                await _short(cluster, 0, "SELECT count(*) FROM ks.t", ONE)
        finally:
            cluster.close()

    asyncio.run(body())


@pytest.mark.parametrize("tablets", [False, True], ids=["vnodes", "tablets"])
def test_counts_at_every_level_equal_the_replicated_read(tmp_path: Path, tablets: bool) -> None:
    async def body() -> None:
        cluster = Cluster(tmp_path, 3, 3, tablets=tablets, timeouts=ROOMY)
        try:
            table = cluster.table
            for n, key in enumerate(KEYS):
                missing = n % 3  # every replica misses a third of the rows
                for i in range(3):
                    if i != missing:
                        await cluster.local(i).apply(table, [row(key, CA, key, 5), row(key, CB, key, 5)])
            text = "SELECT count(*) FROM ks.t"
            # at ONE one replica's rows are the answer, as a read at ONE gives them
            one = _count(await _short(cluster, 0, text, ONE))
            assert one == _count(await _general(cluster, 0, text, ONE)) == 2 * 20
            # a replica that fails is replaced by the next live one
            cluster.net.refuse.add(raft_id_of(host(1)))
            assert _count(await _short(cluster, 1, text, ONE)) == 2 * 20
            cluster.net.refuse.clear()
            # QUORUM and ALL compare replicas (and repair them) as the full read does: every row
            for cl in (QUORUM, ALL):
                short = _count(await _short(cluster, 2, text, cl))
                assert short == _count(await _general(cluster, 2, text, cl)) == 2 * len(KEYS)
            # ALL repaired every replica: now each one alone holds every row
            for node in range(3):
                assert _count(await _short(cluster, node, text, ONE)) == 2 * len(KEYS)
        finally:
            cluster.close()

    asyncio.run(body())
