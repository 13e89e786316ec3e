"""One WHERE relation as a test on decoded rows: shared by filtering, IF conditions, view filters and
the virtual system tables, so all of them read a relation the same way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tabletdb.cql import ast, codec
from tabletdb.cql.compare import compare
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType, ListType, MapType, NativeType, SetType, UserType
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


def relation_predicate(
    name: str, t: CqlType, rel: ast.Relation, bindings: Bindings, *, condition: bool = False
) -> Predicate:
    """A test of one WHERE relation on decoded rows (column name -> Python value): shared by
    filtering, IF conditions and view filters, so all of them read a relation the same way.
    ``condition``: an IF condition, where ``= null`` holds of a missing value (in a WHERE clause
    a comparison with null holds of nothing, as in ScyllaDB)."""
    return bind_relation(name, t, rel, bindings, condition=condition).test


def literal_predicate(name: str, t: CqlType, rel: ast.Relation) -> Predicate:
    """``relation_predicate`` of a relation written with literals only (a view's WHERE clause,
    which has no markers to bind)."""
    return relation_predicate(name, t, rel, NO_BINDINGS)


_PYTHON_ORDERED = frozenset(
    {"ascii", "text", "varchar", "tinyint", "smallint", "int", "bigint", "varint", "counter"}
    | {"decimal", "timestamp", "date", "time", "boolean", "blob"}
)
"""Native types whose decoded Python values sort as CQL sorts them; every other type (uuids,
floats with NaN, inet, tuples with null fields, collections) is compared in its serialized form."""


def _comparator(t: CqlType) -> Callable[[Any, Any], int]:
    """Three-way CQL comparison of two non-null decoded values of ``t``."""
    if isinstance(t, NativeType) and t.name in _PYTHON_ORDERED:
        return lambda a, b: (a > b) - (a < b)
    return lambda a, b: compare(t, codec.serialize(t, a), codec.serialize(t, b))


def bind_relation(
    name: str, t: CqlType, rel: ast.Relation, bindings: Bindings, *, condition: bool = False
) -> BoundRelation:
    """The relation on column ``name`` of type ``t`` with its values bound."""
    op = rel.op
    if op == "IN":
        if isinstance(rel.rhs, ast.InValues):
            options = [_bound_value(item, t, name, bindings) for item in rel.rhs.items]
        else:
            options = list(_bound_value(rel.rhs, _list_of(t), name, bindings) or ())
        if not condition:
            options = [o for o in options if o is not None]
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
    if op not in _OPERATORS:
        raise InvalidRequest(f"Unsupported restriction {op} on column {name}")
    if op in ("=", "!=") and condition:
        equal = op == "="
        return BoundRelation(lambda r: (r.get(name) == wanted) == equal, wanted if equal else None)
    if wanted is None:
        if condition:
            raise InvalidRequest(f'Invalid comparison with null for operator "{op}"')
        return BoundRelation(lambda r: False, None)
    holds, cmp = _OPERATORS[op], _comparator(t)

    def test(row: Row) -> bool:
        value = row.get(name)
        return value is not None and holds(cmp(value, wanted))

    return BoundRelation(test, wanted if op == "=" else None)


_OPERATORS: dict[str, Callable[[int], bool]] = {
    "=": lambda c: c == 0,
    "!=": lambda c: c != 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
}
"""Each comparison operator as a test of a three-way comparison's result."""


def select_filter(rel: ast.Relation, table: TableDef, bindings: Bindings) -> Predicate:
    """A SELECT's restriction that storage cannot apply, as a test of the rows read."""
    if isinstance(rel.lhs, ast.ElementRef):
        return _element_filter(rel, table, bindings)
    if isinstance(rel.lhs, ast.FieldRef):
        return field_predicate(rel, table, bindings)
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


def field_predicate(
    rel: ast.Relation, table: TableDef, bindings: Bindings, *, condition: bool = False
) -> Predicate:
    """``u.f = v`` (and other comparisons) on a field of a UDT column, as a row predicate (an
    ``IF`` condition's null rules with ``condition``)."""
    assert isinstance(rel.lhs, ast.FieldRef)
    column = table.column(rel.lhs.column)
    if column is None:
        raise InvalidRequest(f"Undefined column name {rel.lhs.column}")
    t = column.type
    if not isinstance(t, UserType):
        raise InvalidRequest(f"Invalid field selection: {column.name} of type {t.cql()} is not a user type")
    if rel.lhs.field not in t.field_names:
        raise InvalidRequest(f"{t.name} has no field {rel.lhs.field}")
    i = t.field_names.index(rel.lhs.field)
    name = f"{column.name}.{rel.lhs.field}"
    compare = relation_predicate(name, t.field_types[i], rel, bindings, condition=condition)
    column_name = column.name

    def field_of(row: Row) -> bool:
        value = row.get(column_name)
        return compare({name: None if value is None or i >= len(value) else value[i]})

    return field_of


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
