"""Evaluating terms (constants, collection literals, bind markers, a few functions) to values.

A term only has a type once it meets a receiver (a column, a collection element, a function
argument), as in Cassandra: `receiver_type` drives literal conversion and bound-value
decoding. Values follow the conventions of `tabletdb.cql.codec`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.jsonvalues import from_json
from tabletdb.cql.literals import literal_value
from tabletdb.cql.types import (
    BIGINT,
    BLOB,
    DATE,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMEUUID,
    UUID,
    CqlType,
    ListType,
    MapType,
    SetType,
    TupleType,
    UserType,
    VectorType,
)
from tabletdb.cql.unparse import cql_text
from tabletdb.cql.values import UNSET, Unset, Value
from tabletdb.statements import functions


class TermFunctions(Protocol):
    """The user-defined functions a statement's terms may call (`statements.user_terms`)."""

    def calls(self, call: ast.FunctionCall) -> bool: ...

    def result_type(self, call: ast.FunctionCall) -> CqlType: ...

    def value(self, call: ast.FunctionCall, t: CqlType, receiver: str, bindings: Bindings) -> Any: ...


class Bindings:
    """The values bound to a statement's markers, by position (names resolved at bind time), and
    the user-defined functions its terms may call (``functions``: its keyspace's, None: none).

    A marker read again as the same type is not decoded again, however many restrictions,
    filters, index lookups and mutation builds of one request read it (a retried Paxos round
    builds a statement's mutations anew): each marker keeps the last type it was read as and
    the value decoded. Markers are read as one type (their receiver's), so one slot each is
    enough, and a lookup is an index and an identity check rather than a hash of the type.
    """

    __slots__ = ("_decoded", "functions", "values")

    def __init__(self, values: Sequence[Value], functions: TermFunctions | None = None) -> None:
        self.values = values
        self.functions = functions
        self._decoded: list[tuple[CqlType, Any] | None] | None = None

    def get(self, marker: ast.BindMarker) -> Value:
        """The bytes bound to ``marker`` as the client sent them (None: null, UNSET: unset)."""
        if marker.index >= len(self.values):
            raise _missing(marker, self.values)
        return self.values[marker.index]

    def decoded(self, marker: ast.BindMarker, receiver_type: CqlType) -> Any:
        """The value bound to ``marker`` read as ``receiver_type``; None for null, UNSET for unset."""
        index, values = marker.index, self.values
        if index >= len(values):
            raise _missing(marker, values)
        raw = values[index]
        if raw is None or isinstance(raw, Unset):
            return raw
        memo = self._decoded
        if memo is None:
            memo = self._decoded = [None] * len(values)
        seen = memo[index]
        if seen is not None and (seen[0] is receiver_type or seen[0] == receiver_type):
            return seen[1]
        value = codec.deserialize(receiver_type, raw)
        memo[index] = (receiver_type, value)
        return value

    def validated(self, marker: ast.BindMarker, receiver_type: CqlType, keep: bool = True) -> Value:
        """The bytes bound to ``marker``, checked to be a value of ``receiver_type`` (raises
        InvalidRequest naming the type otherwise). ``keep``: remember the decoded value, for a
        marker that may be read again (False: a point read's key, read once). ``decoded``
        written out again: this is every bound key's path, and one call less per key shows."""
        index, values = marker.index, self.values
        if index >= len(values):
            raise _missing(marker, values)
        raw = values[index]
        if raw is None or isinstance(raw, Unset):
            return raw
        if not keep:
            decoded = codec.deserialize(receiver_type, raw)
            return codec.serialize(receiver_type, decoded) if _unordered(receiver_type) else raw
        memo = self._decoded
        if memo is None:
            memo = self._decoded = [None] * len(values)
        seen = memo[index]
        if seen is None or (seen[0] is not receiver_type and seen[0] != receiver_type):
            memo[index] = seen = (receiver_type, codec.deserialize(receiver_type, raw))
        if _unordered(receiver_type):
            # a client may send a set's elements (or a map's keys) in any order and repeated; a
            # key must be stored and looked up in the one CQL order, as a literal is
            return codec.serialize(receiver_type, seen[1])
        return raw


