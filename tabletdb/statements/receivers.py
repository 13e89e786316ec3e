"""Which column (name and type) each bind marker of a statement binds to.

PREPARE reports these as the bind metadata, and drivers use them to serialize values and to
build routing keys: `pk_indexes` tells them which markers carry the partition key, which is how
token- and tablet-aware routing finds the replicas (spec/clients.md 1.7 and 5).
"""

from __future__ import annotations

from dataclasses import dataclass

from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import BIGINT, DURATION, INT, TEXT, CqlType, ListType, MapType, SetType, TupleType
from tabletdb.schema.model import KeyspaceSchema, TableDef
from tabletdb.statements import functions
from tabletdb.statements.user_terms import term_functions


@dataclass(frozen=True)
class Receiver:
    name: str
    type: CqlType


class _Found(dict[int, Receiver]):
    """Receivers found so far by marker index, and the user functions markers may be passed to."""

    def __init__(self, routines: KeyspaceSchema | None) -> None:
        super().__init__()
        self.functions = term_functions(routines)


def receivers(
    stmt: ast.Statement, table: TableDef | None, routines: KeyspaceSchema | None = None
) -> list[Receiver]:
    """One receiver per bind marker, in marker order; ``routines``: the table's keyspace, whose
    user-defined functions type the markers passed to them."""
    found: dict[int, Receiver] = _Found(routines)
    if isinstance(stmt, ast.SelectStatement):
        _relations(stmt.where, table, found)
        _special(stmt.per_partition_limit, "[per_partition_limit]", INT, found)
        _special(stmt.limit, "[limit]", INT, found)
        _special(stmt.timeout, "[timeout]", DURATION, found)
    elif isinstance(stmt, ast.TruncateStatement):
        _special(stmt.timeout, "[timeout]", DURATION, found)
    elif isinstance(stmt, ast.InsertStatement):
        if stmt.json is not None:
            _special(stmt.json, "[json]", TEXT, found)
        for col, term in zip(stmt.columns, stmt.values):
            _term(term, _column(table, col), found)
        _attributes(stmt.attributes, found)
    elif isinstance(stmt, ast.UpdateStatement):
        _attributes(stmt.attributes, found)
        for a in stmt.assignments:
            _assignment(a, table, found)
        _relations(stmt.where, table, found)
        _relations(stmt.conditions, table, found)
    elif isinstance(stmt, ast.DeleteStatement):
        for target in stmt.targets:
            if isinstance(target, ast.ElementRef):
                _element_key(target.key, _column(table, target.column), found)
        _attributes(stmt.attributes, found)
        _relations(stmt.where, table, found)
        _relations(stmt.conditions, table, found)
    elif isinstance(stmt, ast.AlterTable) and isinstance(stmt.action, ast.DropColumns):
        timestamp = stmt.action.timestamp
        if isinstance(timestamp, ast.BindMarker):
            _special(timestamp, "[timestamp]", BIGINT, found)
    missing = [m.index for m in stmt.bind_markers if m.index not in found]
    if missing:
        raise InvalidRequest(f"Bind markers are not supported in this position (marker {missing[0]})")
    return [found[m.index] for m in stmt.bind_markers]


def pk_indexes(stmt: ast.Statement, table: TableDef | None, binds: list[Receiver]) -> list[int]:
    """Marker positions of the partition key components, or [] unless all of them are bound."""
    if table is None:
        return []
    where: tuple[ast.Relation, ...] = ()
    if isinstance(stmt, ast.SelectStatement | ast.UpdateStatement | ast.DeleteStatement):
        where = stmt.where
    by_column: dict[str, int] = {}
    for rel in where:
        if isinstance(rel.lhs, ast.ColumnRef) and rel.op == "=" and isinstance(rel.rhs, ast.BindMarker):
            by_column[rel.lhs.name] = rel.rhs.index
    if isinstance(stmt, ast.InsertStatement):
        for col, term in zip(stmt.columns, stmt.values):
            if isinstance(term, ast.BindMarker):
                by_column[col] = term.index
    result = []
    for pk in table.partition_key:
        if pk.name not in by_column:
            return []
        result.append(by_column[pk.name])
    return result


