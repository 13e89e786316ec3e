"""The IF clause of a conditional INSERT, UPDATE or DELETE bound to a request's values.

Bound once per request, before any Paxos round starts (so an invalid condition fails without
one), and then checked against every row a round reads: a round that is retried re-checks the
same bound conditions instead of binding them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import INT, CqlType, ListType, MapType
from tabletdb.schema.model import ColumnDef, TableDef
from tabletdb.statements.relations import Predicate, Row, field_predicate, relation_predicate
from tabletdb.statements.terms import Bindings, term_value


@dataclass(frozen=True)
class BoundConditions:
    """What must hold of the current row for the statement to apply, and the columns a result
    that did not apply shows (Cassandra's: the whole row for IF [NOT] EXISTS, the columns the
    conditions name otherwise)."""

    exists: bool | None
    """True: IF EXISTS; False: IF NOT EXISTS; None: the column conditions in ``checks``."""
    checks: tuple[Predicate, ...]
    shown: tuple[ColumnDef, ...]

    def evaluate(self, current: Row | None) -> tuple[bool, Sequence[ColumnDef]]:
        """Whether the conditions hold of ``current`` (None: there is no row), and what to show."""
        if self.exists is not None:
            return (current is not None) == self.exists, self.shown
        row = current or {}
        return all(check(row) for check in self.checks), self.shown


def bind_conditions(stmt: ast.ModificationStatement, table: TableDef, bindings: Bindings) -> BoundConditions:
    """The conditions of a conditional ``stmt`` (INSERT: IF NOT EXISTS) on ``table``."""
    if isinstance(stmt, ast.InsertStatement):
        return BoundConditions(False, (), tuple(table.columns))
    if stmt.if_exists:
        return BoundConditions(True, (), tuple(table.columns))
    shown: list[ColumnDef] = []
    checks: list[Predicate] = []
    for rel in stmt.conditions:
        if isinstance(rel.lhs, ast.ElementRef):
            name, check = _element_predicate(rel, table, bindings)
        elif isinstance(rel.lhs, ast.ColumnRef):
            col = table.column(rel.lhs.name)
            if col is None:
                raise InvalidRequest(f"Undefined column name {rel.lhs.name}")
            if col.is_primary_key:
                raise InvalidRequest(f"PRIMARY KEY column '{col.name}' cannot have IF conditions")
            name, check = col.name, relation_predicate(col.name, col.type, rel, bindings, condition=True)
        elif isinstance(rel.lhs, ast.FieldRef):  # IF u.f <op> v
            name = rel.lhs.column
            check = field_predicate(rel, table, bindings, condition=True)
        else:
            raise InvalidRequest("Unsupported IF condition")
        checks.append(check)
        col_def = table.column(name)
        if col_def is not None and col_def not in shown:
            shown.append(col_def)
    return BoundConditions(None, tuple(checks), tuple(shown))


def _element_predicate(rel: ast.Relation, table: TableDef, bindings: Bindings) -> tuple[str, Predicate]:
    """``IF m[k] <op> v`` on a map or ``IF l[i] <op> v`` on a list: the column and its test."""
    assert isinstance(rel.lhs, ast.ElementRef)
    col = table.column(rel.lhs.column)
    if col is None:
        raise InvalidRequest(f"Undefined column name {rel.lhs.column}")
    t = col.type
    key_type: CqlType
    if isinstance(t, MapType):
        key_type, value_type = t.key, t.value
    elif isinstance(t, ListType):
        key_type, value_type = INT, t.element
    else:
        raise InvalidRequest(f"Invalid element access on non-collection column {col.name}")
    wanted_key = term_value(rel.lhs.key, key_type, col.name, bindings)
    check = relation_predicate(
        "element",
        value_type,
        ast.Relation(ast.ColumnRef("element"), rel.op, rel.rhs),
        bindings,
        condition=True,
    )
    name = col.name

    def predicate(row: Row) -> bool:
        current = row.get(name) or ()
        if isinstance(t, MapType):
            element = dict(current).get(wanted_key)
        else:
            element = current[wanted_key] if 0 <= int(wanted_key) < len(current) else None
        return check({"element": element})

    return name, predicate
