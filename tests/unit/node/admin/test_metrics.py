"""The Prometheus rendering of the node's plain counters."""

from __future__ import annotations

from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from tabletdb.node.admin.metrics import NodeMetrics
from tabletdb.protocol.requests import Execute, Options, Request
from tabletdb.query.route_check import Op, RouteCounters, Target
from tabletdb.storage.node_commit import CommitCounters


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_counters_are_read_at_scrape_time() -> None:
    requests: defaultdict[type[Request], int] = defaultdict(int)
    routes = RouteCounters()
    metrics = NodeMetrics(lambda: requests, routes)
    before = _samples(metrics.render().decode())
    assert before[("tabletdb_cql_requests_total", (("opcode", "EXECUTE"),))] == 0
    requests[Execute] += 5
    requests[Options] += 1
    routes.counts[Op.READ][Target.REPLICA] += 3
    routes.counts[Op.WRITE][Target.NON_REPLICA] += 2
    routes.payloads_sent += 2
    after = _samples(metrics.render().decode())
    assert after[("tabletdb_cql_requests_total", (("opcode", "EXECUTE"),))] == 5
    assert after[("tabletdb_cql_requests_total", (("opcode", "OPTIONS"),))] == 1
    assert after[("tabletdb_cql_requests_total", (("opcode", "STARTUP"),))] == 0
    routed = "tabletdb_cql_single_partition_requests_total"
    assert after[(routed, (("coordinator", "replica"), ("op", "read")))] == 3
    assert after[(routed, (("coordinator", "non_replica"), ("op", "write")))] == 2
    assert after[(routed, (("coordinator", "other_shard"), ("op", "read")))] == 0
    assert after[("tabletdb_cql_tablet_routing_payloads_total", ())] == 2


def test_without_route_counters_only_requests_are_rendered() -> None:
    text = NodeMetrics(dict, None).render().decode()
    names = {family.name for family in text_string_to_metric_families(text)}
    assert names == {"tabletdb_cql_requests"}


def test_commit_counters_are_rendered_when_the_node_commits_node_wide() -> None:
    counters = CommitCounters(records=3, writes=40, write_outs=2)
    text = NodeMetrics(lambda: {}, None, lambda: counters).render().decode()
    samples = _samples(text)
    assert samples[("tabletdb_commitlog_records_total", ())] == 3
    assert samples[("tabletdb_commitlog_writes_total", ())] == 40
    assert samples[("tabletdb_deferred_write_outs_total", ())] == 2
    assert "tabletdb_commitlog" not in NodeMetrics(lambda: {}, None, lambda: None).render().decode()
