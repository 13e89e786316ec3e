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


def test_scylla_transport_families_keep_scylladbs_names_and_skip_empty_kinds() -> None:
    from dataclasses import dataclass, field

    from tabletdb.cql.errors import CqlSyntaxError, InvalidRequest, ServerError

    @dataclass
    class Server:
        connects: int = 3
        current_connections: int = 2
        requests_served: int = 9
        requests_serving: int = 1
        error_counts: dict[int, int] = field(default_factory=dict)

    server = Server(error_counts={CqlSyntaxError.code: 2, InvalidRequest.code: 1, ServerError.code: 0})
    requests: defaultdict[type[Request], int] = defaultdict(int)
    requests[Execute] += 4
    text = NodeMetrics(lambda: requests, None, transport=lambda: server).render().decode()
    assert (
        '# TYPE scylla_transport_requests_served counter\nscylla_transport_requests_served{shard="0"} 9.0\n'
        in text
    )
    assert 'scylla_transport_current_connections{shard="0"} 2.0\n' in text
    assert 'scylla_transport_cql_connections{shard="0"} 3.0\n' in text
    assert 'scylla_transport_requests_serving{shard="0"} 1.0\n' in text
    assert 'scylla_transport_cql_requests_count{shard="0",kind="EXECUTE"} 4.0\n' in text
    assert 'kind="QUERY"' not in text  # kinds that never happened are left out, as seastar does
    assert 'scylla_transport_cql_errors_total{shard="0",type="syntax_error"} 2.0\n' in text
    assert 'scylla_transport_cql_errors_total{shard="0",type="invalid"} 1.0\n' in text
    assert "server_error" not in text
    assert "tabletdb_cql_requests_total" in text  # our own families stay
