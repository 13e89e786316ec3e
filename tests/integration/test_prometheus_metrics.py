"""Prometheus on ``prometheus_address``:``prometheus_port`` (ScyllaDB's 9180, no credentials),
scraped after real driver traffic: ScyllaDB's transport names count what the node served, and
the errors by ScyllaDB's kind labels."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.protocol import SyntaxException

from tests.harness.clients import pinned_cluster
from tests.harness.node import TestNode

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def session(node: TestNode) -> Iterator[Any]:
    with pinned_cluster(node) as cluster:
        yield cluster.connect()


def scrape(node: TestNode) -> tuple[str, Samples]:
    with urllib.request.urlopen(f"http://{node.host}:9180/metrics", timeout=30) as response:
        assert response.status == 200
        text = response.read().decode()
    return text, parse(text)


SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')


def parse(text: str) -> Samples:
    """Samples by their exact names (prometheus_client's parser renames counters to ``_total``,
    which would hide whether the names are ScyllaDB's)."""
    out: Samples = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        match = SAMPLE.match(line)
        assert match, line
        name, labels, number = match.groups()
        out[(name, tuple(sorted(LABEL.findall(labels or ""))))] = float(number)
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted({"shard": "0", **labels}.items()))), 0.0)


def test_scylla_transport_metrics_count_requests_and_errors_by_kind(session: Any, node: TestNode) -> None:
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS pm WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
    )
    session.execute("CREATE TABLE IF NOT EXISTS pm.t (k int PRIMARY KEY, v int)")
    insert = session.prepare("INSERT INTO pm.t (k, v) VALUES (?, ?)")
    _, before = scrape(node)

    for k in range(5):
        session.execute(insert, (k, k))
    for _ in range(2):
        with pytest.raises(SyntaxException):
            session.execute("SELEC k FROM pm.t")
    for _ in range(3):
        with pytest.raises(InvalidRequest):
            session.execute("SELECT k FROM pm.no_such_table")
    text, after = scrape(node)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("scylla_transport_cql_requests_count", kind="EXECUTE") == 5
    assert delta("scylla_transport_cql_requests_count", kind="QUERY") >= 5
    assert delta("scylla_transport_cql_errors_total", type="syntax_error") == 2
    assert delta("scylla_transport_cql_errors_total", type="invalid") == 3
    assert delta("scylla_transport_requests_served") >= 10
    assert value(after, "scylla_transport_current_connections") >= 1
    assert value(after, "scylla_transport_cql_connections") >= value(
        after, "scylla_transport_current_connections"
    )
    # seastar's exposition: counters keep their names, no "_total" appended
    assert "# TYPE scylla_transport_requests_served counter\n" in text
    assert "# TYPE scylla_transport_cql_errors_total counter\n" in text
    assert "# TYPE scylla_transport_current_connections gauge\n" in text
    assert 'scylla_transport_cql_errors_total{shard="0",type="server_error"}' not in text  # none happened


def test_scylla_cql_statement_counters_and_latency_histograms(session: Any, node: TestNode) -> None:
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS pm WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
    )
    session.execute("CREATE TABLE IF NOT EXISTS pm.c (k int PRIMARY KEY, v int)")
    _, before = scrape(node)
    insert = session.prepare("INSERT INTO pm.c (k, v) VALUES (?, ?)")
    for k in range(4):
        session.execute(insert, (k, k))
    session.execute("INSERT INTO pm.c (k, v) VALUES (9, 9) IF NOT EXISTS")
    session.execute("UPDATE pm.c SET v = 1 WHERE k = 1")
    session.execute("DELETE FROM pm.c WHERE k = 2")
    session.execute(
        "BEGIN BATCH INSERT INTO pm.c (k, v) VALUES (5, 5); "
        "INSERT INTO pm.c (k, v) VALUES (6, 6); APPLY BATCH"
    )
    point = session.prepare("SELECT v FROM pm.c WHERE k = ?")
    for k in range(3):
        session.execute(point, (k,))
    assert len(session.execute("SELECT k FROM pm.c WHERE v > 0 ALLOW FILTERING").all()) == 5
    text, after = scrape(node)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("scylla_cql_inserts", conditional="no") == 4
    assert delta("scylla_cql_inserts", conditional="yes") == 1
    assert delta("scylla_cql_updates", conditional="no") == 1
    assert delta("scylla_cql_deletes", conditional="no") == 1
    assert delta("scylla_cql_batches", conditional="no") == 1
    assert delta("scylla_cql_statements_in_batches", conditional="no") == 2
    assert delta("scylla_cql_reads") >= 4  # the driver's own metadata reads count too
    assert delta("scylla_cql_select_allow_filtering") == 1
    assert delta("scylla_cql_rows_read") >= 2 + 5  # k = 2 was deleted: its point read returns no row
    assert "# TYPE scylla_cql_inserts counter" in text
    assert "# TYPE scylla_storage_proxy_coordinator_write_latency histogram" in text
    writes = delta("scylla_storage_proxy_coordinator_write_latency_count")
    assert writes == 4 + 1 + 1 + 1 + 1
    assert delta("scylla_storage_proxy_coordinator_write_latency_bucket", le="+Inf") == writes
    assert delta("scylla_storage_proxy_coordinator_read_latency_count") >= 4
    assert delta("scylla_storage_proxy_coordinator_read_latency_sum") > 0
