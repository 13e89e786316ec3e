"""Scalar selectors: a SELECT expression compiled once per plan into a typed per-row function.

A row is its column values by name, so user tables (`query.select`) and the rendered virtual
tables (`systables.select`) share this. They keep what they read straight from a row (columns,
writetime/ttl of a column, token, the aggregates); everything else a select list may hold is here: native
function calls (`statements.functions`), CAST, constants, collection elements (`m['k']`,
`s[e]`, `l[i]`) and UDT fields (`u.f`), nested in each other as deep as the grammar allows.
User-defined functions of the table's keyspace (`routines`) are called through
`statements.user_functions`. What is not supported (bind markers in the select clause,
writetime/ttl of an element) is refused at planning time with a message naming it, never run
approximately.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.literals import literal_value
from tabletdb.cql.types import (
    BLOB,
    BOOLEAN,
    DOUBLE,
    DURATION,
    INT,
    TEXT,
    UUID,
    CqlType,
    ListType,
    MapType,
    SetType,
    TupleType,
    UserType,
)
from tabletdb.cql.unparse import cql_text
from tabletdb.schema.model import KeyspaceSchema, TableDef
from tabletdb.statements import functions, user_functions
from tabletdb.statements.terms import Bindings, term_value
from tabletdb.statements.user_terms import term_functions

RowFn = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Scalar:
    """One compiled expression: its result column's name and type, and how a row computes it."""

    name: str
    type: CqlType
    eval: RowFn


_LITERAL_TYPES: dict[str, CqlType] = {
    "integer": INT,
    "string": TEXT,
    "float": DOUBLE,
    "boolean": BOOLEAN,
    "uuid": UUID,
    "hex": BLOB,
    "duration": DURATION,
}
"""The type a constant has in a select list, where nothing else types it (ScyllaDB's choice)."""


def scalar(
    expr: ast.Expr,
    table: TableDef,
    wanted: CqlType | None = None,
    routines: KeyspaceSchema | None = None,
    computed: Mapping[object, Scalar] | None = None,
) -> Scalar:
    """Compile `expr`; `wanted` types a constant passed where one type is expected; `routines`
    is the table's keyspace, whose user-defined functions the expression may call; `computed`:
    sub-expressions computed elsewhere, each read as the given Scalar (the aggregates under a
    function of them, `query.select`)."""
    if computed and expr in computed:
        return computed[expr]
    if isinstance(expr, ast.ColumnRef):
        col = table.column(expr.name)
        if col is None:
            raise InvalidRequest(f"Undefined column name {expr.name}")
        name = col.name
        return Scalar(name, col.type, lambda row: row.get(name))
    if isinstance(expr, ast.Literal):
        t = wanted or _LITERAL_TYPES[expr.kind]
        value = literal_value(t, expr.kind, expr.text, cql_text(expr))
        return Scalar(cql_text(expr), t, lambda row: value)
    if isinstance(expr, ast.TypeCast):
        inner = scalar(expr.term, table, expr.type, routines, computed)
        return Scalar(cql_text(expr), expr.type, inner.eval)
    if isinstance(expr, _COLLECTION_LITERALS):
        t = wanted or literal_type(expr)
        constant = term_value(expr, t, cql_text(expr), Bindings(()))
        return Scalar(cql_text(expr), t, lambda row: constant)
    if isinstance(expr, ast.Null):
        raise InvalidRequest("Cannot infer the type of null in the select clause; give it a type hint")
    if isinstance(expr, ast.BindMarker):
        raise InvalidRequest("Bind markers are not supported in the select clause")
    if isinstance(expr, ast.FunctionCall):
        return _call(expr, table, routines, computed)
    if isinstance(expr, ast.Cast):
        inner = scalar(expr.expr, table, None, routines, computed)
        conv = functions.cast(inner.type, expr.type)
        fn = inner.eval
        return Scalar(f"cast({inner.name} as {expr.type.cql()})", expr.type, lambda row: conv(fn(row)))
    if isinstance(expr, ast.ElementRef):
        return _element(expr, table, routines)
    if isinstance(expr, ast.FieldRef):
        return _field(expr, table)
    raise InvalidRequest(f"{cql_text(expr)} cannot be selected here")


