"""Calling a stored function or aggregate: ScyllaDB's call semantics over the Lua shell.

A scalar call converts its arguments to Lua by the declared parameter types, runs the body and
reads the one result back as the declared return type; a function declared RETURNS NULL ON NULL
INPUT is not run when an argument is null (the result is null). An aggregate folds its rows:
the state starts at INITCOND (null without one), each row's arguments go to the state function
with the state first, and the final function (if any) turns the last state into the result.
Errors are InvalidRequest with ScyllaDB's text, naming the function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType
from tabletdb.schema.ddl_functions import find_overload
from tabletdb.schema.model import AggregateDef, FunctionDef, KeyspaceSchema
from tabletdb.udf import lua
from tabletdb.udf.values import from_lua, to_lua

ScalarFn = Callable[..., Any]


def unsupported_language(language: str) -> str | None:
    """Why functions in `language` cannot run here (None for Lua)."""
    lang = language.lower()
    if lang == "lua":
        return None
    if lang == "wasm":
        return "Language 'wasm' is not supported by this server: user-defined functions run in Lua only"
    return f"Language '{language}' is not supported (ScyllaDB runs user-defined functions in lua and wasm)"


def scalar_function(function: FunctionDef) -> ScalarFn:
    """A Python callable of the function's argument values (codec conventions)."""
    refusal = unsupported_language(function.language)
    if refusal is not None:
        raise InvalidRequest(refusal)
    names, params, ret = function.argument_names, function.argument_types, function.return_type
    body, on_null = function.body, function.called_on_null_input
    shown = f"{function.keyspace}.{function.name}"

    def run(*args: Any) -> Any:
        if not on_null and any(a is None for a in args):
            return None
        result = lua.call(body, names, [to_lua(t, a) for t, a in zip(params, args)])
        return _returned(shown, ret, from_lua(ret, result))

    return run


def _returned(shown: str, t: CqlType, value: Any) -> Any:
    """The result in the codec's canonical form (sets and maps ordered, ranges checked)."""
    if value is None:
        return None
    try:
        return codec.deserialize(t, codec.serialize(t, value))
    except InvalidRequest as exc:
        raise InvalidRequest(f"{shown} returned a value that is not a {t.cql()}: {exc}") from None


def find_function(ks: KeyspaceSchema, name: str, types: Sequence[CqlType]) -> FunctionDef | None:
    key = find_overload(ks.functions, name, types)
    return None if key is None else ks.functions[key]


class Aggregation:
    """A user-defined aggregate ready to fold rows of argument tuples."""

    def __init__(self, ks: KeyspaceSchema, aggregate: AggregateDef, initial_state: Any) -> None:
        stype = aggregate.state_type
        state = find_function(ks, aggregate.state_func, [stype, *aggregate.argument_types])
        if state is None:
            raise InvalidRequest(f"State function {aggregate.state_func} of {aggregate.name} does not exist")
        self._state = scalar_function(state)
        self._final: ScalarFn | None = None
        if aggregate.final_func is not None:
            final = find_function(ks, aggregate.final_func, [stype])
            if final is None:
                raise InvalidRequest(
                    f"Final function {aggregate.final_func} of {aggregate.name} does not exist"
                )
            self._final = scalar_function(final)
        self._initial = initial_state

    def fold(self, rows: Iterable[Sequence[Any]]) -> Any:
        state = self._initial
        for args in rows:
            state = self._state(state, *args)
        return self._final(state) if self._final is not None else state


__all__ = ["Aggregation", "ScalarFn", "find_function", "scalar_function", "unsupported_language"]
