"""Catalog, mutations and CQL types <-> plain msgpack-able data.

The node persists the catalog with this and group0 replicates mutations and snapshots in this
form, so decoding must rebuild exactly equal objects. The encoding is generic over the schema's
frozen dataclasses: `{"@": ClassName, field: value...}`; tuples become lists, UUIDs
`{"@u": bytes}`, enums `{"@e": value}` (the field's class decides), FrozenMaps `{"@m": pairs}`.
Only the classes registered below can be decoded.
"""

from __future__ import annotations

import dataclasses
import uuid
from enum import Enum
from typing import Any

from tabletdb.cql import types as cql_types
from tabletdb.schema import model, mutations, options
from tabletdb.schema.frozenmap import FrozenMap

_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        cql_types.NativeType,
        cql_types.ListType,
        cql_types.SetType,
        cql_types.MapType,
        cql_types.TupleType,
        cql_types.UserType,
        cql_types.UserTypeRef,
        cql_types.VectorType,
        cql_types.CustomType,
        options.TableOptions,
        model.Replication,
        model.KeyspaceTablets,
        model.KeyspaceDef,
        model.ColumnDef,
        model.DroppedColumn,
        model.IndexDef,
        model.TableDef,
        model.ViewDef,
        model.UserTypeDef,
        model.FunctionDef,
        model.AggregateDef,
        model.KeyspaceSchema,
        model.Catalog,
        mutations.PutKeyspace,
        mutations.DropKeyspace,
        mutations.PutTable,
        mutations.DropTable,
        mutations.PutView,
        mutations.DropView,
        mutations.PutType,
        mutations.DropType,
        mutations.PutFunction,
        mutations.DropFunction,
        mutations.PutAggregate,
        mutations.DropAggregate,
    )
}
_ENUMS: dict[str, type[Enum]] = {
    e.__name__: e for e in (model.ColumnKind, model.ClusteringOrder, model.IndexKind)
}


class SchemaDecodeError(ValueError):
    """Stored or replicated schema data is not in the expected form."""


def to_plain(value: Any) -> Any:
    """Encode a catalog, mutation, CqlType (or anything they contain) as plain data."""
    if isinstance(value, Enum):  # before str: the model's enums are StrEnums
        return {"@e": type(value).__name__, "v": value.value}
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return value
    if isinstance(value, uuid.UUID):
        return {"@u": value.bytes}
    if isinstance(value, tuple | list):
        return [to_plain(v) for v in value]
    if isinstance(value, FrozenMap):
        # Sorted so every node encodes an equal catalog to identical bytes.
        return {"@m": [[to_plain(k), to_plain(value[k])] for k in sorted(value)]}
    if isinstance(value, cql_types.NativeType):
        return {"@n": value.name}
    if dataclasses.is_dataclass(value) and type(value).__name__ in _CLASSES:
        encoded: dict[str, Any] = {"@": type(value).__name__}
        for f in dataclasses.fields(value):
            encoded[f.name] = to_plain(getattr(value, f.name))
        return encoded
    raise TypeError(f"cannot encode {type(value).__name__} in schema data: {value!r}")


def from_plain(data: Any) -> Any:
    """Inverse of `to_plain`."""
    if data is None or isinstance(data, bool | int | float | str | bytes):
        return data
    if isinstance(data, list):
        return tuple(from_plain(v) for v in data)
    if not isinstance(data, dict):
        raise SchemaDecodeError(f"unexpected {type(data).__name__} in schema data")
    if "@u" in data:
        return uuid.UUID(bytes=bytes(data["@u"]))
    if "@n" in data:
        return cql_types.NativeType(data["@n"])
    if "@e" in data:
        enum_cls = _ENUMS.get(data["@e"])
        if enum_cls is None:
            raise SchemaDecodeError(f"unknown enum {data['@e']!r} in schema data")
        return enum_cls(data["v"])
    if "@m" in data:
        return FrozenMap((from_plain(k), from_plain(v)) for k, v in data["@m"])
    cls = _CLASSES.get(data.get("@", ""))
    if cls is None:
        raise SchemaDecodeError(f"unknown class {data.get('@')!r} in schema data")
    kwargs = {k: from_plain(v) for k, v in data.items() if k != "@"}
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise SchemaDecodeError(f"bad fields for {cls.__name__}: {e}") from e


def catalog_to_plain(catalog: model.Catalog) -> Any:
    return to_plain(catalog)


def catalog_from_plain(data: Any) -> model.Catalog:
    catalog = from_plain(data)
    if not isinstance(catalog, model.Catalog):
        raise SchemaDecodeError(f"expected a Catalog, got {type(catalog).__name__}")
    return catalog


def mutations_to_plain(items: tuple[mutations.Mutation, ...] | list[mutations.Mutation]) -> Any:
    return [to_plain(m) for m in items]


def mutations_from_plain(data: Any) -> tuple[mutations.Mutation, ...]:
    decoded = from_plain(data)
    if not isinstance(decoded, tuple):
        raise SchemaDecodeError("expected a list of catalog mutations")
    return decoded


def type_to_plain(t: cql_types.CqlType) -> Any:
    return to_plain(t)


def type_from_plain(data: Any) -> cql_types.CqlType:
    t = from_plain(data)
    if not isinstance(t, cql_types.CqlType):
        raise SchemaDecodeError(f"expected a CQL type, got {type(t).__name__}")
    return t
