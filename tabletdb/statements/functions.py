"""ScyllaDB's native scalar functions and CAST, as typed, pure values-in value-out callables.

A call is resolved once, when a statement is planned, from its name and its arguments' types
(`resolve`): the result says the return type and holds the implementation, so executing it per
row is a plain call. Values follow `tabletdb.cql.codec`'s conventions. Null in gives null out,
except for toJson (the JSON text `null`), as in ScyllaDB. Anything not listed here is refused with
the error ScyllaDB gives, never evaluated approximately.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.jsonvalues import to_json
from tabletdb.cql.literals import round_to_float32
from tabletdb.cql.numbers import int_text
from tabletdb.cql.temporal import format_date, format_time, format_timestamp
from tabletdb.cql.types import (
    ASCII,
    BIGINT,
    BLOB,
    DATE,
    NATIVE_OPTION_IDS,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMEUUID,
    UUID,
    CqlType,
    NativeType,
)

MS_PER_DAY = 86_400_000
_UUID_EPOCH = 0x01B21DD213814000
"""100-ns intervals from 1582-10-15 (the UUID epoch) to 1970-01-01."""
_MIN_CLOCK_NODE = 0x8080808080808080
_MAX_CLOCK_NODE = 0x7F7F7F7F7F7F7F7F
"""Least significant halves of the smallest and greatest timeuuid of a millisecond, as Cassandra
and ScyllaDB build them for minTimeuuid/maxTimeuuid."""


@dataclass(frozen=True)
class Function:
    """A resolved call: `system.<name>(<arg types>)` returning `return_type`."""

    name: str
    arg_types: tuple[CqlType, ...]
    return_type: CqlType
    impl: Callable[..., Any]
    null_in_null_out: bool = True

    def __call__(self, *args: Any) -> Any:
        if self.null_in_null_out and any(a is None for a in args):
            return None
        return self.impl(*args)


def ms_of_timeuuid(u: uuid.UUID) -> int:
    """Milliseconds since the epoch at which a version-1 UUID was made."""
    return (u.time - _UUID_EPOCH) // 10_000


def _timeuuid_at(ms: int, low: int) -> uuid.UUID:
    t = ms * 10_000 + _UUID_EPOCH
    if not 0 <= t < 1 << 60:
        raise InvalidRequest(f"Timestamp {ms} is out of the range a timeuuid can hold")
    high = ((t & 0xFFFFFFFF) << 32) | (((t >> 32) & 0xFFFF) << 16) | 0x1000 | (t >> 48)
    return uuid.UUID(int=(high << 64) | low)


def _generators() -> dict[str, tuple[CqlType, Callable[[], Any]]]:
    return {
        "now": (TIMEUUID, uuid.uuid1),
        "currenttimeuuid": (TIMEUUID, uuid.uuid1),
        "uuid": (UUID, uuid.uuid4),
        "currenttimestamp": (TIMESTAMP, lambda: time.time_ns() // 1_000_000),
        "currentdate": (DATE, lambda: time.time_ns() // 86_400_000_000_000),
        "currenttime": (TIME, lambda: time.time_ns() % 86_400_000_000_000),
    }


_TIME_CONVERSIONS: dict[tuple[str, str], tuple[CqlType, Callable[[Any], Any]]] = {
    ("totimestamp", "timeuuid"): (TIMESTAMP, ms_of_timeuuid),
    ("totimestamp", "date"): (TIMESTAMP, lambda d: d * MS_PER_DAY),
    ("totimestamp", "timestamp"): (TIMESTAMP, lambda ms: ms),
    ("todate", "timeuuid"): (DATE, lambda u: ms_of_timeuuid(u) // MS_PER_DAY),
    ("todate", "timestamp"): (DATE, lambda ms: ms // MS_PER_DAY),
    ("todate", "date"): (DATE, lambda d: d),
    ("tounixtimestamp", "timeuuid"): (BIGINT, ms_of_timeuuid),
    ("tounixtimestamp", "timestamp"): (BIGINT, lambda ms: ms),
    ("tounixtimestamp", "date"): (BIGINT, lambda d: d * MS_PER_DAY),
    ("dateof", "timeuuid"): (TIMESTAMP, ms_of_timeuuid),
    ("unixtimestampof", "timeuuid"): (BIGINT, ms_of_timeuuid),
    ("mintimeuuid", "timestamp"): (TIMEUUID, lambda ms: _timeuuid_at(ms, _MIN_CLOCK_NODE)),
    ("maxtimeuuid", "timestamp"): (TIMEUUID, lambda ms: _timeuuid_at(ms, _MAX_CLOCK_NODE)),
}

BLOB_TYPES = frozenset(NATIVE_OPTION_IDS) - {"counter", "blob"} | {"varchar"}
"""The types X of the `XAsBlob` / `blobAsX` pairs."""


def _blob_type(name: str) -> NativeType:
    return TEXT if name == "varchar" else NativeType(name)


def function_names_with_arguments() -> frozenset[str]:
    names = {n for n, _ in _TIME_CONVERSIONS} | {"tojson", "fromjson"}
    names |= {f"{t}asblob" for t in BLOB_TYPES} | {f"blobas{t}" for t in BLOB_TYPES}
    return frozenset(names)


def is_native(name: str) -> bool:
    """Whether `name` (lower case) is a native scalar function this module resolves."""
    return name in _generators() or name in function_names_with_arguments()


def accepted_types(name: str) -> list[CqlType]:
    """The argument types an overloaded one-argument function takes (for error messages)."""
    return [NativeType(t) for n, t in _TIME_CONVERSIONS if n == name]


def parameter_types(name: str) -> tuple[CqlType, ...] | None:
    """The one type each argument of `name` takes when a literal or marker is passed to it (None:
    the function is overloaded or generic, so such an argument needs a type hint)."""
    if name.endswith("asblob") and name[: -len("asblob")] in BLOB_TYPES:
        return (_blob_type(name[: -len("asblob")]),)
    if name.startswith("blobas") and name[len("blobas") :] in BLOB_TYPES:
        return (BLOB,)
    accepted = [NativeType(t) for n, t in _TIME_CONVERSIONS if n == name]
    return (accepted[0],) if len(accepted) == 1 else None


def resolve(name: str, arg_types: Sequence[CqlType]) -> Function:
    """The native function `name` (lower case) taking arguments of these types."""
    generators = _generators()
    shown = f"system.{name}"
    if name in generators:
        _check_arity(shown, 0, arg_types)
        result, gen = generators[name]
        return Function(name, (), result, gen)
    if name in function_names_with_arguments():
        _check_arity(shown, 1, arg_types)
    arg = arg_types[0] if arg_types else None
    arg_name = arg.name if isinstance(arg, NativeType) else ""
    if name == "tojson" and arg is not None:
        return Function(name, (arg,), TEXT, lambda v: "null" if v is None else to_json(arg, v), False)
    if name == "fromjson":
        raise InvalidRequest("fromJson() cannot be used in the selection clause of a SELECT statement")
    if (name, arg_name) in _TIME_CONVERSIONS:
        result, conv = _TIME_CONVERSIONS[(name, arg_name)]
        return Function(name, (arg,) if arg else (), result, conv)
    if name.endswith("asblob") and name[: -len("asblob")] in BLOB_TYPES:
        t = _blob_type(name[: -len("asblob")])
        _check_argument(shown, t, arg)
        return Function(name, (t,), BLOB, lambda v: codec.serialize(t, v))
    if name.startswith("blobas") and name[len("blobas") :] in BLOB_TYPES:
        t = _blob_type(name[len("blobas") :])
        _check_argument(shown, BLOB, arg)
        return Function(name, (BLOB,), t, lambda b: codec.deserialize(t, b))
    if name in function_names_with_arguments():
        shown_arg = arg.cql() if arg is not None else "?"
        raise InvalidRequest(f"Type error: {shown} does not take an argument of type {shown_arg}")
    raise InvalidRequest(f"Unknown function {name} called")


def _check_arity(shown: str, wanted: int, arg_types: Sequence[CqlType]) -> None:
    if len(arg_types) != wanted:
        raise InvalidRequest(
            f"Invalid number of arguments in call to function {shown}: {wanted} required but "
            f"{len(arg_types)} provided"
        )


def _check_argument(shown: str, wanted: CqlType, given: CqlType | None) -> None:
    if given is not None and given != wanted and not (wanted == TEXT and given == ASCII):
        raise InvalidRequest(
            f"Type error: argument of type {given.cql()} cannot be passed to {shown}, "
            f"which takes {wanted.cql()}"
        )


# ----------------------------------------------------------------------------------------- CAST

_INTEGERS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64, "varint": 0}
_NUMBERS = frozenset(_INTEGERS) | {"float", "double", "decimal"}


def cast(source: CqlType, target: CqlType) -> Callable[[Any], Any]:
    """`CAST(x AS target)` of an `x` of type `source`: numbers to numbers (integers and decimals
    narrow by keeping the low bits, fractions truncate towards zero; a float that does not fit, or
    is not finite, is refused rather than saturated or wrapped), any native
    value to text or ascii, timestamps, dates and timeuuids to each other as the conversion
    functions do. Other pairs are refused."""
    if source == target:
        return lambda v: v
    if not isinstance(source, NativeType) or not isinstance(target, NativeType):
        raise _cannot_cast(source, target)
    s, t = source.name, target.name
    if s in _NUMBERS and t in _NUMBERS:
        return lambda v: None if v is None else _number_as(v, t)
    if t in ("text", "ascii"):
        return lambda v: None if v is None else _as_text(s, v)
    conv = {"timestamp": "totimestamp", "date": "todate"}.get(t)
    if conv is not None and (conv, s) in _TIME_CONVERSIONS:
        fn = _TIME_CONVERSIONS[(conv, s)][1]
        return lambda v: None if v is None else fn(v)
    raise _cannot_cast(source, target)


def _cannot_cast(source: CqlType, target: CqlType) -> InvalidRequest:
    return InvalidRequest(f"{source.cql()} cannot be cast to {target.cql()}")


def _number_as(v: int | float | Decimal, target: str) -> Any:
    if isinstance(v, float) and not math.isfinite(v) and target not in ("float", "double"):
        raise InvalidRequest(f"Cannot cast {v} to {target}: it is not a finite number")
    if target == "decimal":
        return Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    if target in ("float", "double"):
        f = float(v)
        return round_to_float32(f) if target == "float" else f
    n = int(v)  # truncates towards zero, for floats and decimals alike
    bits = _INTEGERS[target]
    if not bits:
        return n
    if isinstance(v, float) and not -(1 << (bits - 1)) <= n < 1 << (bits - 1):
        raise InvalidRequest(f"Cannot cast {v} to {target}: out of its range")
    n &= (1 << bits) - 1  # integers and decimals narrow by keeping the low bits, as Java's do
    return n - (1 << bits) if n >> (bits - 1) else n


def _as_text(source: str, v: Any) -> str:
    if source in ("text", "ascii", "inet"):
        return str(v)
    if source == "boolean":
        return "true" if v else "false"
    if source == "timestamp":
        return format_timestamp(v)
    if source == "date":
        return format_date(v)
    if source == "time":
        return format_time(v)
    if source == "blob":
        return "0x" + bytes(v).hex()
    if source in ("float", "double"):
        return to_json(NativeType(source), v)
    if isinstance(v, int) and not isinstance(v, bool):
        return int_text(v)
    return str(v)
