"""Hypothesis strategies for CQL types and values in tabletdb's Python conventions, plus
conversions to and from scylla-driver's conventions so its codecs can serve as an oracle."""

from __future__ import annotations

import datetime
import ipaddress
from decimal import Decimal
from typing import Any

from cassandra import cqltypes, util
from hypothesis import strategies as st

from tabletdb.cql import types as T
from tabletdb.cql.codec import deserialize, serialize
from tabletdb.cql.duration import Duration

INT_RANGES = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64}
# datetime can represent years 1..9999 only; the driver returns datetimes.
DRIVER_MS_RANGE = (-62135596800000, 253402300799999)


def _decimals() -> st.SearchStrategy[Decimal]:
    return st.builds(
        lambda unscaled, scale: Decimal(f"{unscaled}E{-scale}"),
        st.integers(-(10**30), 10**30),
        st.integers(-40, 40),
    )


def _durations() -> st.SearchStrategy[Duration]:
    def build(sign: int, m: int, d: int, n: int) -> Duration:
        return Duration(sign * m, sign * d, sign * n)

    return st.builds(
        build,
        st.sampled_from([1, -1]),
        st.integers(0, 2**31 - 1),
        st.integers(0, 2**31 - 1),
        st.integers(0, 2**63 - 1),
    )


def native_values(name: str, driver_safe: bool = False) -> st.SearchStrategy[Any]:
    """Values of a native type. `driver_safe` keeps to what the driver can represent faithfully:
    datetimes of years 1..9999, and no -0.0 (its sortedset merges -0.0 and 0.0, CQL does not)."""
    if driver_safe and name in ("float", "double"):
        return native_values(name).map(lambda x: 0.0 if x == 0 else x)
    if name in INT_RANGES:
        bits = INT_RANGES[name]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    strategies: dict[str, st.SearchStrategy[Any]] = {
        "varint": st.integers(-(2**100), 2**100),
        "decimal": _decimals(),
        "float": st.floats(width=32),
        "double": st.floats(),
        "text": st.text(),
        "ascii": st.text(st.characters(max_codepoint=127)),
        "blob": st.binary(),
        "boolean": st.booleans(),
        "uuid": st.uuids(),
        "timeuuid": st.uuids(version=1),
        "inet": st.ip_addresses(),
        "timestamp": st.integers(*DRIVER_MS_RANGE) if driver_safe else st.integers(-(2**63), 2**63 - 1),
        "date": st.integers(-(2**31), 2**31 - 1),
        "time": st.integers(0, 86_400 * 10**9 - 1),
        "duration": _durations(),
    }
    return strategies[name]


NATIVES = st.sampled_from([T.native(n) for n in T.NATIVE_TYPE_NAMES])
COMPARABLE_NATIVES = st.sampled_from([T.native(n) for n in T.NATIVE_TYPE_NAMES if n != "duration"])


def cql_types(leaves: st.SearchStrategy[T.CqlType] = NATIVES, depth: int = 2) -> st.SearchStrategy[T.CqlType]:
    """Random (possibly nested) CQL types; every collection inside another is frozen, as CQL requires."""

    def extend(inner: st.SearchStrategy[T.CqlType]) -> st.SearchStrategy[T.CqlType]:
        return st.one_of(
            st.builds(lambda e: T.ListType(e, True), inner),
            st.builds(lambda e: T.SetType(e, True), inner),
            st.builds(lambda k, v: T.MapType(k, v, True), inner, inner),
            st.builds(lambda es: T.TupleType(tuple(es)), st.lists(inner, min_size=1, max_size=3)),
            st.builds(
                lambda fs: T.UserType(
                    "ks",
                    "udt",
                    tuple(f"f{i}" if i % 2 == 0 else f"F{i}" for i in range(len(fs))),
                    tuple(fs),
                    True,
                ),
                st.lists(inner, min_size=1, max_size=3),
            ),
            st.builds(T.VectorType, inner, st.integers(1, 3)),
        )

    return st.recursive(leaves, extend, max_leaves=3 if depth > 1 else 1)


@st.composite
def values_of(draw: st.DrawFn, t: T.CqlType, driver_safe: bool = False) -> Any:
    """A canonical value of `t` (sets sorted and deduplicated, maps sorted by key)."""
    raw = draw(_raw_values(t, driver_safe))
    return deserialize(t, serialize(t, raw))


def _raw_values(t: T.CqlType, driver_safe: bool) -> st.SearchStrategy[Any]:
    if isinstance(t, T.NativeType):
        return native_values(t.name, driver_safe)
    if isinstance(t, T.ListType | T.SetType):
        return st.lists(_raw_values(t.element, driver_safe), max_size=2).map(tuple)
    if isinstance(t, T.MapType):
        pair = st.tuples(_raw_values(t.key, driver_safe), _raw_values(t.value, driver_safe))
        return st.lists(pair, max_size=2).map(tuple)
    if isinstance(t, T.VectorType):
        return st.lists(_raw_values(t.element, driver_safe), min_size=t.dimension, max_size=t.dimension)
    types = t.elements if isinstance(t, T.TupleType) else t.field_types  # type: ignore[attr-defined]
    return st.tuples(*(st.none() | _raw_values(ft, driver_safe) for ft in types))


