"""Writes to virtual tables, as ScyllaDB answers them (pure).

ScyllaDB's virtual tables refuse writes with a write failure ("this virtual table doesn't allow
updates"); ``system.config`` alone takes them: ``UPDATE system.config SET value = '...' WHERE
name = '...'`` (or the same as an INSERT) sets a live-updatable option on this node, until
restart. Each refusal below is ScyllaDB's text. The node carries the update out
(`LocalNode.update_config`); this module only reads the statement.
"""

from __future__ import annotations

from collections.abc import Sequence

from tabletdb.cql import ast
from tabletdb.cql.consistency import ONE
from tabletdb.cql.errors import InvalidRequest, WriteFailure
from tabletdb.cql.types import TEXT
from tabletdb.cql.values import Value
from tabletdb.statements.terms import Bindings, term_value

VIRTUAL_TABLES = frozenset(
    {
        "clients",
        "cluster_status",
        "config",
        "one_row",
        "protocol_servers",
        "raft_state",
        "runtime_info",
        "snapshots",
        "token_ring",
        "versions",
        "cdc_timestamps",
        "cdc_streams",
    }
)
"""The `system` tables ScyllaDB implements as virtual tables (the rest of our `system` tables
are ordinary, read-only tables there)."""

READ_ONLY = "this virtual table doesn't allow updates"


def write_refused(message: str) -> WriteFailure:
    """How ScyllaDB reports a refused virtual-table write: a write failure of its one replica."""
    return WriteFailure(message, ONE, 0, 1, 1, "SIMPLE")


def config_updates(stmt: ast.ModificationStatement, values: Sequence[Value]) -> list[tuple[str, str]]:
    """(option name, new value text) for every row the statement writes to ``system.config``."""
    if isinstance(stmt, ast.InsertStatement) and stmt.json is not None:
        raise InvalidRequest("INSERT JSON is not supported on system.config")
    if not isinstance(stmt, ast.InsertStatement) and (stmt.conditions or stmt.if_exists):
        raise InvalidRequest("Conditional updates are not supported on system tables")
    if isinstance(stmt, ast.InsertStatement) and stmt.if_not_exists:
        raise InvalidRequest("Conditional updates are not supported on system tables")
    if stmt.attributes.ttl is not None or stmt.attributes.timestamp is not None:
        raise InvalidRequest("USING TTL and USING TIMESTAMP are not supported on system.config")
    bindings = Bindings(values)
    if isinstance(stmt, ast.DeleteStatement):
        raise write_refused("option value is required")
    if isinstance(stmt, ast.InsertStatement):
        cells = {c: term_value(v, TEXT, c, bindings) for c, v in zip(stmt.columns, stmt.values)}
        names = [cells.pop("name", None)]
    else:
        cells = {}
        for assignment in stmt.assignments:
            if not isinstance(assignment, ast.SetColumn):
                raise InvalidRequest("Only plain assignments (column = value) are supported on system.config")
            cells[assignment.column] = term_value(assignment.value, TEXT, assignment.column, bindings)
        names = _names(stmt.where, bindings)
    unknown = sorted(set(cells) - {"type", "source", "status", "value"})
    if unknown:
        raise InvalidRequest(f"Undefined column name {unknown[0]}")
    value = cells.get("value")
    if any(n is None for n in names):
        raise write_refused("option name is required")
    if value is None:
        raise write_refused("option value is required")
    if "type" in cells:
        raise write_refused("option type is immutable")
    if "source" in cells:
        raise write_refused("option source is not updateable")
    if "status" in cells:
        raise write_refused("option status is not updateable")
    return [(str(n), str(value)) for n in names]


def _names(where: Sequence[ast.Relation], bindings: Bindings) -> list[str | None]:
    if len(where) != 1 or not isinstance(where[0].lhs, ast.ColumnRef) or where[0].lhs.name != "name":
        raise InvalidRequest("system.config is updated by its primary key: WHERE name = '...'")
    rel = where[0]
    if rel.op == "=" and not isinstance(rel.rhs, ast.InValues):
        return [term_value(rel.rhs, TEXT, "name", bindings)]
    if rel.op == "IN" and isinstance(rel.rhs, ast.InValues):
        return [term_value(t, TEXT, "name", bindings) for t in rel.rhs.items]
    raise InvalidRequest("system.config is updated by its primary key: WHERE name = '...'")
