"""User-defined functions called where a value goes: VALUES, SET, WHERE, IF conditions, the
arguments of other functions and the elements of collection literals (`statements.terms` asks
through `terms.TermFunctions`; select lists go through `statements.user_functions`).

A call names a function of the statement's keyspace (`f(...)` or `ks.f(...)`); natives win over
an unqualified user function of the same name. The overload is picked as ScyllaDB picks it: an
argument whose type is known (a type hint, another call's result) must be of the parameter's
type (frozen or not), a constant must be readable as it; markers and collection literals fit any
parameter. One overload left is the call; none is "none of its type signatures match"; more is
ambiguous, resolved by type hints. Arguments are then read as the parameters' types (markers
included: a prepared statement's bind metadata says so, `statements.receivers`), and the result
must be assignable to the receiver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.literals import literal_value
from tabletdb.cql.types import BLOB, CqlType
from tabletdb.cql.unparse import cql_text
from tabletdb.schema.model import FunctionDef, KeyspaceSchema
from tabletdb.statements import functions
from tabletdb.statements.terms import Bindings, apply_call, known_type
from tabletdb.statements.user_functions import loose
from tabletdb.udf.calls import scalar_function


class UserTermFunctions:
    """The user-defined functions of one keyspace as terms call them (a `terms.TermFunctions`)."""

    __slots__ = ("_routines",)

    def __init__(self, routines: KeyspaceSchema) -> None:
        self._routines = routines

    def calls(self, call: ast.FunctionCall) -> bool:
        """Whether ``call`` names a user function or aggregate of this keyspace."""
        ks = self._routines
        if call.keyspace is None and functions.is_native(call.name.lower()):
            return False
        if call.keyspace not in (None, ks.name):
            return False
        return any(name == call.name for name, _ in ks.functions) or any(
            name == call.name for name, _ in ks.aggregates
        )

    def result_type(self, call: ast.FunctionCall) -> CqlType:
        return self._function(call).return_type

    def parameter_types(self, call: ast.FunctionCall) -> tuple[CqlType, ...]:
        """The types marker arguments are read as (raises as the call would when it names no
        one overload: a marker given to an overloaded function needs a type hint)."""
        return self._function(call).argument_types

    def value(self, call: ast.FunctionCall, t: CqlType, receiver: str, bindings: Bindings) -> Any:
        """The call's result assigned to ``receiver`` of type ``t``."""
        function = self._function(call)
        shown = f"{function.keyspace}.{function.name}"
        if loose(function.return_type) != loose(t) and t != BLOB:
            raise InvalidRequest(
                f"Type error: cannot assign result of function {shown} (type {function.return_type.cql()}) "
                f"to {receiver} (type {t.cql()})"
            )
        run, types = scalar_function(function), function.argument_types
        return apply_call(call, run, types, function.return_type, shown, t, receiver, bindings)

    def _function(self, call: ast.FunctionCall) -> FunctionDef:
        ks = self._routines
        shown = f"{ks.name}.{call.name}"
        if any(name == call.name for name, _ in ks.aggregates) and not any(
            name == call.name for name, _ in ks.functions
        ):
            raise InvalidRequest(f"Aggregate function {shown} cannot be used here: {cql_text(call)}")
        named = [f for (name, _), f in ks.functions.items() if name == call.name]
        overloads = [f for f in named if len(f.argument_types) == len(call.args)]
        if not overloads:
            arities = sorted({len(f.argument_types) for f in named})
            raise InvalidRequest(
                f"Invalid number of arguments in call to function {shown}: "
                f"{' or '.join(map(str, arities))} required but {len(call.args)} provided"
            )
        fitting = [f for f in overloads if self._fits(call.args, f.argument_types)]
        if len(fitting) == 1:
            return fitting[0]
        signatures = "; ".join(
            f"{shown} : ({', '.join(t.cql() for t in f.argument_types)})" for f in overloads
        )
        if not fitting:
            raise InvalidRequest(
                f"Invalid call to function {shown}, none of its type signatures match "
                f"(known type signatures: {signatures})"
            )
        raise InvalidRequest(
            f"Ambiguous call to function {shown} (can be matched by following signatures: {signatures}): "
            "use type casts to disambiguate"
        )

    def _fits(self, args: Sequence[object], params: Sequence[CqlType]) -> bool:
        for arg, param in zip(args, params):
            if isinstance(arg, ast.FunctionCall) and self.calls(arg):
                if loose(self.result_type(arg)) != loose(param):
                    return False
                continue
            known = known_type(arg)
            if known is not None:
                if loose(known) != loose(param):
                    return False
            elif isinstance(arg, ast.Literal) and not _readable(arg, param):
                return False
        return True


def _readable(literal: ast.Literal, t: CqlType) -> bool:
    try:
        literal_value(t, literal.kind, literal.text, "argument")
    except InvalidRequest:
        return False
    return True


def term_functions(routines: KeyspaceSchema | None) -> UserTermFunctions | None:
    """The functions terms of a statement on a table of ``routines`` may call (None: none)."""
    if routines is None or (not routines.functions and not routines.aggregates):
        return None
    return UserTermFunctions(routines)


__all__ = ["UserTermFunctions", "term_functions"]
