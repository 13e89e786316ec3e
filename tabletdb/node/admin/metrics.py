"""The node's Prometheus metrics, served by the REST API at ``/metrics``.

The request path only bumps plain ints (the CQL server's per-message-type counts, the query
layer's `RouteCounters`); this collector turns them into Prometheus counters when scraped, so
measuring costs the hot path one dict or list increment and no locks. Each node has its own
registry (not prometheus_client's global one), so several nodes in one process never collide.
The same counters are also rendered under ScyllaDB's names (``scylla_metrics``), which is what
the Prometheus port (``prometheus_port``) serves with ours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from tabletdb.node.admin.scylla_metrics import TransportCounters, cql_families, render, transport_families
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
from tabletdb.query.auth_check import AuthService
from tabletdb.query.route_check import Op, RouteCounters, Target
from tabletdb.query.statement_stats import StatementStats
from tabletdb.storage.node_commit import CommitCounters

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
Commits = Callable[[], CommitCounters | None]


class NodeCollector(Collector):
    """Reads the node's counters at scrape time."""

    def __init__(
        self,
        requests: RequestCounts,
        routes: RouteCounters | None,
        commits: Commits | None,
        auth: AuthService | None = None,
    ) -> None:
        self._requests = requests
        self._routes = routes
        self._commits = commits
        self._auth = auth

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
        yield from self._commit_metrics()
        yield from self._auth_metrics()
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

    def _commit_metrics(self) -> Iterator[Metric]:
        counters = self._commits() if self._commits is not None else None
        if counters is None:
            return
        yield CounterMetricFamily(
            "tabletdb_commitlog_records",
            "Records appended to the node-wide commit log (one per event-loop tick that wrote).",
            value=counters.records,
        )
        yield CounterMetricFamily(
            "tabletdb_commitlog_writes",
            "Writes in those records (one per writer per tablet file); writes per record is the "
            "group commit's batching.",
            value=counters.writes,
        )
        yield CounterMetricFamily(
            "tabletdb_deferred_write_outs",
            "Transactions in which a tablet file wrote the rows it had deferred, started by the "
            "commit log (full batch, memory budget, period, log trim, stop); reads start more.",
            value=counters.write_outs,
        )

    def _auth_metrics(self) -> Iterator[Metric]:
        if self._auth is None:
            return
        yield CounterMetricFamily(
            "tabletdb_auth_password_hashes",
            "Password hashes computed for logins (CQL and REST basic auth), one per login not "
            "answered from the cache of verified logins, whether or not the role exists.",
            value=self._auth.password_hashes,
        )
        yield CounterMetricFamily(
            "tabletdb_auth_failed_logins",
            "Logins refused (unknown role, wrong password, or no LOGIN); each was answered after "
            "the failed-login delay.",
            value=self._auth.failed_logins,
        )


class NodeMetrics:
    """A registry holding the node's collector; ``render`` is the scrape body: our families,
    then ScyllaDB's transport families when ``transport`` is given."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(
        self,
        requests: RequestCounts,
        routes: RouteCounters | None,
        commits: Commits | None = None,
        auth: AuthService | None = None,
        transport: Callable[[], TransportCounters] | None = None,
        statements: Callable[[], StatementStats] | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(NodeCollector(requests, routes, commits, auth))
        self._requests = requests
        self._transport = transport
        self._statements = statements

    def render(self) -> bytes:
        ours = generate_latest(self.registry)
        if self._transport is None:
            return ours
        counts = self._requests()
        by_opcode = {name: counts.get(kind, 0) for kind, name in OPCODE_NAMES.items()}
        scylla = ours + render(transport_families(self._transport(), by_opcode))
        if self._statements is None:
            return scylla
        return scylla + render(cql_families(self._statements()))