@functools.cache
def _unordered(t: CqlType) -> bool:
    """Whether ``t`` holds a set or map anywhere, whose serialized form a client may send in an
    order other than CQL's."""
    if isinstance(t, SetType | MapType):
        return True
    if isinstance(t, ListType | VectorType):
        return _unordered(t.element)
    if isinstance(t, TupleType):
        return any(_unordered(e) for e in t.elements)
    if isinstance(t, UserType):
        return any(_unordered(f) for f in t.field_types)
    return False


def _missing(marker: ast.BindMarker, values: Sequence[Value]) -> InvalidRequest:
    return InvalidRequest(
        f"There were {marker.index + 1} or more markers(?) in CQL but only {len(values)} bound variables"
    )


NO_BINDINGS = Bindings(())


def bind_by_name(
    markers: Sequence[ast.BindMarker], receivers: Sequence[str], values: Sequence[Value], names: Sequence[str]
) -> list[Value]:
    """Reorder named values (QUERY/EXECUTE with the names flag) into marker positions."""
    by_name = {n.lower(): v for n, v in zip(names, values)}
    result: list[Value] = []
    for marker, receiver in zip(markers, receivers):
        key = (marker.name or receiver).lower()
        if key not in by_name:
            raise InvalidRequest(f"No value for bind variable {key}")
        result.append(by_name[key])
    return result


def term_value(term: ast.Term, receiver_type: CqlType, receiver: str, bindings: Bindings) -> Any:
    """The value of `term` assigned to `receiver`; None for null, UNSET for an unset marker."""
    if isinstance(term, ast.BindMarker):  # first: every value of a prepared statement is one
        return bindings.decoded(term, receiver_type)
    if isinstance(term, ast.Literal):
        return literal_value(receiver_type, term.kind, term.text, receiver)
    if isinstance(term, ast.Null):
        return None
    if isinstance(term, ast.TypeCast):
        return term_value(term.term, term.type, receiver, bindings)
    if isinstance(term, ast.FunctionCall):
        return _function_value(term, receiver_type, receiver, bindings)
    return _collection_value(term, receiver_type, receiver, bindings)


def term_bytes(term: ast.Term, receiver_type: CqlType, receiver: str, bindings: Bindings) -> Value:
    """Like `term_value` but serialized; bound values pass through after validation."""
    if isinstance(term, ast.BindMarker):
        return bindings.validated(term, receiver_type)
    value = term_value(term, receiver_type, receiver, bindings)
    if value is None or value is UNSET:
        return None if value is None else UNSET
    return codec.serialize(receiver_type, value)


def _collection_value(term: ast.Term, t: CqlType, receiver: str, bindings: Bindings) -> Any:
    def elements(items: Sequence[ast.Term], element_type: CqlType) -> list[Any]:
        out = []
        for item in items:
            v = term_value(item, element_type, receiver, bindings)
            if v is None or v is UNSET:
                raise InvalidRequest(f"null is not supported inside collections (column {receiver})")
            out.append(v)
        return out

    if isinstance(term, ast.ListLiteral) and isinstance(t, ListType | VectorType):
        values = elements(term.items, t.element)
        if isinstance(t, VectorType) and len(values) != t.dimension:
            raise InvalidRequest(
                f"Invalid vector literal for {receiver} of type {t.cql()}; expected {t.dimension} elements, "
                f"but given {len(values)}"
            )
        return tuple(values)
    if isinstance(term, ast.SetLiteral) and isinstance(t, SetType):
        return _canonical(t, elements(term.items, t.element))
    if isinstance(term, ast.MapLiteral) and isinstance(t, SetType) and not term.pairs:
        return ()
    if isinstance(term, ast.MapLiteral) and isinstance(t, MapType):
        keys = elements([k for k, _ in term.pairs], t.key)
        vals = elements([v for _, v in term.pairs], t.value)
        return _canonical(t, list(zip(keys, vals)))
    if isinstance(term, ast.TupleLiteral) and isinstance(t, TupleType):
        if len(term.items) > len(t.elements):
            raise InvalidRequest(
                f"Invalid tuple literal for {receiver}: too many elements. Type {t.cql()} expects "
                f"{len(t.elements)} but got {len(term.items)}"
            )
        return tuple(term_value(item, et, receiver, bindings) for item, et in zip(term.items, t.elements)) + (
            None,
        ) * (len(t.elements) - len(term.items))
    if isinstance(term, ast.UdtLiteral | ast.MapLiteral) and isinstance(t, UserType):
        return _udt_value(term, t, receiver, bindings)
    raise InvalidRequest(f"Invalid {_term_kind(term)} literal for {receiver} of type {t.cql()}")