_COLLECTION_LITERALS = (ast.ListLiteral, ast.SetLiteral, ast.MapLiteral, ast.TupleLiteral, ast.UdtLiteral)


def literal_type(term: ast.Term) -> CqlType:
    """The type of a constant in a select list, from the constants it is made of: a collection
    takes its elements' type (all alike; nested collections frozen). Whatever says nothing of
    its type (null, an empty collection, a UDT literal, a bind marker) needs a type hint."""
    if isinstance(term, ast.Literal):
        return _LITERAL_TYPES[term.kind]
    if isinstance(term, ast.TypeCast):
        return term.type
    if isinstance(term, ast.BindMarker):
        raise InvalidRequest("Bind markers are not supported in the select clause")
    if isinstance(term, ast.ListLiteral | ast.SetLiteral) and term.items:
        element = _alike(term, [_frozen(literal_type(i)) for i in term.items])
        return ListType(element) if isinstance(term, ast.ListLiteral) else SetType(element)
    if isinstance(term, ast.MapLiteral) and term.pairs:
        keys = _alike(term, [_frozen(literal_type(k)) for k, _ in term.pairs])
        values = _alike(term, [_frozen(literal_type(v)) for _, v in term.pairs])
        return MapType(keys, values)
    if isinstance(term, ast.TupleLiteral):
        return TupleType(tuple(_frozen(literal_type(i)) for i in term.items))
    raise InvalidRequest(
        f"Cannot infer the type of {cql_text(term)} in the select clause; give it a type hint"
    )


def _alike(term: ast.Term, types: list[CqlType]) -> CqlType:
    if any(t != types[0] for t in types):
        shown = ", ".join(dict.fromkeys(t.cql() for t in types))
        raise InvalidRequest(
            f"Cannot infer the type of {cql_text(term)}: its elements have different types ({shown}); "
            "give it a type hint"
        )
    return types[0]


def _frozen(t: CqlType) -> CqlType:
    """Collections inside collections are frozen."""
    if isinstance(t, ListType | SetType | MapType) and not t.frozen:
        return dataclasses.replace(t, frozen=True)
    return t


def _call(
    call: ast.FunctionCall,
    table: TableDef,
    routines: KeyspaceSchema | None,
    computed: Mapping[object, Scalar] | None,
) -> Scalar:
    name = call.name.lower()
    native = call.keyspace in (None, "system") and functions.is_native(name)
    if not native and routines is not None and user_functions.is_user_function(call, table, routines):

        def compile_arg(arg: ast.Expr, hint: CqlType | None) -> Scalar:
            return scalar(arg, table, hint, routines, computed)

        shown, t, fn = user_functions.user_function(call, table, routines, compile_arg)
        return Scalar(shown, t, fn)
    if routines is not None and user_functions.is_user_aggregate(call, table, routines):
        raise InvalidRequest(f"{cql_text(call)}: an aggregate cannot be nested in another selector")
    if call.keyspace not in (None, "system"):
        raise InvalidRequest(
            f"Unknown function {call.keyspace}.{call.name} called (functions of the table's keyspace "
            f"{table.keyspace} can be called)"
        )
    if name in ("writetime", "ttl", "token") or name in ("count", "min", "max", "sum", "avg"):
        raise InvalidRequest(f"{cql_text(call)} cannot be nested in another selector here")
    if not functions.is_native(name):
        raise InvalidRequest(f"Unknown function {name} called: {cql_text(call)}")
    params = functions.parameter_types(name)
    args = [
        scalar(a, table, params[i] if params is not None and i < len(params) else None, routines, computed)
        for i, a in enumerate(call.args)
    ]
    fn = functions.resolve(name, [a.type for a in args])
    shown = f"system.{name}({', '.join(a.name for a in args)})"
    if not args:
        return Scalar(shown, fn.return_type, lambda row: fn())
    if len(args) == 1:
        one = args[0].eval
        return Scalar(shown, fn.return_type, lambda row: fn(one(row)))
    evals = [a.eval for a in args]
    return Scalar(shown, fn.return_type, lambda row: fn(*(e(row) for e in evals)))


