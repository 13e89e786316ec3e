"""StatementStats: statements counted by kind and condition, batches with their statements, and
latencies in cumulative microsecond buckets; rendered under ScyllaDB's names."""

from __future__ import annotations

from tabletdb.cql.parser import parse_statement
from tabletdb.cql.results import RowsMetadata, RowsResult, VoidResult
from tabletdb.node.admin.scylla_metrics import cql_families, render
from tabletdb.query.statement_stats import LATENCY_BOUNDS_US, LatencyHistogram, StatementStats


def test_statements_are_counted_by_kind_and_condition() -> None:
    stats = StatementStats()
    rows = RowsResult(metadata=RowsMetadata([]), rows=[[b"x"], [b"y"]])
    stats.statement(parse_statement("SELECT * FROM ks.t WHERE v = 1 ALLOW FILTERING"), rows, 0.001)
    stats.statement(parse_statement("INSERT INTO ks.t (k) VALUES (1)"), VoidResult(), 0.002)
    stats.statement(parse_statement("INSERT INTO ks.t (k) VALUES (1) IF NOT EXISTS"), None, 0.002)
    stats.statement(parse_statement("UPDATE ks.t SET v = 1 WHERE k = 1 IF v = 2"), None, 0.002)
    stats.statement(parse_statement("DELETE FROM ks.t WHERE k = 1"), None, 0.002)
    stats.statement(
        parse_statement("CREATE KEYSPACE x WITH replication = {'class': 'NetworkTopologyStrategy'}"), None, 1
    )
    batch = parse_statement(
        "BEGIN BATCH INSERT INTO ks.t (k) VALUES (1); DELETE FROM ks.t WHERE k = 2; APPLY BATCH"
    )
    stats.statement(batch, VoidResult(), 0.003)
    assert (stats.reads, stats.rows_read, stats.select_allow_filtering) == (1, 2, 1)
    assert dict(stats.modifications) == {
        ("inserts", False): 1,
        ("inserts", True): 1,
        ("updates", True): 1,
        ("deletes", False): 1,
    }
    assert dict(stats.batches) == {False: 1} and dict(stats.statements_in_batches) == {False: 2}
    assert stats.read_latency.count == 1 and stats.write_latency.count == 5


def test_latencies_land_in_the_first_bucket_that_holds_them() -> None:
    histogram = LatencyHistogram()
    for micros in (1, 128, 129, 10**9):
        histogram.add(micros)
    cumulative = dict(histogram.cumulative())
    assert cumulative[128.0] == 2 and cumulative[256.0] == 3
    assert cumulative[float(LATENCY_BOUNDS_US[-1])] == 3 and cumulative[float("inf")] == 4
    assert histogram.sum_us == 1 + 128 + 129 + 10**9


def test_families_keep_scylladbs_names_and_skip_conditional_samples_that_never_happened() -> None:
    stats = StatementStats()
    stats.statement(parse_statement("INSERT INTO ks.t (k) VALUES (1)"), None, 0.0005)
    text = render(cql_families(stats)).decode()
    assert 'scylla_cql_inserts{shard="0",conditional="no"} 1.0' in text
    assert 'conditional="yes"' not in text
    assert 'scylla_cql_reads{shard="0"} 0.0' in text
    assert 'scylla_storage_proxy_coordinator_write_latency_bucket{le="512.0",shard="0"} 1.0' in text
    assert 'scylla_storage_proxy_coordinator_write_latency_bucket{le="256.0",shard="0"} 0.0' in text
    assert 'scylla_storage_proxy_coordinator_write_latency_count{shard="0"} 1.0' in text
    assert "# TYPE scylla_storage_proxy_coordinator_read_latency histogram" in text