def _canonical(t: CqlType, value: Any) -> Any:
    """Sets and maps in CQL order with duplicates folded, exactly as a stored value reads back."""
    return codec.deserialize(t, codec.serialize(t, value))


def _udt_value(term: ast.UdtLiteral | ast.MapLiteral, t: UserType, receiver: str, bindings: Bindings) -> Any:
    given: dict[str, ast.Term] = {}
    if isinstance(term, ast.UdtLiteral):
        given = dict(term.fields)
    else:
        for k, v in term.pairs:
            if not isinstance(k, ast.Literal):
                raise InvalidRequest(f"Invalid user type literal for {receiver}")
            given[k.text] = v
    unknown = set(given) - set(t.field_names)
    if unknown:
        raise InvalidRequest(f"Unknown field '{sorted(unknown)[0]}' in value of user defined type {t.name}")
    return tuple(
        None if name not in given else term_value(given[name], ft, f"{receiver}.{name}", bindings)
        for name, ft in zip(t.field_names, t.field_types)
    )


def _term_kind(term: ast.Term) -> str:
    return {
        ast.ListLiteral: "list",
        ast.SetLiteral: "set",
        ast.MapLiteral: "map",
        ast.TupleLiteral: "tuple",
        ast.UdtLiteral: "user type",
    }.get(type(term), "value")


_GENERATORS: dict[str, CqlType] = {
    "now": TIMEUUID,
    "currenttimeuuid": TIMEUUID,
    "uuid": UUID,
    "currenttimestamp": TIMESTAMP,
    "currentdate": DATE,
    "currenttime": TIME,
}
"""The functions a term can call without a row, and the type each returns."""

_VALUE_COMPATIBLE: dict[CqlType, frozenset[CqlType]] = {
    UUID: frozenset({TIMEUUID}),
    BIGINT: frozenset({TIMESTAMP}),
}
"""Receivers that also take the bytes of other types (beyond their own, and a blob's taking any),
as ScyllaDB's value compatibility has it: a timestamp is a bigint of milliseconds."""

_NEED_ARGUMENTS = frozenset({"totimestamp", "todate", "tounixtimestamp", "mintimeuuid", "maxtimeuuid"})


def _function_value(call: ast.FunctionCall, t: CqlType, receiver: str, bindings: Bindings) -> Any:
    """A function call where a value is expected: the time and id generators, fromJson (typed
    by the receiver) and the native functions of `statements.functions`, whose result is checked
    against the receiver's type as ScyllaDB checks it (a bigint cannot take a timeuuid)."""
    user = bindings.functions
    if user is not None and user.calls(call):
        return user.value(call, t, receiver, bindings)
    name = call.name.lower()
    if call.keyspace not in (None, "system"):
        raise InvalidRequest(f"Unknown function {call.keyspace}.{call.name} called ({receiver})")
    if name == "fromjson":
        return _from_json_call(call, t, receiver, bindings)
    if not call.args and name not in _NEED_ARGUMENTS:
        if name not in _GENERATORS:
            raise InvalidRequest(f"Unknown function {name} called")
        return _generated(name, t, receiver)
    fn = _resolved(call, user)
    _check_assignable(name, fn.return_type, t, receiver)
    return apply_call(call, fn, fn.arg_types, fn.return_type, name, t, receiver, bindings)


