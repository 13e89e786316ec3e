"""Catalog, mutations and CQL types <-> plain msgpack-able data.

The node persists the catalog with this and group0 replicates mutations and snapshots in this
form, so decoding must rebuild exactly equal objects. The encoding is generic over the schema's
frozen dataclasses: `{"@": ClassName, field: value...}`; tuples become lists, UUIDs
`{"@u": bytes}`, enums `{"@e": value}` (the field's class decides), FrozenMaps `{"@m": pairs}`.
Only the classes registered below can be decoded.

Both directions recurse once per level of nesting and refuse data nested deeper than
`MAX_PLAIN_DEPTH`, so a value no node could decode is never encoded, and data from elsewhere
cannot exhaust the stack.
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


MAX_PLAIN_DEPTH = 300
"""Levels of plain data (dicts and lists) within one another. The deepest a schema needs is a
snapshot's path to a column type (about a dozen levels: catalog, keyspace map, table, columns,
column) plus two levels per level of a type nested `MAX_TYPE_NESTING` (128) deep, as a tuple or
user type is (a dict holding a list). Decoding takes two Python frames per level."""


_SCALARS = frozenset({bool, int, float, str, bytes})
"""Plain types that stand for themselves (checked by exact type: the hot path of decoding)."""


class SchemaDecodeError(ValueError):
    """Stored or replicated schema data is not in the expected form."""


class PlainNestingError(ValueError):
    """A value (to encode) or plain data (to decode) is nested deeper than MAX_PLAIN_DEPTH."""


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

    def to_plain(self, value: Any, _depth: int = 0) -> Any:
        if value is None or (
            isinstance(value, bool | int | float | str | bytes) and not isinstance(value, Enum)
        ):
            return value  # (the models' enums are StrEnums: encoded below, as a dict)
        if _depth > MAX_PLAIN_DEPTH:
            raise PlainNestingError(f"{self.what} data nested deeper than {MAX_PLAIN_DEPTH} levels")
        if isinstance(value, Enum):
            return {"@e": type(value).__name__, "v": value.value}
        if isinstance(value, uuid.UUID):
            return {"@u": value.bytes}
        depth = _depth + 1
        if isinstance(value, tuple | list):
            return [self.to_plain(v, depth) for v in value]
        if isinstance(value, FrozenMap):
            # Sorted so every node encodes an equal state to identical bytes (a map's entries
            # are two levels down: the list of pairs, then each pair).
            return {
                "@m": [
                    [self.to_plain(k, depth + 1), self.to_plain(value[k], depth + 1)] for k in sorted(value)
                ]
            }
        if isinstance(value, cql_types.NativeType):
            return {"@n": value.name}
        if dataclasses.is_dataclass(value) and type(value).__name__ in self.classes:
            encoded: dict[str, Any] = {"@": type(value).__name__}
            for f in dataclasses.fields(value):
                encoded[f.name] = self.to_plain(getattr(value, f.name), depth)
            return encoded
        raise TypeError(f"cannot encode {type(value).__name__} in {self.what} data: {value!r}")

    def from_plain(self, data: Any, _depth: int = 0) -> Any:
        """Inverse of `to_plain`."""
        if data is None or type(data) in _SCALARS:
            return data
        if _depth > MAX_PLAIN_DEPTH:
            raise PlainNestingError(f"{self.what} data nested deeper than {MAX_PLAIN_DEPTH} levels")
        depth = _depth + 1
        if isinstance(data, list):
            return tuple([v if v is None or type(v) in _SCALARS else self.from_plain(v, depth) for v in data])
        if not isinstance(data, dict):
            if isinstance(data, bool | int | float | str | bytes):  # a subclass: msgpack builds none
                return data
            raise self.error(f"unexpected {type(data).__name__} in {self.what} data")
        name = data.get("@")
        if name is not None:  # a dataclass, the common case: scalar fields are taken as they are
            cls = self.classes.get(name)
            if cls is None:
                raise self.error(f"unknown class {name!r} in {self.what} data")
            kwargs = {
                k: v if v is None or type(v) in _SCALARS else self.from_plain(v, depth)
                for k, v in data.items()
                if k != "@"
            }
            try:
                return cls(**kwargs)
            except TypeError as e:
                raise self.error(f"bad fields for {cls.__name__}: {e}") from e
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
            return FrozenMap(
                (self.from_plain(k, depth + 1), self.from_plain(v, depth + 1)) for k, v in data["@m"]
            )
        raise self.error(f"unknown class None in {self.what} data")


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
