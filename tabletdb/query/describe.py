"""Server-side DESCRIBE: which rows each form returns and the result-set shape cqlsh expects.

The text itself comes from `tabletdb.schema.describe` (schema objects) and, WITH INTERNALS, from
the auth/qos packages through `AuthDescriber`. Results are one page regardless of the page size,
labelled `system.describe`, as ScyllaDB answers (spec/clients.md 4).
"""

from __future__ import annotations

from collections.abc import Callable

from tabletdb.cql import ast
from tabletdb.cql.codec import serialize
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.results import ColumnSpec, RowsMetadata, RowsResult
from tabletdb.cql.types import TEXT, ListType, MapType
from tabletdb.schema import describe as schema_describe
from tabletdb.schema.ddl_common import SYSTEM_KEYSPACES
from tabletdb.schema.describe import DescribeRow
from tabletdb.schema.model import Catalog
from tabletdb.systables.node_info import PARTITIONER, SNITCH, NodeInfo
from tabletdb.systables.token_ring import range_ownership

AuthDescriber = Callable[[bool], list[DescribeRow]]
"""Roles, grants, service levels and attachments WITH INTERNALS; the flag is AND PASSWORDS."""

_OWNERSHIP = MapType(TEXT, ListType(TEXT))
_LISTINGS = {"KEYSPACES", "TABLES", "TYPES", "FUNCTIONS", "AGGREGATES"}
_OBJECT_TYPES = {
    "TABLE": ("table",),
    "TYPE": ("type",),
    "FUNCTION": ("function",),
    "AGGREGATE": ("aggregate",),
    "INDEX": ("index",),
    "MATERIALIZED VIEW": ("view",),
}


def _spec(name: str) -> ColumnSpec:
    return ColumnSpec("system", "describe", name, TEXT)


_LISTING_COLUMNS = [_spec("keyspace_name"), _spec("type"), _spec("name")]
_OBJECT_COLUMNS = [*_LISTING_COLUMNS, _spec("create_statement")]
_OBJECT_METADATA = RowsMetadata(_OBJECT_COLUMNS)
_LISTING_METADATA = RowsMetadata(_LISTING_COLUMNS)


def result_columns(stmt: ast.Describe) -> list[ColumnSpec]:
    if stmt.kind in _LISTINGS:
        return _LISTING_COLUMNS
    if stmt.kind == "CLUSTER":
        return [_spec("cluster"), _spec("partitioner"), _spec("snitch")]
    return _OBJECT_COLUMNS


def describe(
    stmt: ast.Describe,
    catalog: Catalog,
    session_keyspace: str | None,
    node: NodeInfo,
    auth_rows: AuthDescriber,
) -> RowsResult:
    """The rows of one DESCRIBE statement."""
    if stmt.with_passwords and stmt.kind not in ("SCHEMA", "FULL SCHEMA"):
        raise InvalidRequest("AND PASSWORDS is only allowed with DESCRIBE [FULL] SCHEMA WITH INTERNALS")
    if stmt.kind == "CLUSTER":
        return _cluster(node, catalog, session_keyspace)
    if stmt.kind in _LISTINGS:
        rows = schema_describe.listing_rows(catalog, stmt.kind.lower(), session_keyspace)
        return _rows(_LISTING_METADATA, [(r.keyspace_name, r.type, r.name) for r in rows])
    rows = _object_rows(stmt, catalog, session_keyspace, auth_rows)
    return _rows(_OBJECT_METADATA, [(r.keyspace_name, r.type, r.name, r.create_statement) for r in rows])


def _object_rows(
    stmt: ast.Describe, catalog: Catalog, session_keyspace: str | None, auth_rows: AuthDescriber
) -> list[DescribeRow]:
    kind = stmt.kind
    if kind in ("SCHEMA", "FULL SCHEMA"):
        rows = schema_describe.schema_rows(catalog, kind == "FULL SCHEMA", stmt.with_internals)
        if stmt.with_internals:
            rows += auth_rows(stmt.with_passwords)
        return rows
    if kind == "KEYSPACE":
        name = stmt.name.name if stmt.name is not None else session_keyspace
        if name is None:
            raise InvalidRequest("No keyspace specified and no current keyspace")
        ks = catalog.keyspace(name)
        if ks is None:
            raise InvalidRequest(f"'{name}' not found in keyspaces")
        rows = schema_describe.keyspace_rows(ks, stmt.with_internals)
        return rows[:1] if stmt.only else rows
    if stmt.name is None:
        raise InvalidRequest(f"DESCRIBE {kind} needs a name")
    if kind == "NAME":
        return _generic(stmt, catalog, session_keyspace)
    keyspace = stmt.name.keyspace or session_keyspace
    if keyspace is None:
        raise InvalidRequest("No keyspace specified and no current keyspace")
    if catalog.keyspace(keyspace) is None:
        raise InvalidRequest(f"'{keyspace}' not found in keyspaces")
    wanted = _OBJECT_TYPES[kind]
    rows = [
        r
        for r in schema_describe.object_rows(catalog, keyspace, stmt.name.name, stmt.with_internals)
        if r.type in wanted or (kind == "TABLE" and r.type in ("index", "view", "table"))
    ]
    if kind == "TABLE" and rows and rows[0].type == "view":
        # ScyllaDB keeps the TABLE and MATERIALIZED VIEW forms apart (as for DROP and ALTER).
        raise InvalidRequest(
            "Cannot use DESC TABLE on materialized View. (Did you mean DESC MATERIALIZED VIEW)?"
        )
    if not rows or rows[0].type not in wanted:
        what = {"MATERIALIZED VIEW": "Materialized view"}.get(kind, kind.capitalize())
        raise InvalidRequest(f"{what} '{stmt.name.name}' not found in keyspace '{keyspace}'")
    return rows


def _generic(stmt: ast.Describe, catalog: Catalog, session_keyspace: str | None) -> list[DescribeRow]:
    """`DESC name`: a keyspace, else an object of the (given or current) keyspace."""
    assert stmt.name is not None
    if stmt.name.keyspace is None:
        ks = catalog.keyspace(stmt.name.name)
        if ks is not None:
            return schema_describe.keyspace_rows(ks, stmt.with_internals)
    keyspace = stmt.name.keyspace or session_keyspace
    if keyspace is not None:
        rows = schema_describe.object_rows(catalog, keyspace, stmt.name.name, stmt.with_internals)
        if rows:
            return rows
    raise InvalidRequest(f"'{stmt.name.name}' not found in keyspaces")


def _cluster(node: NodeInfo, catalog: Catalog, session_keyspace: str | None) -> RowsResult:
    """cluster, partitioner, snitch; with a non-system vnode keyspace in USE also its
    ``range_ownership`` (end token -> replica addresses), as ScyllaDB answers."""
    columns = [_spec("cluster"), _spec("partitioner"), _spec("snitch")]
    row: list[bytes | None] = [node.cluster_name.encode(), PARTITIONER.encode(), SNITCH.encode()]
    ks = None if session_keyspace in SYSTEM_KEYSPACES else catalog.keyspace(session_keyspace or "")
    if ks is not None and not ks.definition.uses_tablets:
        columns.append(ColumnSpec("system", "describe", "range_ownership", _OWNERSHIP))
        row.append(serialize(_OWNERSHIP, tuple(range_ownership(ks, node.topology))))
    return RowsResult(RowsMetadata(columns), [row])


def _rows(metadata: RowsMetadata, rows: list[tuple[str | None, ...]]) -> RowsResult:
    encoded = [[None if v is None else v.encode() for v in row] for row in rows]
    return RowsResult(metadata, encoded)
