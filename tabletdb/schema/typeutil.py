"""Resolving and rewriting CQL types against the catalog.

Statements name UDTs by reference (`UserTypeRef`); the catalog stores them resolved
(`UserType` with fields) so readers never need a lookup. Because a resolved UDT is copied into
every column that uses it, ALTER TYPE must rewrite those columns too (`substitute_udt`).
"""

from __future__ import annotations

from collections.abc import Callable

from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.nesting import check_type_nesting
from tabletdb.cql.types import (
    CqlType,
    ListType,
    MapType,
    SetType,
    TupleType,
    UserType,
    UserTypeRef,
    VectorType,
)
from tabletdb.schema.model import UserTypeDef

TypeLookup = Callable[[str, str], UserTypeDef | None]


def resolve_type(t: CqlType, keyspace: str, lookup: TypeLookup) -> CqlType:
    """Replace every UserTypeRef by the catalog's UserType and normalise frozenness.

    Inside a frozen type everything is frozen; a non-frozen collection may not hold
    multi-cell values (as in ScyllaDB, the user has to write `frozen<...>`). Types nested deeper
    than `MAX_TYPE_NESTING`, as written or once user types are inlined, are refused.
    """
    check_type_nesting(t)  # before any recursion over it: types also come from outside the parser
    resolved = _resolve(t, keyspace, lookup)
    check_type_nesting(resolved)  # user types add the levels of their fields
    _check_nesting(resolved, t)
    return resolved


def _resolve(t: CqlType, keyspace: str, lookup: TypeLookup) -> CqlType:
    if isinstance(t, UserTypeRef):
        ks = t.keyspace if t.keyspace is not None else keyspace
        if ks != keyspace:
            raise InvalidRequest(
                f"Statement on keyspace {keyspace} cannot refer to a user type in keyspace {ks}; "
                "user types can only be used in the keyspace they are defined in"
            )
        udt = lookup(ks, t.name)
        if udt is None:
            raise InvalidRequest(f"Unknown type {ks}.{t.name}")
        result: CqlType = udt.as_type()
        return freeze_deep(result) if t.frozen else result
    if isinstance(t, ListType):
        inner = ListType(_resolve(t.element, keyspace, lookup), t.frozen)
        return freeze_deep(inner) if t.frozen else inner
    if isinstance(t, SetType):
        inner_s = SetType(_resolve(t.element, keyspace, lookup), t.frozen)
        return freeze_deep(inner_s) if t.frozen else inner_s
    if isinstance(t, MapType):
        inner_m = MapType(_resolve(t.key, keyspace, lookup), _resolve(t.value, keyspace, lookup), t.frozen)
        return freeze_deep(inner_m) if t.frozen else inner_m
    if isinstance(t, TupleType):
        return TupleType(tuple(freeze_deep(_resolve(e, keyspace, lookup)) for e in t.elements))
    if isinstance(t, VectorType):
        return VectorType(freeze_deep(_resolve(t.element, keyspace, lookup)), t.dimension)
    if isinstance(t, UserType):
        return freeze_deep(t) if t.frozen else t
    return t


def freeze_deep(t: CqlType) -> CqlType:
    """The type with itself and everything nested frozen (what `frozen<...>` means)."""
    if isinstance(t, ListType):
        return ListType(freeze_deep(t.element), True)
    if isinstance(t, SetType):
        return SetType(freeze_deep(t.element), True)
    if isinstance(t, MapType):
        return MapType(freeze_deep(t.key), freeze_deep(t.value), True)
    if isinstance(t, TupleType):
        return TupleType(tuple(freeze_deep(e) for e in t.elements))
    if isinstance(t, VectorType):
        return VectorType(freeze_deep(t.element), t.dimension)
    if isinstance(t, UserType):
        return UserType(t.keyspace, t.name, t.field_names, tuple(freeze_deep(f) for f in t.field_types), True)
    return t


def _check_nesting(t: CqlType, original: CqlType) -> None:
    if isinstance(t, ListType | SetType | MapType):
        children = (t.key, t.value) if isinstance(t, MapType) else (t.element,)
        for child in children:
            if child.is_counter:
                raise InvalidRequest(f"Counters are not allowed inside collections: {original.cql()}")
            if child.is_multi_cell:
                what = "UDTs" if isinstance(child, UserType) else "collections"
                raise InvalidRequest(
                    f"Non-frozen {what} are not allowed inside collections: {original.cql()}"
                )
            _check_nesting(child, original)
    elif isinstance(t, VectorType) and t.element.is_counter:
        raise InvalidRequest(f"Counters are not allowed inside vectors: {original.cql()}")


def references_udt(t: CqlType, keyspace: str, name: str) -> bool:
    """Whether `t` mentions the UDT keyspace.name anywhere (also inside other UDTs' fields)."""
    if isinstance(t, UserType):
        if t.keyspace == keyspace and t.name == name:
            return True
        return any(references_udt(f, keyspace, name) for f in t.field_types)
    return any(references_udt(c, keyspace, name) for c in children(t))


def children(t: CqlType) -> tuple[CqlType, ...]:
    if isinstance(t, ListType | SetType):
        return (t.element,)
    if isinstance(t, MapType):
        return (t.key, t.value)
    if isinstance(t, TupleType):
        return t.elements
    if isinstance(t, VectorType):
        return (t.element,)
    if isinstance(t, UserType):
        return t.field_types
    return ()


def substitute_udt(t: CqlType, new: UserTypeDef) -> CqlType:
    """Rewrite every use of the UDT `new` names with its new fields, keeping frozenness."""
    if isinstance(t, UserType):
        fields = tuple(substitute_udt(f, new) for f in t.field_types)
        if t.keyspace == new.keyspace and t.name == new.name:
            replacement = new.as_type(t.frozen)
            return freeze_deep(replacement) if t.frozen else replacement
        return UserType(t.keyspace, t.name, t.field_names, fields, t.frozen)
    if isinstance(t, ListType):
        return ListType(substitute_udt(t.element, new), t.frozen)
    if isinstance(t, SetType):
        return SetType(substitute_udt(t.element, new), t.frozen)
    if isinstance(t, MapType):
        return MapType(substitute_udt(t.key, new), substitute_udt(t.value, new), t.frozen)
    if isinstance(t, TupleType):
        return TupleType(tuple(substitute_udt(e, new) for e in t.elements))
    if isinstance(t, VectorType):
        return VectorType(substitute_udt(t.element, new), t.dimension)
    return t


def udts_as_tuples(t: CqlType) -> CqlType:
    """UDTs replaced by tuples of their field types: how dropped columns record their type."""
    if isinstance(t, UserType):
        return TupleType(tuple(udts_as_tuples(f) for f in t.field_types))
    if isinstance(t, ListType):
        return ListType(udts_as_tuples(t.element), t.frozen)
    if isinstance(t, SetType):
        return SetType(udts_as_tuples(t.element), t.frozen)
    if isinstance(t, MapType):
        return MapType(udts_as_tuples(t.key), udts_as_tuples(t.value), t.frozen)
    if isinstance(t, TupleType):
        return TupleType(tuple(udts_as_tuples(e) for e in t.elements))
    if isinstance(t, VectorType):
        return VectorType(udts_as_tuples(t.element), t.dimension)
    return t
