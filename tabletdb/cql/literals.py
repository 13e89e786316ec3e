"""CQL constants -> Python values of a receiving column's type (conventions of `codec`).

The grammar hands over a constant as (kind, text) with kind one of 'string', 'integer',
'float', 'boolean', 'uuid', 'hex', 'duration'. Which kinds a type accepts follows Cassandra:
an integer can go into any numeric type, timestamp (ms), date (raw days, 2**31 = epoch) and
time (ns); a string into text/ascii, inet, date, time and timestamp; float constants (including
NaN and Infinity) into float/double/decimal; hex only into blob; uuid into uuid/timeuuid;
duration only into duration. A kind the type does not take raises
`Invalid <KIND> constant (<text>) for "<receiver>" of type <type>`; text of the right kind that
does not parse raises `Unable to make <type> from '<text>'`-style errors.
"""

from __future__ import annotations

import ipaddress
import math
import re
import struct
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from tabletdb.cql.duration import parse_duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.numbers import parse_int
from tabletdb.cql.temporal import parse_date, parse_time, parse_timestamp
from tabletdb.cql.types import CqlType, NativeType

LiteralKind = Literal["string", "integer", "float", "boolean", "uuid", "hex", "duration"]

_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64}
_INTEGER = re.compile(r"[+-]?\d+\Z")
_FLOAT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z")
_SPECIAL_FLOATS = {"nan": math.nan, "infinity": math.inf, "-infinity": -math.inf, "+infinity": math.inf}

_ACCEPTS: dict[str, frozenset[str]] = {
    "string": frozenset({"text", "ascii", "inet", "date", "time", "timestamp"}),
    "integer": frozenset({*_INT_BITS, "varint", "decimal", "float", "double", "timestamp", "date", "time"}),
    "float": frozenset({"float", "double", "decimal"}),
    "boolean": frozenset({"boolean"}),
    "uuid": frozenset({"uuid", "timeuuid"}),
    "hex": frozenset({"blob"}),
    "duration": frozenset({"duration"}),
}


def literal_value(t: CqlType, kind: LiteralKind | str, text: str, receiver: str) -> Any:
    """The value of constant `text` of `kind` assigned to `receiver` (a column or bind name) of type `t`."""
    if kind not in _ACCEPTS:
        raise ValueError(f"unknown literal kind {kind!r}")  # a grammar bug, not a user error
    if not isinstance(t, NativeType) or t.name not in _ACCEPTS[kind]:
        shown = f"'{text}'" if kind == "string" else text
        raise InvalidRequest(f'Invalid {kind.upper()} constant ({shown}) for "{receiver}" of type {t.cql()}')
    return _convert(t.name, kind, text)


def _convert(name: str, kind: str, text: str) -> Any:
    if name in ("text", "ascii"):
        if name == "ascii" and not text.isascii():
            raise InvalidRequest(f"Invalid ASCII character in string literal '{text}'")
        return text
    if name in _INT_BITS:
        return _bounded_int(name, text)
    if name == "varint":
        return _integer(text, "varint")
    if name in ("float", "double"):
        return _float(name, text)
    if name == "decimal":
        return _decimal(text)
    if name == "timestamp":
        return parse_timestamp(text)
    if name == "date":
        return parse_date(text)
    if name == "time":
        return parse_time(text)
    if name == "inet":
        try:
            return ipaddress.ip_address(text.strip())
        except ValueError:
            raise InvalidRequest(f"Unable to make inet address from '{text}'") from None
    if name == "boolean":
        return text.lower() == "true"
    if name in ("uuid", "timeuuid"):
        return _uuid(name, text)
    if name == "blob":
        return _hex(text)
    return parse_duration(text)  # duration


def _integer(text: str, type_name: str) -> int:
    if not _INTEGER.match(text.strip()):
        raise InvalidRequest(f"Unable to make {type_name} from '{text}'")
    return parse_int(text)


def _bounded_int(name: str, text: str) -> int:
    value = _integer(text, name)
    bits = _INT_BITS[name]
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise InvalidRequest(f"Unable to make {name} from '{text}': out of range for a {bits}-bit integer")
    return value


def _float(name: str, text: str) -> float:
    s = text.strip()
    special = _SPECIAL_FLOATS.get(s.lower())
    if special is not None:
        return special
    if not _FLOAT.match(s):
        raise InvalidRequest(f"Unable to make {name} from '{text}'")
    value = float(s)
    return round_to_float32(value) if name == "float" else value


def round_to_float32(value: float) -> float:
    """Nearest float32, overflowing to +-Infinity as Java's Float.parseFloat does."""
    try:
        return float(struct.unpack(">f", struct.pack(">f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _decimal(text: str) -> Decimal:
    s = text.strip()
    if not _FLOAT.match(s):
        raise InvalidRequest(f"Unable to make BigDecimal from '{text}'")
    try:
        return Decimal(s)
    except InvalidOperation:
        raise InvalidRequest(f"Unable to make BigDecimal from '{text}'") from None


def _uuid(name: str, text: str) -> uuid.UUID:
    try:
        value = uuid.UUID(text.strip())
    except ValueError:
        raise InvalidRequest(f"Unable to make UUID from '{text}'") from None
    if name == "timeuuid" and value.bytes[6] >> 4 != 1:
        raise InvalidRequest(f"Unsupported UUID for timeuuid: {text} is not a version 1 (time-based) UUID")
    return value


def _hex(text: str) -> bytes:
    digits = text[2:] if text[:2].lower() == "0x" else text
    if len(digits) % 2:
        raise InvalidRequest(f"Hex string is odd-length: '{text}'")
    try:
        return bytes.fromhex(digits)
    except ValueError:
        raise InvalidRequest(f"Invalid hex string '{text}'") from None