def _column(table: TableDef | None, name: str) -> Receiver:
    if table is None:
        raise InvalidRequest(f"Undefined column name {name}")
    col = table.column(name)
    if col is None:
        raise InvalidRequest(f"Undefined column name {name}")
    return Receiver(col.name, col.type)


def _term(term: ast.Term | None, receiver: Receiver, found: dict[int, Receiver]) -> None:
    """Record markers inside `term`, which is assigned to `receiver`."""
    if term is None:
        return
    if isinstance(term, ast.BindMarker):
        found[term.index] = Receiver(term.name or receiver.name, receiver.type)
    elif isinstance(term, ast.TypeCast):
        _term(term.term, Receiver(receiver.name, term.type), found)
    elif isinstance(term, ast.FunctionCall):
        _function_arguments(term, receiver, found)
    elif isinstance(term, ast.ListLiteral | ast.SetLiteral):
        element = getattr(receiver.type, "element", receiver.type)
        for item in term.items:
            _term(item, Receiver(f"value({receiver.name})", element), found)
    elif isinstance(term, ast.MapLiteral) and isinstance(receiver.type, MapType):
        for k, v in term.pairs:
            _term(k, Receiver(f"key({receiver.name})", receiver.type.key), found)
            _term(v, Receiver(f"value({receiver.name})", receiver.type.value), found)
    elif isinstance(term, ast.TupleLiteral) and isinstance(receiver.type, TupleType):
        for i, (item, t) in enumerate(zip(term.items, receiver.type.elements)):
            _term(item, Receiver(f"{receiver.name}[{i}]", t), found)


def _function_arguments(call: ast.FunctionCall, receiver: Receiver, found: dict[int, Receiver]) -> None:
    """Markers passed to a function take the type of its parameter (fromJson's is text; a marker
    given to an overloaded function needs a type hint, and stays unknown without one)."""
    name = call.name.lower()
    params = (TEXT,) if name == "fromjson" else functions.parameter_types(name)
    user = found.functions if isinstance(found, _Found) else None
    if user is not None and user.calls(call):
        params = user.parameter_types(call)
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.TypeCast):
            _term(arg, Receiver(f"arg{i}", arg.type), found)
        elif isinstance(arg, ast.FunctionCall):
            _function_arguments(arg, receiver, found)
        elif params is not None and i < len(params):
            _term(arg, Receiver(f"arg{i}", params[i]), found)  # type: ignore[arg-type]


def _special(term: ast.Term | None, name: str, t: CqlType, found: dict[int, Receiver]) -> None:
    _term(term, Receiver(name, t), found)


def attribute_receivers(attrs: ast.Attributes) -> list[Receiver]:
    """Receivers of a ``USING`` clause alone (a BATCH's own, whose markers come first)."""
    found: dict[int, Receiver] = {}
    _attributes(attrs, found)
    return [found[i] for i in sorted(found)]


def _attributes(attrs: ast.Attributes, found: dict[int, Receiver]) -> None:
    _special(attrs.timestamp, "[timestamp]", BIGINT, found)
    _special(attrs.ttl, "[ttl]", INT, found)
    _special(attrs.timeout, "[timeout]", DURATION, found)


def _element_key(term: ast.Term, collection: Receiver, found: dict[int, Receiver]) -> None:
    t = collection.type
    if isinstance(t, MapType):
        _term(term, Receiver(f"key({collection.name})", t.key), found)
    elif isinstance(t, ListType):
        _term(term, Receiver(f"idx({collection.name})", INT), found)
    else:
        raise InvalidRequest(f"Invalid operation on column {collection.name} of type {t.cql()}")


