"""CQL data types as immutable values.

Every layer talks about column types through these objects: the grammar produces them, the
catalog stores them, the protocol encodes them as `[option]`s, storage orders clustering keys
by them. They are plain frozen dataclasses so they hash, compare and pickle/msgpack cleanly
(group0 replicates catalog changes that contain them).

Value codecs (protocol bytes <-> Python values), literal parsing and the byte-comparable
clustering encoding live in sibling modules (`codec`, `literals`, `bytecomparable`) so this
module stays the small shared vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# Native type names as CQL spells them. `varchar` is an alias of `text` and is normalised away.
NATIVE_TYPE_NAMES: tuple[str, ...] = (
    "ascii",
    "bigint",
    "blob",
    "boolean",
    "counter",
    "date",
    "decimal",
    "double",
    "duration",
    "float",
    "inet",
    "int",
    "smallint",
    "text",
    "time",
    "timestamp",
    "timeuuid",
    "tinyint",
    "uuid",
    "varint",
)

NATIVE_ALIASES: dict[str, str] = {"varchar": "text"}

# Protocol v4 `[option]` ids of the native types. Scylla sends varchar (0x000D) for text.
NATIVE_OPTION_IDS: dict[str, int] = {
    "ascii": 0x0001,
    "bigint": 0x0002,
    "blob": 0x0003,
    "boolean": 0x0004,
    "counter": 0x0005,
    "decimal": 0x0006,
    "double": 0x0007,
    "float": 0x0008,
    "int": 0x0009,
    "timestamp": 0x000B,
    "uuid": 0x000C,
    "text": 0x000D,
    "varint": 0x000E,
    "timeuuid": 0x000F,
    "inet": 0x0010,
    "date": 0x0011,
    "time": 0x0012,
    "smallint": 0x0013,
    "tinyint": 0x0014,
    "duration": 0x0015,
}

# Cassandra marshal class names, needed for the Custom `[option]` of vector types.
NATIVE_MARSHAL_CLASSES: dict[str, str] = {
    "ascii": "org.apache.cassandra.db.marshal.AsciiType",
    "bigint": "org.apache.cassandra.db.marshal.LongType",
    "blob": "org.apache.cassandra.db.marshal.BytesType",
    "boolean": "org.apache.cassandra.db.marshal.BooleanType",
    "counter": "org.apache.cassandra.db.marshal.CounterColumnType",
    "date": "org.apache.cassandra.db.marshal.SimpleDateType",
    "decimal": "org.apache.cassandra.db.marshal.DecimalType",
    "double": "org.apache.cassandra.db.marshal.DoubleType",
    "duration": "org.apache.cassandra.db.marshal.DurationType",
    "float": "org.apache.cassandra.db.marshal.FloatType",
    "inet": "org.apache.cassandra.db.marshal.InetAddressType",
    "int": "org.apache.cassandra.db.marshal.Int32Type",
    "smallint": "org.apache.cassandra.db.marshal.ShortType",
    "text": "org.apache.cassandra.db.marshal.UTF8Type",
    "time": "org.apache.cassandra.db.marshal.TimeType",
    "timestamp": "org.apache.cassandra.db.marshal.TimestampType",
    "timeuuid": "org.apache.cassandra.db.marshal.TimeUUIDType",
    "tinyint": "org.apache.cassandra.db.marshal.ByteType",
    "uuid": "org.apache.cassandra.db.marshal.UUIDType",
    "varint": "org.apache.cassandra.db.marshal.IntegerType",
}


class CqlType:
    """Base of all CQL types. Subclasses are frozen dataclasses."""

    def cql(self) -> str:
        """The type as CQL text, e.g. `frozen<list<int>>`, `map<int, text>`."""
        raise NotImplementedError

    @property
    def is_collection(self) -> bool:
        return False

    @property
    def is_multi_cell(self) -> bool:
        """True for non-frozen collections and UDTs: stored cell by cell."""
        return False

    @property
    def is_counter(self) -> bool:
        return False

    def frozen_form(self) -> CqlType:
        """The same type frozen (identity for types that are always frozen)."""
        return self

    def __str__(self) -> str:
        return self.cql()


@dataclass(frozen=True)
class NativeType(CqlType):
    name: str

    def __post_init__(self) -> None:
        if self.name not in NATIVE_TYPE_NAMES:
            raise ValueError(f"unknown native type {self.name!r}")

    def cql(self) -> str:
        return self.name

    @property
    def is_counter(self) -> bool:
        return self.name == "counter"


class _Collection(CqlType):
    """What list, set and map share: stored cell by cell unless frozen (each subclass is a frozen
    dataclass with a ``frozen`` field and says how its unfrozen form is written)."""

    frozen: bool

    def unfrozen_cql(self) -> str:
        raise NotImplementedError

    def cql(self) -> str:
        inner = self.unfrozen_cql()
        return f"frozen<{inner}>" if self.frozen else inner

    @property
    def is_collection(self) -> bool:
        return True

    @property
    def is_multi_cell(self) -> bool:
        return not self.frozen

    def frozen_form(self) -> CqlType:
        return replace(self, frozen=True)  # type: ignore[type-var]  # each subclass is a dataclass


@dataclass(frozen=True)
class ListType(_Collection):
    element: CqlType
    frozen: bool = False

    def unfrozen_cql(self) -> str:
        return f"list<{self.element.cql()}>"


@dataclass(frozen=True)
class SetType(_Collection):
    element: CqlType
    frozen: bool = False

    def unfrozen_cql(self) -> str:
        return f"set<{self.element.cql()}>"


@dataclass(frozen=True)
class MapType(_Collection):
    key: CqlType
    value: CqlType
    frozen: bool = False

    def unfrozen_cql(self) -> str:
        return f"map<{self.key.cql()}, {self.value.cql()}>"


@dataclass(frozen=True)
class TupleType(CqlType):
    """Tuples are always frozen in CQL; `frozen<tuple<...>>` prints as `tuple<...>`."""

    elements: tuple[CqlType, ...]

    def cql(self) -> str:
        return "tuple<" + ", ".join(e.cql() for e in self.elements) + ">"


@dataclass(frozen=True)
class UserType(CqlType):
    """A resolved user-defined type: its fields are known."""

    keyspace: str
    name: str
    field_names: tuple[str, ...]
    field_types: tuple[CqlType, ...]
    frozen: bool = False

    def cql(self) -> str:
        from tabletdb.cql.identifiers import quote_identifier

        inner = quote_identifier(self.name)
        return f"frozen<{inner}>" if self.frozen else inner

    @property
    def is_multi_cell(self) -> bool:
        return not self.frozen

    def frozen_form(self) -> CqlType:
        return UserType(self.keyspace, self.name, self.field_names, self.field_types, True)


@dataclass(frozen=True)
class UserTypeRef(CqlType):
    """A UDT named in a statement but not yet resolved against the catalog.

    The grammar cannot know a UDT's fields; the schema layer replaces every UserTypeRef by a
    UserType (or rejects the statement with "Unknown type ks.name").
    """

    keyspace: str | None
    name: str
    frozen: bool = False

    def cql(self) -> str:
        from tabletdb.cql.identifiers import quote_identifier

        inner = quote_identifier(self.name)
        if self.keyspace is not None:
            inner = f"{quote_identifier(self.keyspace)}.{inner}"
        return f"frozen<{inner}>" if self.frozen else inner

    def frozen_form(self) -> CqlType:
        return UserTypeRef(self.keyspace, self.name, True)


@dataclass(frozen=True)
class VectorType(CqlType):
    element: CqlType
    dimension: int

    def cql(self) -> str:
        return f"vector<{self.element.cql()}, {self.dimension}>"


@dataclass(frozen=True)
class CustomType(CqlType):
    """A type named by its Java marshal class (`'org.apache...'`), kept opaque."""

    class_name: str

    def cql(self) -> str:
        return "'" + self.class_name.replace("'", "''") + "'"


def native(name: str) -> NativeType:
    """Look up a native type by CQL name, resolving aliases such as varchar."""
    return NativeType(NATIVE_ALIASES.get(name, name))


ASCII = NativeType("ascii")
BIGINT = NativeType("bigint")
BLOB = NativeType("blob")
BOOLEAN = NativeType("boolean")
COUNTER = NativeType("counter")
DATE = NativeType("date")
DECIMAL = NativeType("decimal")
DOUBLE = NativeType("double")
DURATION = NativeType("duration")
FLOAT = NativeType("float")
INET = NativeType("inet")
INT = NativeType("int")
SMALLINT = NativeType("smallint")
TEXT = NativeType("text")
TIME = NativeType("time")
TIMESTAMP = NativeType("timestamp")
TIMEUUID = NativeType("timeuuid")
TINYINT = NativeType("tinyint")
UUID = NativeType("uuid")
VARINT = NativeType("varint")
