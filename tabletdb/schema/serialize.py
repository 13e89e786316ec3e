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


class PlainCodec:
    """The generic encoding over a registry of frozen dataclasses and enums.

    Every replicated value (schema here; auth and service levels in `tabletdb.auth.serialize`)
    uses this one scheme, each with its own registry, so a decoder only ever builds classes it
    was told about.
    """

    def __init__(
        self, classes: dict[str, type], enums: dict[str, type[Enum]], what: str, error: type[ValueError]
    ) -> None:
        self.classes = classes
        self.enums = enums
        self.what = what
        self.error = error

    def to_plain(self, value: Any) -> Any:
        if isinstance(value, Enum):  # before str: the models' enums are StrEnums
            return {"@e": type(value).__name__, "v": value.value}
        if value is None or isinstance(value, bool | int | float | str | bytes):
            return value
        if isinstance(value, uuid.UUID):
            return {"@u": value.bytes}
        if isinstance(value, tuple | list):
            return [self.to_plain(v) for v in value]
        if isinstance(value, FrozenMap):
            # Sorted so every node encodes an equal state to identical bytes.
            return {"@m": [[self.to_plain(k), self.to_plain(value[k])] for k in sorted(value)]}
        if isinstance(value, cql_types.NativeType):
            return {"@n": value.name}
        if dataclasses.is_dataclass(value) and type(value).__name__ in self.classes:
            encoded: dict[str, Any] = {"@": type(value).__name__}
            for f in dataclasses.fields(value):
                encoded[f.name] = self.to_plain(getattr(value, f.name))
            return encoded
        raise TypeError(f"cannot encode {type(value).__name__} in {self.what} data: {value!r}")

    def from_plain(self, data: Any) -> Any:
        """Inverse of `to_plain`."""
        if data is None or isinstance(data, bool | int | float | str | bytes):
            return data
        if isinstance(data, list):
            return tuple(self.from_plain(v) for v in data)
        if not isinstance(data, dict):
            raise self.error(f"unexpected {type(data).__name__} in {self.what} data")
        if "@u" in data:
            return uuid.UUID(bytes=bytes(data["@u"]))
        if "@n" in data:
            return cql_types.NativeType(data["@n"])
        if "@e" in data:
            enum_cls = self.enums.get(data["@e"])
            if enum_cls is None:
                raise self.error(f"unknown enum {data['@e']!r} in {self.what} data")
            return enum_cls(data["v"])
        if "@m" in data:
            return FrozenMap((self.from_plain(k), self.from_plain(v)) for k, v in data["@m"])
        cls = self.classes.get(data.get("@", ""))
        if cls is None:
            raise self.error(f"unknown class {data.get('@')!r} in {self.what} data")
        kwargs = {k: self.from_plain(v) for k, v in data.items() if k != "@"}
        try:
            return cls(**kwargs)
        except TypeError as e:
            raise self.error(f"bad fields for {cls.__name__}: {e}") from e


_SCHEMA_CODEC = PlainCodec(_CLASSES, _ENUMS, "schema", SchemaDecodeError)
to_plain = _SCHEMA_CODEC.to_plain
"""Encode a catalog, mutation, CqlType (or anything they contain) as plain data."""
from_plain = _SCHEMA_CODEC.from_plain


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
