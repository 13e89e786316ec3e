"""The node's Prometheus metrics, served by the REST API at ``/metrics``.

The request path only bumps plain ints (the CQL server's per-message-type counts, the query
layer's `RouteCounters`); this collector turns them into Prometheus counters when scraped, so
measuring costs the hot path one dict or list increment and no locks. Each node has its own
registry (not prometheus_client's global one), so several nodes in one process never collide.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from tabletdb.protocol.requests import (
    AuthResponse,
    Batch,
    Execute,
    Options,
    Prepare,
    Query,
    Register,
    Request,
    Startup,
)
from tabletdb.query.route_check import Op, RouteCounters, Target

OPCODE_NAMES: dict[type[Request], str] = {
    Startup: "STARTUP",
    Options: "OPTIONS",
    Query: "QUERY",
    Prepare: "PREPARE",
    Execute: "EXECUTE",
    Register: "REGISTER",
    Batch: "BATCH",
    AuthResponse: "AUTH_RESPONSE",
}

TARGET_LABELS = {
    Target.REPLICA: "replica",
    Target.OTHER_SHARD: "other_shard",
    Target.NON_REPLICA: "non_replica",
}
OP_LABELS = {Op.READ: "read", Op.WRITE: "write"}

RequestCounts = Callable[[], Mapping[type[Request], int]]


class NodeCollector(Collector):
    """Reads the node's counters at scrape time."""

    def __init__(self, requests: RequestCounts, routes: RouteCounters | None) -> None:
        self._requests = requests
        self._routes = routes

    def collect(self) -> Iterator[Metric]:
        by_opcode = CounterMetricFamily(
            "tabletdb_cql_requests",
            "CQL requests received, by opcode (decoded frames; protocol errors are not counted).",
            labels=["opcode"],
        )
        counts = self._requests()
        for kind, name in OPCODE_NAMES.items():
            by_opcode.add_metric([name], counts.get(kind, 0))
        yield by_opcode
        if self._routes is None:
            return
        routed = CounterMetricFamily(
            "tabletdb_cql_single_partition_requests",
            "Prepared single-partition reads and writes on user tables (every partition key column "
            "bound), by where they were coordinated: on a replica's owning shard, on a replica but "
            "another shard, or on a node holding no replica (forwarded).",
            labels=["op", "coordinator"],
        )
        for (op, target), value in self._routes.snapshot().items():
            routed.add_metric([OP_LABELS[op], TARGET_LABELS[target]], value)
        yield routed
        yield CounterMetricFamily(
            "tabletdb_cql_tablet_routing_payloads",
            "RESULT responses that carried a tablets-routing-v1 payload (the driver learns the tablet).",
            value=self._routes.payloads_sent,
        )


class NodeMetrics:
    """A registry holding the node's collector; ``render`` is the scrape body."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, requests: RequestCounts, routes: RouteCounters | None) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(NodeCollector(requests, routes))

    def render(self) -> bytes:
        return generate_latest(self.registry)
