"""One WHERE relation as a test on decoded rows: shared by filtering, IF conditions, view filters and
the virtual system tables, so all of them read a relation the same way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType, ListType, MapType, SetType
from tabletdb.cql.values import Unset
from tabletdb.schema.model import TableDef
from tabletdb.statements.terms import NO_BINDINGS, Bindings, term_value

Row = dict[str, Any]
Predicate = Callable[[Row], bool]


@dataclass(frozen=True, slots=True)
class BoundRelation:
    """A relation on one column with its values bound: the test of a decoded row, and the value of
    an ``=`` (None for other operators), which the virtual tables narrow the rows they render by."""

    test: Predicate
    equals: Any = None


def _bound_value(term: ast.Term, t: CqlType, receiver: str, bindings: Bindings) -> Any:
    """A relation's value; unset is refused (unlike a write's, a restriction cannot be skipped)."""
    value = term_value(term, t, receiver, bindings)
    if isinstance(value, Unset):
        raise InvalidRequest(f"Invalid unset value for column {receiver}")
    return value


def relation_predicate(name: str, t: CqlType, rel: ast.Relation, bindings: Bindings) -> Predicate:
    """A test of one WHERE relation on decoded rows (column name -> Python value): shared by
    filtering, IF conditions and view filters, so all of them read a relation the same way."""
    return bind_relation(name, t, rel, bindings).test


def literal_predicate(name: str, t: CqlType, rel: ast.Relation) -> Predicate:
    """``relation_predicate`` of a relation written with literals only (a view's WHERE clause,
    which has no markers to bind)."""
    return relation_predicate(name, t, rel, NO_BINDINGS)


def bind_relation(name: str, t: CqlType, rel: ast.Relation, bindings: Bindings) -> BoundRelation:
    """The relation on column ``name`` of type ``t`` with its values bound."""
    op = rel.op
    if op == "IN":
        if isinstance(rel.rhs, ast.InValues):
            options = [_bound_value(item, t, name, bindings) for item in rel.rhs.items]
        else:
            options = list(_bound_value(rel.rhs, _list_of(t), name, bindings) or ())
        return BoundRelation(lambda r: r.get(name) in options)
    if op in ("CONTAINS", "CONTAINS KEY"):
        element = _element_type(t, key=op == "CONTAINS KEY")
        wanted = _bound_value(_single(rel.rhs), element, name, bindings)
        if op == "CONTAINS KEY":
            return BoundRelation(lambda r: any(k == wanted for k, _ in (r.get(name) or ())))
        if hasattr(t, "key"):
            return BoundRelation(lambda r: any(v == wanted for _, v in (r.get(name) or ())))
        return BoundRelation(lambda r: wanted in (r.get(name) or ()))
    wanted = _bound_value(_single(rel.rhs), t, name, bindings)
    compare: dict[str, Callable[[Any, Any], bool]] = {
        "=": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        "<": lambda a, b: a is not None and a < b,
        "<=": lambda a, b: a is not None and a <= b,
        ">": lambda a, b: a is not None and a > b,
        ">=": lambda a, b: a is not None and a >= b,
    }
    if op not in compare:
        raise InvalidRequest(f"Unsupported restriction {op} on column {name}")
    check = compare[op]
    return BoundRelation(lambda r: check(r.get(name), wanted), wanted if op == "=" else None)


def select_filter(rel: ast.Relation, table: TableDef, bindings: Bindings) -> Predicate:
    """A SELECT's restriction that storage cannot apply, as a test of the rows read."""
    if isinstance(rel.lhs, ast.ElementRef):
        return _element_filter(rel, table, bindings)
    if not isinstance(rel.lhs, ast.ColumnRef):
        raise InvalidRequest("Only restrictions on plain columns can be filtered")
    col = table.column(rel.lhs.name)
    if col is None:
        raise InvalidRequest(f"Undefined column name {rel.lhs.name}")
    return relation_predicate(col.name, col.type, rel, bindings)


def _element_filter(rel: ast.Relation, table: TableDef, bindings: Bindings) -> Predicate:
    """``m[k] = v`` (and other comparisons) on a map element, as a row predicate."""
    assert isinstance(rel.lhs, ast.ElementRef)
    column = table.column(rel.lhs.column)
    if column is None:
        raise InvalidRequest(f"Undefined column name {rel.lhs.column}")
    if not isinstance(column.type, MapType):
        raise InvalidRequest(f"Column {column.name} cannot be used as a map (element restriction)")
    key = term_value(rel.lhs.key, column.type.key, f"key({column.name})", bindings)
    if key is None or isinstance(key, Unset):
        raise InvalidRequest(f"Invalid null or unset map key for column {column.name}")
    name = f"{column.name}[{key!r}]"
    compare = relation_predicate(name, column.type.value, rel, bindings)
    column_name = column.name

    def element_of(row: Row) -> bool:
        found = next((v for k, v in row.get(column_name) or () if k == key), None)
        return compare({name: found})

    return element_of


def _single(rhs: ast.Term | ast.InValues) -> ast.Term:
    if isinstance(rhs, ast.InValues):
        raise InvalidRequest("A list of values is only allowed with IN")
    return rhs


def _list_of(t: CqlType) -> CqlType:
    return ListType(t)


def _element_type(t: CqlType, key: bool) -> CqlType:
    if isinstance(t, MapType):
        return t.key if key else t.value
    if isinstance(t, ListType | SetType) and not key:
        return t.element
    raise InvalidRequest(f"Cannot use CONTAINS{' KEY' if key else ''} on non-collection column")