# ---------------------------------------------------------------------------------------------
# the driver's side


class _Pairs:
    """A map for the driver's serializer that keeps our key order and allows unhashable keys."""

    def __init__(self, pairs: list[tuple[Any, Any]]) -> None:
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def items(self) -> list[tuple[Any, Any]]:
        return self.pairs


def driver_type(t: T.CqlType) -> Any:
    if isinstance(t, T.NativeType):
        return cqltypes.lookup_casstype(T.NATIVE_MARSHAL_CLASSES[t.name])
    if isinstance(t, T.ListType):
        return cqltypes.ListType.apply_parameters([driver_type(t.element)], None)
    if isinstance(t, T.SetType):
        return cqltypes.SetType.apply_parameters([driver_type(t.element)], None)
    if isinstance(t, T.MapType):
        return cqltypes.MapType.apply_parameters([driver_type(t.key), driver_type(t.value)], None)
    if isinstance(t, T.TupleType):
        return cqltypes.TupleType.apply_parameters([driver_type(e) for e in t.elements], None)
    if isinstance(t, T.UserType):
        subs = tuple(driver_type(f) for f in t.field_types)
        return cqltypes.UserType.make_udt_class(t.keyspace, f"u{abs(hash(t))}", t.field_names, subs)
    if isinstance(t, T.VectorType):
        return cqltypes.VectorType.apply_parameters([driver_type(t.element), t.dimension], None)
    raise AssertionError(t)


def to_driver(t: T.CqlType, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(t, T.NativeType):
        if t.name == "date":
            return util.Date(v)
        if t.name == "time":
            return util.Time(v)
        if t.name == "duration":
            return util.Duration(v.months, v.days, v.nanoseconds)
        if t.name == "inet":
            return str(v)
        return v
    if isinstance(t, T.ListType | T.SetType | T.VectorType):
        return [to_driver(t.element, e) for e in v]
    if isinstance(t, T.MapType):
        return _Pairs([(to_driver(t.key, k), to_driver(t.value, x)) for k, x in v])
    types = t.elements if isinstance(t, T.TupleType) else t.field_types  # type: ignore[attr-defined]
    return tuple(to_driver(ft, x) for ft, x in zip(types, v))


def from_driver(t: T.CqlType, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(t, T.NativeType):
        if t.name == "timestamp":
            epoch = datetime.datetime(1970, 1, 1)
            return (v - epoch) // datetime.timedelta(milliseconds=1)
        if t.name == "date":
            return v.days_from_epoch
        if t.name == "time":
            return v.nanosecond_time
        if t.name == "duration":
            return Duration(v.months, v.days, v.nanoseconds)
        if t.name == "inet":
            return ipaddress.ip_address(v)
        return v
    if isinstance(t, T.ListType | T.SetType | T.VectorType):
        return tuple(from_driver(t.element, e) for e in v)
    if isinstance(t, T.MapType):
        # The driver's OrderedMapSerializedKey looks values up by re-serialising the key, and it
        # re-serialises a frozen set of timeuuids in Python's UUID order, not CQL's: read its
        # decoded (key, value) pairs as they came off the wire instead of looking them up.
        pairs = v._items if isinstance(v, util.OrderedMap) else v.items()
        return tuple((from_driver(t.key, k), from_driver(t.value, x)) for k, x in pairs)
    types = t.elements if isinstance(t, T.TupleType) else t.field_types  # type: ignore[attr-defined]
    return tuple(from_driver(ft, x) for ft, x in zip(types, v))


# ---------------------------------------------------------------------------------------------
# an independent model of CQL order on Python values


def cql_sort_key(t: T.CqlType, v: Any) -> Any:
    """A Python-comparable key whose order is CQL order of `v` (written from the spec, not the code)."""
    if isinstance(t, T.NativeType):
        return _native_key(t.name, v)
    if isinstance(t, T.ListType | T.SetType | T.VectorType):
        return tuple(cql_sort_key(t.element, e) for e in v)
    if isinstance(t, T.MapType):
        return tuple((cql_sort_key(t.key, k), cql_sort_key(t.value, x)) for k, x in v)
    types = t.elements if isinstance(t, T.TupleType) else t.field_types  # type: ignore[attr-defined]
    keys = [(0,) if x is None else (1, cql_sort_key(ft, x)) for ft, x in zip(types, v)]
    while keys and keys[-1] == (0,):
        keys.pop()
    return tuple(keys)


def _native_key(name: str, v: Any) -> Any:
    import math
    import uuid as uuid_mod

    if name in ("float", "double"):
        return (1, 0.0, 0.0) if math.isnan(v) else (0, v, math.copysign(1.0, v))
    if name in ("text", "ascii"):
        return v.encode()
    if name == "inet":
        return v.packed
    if name == "duration":
        from tabletdb.cql.codec import serialize

        return serialize(T.DURATION, v)
    if name in ("uuid", "timeuuid"):
        assert isinstance(v, uuid_mod.UUID)
        signed_low = tuple(b - 256 if b > 127 else b for b in v.bytes[8:])
        if name == "timeuuid":
            return (v.time, signed_low)
        if v.bytes[6] >> 4 == 1:
            return (1, v.time, v.bytes[8:])
        return (v.bytes[6] >> 4, 0, v.bytes)
    return v
