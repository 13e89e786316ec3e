"""The Prometheus rendering of the node's plain counters."""

from __future__ import annotations

from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from tabletdb.node.metrics import NodeMetrics
from tabletdb.protocol.requests import Execute, Options, Request
from tabletdb.query.route_check import Op, RouteCounters, Target


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
