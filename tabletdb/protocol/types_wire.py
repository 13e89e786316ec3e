"""CQL types <-> the protocol `[option]` notation used in result and prepared metadata.

Frozenness is not on the wire: decoding yields non-frozen collections and UDTs, so a decoded type
equals the encoded one up to frozenness. Vectors travel as a Custom option naming Cassandra's
marshal class, which the drivers parse; `marshal_class` builds that name for any type.
"""

from __future__ import annotations

from tabletdb.cql.errors import ProtocolError
from tabletdb.cql.types import (
    NATIVE_MARSHAL_CLASSES,
    NATIVE_OPTION_IDS,
    CqlType,
    CustomType,
    ListType,
    MapType,
    NativeType,
    SetType,
    TupleType,
    UserType,
    UserTypeRef,
    VectorType,
)
from tabletdb.protocol.wire import Reader, write_short, write_string

OPT_CUSTOM = 0x0000
OPT_LIST = 0x0020
OPT_MAP = 0x0021
OPT_SET = 0x0022
OPT_UDT = 0x0030
OPT_TUPLE = 0x0031
_OPT_TEXT_LEGACY = 0x000A  # `text` in the spec; Scylla never emits it but clients may

_MARSHAL = "org.apache.cassandra.db.marshal."
_NATIVE_BY_OPTION: dict[int, NativeType] = {oid: NativeType(n) for n, oid in NATIVE_OPTION_IDS.items()}
_NATIVE_BY_OPTION[_OPT_TEXT_LEGACY] = NativeType("text")
_NATIVE_BY_CLASS: dict[str, NativeType] = {c: NativeType(n) for n, c in NATIVE_MARSHAL_CLASSES.items()}
_NATIVE_BY_CLASS[_MARSHAL + "DateType"] = NativeType("timestamp")  # legacy name, same wire form


def write_option(out: bytearray, t: CqlType) -> None:
    """Append `t` as an `[option]`."""
    if isinstance(t, NativeType):
        write_short(out, NATIVE_OPTION_IDS[t.name])
    elif isinstance(t, ListType):
        write_short(out, OPT_LIST)
        write_option(out, t.element)
    elif isinstance(t, SetType):
        write_short(out, OPT_SET)
        write_option(out, t.element)
    elif isinstance(t, MapType):
        write_short(out, OPT_MAP)
        write_option(out, t.key)
        write_option(out, t.value)
    elif isinstance(t, UserType):
        write_short(out, OPT_UDT)
        write_string(out, t.keyspace)
        write_string(out, t.name)
        write_short(out, len(t.field_names))
        for name, ftype in zip(t.field_names, t.field_types, strict=True):
            write_string(out, name)
            write_option(out, ftype)
    elif isinstance(t, TupleType):
        write_short(out, OPT_TUPLE)
        write_short(out, len(t.elements))
        for e in t.elements:
            write_option(out, e)
    elif isinstance(t, VectorType | CustomType):
        write_short(out, OPT_CUSTOM)
        write_string(out, marshal_class(t))
    else:
        raise TypeError(f"cannot encode {type(t).__name__} {t} as a protocol [option]; resolve it first")


def option_bytes(t: CqlType) -> bytes:
    out = bytearray()
    write_option(out, t)
    return bytes(out)


def read_option(r: Reader) -> CqlType:
    """Read one `[option]`; unknown ids are a protocol error."""
    oid = r.short()
    native = _NATIVE_BY_OPTION.get(oid)
    if native is not None:
        return native
    if oid == OPT_LIST:
        return ListType(read_option(r))
    if oid == OPT_SET:
        return SetType(read_option(r))
    if oid == OPT_MAP:
        key = read_option(r)
        return MapType(key, read_option(r))
    if oid == OPT_UDT:
        keyspace = r.string()
        name = r.string()
        names: list[str] = []
        types: list[CqlType] = []
        for _ in range(r.short()):
            names.append(r.string())
            types.append(read_option(r))
        return UserType(keyspace, name, tuple(names), tuple(types))
    if oid == OPT_TUPLE:
        return TupleType(tuple(read_option(r) for _ in range(r.short())))
    if oid == OPT_CUSTOM:
        return parse_marshal_class(r.string())
    raise ProtocolError(f"Unknown [option] type id 0x{oid:04x}")


def marshal_class(t: CqlType) -> str:
    """Cassandra's marshal class string for a type, as Custom options and vector subtypes need."""
    if isinstance(t, NativeType):
        return NATIVE_MARSHAL_CLASSES[t.name]
    if isinstance(t, CustomType):
        return t.class_name
    if isinstance(t, VectorType):
        return f"{_MARSHAL}VectorType({marshal_class(t.element)}, {t.dimension})"
    if isinstance(t, ListType):
        inner = f"{_MARSHAL}ListType({marshal_class(t.element)})"
    elif isinstance(t, SetType):
        inner = f"{_MARSHAL}SetType({marshal_class(t.element)})"
    elif isinstance(t, MapType):
        inner = f"{_MARSHAL}MapType({marshal_class(t.key)},{marshal_class(t.value)})"
    elif isinstance(t, TupleType):
        return f"{_MARSHAL}TupleType({','.join(marshal_class(e) for e in t.elements)})"
    elif isinstance(t, UserType):
        fields = ",".join(
            f"{n.encode().hex()}:{marshal_class(ft)}"
            for n, ft in zip(t.field_names, t.field_types, strict=True)
        )
        sep = "," if fields else ""
        inner = f"{_MARSHAL}UserType({t.keyspace},{t.name.encode().hex()}{sep}{fields})"
    elif isinstance(t, UserTypeRef):
        raise TypeError(f"unresolved user type {t.cql()} has no marshal class")
    else:
        raise TypeError(f"no marshal class for {type(t).__name__}")
    return f"{_MARSHAL}FrozenType({inner})" if not t.is_multi_cell else inner


def parse_marshal_class(name: str) -> CqlType:
    """The inverse of `marshal_class` for natives, collections, tuples and vectors.

    Anything else (UDT class strings, unknown classes) stays an opaque CustomType.
    """
    try:
        parsed = _parse_class(name.replace(" ", ""))
    except (ValueError, KeyError, IndexError):
        parsed = None
    return parsed if parsed is not None else CustomType(name)


def _parse_class(s: str) -> CqlType | None:
    if "(" not in s:
        return _NATIVE_BY_CLASS.get(s if "." in s else _MARSHAL + s)
    head, _, rest = s.partition("(")
    if not rest.endswith(")"):
        raise ValueError(s)
    args = _split_args(rest[:-1])
    base = head.rsplit(".", 1)[-1]
    if base == "FrozenType" and len(args) == 1:
        inner = _parse_class(args[0])
        return inner.frozen_form() if inner is not None else None
    subs = [_parse_class(a) for a in args] if base != "VectorType" else [_parse_class(args[0])]
    if any(x is None for x in subs):
        return None
    types = [x for x in subs if x is not None]
    if base == "ListType" and len(types) == 1:
        return ListType(types[0])
    if base == "SetType" and len(types) == 1:
        return SetType(types[0])
    if base == "MapType" and len(types) == 2:
        return MapType(types[0], types[1])
    if base == "TupleType":
        return TupleType(tuple(types))
    if base == "VectorType" and len(args) == 2:
        return VectorType(types[0], int(args[1]))
    return None


def _split_args(s: str) -> list[str]:
    """Split on commas at nesting depth 0."""
    args: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(s):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(s[start:i])
            start = i + 1
    args.append(s[start:])
    return args
