"""Typed client requests and their body decoders (spec/clients.md 1.3-1.6).

A decoder gets the (already decompressed) body minus any custom payload and either returns a
request object or raises `ProtocolError`; the connection turns that into an ERROR on the request's
stream and keeps going, since the frame boundary is intact.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from tabletdb.cql.consistency import CONSISTENCY_NAMES, LOCAL_SERIAL, SERIAL
from tabletdb.cql.errors import ProtocolError
from tabletdb.protocol.frames import OpCode
from tabletdb.protocol.wire import UNSET, Reader, Value

# Query-parameter flags (v4).
QF_VALUES = 0x01
QF_SKIP_METADATA = 0x02
QF_PAGE_SIZE = 0x04
QF_PAGING_STATE = 0x08
QF_SERIAL_CONSISTENCY = 0x10
QF_DEFAULT_TIMESTAMP = 0x20
QF_NAMES_FOR_VALUES = 0x40

BATCH_LOGGED, BATCH_UNLOGGED, BATCH_COUNTER = 0, 1, 2

EVENT_TYPES = frozenset({"TOPOLOGY_CHANGE", "STATUS_CHANGE", "SCHEMA_CHANGE", "CLIENT_ROUTES_CHANGE"})

# Timestamps must fit what the storage layer can order; Scylla refuses the extremes too.
_MIN_TIMESTAMP = -(2**63) + 1


@dataclass(slots=True)
class QueryParameters:
    consistency: int
    values: list[Value] = field(default_factory=list)
    names: list[str] | None = None
    skip_metadata: bool = False
    page_size: int | None = None
    paging_state: bytes | None = None
    serial_consistency: int | None = None
    timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class Startup:
    options: dict[str, str]


@dataclass(frozen=True, slots=True)
class Options:
    pass


@dataclass(frozen=True, slots=True)
class Query:
    query: str
    params: QueryParameters


@dataclass(frozen=True, slots=True)
class Prepare:
    query: str


@dataclass(frozen=True, slots=True)
class Execute:
    query_id: bytes
    # Only on connections that negotiated SCYLLA_USE_METADATA_ID (may be b"": the driver has none).
    result_metadata_id: bytes | None
    params: QueryParameters


@dataclass(frozen=True, slots=True)
class BatchStatement:
    """One statement of a batch: query text or a prepared id, with its positional values."""

    query: str | None
    query_id: bytes | None
    values: list[Value]


@dataclass(frozen=True, slots=True)
class Batch:
    type: int
    statements: list[BatchStatement]
    consistency: int
    serial_consistency: int | None = None
    timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class Register:
    event_types: list[str]


@dataclass(frozen=True, slots=True)
class AuthResponse:
    token: bytes | None


Request = Startup | Options | Query | Prepare | Execute | Batch | Register | AuthResponse


@dataclass(frozen=True, slots=True)
class DecodeContext:
    """Per-connection facts that change body layouts."""

    use_metadata_id: bool = False
    version: int = 4


_CONSISTENCY_AND_FLAGS = struct.Struct(">HB")
_COUNT = struct.Struct(">H")
_LENGTH = struct.Struct(">i")
_TIMESTAMP = struct.Struct(">q")
_FAST_FLAGS = QF_VALUES | QF_SKIP_METADATA | QF_PAGE_SIZE | QF_DEFAULT_TIMESTAMP


class _Unusual(Exception):
    """The fast decoder met something it leaves to the checked one (which names the problem)."""


def read_query_parameters(r: Reader, version: int = 4) -> QueryParameters:
    """`<query_parameters>`: the common shape (positional values, page size, client timestamp)
    is read in one pass; anything else, and every malformed body, goes through the checked
    reader below, so errors read the same either way."""
    buf, start = r.position()
    try:
        params, end = _common_query_parameters(buf, start, version)
    except (_Unusual, struct.error):
        return _checked_query_parameters(r, version)
    r.seek(end)
    return params


def _common_query_parameters(buf: bytes, pos: int, version: int) -> tuple[QueryParameters, int]:
    consistency, flags = _CONSISTENCY_AND_FLAGS.unpack_from(buf, pos)
    pos += 3
    if flags & ~_FAST_FLAGS or consistency not in CONSISTENCY_NAMES:
        raise _Unusual
    params = QueryParameters(consistency)
    if flags & QF_VALUES:
        (count,) = _COUNT.unpack_from(buf, pos)
        pos += 2
        values: list[Value] = []
        size = len(buf)
        for _ in range(count):
            (n,) = _LENGTH.unpack_from(buf, pos)
            pos += 4
            if n >= 0:
                end = pos + n
                if end > size:
                    raise _Unusual
                values.append(buf[pos:end])
                pos = end
            elif n == -1:
                values.append(None)
            elif n == -2 and version >= 4:
                values.append(UNSET)
            else:
                raise _Unusual
        params.values = values
    params.skip_metadata = bool(flags & QF_SKIP_METADATA)
    if flags & QF_PAGE_SIZE:
        (page_size,) = _LENGTH.unpack_from(buf, pos)
        pos += 4
        params.page_size = page_size if page_size > 0 else None
    if flags & QF_DEFAULT_TIMESTAMP:
        (timestamp,) = _TIMESTAMP.unpack_from(buf, pos)
        pos += 8
        if timestamp < _MIN_TIMESTAMP:
            raise _Unusual
        params.timestamp = timestamp
    return params, pos


def _checked_query_parameters(r: Reader, version: int) -> QueryParameters:
    consistency = _consistency(r, "consistency")
    flags = r.byte()
    params = QueryParameters(consistency)
    if flags & QF_VALUES:
        with_names = bool(flags & QF_NAMES_FOR_VALUES)
        names: list[str] = []
        values: list[Value] = []
        for _ in range(r.short()):
            if with_names:
                names.append(r.string())
            values.append(r.value())
        if version < 4 and UNSET in values:
            raise ProtocolError("Unset values ([value] length -2) need protocol v4 or later")
        params.values = values
        if with_names:
            params.names = names
    params.skip_metadata = bool(flags & QF_SKIP_METADATA)
    if flags & QF_PAGE_SIZE:
        page_size = r.i32()
        params.page_size = page_size if page_size > 0 else None
    if flags & QF_PAGING_STATE:
        params.paging_state = r.blob()
    if flags & QF_SERIAL_CONSISTENCY:
        params.serial_consistency = _serial_consistency(r)
    if flags & QF_DEFAULT_TIMESTAMP:
        params.timestamp = _timestamp(r)
    return params


def _consistency(r: Reader, what: str) -> int:
    cl = r.consistency()
    if cl not in CONSISTENCY_NAMES:
        raise ProtocolError(f"Unknown {what} level 0x{cl:04x}")
    return cl


def _serial_consistency(r: Reader) -> int:
    cl = r.consistency()
    if cl not in (SERIAL, LOCAL_SERIAL):
        name = CONSISTENCY_NAMES.get(cl, f"0x{cl:04x}")
        raise ProtocolError(f"Serial consistency must be SERIAL or LOCAL_SERIAL, got {name}")
    return cl


def _timestamp(r: Reader) -> int:
    ts = r.i64()
    if ts < _MIN_TIMESTAMP:
        raise ProtocolError(f"Out of bound timestamp, must be in [{_MIN_TIMESTAMP}, {2**63 - 1}]: {ts}")
    return ts


def _startup(r: Reader, ctx: DecodeContext) -> Startup:
    return Startup(r.string_map())


def _options(r: Reader, ctx: DecodeContext) -> Options:
    return Options()


def _query(r: Reader, ctx: DecodeContext) -> Query:
    query = r.long_string()
    return Query(query, read_query_parameters(r, ctx.version))


def _prepare(r: Reader, ctx: DecodeContext) -> Prepare:
    return Prepare(r.long_string())


def _execute(r: Reader, ctx: DecodeContext) -> Execute:
    """EXECUTE is most of a data-path client's traffic: its common shape (ids, then the common
    query parameters) is read straight from the body in one pass; anything else, and every
    malformed body, goes through the checked readers, so errors read the same either way.
    Nothing is read after the parameters (trailing bytes are ignored), so the reader is left
    where it was."""
    buf, pos = r.position()
    try:
        (n,) = _COUNT.unpack_from(buf, pos)
        pos += 2
        end = pos + n
        if end > len(buf):
            raise _Unusual
        query_id = buf[pos:end]
        metadata_id: bytes | None = None
        if ctx.use_metadata_id:
            (n,) = _COUNT.unpack_from(buf, end)
            pos = end + 2
            end = pos + n
            if end > len(buf):
                raise _Unusual
            metadata_id = buf[pos:end]
        params, _ = _common_query_parameters(buf, end, ctx.version)
    except (_Unusual, struct.error):
        return _checked_execute(r, ctx)
    return Execute(query_id, metadata_id, params)


def _checked_execute(r: Reader, ctx: DecodeContext) -> Execute:
    query_id = r.short_bytes()
    metadata_id = r.short_bytes() if ctx.use_metadata_id else None
    return Execute(query_id, metadata_id, read_query_parameters(r, ctx.version))


def _batch(r: Reader, ctx: DecodeContext) -> Batch:
    batch_type = r.byte()
    if batch_type not in (BATCH_LOGGED, BATCH_UNLOGGED, BATCH_COUNTER):
        raise ProtocolError(f"Invalid BATCH message type {batch_type}: must be 0, 1 or 2")
    statements: list[BatchStatement] = []
    for _ in range(r.short()):
        kind = r.byte()
        if kind == 0:
            query: str | None = r.long_string()
            query_id: bytes | None = None
        elif kind == 1:
            query, query_id = None, r.short_bytes()
        else:
            raise ProtocolError(f"Invalid query kind in BATCH messages. Must be 0 or 1 but got {kind}")
        values = [r.value() for _ in range(r.short())]
        statements.append(BatchStatement(query, query_id, values))
    consistency = _consistency(r, "consistency")
    flags = r.byte()
    serial = _serial_consistency(r) if flags & QF_SERIAL_CONSISTENCY else None
    timestamp = _timestamp(r) if flags & QF_DEFAULT_TIMESTAMP else None
    return Batch(batch_type, statements, consistency, serial, timestamp)


def _register(r: Reader, ctx: DecodeContext) -> Register:
    types = r.string_list()
    for t in types:
        if t not in EVENT_TYPES:
            raise ProtocolError(f"Invalid value '{t}' for Event.Type")
    return Register(types)


def _auth_response(r: Reader, ctx: DecodeContext) -> AuthResponse:
    return AuthResponse(r.blob())


DECODERS: dict[int, Callable[[Reader, DecodeContext], Request]] = {
    OpCode.STARTUP: _startup,
    OpCode.OPTIONS: _options,
    OpCode.QUERY: _query,
    OpCode.PREPARE: _prepare,
    OpCode.EXECUTE: _execute,
    OpCode.BATCH: _batch,
    OpCode.REGISTER: _register,
    OpCode.AUTH_RESPONSE: _auth_response,
}

# Requests whose body may start with a custom payload that Scylla reads and ignores.
PAYLOAD_OPCODES = frozenset({OpCode.QUERY, OpCode.PREPARE, OpCode.EXECUTE, OpCode.BATCH})


def decode_request(opcode: int, body: bytes, ctx: DecodeContext) -> Request:
    """Decode a request body (custom payload already removed). Trailing bytes are ignored, as
    Scylla does, so that layouts extended by later protocol revisions still parse."""
    decoder = DECODERS.get(opcode)
    if decoder is None:
        raise ProtocolError(f"Unknown opcode {opcode}")
    return decoder(Reader(body), ctx)
