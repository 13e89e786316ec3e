"""The CQL transport counters under ScyllaDB's metric names, for dashboards and alerts written
for ScyllaDB (its monitoring stack scrapes ``prometheus_port``).

ScyllaDB exports seastar metrics: counters keep their own names (no ``_total`` added — the one
that ends in ``_total``, ``scylla_transport_cql_errors_total``, is named so), every sample has a
``shard`` label, and per-kind families leave out kinds that never happened. prometheus_client
always adds ``_total`` to a counter's family name, so these families are rendered here in the
text exposition format. A node is one event loop: every sample is ``shard="0"``. What we count
and ScyllaDB also counts is exported: connections, requests served and serving, CQL messages by
opcode and ERROR responses by kind (labels as ScyllaDB's ``exception_map``); and, from the
query layer's `StatementStats`, the ``scylla_cql_*`` statement counters (reads; inserts, updates,
deletes, batches and their statements with a ``conditional`` label; rows returned; SELECTs with
ALLOW FILTERING) and the coordinator read and write latency histograms
(``scylla_storage_proxy_coordinator_{read,write}_latency``, microseconds, as ScyllaDB's).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from tabletdb.cql import errors
from tabletdb.query.statement_stats import LatencyHistogram, StatementStats

ERROR_TYPES: dict[int, str] = {
    errors.ServerError.code: "server_error",
    errors.ProtocolError.code: "protocol_error",
    errors.BadCredentials.code: "authentication",
    errors.Unavailable.code: "unavailable",
    errors.Overloaded.code: "overloaded",
    errors.IsBootstrapping.code: "is_bootstrapping",
    errors.TruncateError.code: "truncate_error",
    errors.WriteTimeout.code: "write_timeout",
    errors.ReadTimeout.code: "read_timeout",
    errors.ReadFailure.code: "read_failure",
    errors.FunctionFailure.code: "function_failure",
    errors.WriteFailure.code: "write_failure",
    errors.CdcWriteFailure.code: "cdc_write_failure",
    errors.CqlSyntaxError.code: "syntax_error",
    errors.Unauthorized.code: "unauthorized",
    errors.InvalidRequest.code: "invalid",
    errors.ConfigurationError.code: "config_error",
    errors.AlreadyExists.code: "already_exists",
    errors.Unprepared.code: "unprepared",
    errors.RateLimitReached.code: "rate_limit_error",
}
"""ERROR codes -> the ``type`` label ScyllaDB gives them."""

SHARD = {"shard": "0"}


class TransportCounters(Protocol):
    """What the CQL server counts (``protocol.server.CqlServer``)."""

    @property
    def connects(self) -> int: ...
    @property
    def current_connections(self) -> int: ...
    @property
    def requests_served(self) -> int: ...
    @property
    def requests_serving(self) -> int: ...
    @property
    def error_counts(self) -> Mapping[int, int]: ...


@dataclass(frozen=True)
class Family:
    name: str
    help: str
    kind: str
    """``counter`` or ``gauge``."""
    samples: tuple[tuple[Mapping[str, str], float], ...]


def transport_families(counters: TransportCounters, by_opcode: Mapping[str, int]) -> list[Family]:
    """The ``scylla_transport_*`` families of the server's counters; ``by_opcode``: CQL
    messages received by opcode name (STARTUP, QUERY, ...)."""
    errors_by_type = [
        ({**SHARD, "type": ERROR_TYPES.get(code, f"0x{code:04x}")}, float(n))
        for code, n in sorted(counters.error_counts.items())
        if n
    ]
    kinds = [({**SHARD, "kind": kind}, float(n)) for kind, n in by_opcode.items() if n]
    return [
        Family(
            "scylla_transport_cql_connections",
            "Client connections accepted.",
            "counter",
            ((SHARD, float(counters.connects)),),
        ),
        Family(
            "scylla_transport_current_connections",
            "Client connections open now.",
            "gauge",
            ((SHARD, float(counters.current_connections)),),
        ),
        Family(
            "scylla_transport_requests_served",
            "Requests answered (results and errors).",
            "counter",
            ((SHARD, float(counters.requests_served)),),
        ),
        Family(
            "scylla_transport_requests_serving",
            "Requests being processed now.",
            "gauge",
            ((SHARD, float(counters.requests_serving)),),
        ),
        Family(
            "scylla_transport_cql_requests_count",
            "CQL messages received, by kind (opcode).",
            "counter",
            tuple(kinds),
        ),
        Family(
            "scylla_transport_cql_errors_total",
            "CQL ERROR responses sent, by the kind of error.",
            "counter",
            tuple(errors_by_type),
        ),
    ]


@dataclass(frozen=True)
class HistogramFamily:
    """A latency histogram: ``_bucket{le=...}`` (cumulative), ``_sum`` and ``_count`` samples."""

    name: str
    help: str
    histogram: LatencyHistogram


def _conditional(
    counts: Mapping[bool, int] | Mapping[tuple[str, bool], int], kind: str | None = None
) -> tuple[tuple[Mapping[str, str], float], ...]:
    """``conditional="no"`` always, ``"yes"`` only once it happened (ScyllaDB skips it when empty)."""

    def count(flag: bool) -> int:
        key: object = flag if kind is None else (kind, flag)
        return int(counts.get(key, 0))  # type: ignore[call-overload]

    samples: list[tuple[Mapping[str, str], float]] = [({**SHARD, "conditional": "no"}, float(count(False)))]
    if count(True):
        samples.append(({**SHARD, "conditional": "yes"}, float(count(True))))
    return tuple(samples)


def cql_families(stats: StatementStats) -> list[Family | HistogramFamily]:
    """ScyllaDB's ``scylla_cql_*`` statement counters and coordinator latency histograms."""
    mods = stats.modifications
    return [
        Family(
            "scylla_cql_reads",
            "Counts the total number of CQL SELECT requests.",
            "counter",
            ((SHARD, float(stats.reads)),),
        ),
        Family(
            "scylla_cql_inserts",
            "Counts the total number of CQL INSERT requests with/without conditions.",
            "counter",
            _conditional(mods, "inserts"),
        ),
        Family(
            "scylla_cql_updates",
            "Counts the total number of CQL UPDATE requests with/without conditions.",
            "counter",
            _conditional(mods, "updates"),
        ),
        Family(
            "scylla_cql_deletes",
            "Counts the total number of CQL DELETE requests with/without conditions.",
            "counter",
            _conditional(mods, "deletes"),
        ),
        Family(
            "scylla_cql_batches",
            "Counts the total number of CQL BATCH requests with/without conditions.",
            "counter",
            _conditional(stats.batches),
        ),
        Family(
            "scylla_cql_statements_in_batches",
            "Counts the total number of sub-statements in CQL BATCH requests with/without conditions.",
            "counter",
            _conditional(stats.statements_in_batches),
        ),
        Family(
            "scylla_cql_rows_read",
            "Counts the total number of rows returned by CQL SELECT requests.",
            "counter",
            ((SHARD, float(stats.rows_read)),),
        ),
        Family(
            "scylla_cql_select_allow_filtering",
            "Counts the number of SELECT query executions with ALLOW FILTERING option.",
            "counter",
            ((SHARD, float(stats.select_allow_filtering)),),
        ),
        HistogramFamily(
            "scylla_storage_proxy_coordinator_read_latency",
            "The general read latency histogram (microseconds).",
            stats.read_latency,
        ),
        HistogramFamily(
            "scylla_storage_proxy_coordinator_write_latency",
            "The general write latency histogram (microseconds).",
            stats.write_latency,
        ),
    ]