def apply_call(
    call: ast.FunctionCall,
    fn: Callable[..., Any],
    arg_types: Sequence[CqlType],
    return_type: CqlType,
    shown: str,
    t: CqlType,
    receiver: str,
    bindings: Bindings,
) -> Any:
    """``fn`` of ``call``'s arguments read as ``arg_types``; a blob receiver takes the result
    serialized (built-in and user functions share this step once their overload is chosen)."""
    values = []
    for arg, arg_type in zip(call.args, arg_types):
        v = term_value(arg, arg_type, f"arg of {shown} ({receiver})", bindings)  # type: ignore[arg-type]
        if v is UNSET:
            raise InvalidRequest(f"Invalid unset value for argument in call to function {shown}")
        values.append(v)
    result = fn(*values)
    if t == BLOB and return_type != BLOB and result is not None:
        return codec.serialize(return_type, result)
    return result


def _resolved(call: ast.FunctionCall, user: TermFunctions | None) -> functions.Function:
    name = call.name.lower()
    if not functions.is_native(name):
        raise InvalidRequest(f"Unknown function {name} called: {cql_text(call)}")
    params = functions.parameter_types(name)
    return functions.resolve(name, [_arg_type(name, a, params, i, user) for i, a in enumerate(call.args)])


def known_type(arg: object) -> CqlType | None:
    """The type a native function argument has whatever receives it (a type hint's, a native
    call's result); None when its receiver types it (a constant, a marker, fromJson, a literal)."""
    if isinstance(arg, ast.TypeCast):
        return arg.type
    if isinstance(arg, ast.FunctionCall) and arg.keyspace in (None, "system"):
        name = arg.name.lower()
        if not arg.args and name in _GENERATORS:
            return _GENERATORS[name]
        if name != "fromjson" and functions.is_native(name):
            try:
                return _resolved(arg, None).return_type
            except InvalidRequest:  # it calls a user function: typed when evaluated
                return None
    return None


def _arg_type(
    name: str, arg: object, params: tuple[CqlType, ...] | None, i: int, user: TermFunctions | None
) -> CqlType:
    """The type of a function argument: a nested call's result, a type hint's type, or else the one
    type the function's parameter takes."""
    if isinstance(arg, ast.FunctionCall) and user is not None and user.calls(arg):
        return user.result_type(arg)
    if isinstance(arg, ast.FunctionCall) and arg.name.lower() != "fromjson":
        if not arg.args and arg.name.lower() in _GENERATORS:
            return _GENERATORS[arg.name.lower()]
        return _resolved(arg, user).return_type
    if isinstance(arg, ast.TypeCast):
        return arg.type
    if params is not None and i < len(params):
        return params[i]
    hint = next(iter(functions.accepted_types(name)), None)
    example = f", e.g. {name}(({hint.cql()}) {cql_text(arg)})" if hint is not None else ""
    raise InvalidRequest(
        f"Ambiguous call to function {name}: cannot infer the type of argument {cql_text(arg)}; "
        f"give it a type hint{example}"
    )


def _from_json_call(call: ast.FunctionCall, t: CqlType, receiver: str, bindings: Bindings) -> Any:
    if len(call.args) != 1:
        raise InvalidRequest(
            f"Invalid number of arguments in call to function system.fromjson: 1 required but "
            f"{len(call.args)} provided"
        )
    text = term_value(call.args[0], TEXT, f"arg of fromjson ({receiver})", bindings)  # type: ignore[arg-type]
    if text is None or text is UNSET:
        return text
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise InvalidRequest(f"Could not decode JSON string '{text}': {exc}") from None
    return from_json(t, parsed, receiver)


def _check_assignable(name: str, result: CqlType, t: CqlType, receiver: str) -> None:
    if t != result and t != BLOB and result not in _VALUE_COMPATIBLE.get(t, frozenset()):
        raise InvalidRequest(
            f"Type error: cannot assign result of function system.{name} (type {result.cql()}) "
            f"to {receiver} (type {t.cql()})"
        )


def _generated(name: str, t: CqlType, receiver: str) -> Any:
    result = _GENERATORS[name]
    _check_assignable(name, result, t, receiver)
    value = functions.resolve(name, [])()
    if t == BLOB:
        return codec.serialize(result, value)
    return value