def _assignment(a: ast.Assignment, table: TableDef | None, found: dict[int, Receiver]) -> None:
    col = _column(table, a.column)
    if isinstance(a, ast.SetElement):
        _element_key(a.key, col, found)
        element = col.type.value if isinstance(col.type, MapType) else getattr(col.type, "element", col.type)
        _term(a.value, Receiver(f"value({col.name})", element), found)
    elif isinstance(a, ast.SetField):
        field_type = _field_type(col, a.field)
        _term(a.value, Receiver(f"{col.name}.{a.field}", field_type), found)
    elif isinstance(a, ast.SubtractFromColumn) and isinstance(col.type, MapType):
        _term(a.value, Receiver(col.name, SetType(col.type.key)), found)
    else:
        _term(a.value, col, found)


def _field_type(col: Receiver, field: str) -> CqlType:
    names = getattr(col.type, "field_names", ())
    types = getattr(col.type, "field_types", ())
    for n, t in zip(names, types):
        if n == field:
            return t  # type: ignore[no-any-return]
    raise InvalidRequest(f"Unknown field {field} in user type {col.type.cql()}")


def _relations(where: tuple[ast.Relation, ...], table: TableDef | None, found: dict[int, Receiver]) -> None:
    for rel in where:
        lhs = rel.lhs
        if isinstance(lhs, ast.ColumnRef):
            col = _column(table, lhs.name)
            if rel.op == "IN":
                _in_values(rel.rhs, col, found)
            elif rel.op in ("CONTAINS", "CONTAINS KEY"):
                t = col.type
                elem = (
                    (t.key if rel.op == "CONTAINS KEY" else t.value)
                    if isinstance(t, MapType)
                    else (getattr(t, "element", t))
                )
                if isinstance(rel.rhs, ast.Term):
                    _term(rel.rhs, Receiver(col.name, elem), found)
            elif isinstance(rel.rhs, ast.Term):
                _term(rel.rhs, col, found)
        elif isinstance(lhs, ast.TokenOf):
            if (
                isinstance(rel.rhs, ast.FunctionCall)
                and rel.rhs.name.lower() == "token"
                and table is not None
            ):
                for arg, key_col in zip(rel.rhs.args, table.partition_key):  # token(?, ?) takes key values
                    if isinstance(arg, ast.BindMarker):
                        _term(arg, Receiver(key_col.name, key_col.type), found)
            elif isinstance(rel.rhs, ast.Term):
                _term(rel.rhs, Receiver("partition key token", BIGINT), found)
        elif isinstance(lhs, ast.ColumnTuple):
            cols = [_column(table, c) for c in lhs.columns]
            tuple_type = TupleType(tuple(c.type for c in cols))
            name = "(" + ",".join(c.name for c in cols) + ")"
            if rel.op == "IN":
                _in_values(rel.rhs, Receiver(name, tuple_type), found)
            elif isinstance(rel.rhs, ast.TupleLiteral):
                for item, c in zip(rel.rhs.items, cols):
                    _term(item, c, found)
            elif isinstance(rel.rhs, ast.Term):
                _term(rel.rhs, Receiver(name, tuple_type), found)
        elif isinstance(lhs, ast.ElementRef):
            col = _column(table, lhs.column)
            _element_key(lhs.key, col, found)
            value_type = (
                col.type.value if isinstance(col.type, MapType) else getattr(col.type, "element", col.type)
            )
            if isinstance(rel.rhs, ast.Term):
                _term(rel.rhs, Receiver(f"value({col.name})", value_type), found)
        elif isinstance(lhs, ast.FieldRef):
            col = _column(table, lhs.column)
            if isinstance(rel.rhs, ast.Term):
                _term(rel.rhs, Receiver(f"{col.name}.{lhs.field}", _field_type(col, lhs.field)), found)


def _in_values(rhs: ast.Term | ast.InValues, col: Receiver, found: dict[int, Receiver]) -> None:
    if isinstance(rhs, ast.InValues):
        for item in rhs.items:
            _term(item, col, found)
    else:
        _term(rhs, Receiver(f"in({col.name})", ListType(col.type)), found)