def render(families: list[Family] | list[Family | HistogramFamily]) -> bytes:
    """Prometheus text exposition (format 0.0.4) of ``families``; families with no samples are
    left out, as seastar skips empty ones."""
    return "".join(_lines(families)).encode()


def _histogram_lines(family: HistogramFamily) -> Iterator[str]:
    yield f"# HELP {family.name} {family.help}\n"
    yield f"# TYPE {family.name} histogram\n"
    for bound, count in family.histogram.cumulative():
        le = "+Inf" if bound == float("inf") else repr(bound)
        yield f'{family.name}_bucket{{le="{le}",shard="0"}} {float(count)!r}\n'
    yield f'{family.name}_sum{{shard="0"}} {float(family.histogram.sum_us)!r}\n'
    yield f'{family.name}_count{{shard="0"}} {float(family.histogram.count)!r}\n'


def _lines(families: list[Family] | list[Family | HistogramFamily]) -> Iterator[str]:
    for family in families:
        if isinstance(family, HistogramFamily):
            yield from _histogram_lines(family)
            continue
        if not family.samples:
            continue
        yield f"# HELP {family.name} {family.help}\n"
        yield f"# TYPE {family.name} {family.kind}\n"
        for labels, value in family.samples:
            rendered = ",".join(f'{k}="{v}"' for k, v in labels.items())
            yield f"{family.name}{{{rendered}}} {value!r}\n"
