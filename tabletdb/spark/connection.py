"""Data source options, driver sessions, and what the data source asks the cluster.

Spark runs the reader and writer in Python worker processes that it reuses between tasks, so each
process keeps one scylla-driver session per set of connection options instead of reconnecting
(and re-reading the schema) for every task.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tabletdb.cql.identifiers import quote_identifier
from tabletdb.dht.token import TokenRange
from tabletdb.spark.ranges import parse_token_range
from tabletdb.spark.schema_map import TableSchema, table_schema_from_rows

SOURCE_NAME = "tabletdb"
"""The data source's format name: `spark.read.format("tabletdb")`."""
DEFAULT_PORT = 9042
DEFAULT_PAGE_SIZE = 1000
DEFAULT_CONCURRENCY = 256  # measured: 64 in flight left the node idle half the time (~1.1k vs 1.8k rows/s)
DEFAULT_BATCH_ROWS = 2000


class OptionError(ValueError):
    """A data source option is missing or malformed."""


@dataclass(frozen=True)
class ConnectOptions:
    hosts: tuple[str, ...]
    port: int = DEFAULT_PORT
    username: str | None = None
    password: str | None = None
    protocol_version: int = 4


@dataclass(frozen=True)
class SourceOptions:
    """Everything the `tabletdb` data source understands (option names are case-insensitive)."""

    connect: ConnectOptions
    keyspace: str
    table: str
    consistency: str = "LOCAL_QUORUM"
    page_size: int = DEFAULT_PAGE_SIZE
    columns: tuple[str, ...] | None = None
    token_range: TokenRange | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    batch_rows: int = DEFAULT_BATCH_ROWS
    writetime_column: str | None = None
    ttl_column: str | None = None
    pushdown: bool = True
    """Reading answers Spark's key and clustering filters itself (``spark.pushdown``); needs the
    session's ``spark.sql.python.filterPushdown.enabled`` (``spark.session`` sets it)."""


def _int_option(options: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    text = options.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"option {name} must be an integer, got {text!r}") from None
    if value < minimum:
        raise OptionError(f"option {name} must be >= {minimum}, got {value}")
    return value


def parse_options(raw: Mapping[str, str]) -> SourceOptions:
    """Spark passes options as strings; `table` may be `ks.t` or given with `keyspace`."""
    options = {k.lower(): v for k, v in raw.items()}
    hosts = tuple(h.strip() for h in options.get("hosts", "").split(",") if h.strip())
    if not hosts:
        raise OptionError("option hosts is required: comma-separated contact points")
    table = options.get("table", "")
    keyspace = options.get("keyspace", "")
    if not keyspace and "." in table:
        keyspace, _, table = table.partition(".")
    if not keyspace or not table:
        raise OptionError(f"options keyspace and table are required (or table=ks.t), got {table!r}")
    consistency = options.get("consistency", "LOCAL_QUORUM").upper()
    from cassandra import ConsistencyLevel

    if consistency not in ConsistencyLevel.name_to_value:
        known = ", ".join(sorted(ConsistencyLevel.name_to_value))
        raise OptionError(f"option consistency {consistency!r} is not one of {known}")
    columns = (
        tuple(c.strip() for c in options["columns"].split(",") if c.strip()) if "columns" in options else None
    )
    return SourceOptions(
        connect=ConnectOptions(
            hosts=hosts,
            port=_int_option(options, "port", DEFAULT_PORT),
            username=options.get("username"),
            password=options.get("password"),
        ),
        keyspace=keyspace,
        table=table,
        consistency=consistency,
        page_size=_int_option(options, "page_size", DEFAULT_PAGE_SIZE),
        columns=columns or None,
        token_range=parse_token_range(options["token_range"]) if "token_range" in options else None,
        concurrency=_int_option(options, "concurrency", DEFAULT_CONCURRENCY),
        batch_rows=_int_option(options, "batch_rows", DEFAULT_BATCH_ROWS),
        writetime_column=options.get("writetime_column") or None,
        ttl_column=options.get("ttl_column") or None,
        pushdown=_bool_option(options, "pushdown", True),
    )


def _bool_option(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = options.get(name)
    if text is None:
        return default
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    raise OptionError(f"option {name} must be true or false, got {text!r}")


# --- sessions -------------------------------------------------------------------------------------

_sessions: dict[ConnectOptions, Any] = {}
_clusters: list[Any] = []
_lock = threading.Lock()


def session_for(connect: ConnectOptions) -> Any:
    """A connected scylla-driver Session, shared by every task of this process with these options."""
    with _lock:
        session = _sessions.get(connect)
        if session is None:
            from cassandra.auth import PlainTextAuthProvider
            from cassandra.cluster import Cluster

            auth = (
                PlainTextAuthProvider(connect.username, connect.password or "") if connect.username else None
            )
            cluster = Cluster(
                contact_points=list(connect.hosts),
                port=connect.port,
                auth_provider=auth,
                protocol_version=connect.protocol_version,
            )
            if not _clusters:
                atexit.register(close_all)
            _clusters.append(cluster)
            session = cluster.connect()
            _sessions[connect] = session
        return session


def close_all() -> None:
    with _lock:
        for cluster in _clusters:
            cluster.shutdown()
        _clusters.clear()
        _sessions.clear()


# --- what the cluster says -------------------------------------------------------------------------


def fetch_table_schema(session: Any, keyspace: str, table: str) -> TableSchema:
    tables = list(
        session.execute(
            "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
            (keyspace, table),
        )
    )
    column_rows = session.execute(
        "SELECT column_name, kind, position, type FROM system_schema.columns "
        "WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    )
    type_rows = session.execute(
        "SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = %s",
        (keyspace,),
    )
    table_id = str(tables[0].id) if tables else None
    return table_schema_from_rows(
        keyspace, table, table_id, [r._asdict() for r in column_rows], [r._asdict() for r in type_rows]
    )


def fetch_tablet_last_tokens(session: Any, table_id: str | None) -> list[int] | None:
    """The table's tablet boundaries, or None for a vnode table (or a server without system.tablets)."""
    if table_id is None:
        return None
    from uuid import UUID

    from cassandra import InvalidRequest

    try:
        rows = session.execute("SELECT last_token FROM system.tablets WHERE table_id = %s", (UUID(table_id),))
    except InvalidRequest:  # no system.tablets: every table is a vnode table there
        return None
    tokens = sorted(int(r.last_token) for r in rows)
    return tokens or None


def fetch_ring_tokens(session: Any) -> list[int]:
    tokens: list[int] = []
    for query in ("SELECT tokens FROM system.local", "SELECT tokens FROM system.peers"):
        for row in session.execute(query):
            tokens.extend(int(t) for t in row.tokens or ())
    return tokens


def qualified(keyspace: str, table: str) -> str:
    return f"{quote_identifier(keyspace)}.{quote_identifier(table)}"
