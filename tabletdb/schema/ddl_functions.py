"""CREATE / DROP FUNCTION and AGGREGATE decisions. Functions are stored, not executed here.

Overloads are keyed by (name, argument type strings), the same signature the protocol's
SCHEMA_CHANGE events and system_schema.functions use. Types are kept as declared (`list<int>`,
not `frozen<list<int>>`, as ScyllaDB prints them and GRANT ... ON FUNCTION names them); naming an
overload matches frozen and non-frozen forms alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tabletdb.cql.errors import AlreadyExists, InvalidRequest
from tabletdb.cql.types import CqlType
from tabletdb.schema.ddl_common import (
    NOOP,
    Change,
    DdlOutcome,
    SchemaChangeEvent,
    Target,
    ensure_user_modifiable,
    require_keyspace,
)
from tabletdb.schema.model import AggregateDef, Catalog, FunctionDef, FunctionKey, KeyspaceSchema
from tabletdb.schema.mutations import DropAggregate, DropFunction, PutAggregate, PutFunction
from tabletdb.schema.typeutil import freeze_deep, resolve_type

LANGUAGES = ("lua", "wasm")


def _resolve_all(catalog: Catalog, keyspace: str, types: Sequence[CqlType]) -> tuple[CqlType, ...]:
    return tuple(resolve_type(t, keyspace, catalog.user_type) for t in types)


def _loose(types: Sequence[CqlType]) -> tuple[str, ...]:
    """Argument types as overloads compare them: frozen or not names the same parameter."""
    return tuple(freeze_deep(t).cql() for t in types)


def find_overload(
    routines: Mapping[FunctionKey, FunctionDef] | Mapping[FunctionKey, AggregateDef],
    name: str,
    types: Sequence[CqlType],
) -> FunctionKey | None:
    """The signature of the overload `name(types)` names (resolved types), frozen or not."""
    wanted = _loose(types)
    for key, routine in routines.items():
        if key[0] == name and _loose(routine.argument_types) == wanted:
            return key
    return None


def _signature_text(name: str, types: Sequence[CqlType]) -> str:
    return f"{name}({', '.join(t.cql() for t in types)})"


def create_function(
    catalog: Catalog,
    keyspace: str,
    name: str,
    argument_names: Sequence[str],
    argument_types: Sequence[CqlType],
    return_type: CqlType,
    language: str,
    body: str,
    called_on_null_input: bool,
    *,
    or_replace: bool = False,
    if_not_exists: bool = False,
) -> DdlOutcome:
    if or_replace and if_not_exists:
        raise InvalidRequest("Cannot use both 'OR REPLACE' and 'IF NOT EXISTS' directives")
    ks = require_keyspace(catalog, keyspace)
    ensure_user_modifiable(keyspace)
    if len(set(argument_names)) != len(argument_names):
        raise InvalidRequest(
            f"Duplicate argument names for given function {keyspace}.{name} "
            f"with argument names {list(argument_names)}"
        )
    if len(argument_names) != len(argument_types):
        raise InvalidRequest(
            f"Function {keyspace}.{name}: {len(argument_names)} argument names "
            f"for {len(argument_types)} types"
        )
    lang = language.lower()
    if lang not in LANGUAGES:
        raise InvalidRequest(f"Language '{language}' is not supported")
    args = _resolve_all(catalog, keyspace, argument_types)
    ret = _resolve_all(catalog, keyspace, [return_type])[0]
    function = FunctionDef(keyspace, name, tuple(argument_names), args, ret, lang, body, called_on_null_input)
    if find_overload(ks.aggregates, name, args) is not None:
        raise InvalidRequest(f"Aggregate {keyspace}.{_signature_text(name, args)} already exists")
    same = find_overload(ks.functions, name, args)
    existing = None if same is None else ks.functions[same]
    change = Change.CREATED
    if existing is not None:
        if if_not_exists:
            return NOOP
        if not or_replace:
            raise AlreadyExists(
                f"Function {keyspace}.{_signature_text(name, args)} already exists", keyspace, name
            )
        if _loose([existing.return_type]) != _loose([ret]):
            raise InvalidRequest(
                f"Cannot replace function {keyspace}.{name}, the new return type {ret.cql()} "
                f"is not compatible with the return type {existing.return_type.cql()} of existing function"
            )
        change = Change.UPDATED
    event = SchemaChangeEvent(change, Target.FUNCTION, keyspace, name, function.signature[1])
    return DdlOutcome((PutFunction(function),), (event,))


def _pick(
    kind: str,
    name: str,
    candidates: Mapping[FunctionKey, FunctionDef] | Mapping[FunctionKey, AggregateDef],
    argument_types: Sequence[CqlType] | None,
) -> FunctionKey | None:
    if argument_types is not None:
        return find_overload(candidates, name, argument_types)
    matches = [k for k in candidates if k[0] == name]
    if len(matches) > 1:
        keyword = kind.upper()
        raise InvalidRequest(
            f"'DROP {keyword} {name}' matches multiple function definitions; specify the argument types by "
            f"issuing a statement like 'DROP {keyword} {name} (type, type, ...)'. Hint: use cqlsh "
            f"'DESCRIBE {keyword} {name}' command to find all overloads"
        )
    return matches[0] if matches else None


def _overload_to_drop(
    catalog: Catalog,
    keyspace: str,
    name: str,
    argument_types: Sequence[CqlType] | None,
    kind: str,
    routines: Mapping[FunctionKey, FunctionDef] | Mapping[FunctionKey, AggregateDef],
) -> FunctionKey | None:
    """The signature DROP FUNCTION/AGGREGATE names (None if there is none); shared by both."""
    ensure_user_modifiable(keyspace)
    wanted = None if argument_types is None else _resolve_all(catalog, keyspace, argument_types)
    return _pick(kind, name, routines, wanted)


def drop_function(
    catalog: Catalog,
    keyspace: str,
    name: str,
    argument_types: Sequence[CqlType] | None = None,
    if_exists: bool = False,
) -> DdlOutcome:
    """DROP FUNCTION; without argument types the name must match exactly one overload."""
    ks = require_keyspace(catalog, keyspace)
    key = _overload_to_drop(catalog, keyspace, name, argument_types, "function", ks.functions)
    if key is None:
        if if_exists:
            return NOOP
        raise InvalidRequest(f"Cannot drop non existing function '{name}'")
    _check_unreferenced(ks, name)
    event = SchemaChangeEvent(Change.DROPPED, Target.FUNCTION, keyspace, name, key[1])
    return DdlOutcome((DropFunction(keyspace, name, key[1]),), (event,))


def _check_unreferenced(ks: KeyspaceSchema, function: str) -> None:
    for aggregate in sorted(ks.aggregates.values(), key=lambda a: a.signature):
        if function in (aggregate.state_func, aggregate.final_func, aggregate.reduce_func):
            raise InvalidRequest(
                f"Cannot delete function {ks.name}.{function}, as it is used by user-defined aggregate "
                f"{ks.name}.{aggregate.name}"
            )


def create_aggregate(
    catalog: Catalog,
    keyspace: str,
    name: str,
    argument_types: Sequence[CqlType],
    state_func: str,
    state_type: CqlType,
    final_func: str | None = None,
    initcond: str | None = None,
    *,
    reduce_func: str | None = None,
    or_replace: bool = False,
    if_not_exists: bool = False,
) -> DdlOutcome:
    """CREATE AGGREGATE; `initcond` is the CQL literal text of the initial state."""
    if or_replace and if_not_exists:
        raise InvalidRequest("Cannot use both 'OR REPLACE' and 'IF NOT EXISTS' directives")
    ks = require_keyspace(catalog, keyspace)
    ensure_user_modifiable(keyspace)
    args = _resolve_all(catalog, keyspace, argument_types)
    stype = _resolve_all(catalog, keyspace, [state_type])[0]
    state_sig = find_overload(ks.functions, state_func, (stype, *args))
    state = None if state_sig is None else ks.functions[state_sig]
    if state is None:
        raise InvalidRequest(f"State function {_signature_text(state_func, (stype, *args))} does not exist")
    if _loose([state.return_type]) != _loose([stype]):
        raise InvalidRequest(
            f"State function {_signature_text(state_func, (stype, *args))} return type must be "
            "the same as the first argument type - check STYPE, argument and return types"
        )
    return_type = stype
    if final_func is not None:
        final_sig = find_overload(ks.functions, final_func, (stype,))
        final = None if final_sig is None else ks.functions[final_sig]
        if final is None:
            raise InvalidRequest(f"Final function {_signature_text(final_func, (stype,))} does not exist")
        return_type = final.return_type
    if reduce_func is not None and find_overload(ks.functions, reduce_func, (stype, stype)) is None:
        raise InvalidRequest(f"Reduce function {_signature_text(reduce_func, (stype, stype))} does not exist")
    aggregate = AggregateDef(
        keyspace, name, args, state_func, stype, return_type, final_func, initcond, reduce_func
    )
    if find_overload(ks.functions, name, args) is not None:
        raise InvalidRequest(f"Function {keyspace}.{_signature_text(name, args)} already exists")
    change = Change.CREATED
    same = find_overload(ks.aggregates, name, args)
    existing = None if same is None else ks.aggregates[same]
    if existing is not None:
        if if_not_exists:
            return NOOP
        if not or_replace:
            raise AlreadyExists(
                f"Aggregate {keyspace}.{_signature_text(name, args)} already exists", keyspace, name
            )
        change = Change.UPDATED
    event = SchemaChangeEvent(change, Target.AGGREGATE, keyspace, name, aggregate.signature[1])
    return DdlOutcome((PutAggregate(aggregate),), (event,))


def drop_aggregate(
    catalog: Catalog,
    keyspace: str,
    name: str,
    argument_types: Sequence[CqlType] | None = None,
    if_exists: bool = False,
) -> DdlOutcome:
    ks = require_keyspace(catalog, keyspace)
    key = _overload_to_drop(catalog, keyspace, name, argument_types, "aggregate", ks.aggregates)
    if key is None:
        if if_exists:
            return NOOP
        raise InvalidRequest(f"Cannot drop non existing aggregate '{name}'")
    event = SchemaChangeEvent(Change.DROPPED, Target.AGGREGATE, keyspace, name, key[1])
    return DdlOutcome((DropAggregate(keyspace, name, key[1]),), (event,))