def _key(ref: ast.ElementRef, t: CqlType, where: str, routines: KeyspaceSchema | None) -> Callable[[], Any]:
    """The subscript of an element selector, as a function computing it: a constant; ``null``
    (no element: a null result, as in ScyllaDB); or a function call (`m[f(1)]`), evaluated per
    row (a generator gives a new value each time) and once here, so a bad call fails at once."""
    key = ref.key.term if isinstance(ref.key, ast.TypeCast) else ref.key
    if isinstance(key, ast.BindMarker):
        raise InvalidRequest("Bind markers are not supported in the select clause")
    if isinstance(key, ast.Null):
        return lambda: None
    if isinstance(key, ast.Literal):
        value = literal_value(t, key.kind, key.text, where)
        return lambda: value
    if isinstance(key, ast.FunctionCall):
        call, bindings = key, Bindings((), term_functions(routines))
        term_value(call, t, where, bindings)
        return lambda: term_value(call, t, where, bindings)
    raise InvalidRequest(f"Invalid element selector {cql_text(ref)}: a constant of type {t.cql()} is needed")


def _element(ref: ast.ElementRef, table: TableDef, routines: KeyspaceSchema | None) -> Scalar:
    col = table.column(ref.column)
    if col is None:
        raise InvalidRequest(f"Undefined column name {ref.column}")
    t = col.type
    name = col.name
    shown = f"{cql_text(ast.ColumnRef(name))}[{cql_text(ref.key)}]"
    if isinstance(t, MapType):
        key = _key(ref, t.key, f"key({name})", routines)
        return Scalar(shown, t.value, lambda row: _map_get(row.get(name), key()))
    if isinstance(t, SetType):
        elem = _key(ref, t.element, f"element({name})", routines)
        return Scalar(shown, t.element, lambda row: _set_get(row.get(name), elem()))
    if isinstance(t, ListType):
        index = _key(ref, INT, f"idx({name})", routines)
        return Scalar(shown, t.element, lambda row: _list_get(row.get(name), index()))
    raise InvalidRequest(f"Column {name} of type {t.cql()} is not a collection: elements cannot be selected")


def _set_get(value: Any, element: Any) -> Any:
    return element if element is not None and element in (value or ()) else None


def _map_get(value: Any, key: Any) -> Any:
    for k, v in value or ():
        if k == key:
            return v
    return None


def _list_get(value: Any, index: int | None) -> Any:
    if value is None or index is None or not 0 <= index < len(value):
        return None
    return value[index]


def _field(ref: ast.FieldRef, table: TableDef) -> Scalar:
    col = table.column(ref.column)
    if col is None:
        raise InvalidRequest(f"Undefined column name {ref.column}")
    t = col.type
    if not isinstance(t, UserType):
        raise InvalidRequest(f"Invalid field selection: {col.name} of type {t.cql()} is not a user type")
    if ref.field not in t.field_names:
        raise InvalidRequest(f"{t.name} has no field {ref.field}")
    i = t.field_names.index(ref.field)
    name = col.name
    shown = f"{cql_text(ast.ColumnRef(name))}.{cql_text(ast.ColumnRef(ref.field))}"

    def get(row: Mapping[str, Any]) -> Any:
        value = row.get(name)
        return None if value is None or i >= len(value) else value[i]

    return Scalar(shown, t.field_types[i], get)


__all__ = ["Scalar", "scalar"]
