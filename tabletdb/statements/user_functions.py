"""User-defined functions and aggregates in a select list: which stored overload a call names,
and its compiled form (the calls themselves run in `udf.calls`).

A call names a function of the table's keyspace (`f(v)` or `ks.f(v)`); natives win over a user
function of the same unqualified name, as in ScyllaDB. The overload is the one whose parameter
types are the arguments' types (frozen or not: a function declared on `list<int>` takes a
`list<int>` column); a constant argument is typed by the parameter when only one overload has
that many arguments. The result column is named `ks.f(args)`, as ScyllaDB names it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tabletdb.auth import resources
from tabletdb.auth.resources import Permission
from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.types import CqlType
from tabletdb.schema.model import AggregateDef, Catalog, FunctionDef, KeyspaceSchema, TableDef
from tabletdb.schema.typeutil import freeze_deep
from tabletdb.statements import functions
from tabletdb.statements.terms import Bindings, term_value
from tabletdb.udf.calls import Aggregation, scalar_function

RowFn = Callable[[Mapping[str, Any]], Any]
Compile = Callable[[ast.Expr, CqlType | None], Any]
"""How an argument is compiled (`selectors.scalar` bound to the table): returns a Scalar."""


@dataclass(frozen=True)
class UserAggregate:
    """A user-defined aggregate in a select list: its column, the per-row arguments, the fold."""

    name: str
    type: CqlType
    arguments: RowFn
    aggregation: Aggregation


def loose(t: CqlType) -> str:
    """A type as overloads compare it: frozen or not is the same parameter."""
    return freeze_deep(t).cql()


def _in_keyspace(call: ast.FunctionCall, table: TableDef, routines: KeyspaceSchema | None) -> bool:
    return routines is not None and call.keyspace in (None, table.keyspace)


def _named(candidates: Mapping[tuple[str, tuple[str, ...]], Any], call: ast.FunctionCall) -> list[Any]:
    return [
        f for (name, types), f in candidates.items() if name == call.name and len(types) == len(call.args)
    ]


def is_user_function(call: ast.FunctionCall, table: TableDef, routines: KeyspaceSchema | None) -> bool:
    return _in_keyspace(call, table, routines) and any(
        name == call.name for name, _ in (routines.functions if routines else {})
    )


def is_user_aggregate(call: ast.FunctionCall, table: TableDef, routines: KeyspaceSchema | None) -> bool:
    return _in_keyspace(call, table, routines) and any(
        name == call.name for name, _ in (routines.aggregates if routines else {})
    )


def _pick(
    call: ast.FunctionCall,
    table: TableDef,
    overloads: list[Any],
    params_of: Callable[[Any], tuple[CqlType, ...]],
    compile_arg: Compile,
) -> tuple[Any, list[Any]]:
    hint = params_of(overloads[0]) if len(overloads) == 1 else None
    args = [compile_arg(a, hint[i] if hint else None) for i, a in enumerate(call.args)]
    wanted = [loose(a.type) for a in args]
    for overload in overloads:
        if [loose(t) for t in params_of(overload)] == wanted:
            return overload, args
    known = "; ".join(
        f"{table.keyspace}.{call.name} : ({', '.join(t.cql() for t in params_of(o))})" for o in overloads
    )
    raise InvalidRequest(
        f"Invalid call to function {table.keyspace}.{call.name}, none of its type signatures match "
        f"(known type signatures: {known or 'none with ' + str(len(call.args)) + ' arguments'})"
    )


def user_function(
    call: ast.FunctionCall, table: TableDef, routines: KeyspaceSchema, compile_arg: Compile
) -> tuple[str, CqlType, RowFn]:
    """A call of a user-defined function: its column name, result type and per-row function."""
    overloads: list[FunctionDef] = _named(routines.functions, call)
    function, args = _pick(call, table, overloads, lambda f: f.argument_types, compile_arg)
    run = scalar_function(function)
    evals = [a.eval for a in args]
    shown = f"{table.keyspace}.{call.name}({', '.join(a.name for a in args)})"
    return shown, function.return_type, lambda row: run(*(e(row) for e in evals))


def user_aggregate(
    call: ast.FunctionCall, table: TableDef, routines: KeyspaceSchema, compile_arg: Compile
) -> UserAggregate:
    overloads: list[AggregateDef] = _named(routines.aggregates, call)
    aggregate, args = _pick(call, table, overloads, lambda a: a.argument_types, compile_arg)
    evals = [a.eval for a in args]
    shown = f"{table.keyspace}.{call.name}({', '.join(a.name for a in args)})"
    initial = initial_state(aggregate.initcond, aggregate.state_type)
    aggregation = Aggregation(routines, aggregate, initial)
    return UserAggregate(shown, aggregate.return_type, lambda row: tuple(e(row) for e in evals), aggregation)


def initial_state(initcond: str | None, state_type: CqlType) -> Any:
    """The value of an INITCOND (CQL literal text, as stored) as the state type; None without one.
    Raises InvalidRequest with the literal's own message when it is not a value of that type."""
    if initcond is None:
        return None
    statement = parse_statement(f"INSERT INTO initcond (state) VALUES ({initcond})")
    assert isinstance(statement, ast.InsertStatement) and len(statement.values) == 1
    return term_value(statement.values[0], state_type, "INITCOND", Bindings(()))


__all__ = [
    "UserAggregate",
    "execute_permissions",
    "initial_state",
    "is_user_aggregate",
    "is_user_function",
    "loose",
    "user_aggregate",
    "user_function",
]


def execute_permissions(
    stmt: ast.Statement, catalog: Catalog, current_keyspace: str | None
) -> list[tuple[Permission, str]]:
    """EXECUTE on each user-defined function and aggregate a statement may call, wherever the
    call is (select list, WHERE, VALUES, SET, IF, function arguments, collection literals; each
    statement of a BATCH), as ScyllaDB asks before running it. Overloads are told apart by
    argument types only once the statement is bound, so every overload of a called name with
    that many arguments is asked for (a superset of what runs)."""
    if isinstance(stmt, ast.BatchStatement):
        needs: list[tuple[Permission, str]] = []
        for sub in stmt.statements:
            for need in execute_permissions(sub, catalog, current_keyspace):
                if need not in needs:
                    needs.append(need)
        return needs
    table = getattr(stmt, "table", None)
    if not isinstance(stmt, ast.SelectStatement | ast.ModificationStatement) or table is None:
        return []
    ks_name = table.keyspace or current_keyspace
    ks = None if ks_name is None else catalog.keyspace(ks_name)
    if ks is None or (not ks.functions and not ks.aggregates):
        return []
    needs = []
    for call in _calls(stmt):
        if call.keyspace not in (None, ks.name):
            continue
        if call.keyspace is None and functions.is_native(call.name.lower()):
            continue
        for routines in (ks.functions, ks.aggregates):
            for key in routines:
                if key[0] == call.name and len(key[1]) == len(call.args):
                    need = (Permission.EXECUTE, resources.function(ks.name, key[0], key[1]))
                    if need not in needs:
                        needs.append(need)
    return needs


def _calls(node: object) -> list[ast.FunctionCall]:
    """Every function call in an AST node, nested ones included (the AST is frozen dataclasses,
    tuples and scalars)."""
    found: list[ast.FunctionCall] = []
    if isinstance(node, ast.FunctionCall):
        found.append(node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            found.extend(_calls(getattr(node, f.name)))
    elif isinstance(node, tuple | list):
        for item in node:
            found.extend(_calls(item))
    return found
