"""Typed server responses and their body encoders (spec/clients.md 1.2, 1.7-1.9).

Each protocol message (`Response`) knows its opcode and appends its body given the connection's
negotiated facts (`EncodeContext`). Statement results are plain values of `tabletdb.cql.results`,
which the data plane builds without knowing the wire; `RESULT_ENCODERS` write their RESULT body,
given the request they answer (Rows metadata depends on the request's skip-metadata flag and
metadata id). Anything sent may carry warnings and a custom payload (e.g. `tablets-routing-v1`);
the connection turns those into frame flags.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tabletdb.cql import errors as E
from tabletdb.cql.results import (
    PreparedResult,
    Result,
    RowsResult,
    SchemaChangeResult,
    SetKeyspaceResult,
    VoidResult,
)
from tabletdb.protocol.frames import OpCode
from tabletdb.protocol.metadata import common_table, encode_rows_metadata, metadata_id, write_column_specs
from tabletdb.protocol.requests import Execute, Query, Request
from tabletdb.protocol.wire import (
    write_byte,
    write_bytes,
    write_consistency,
    write_inet,
    write_int,
    write_short,
    write_short_bytes,
    write_string,
    write_string_list,
    write_string_multimap,
    write_uint,
)

RESULT_VOID, RESULT_ROWS, RESULT_SET_KEYSPACE, RESULT_PREPARED, RESULT_SCHEMA_CHANGE = 1, 2, 3, 4, 5
PREPARED_GLOBAL_TABLES_SPEC = 0x0001
LWT_METADATA_MASK = 0x80000000  # what Scylla advertises as LWT_OPTIMIZATION_META_BIT_MASK
_INT = struct.Struct(">i")
_VOID_BODY = _INT.pack(RESULT_VOID)


@dataclass(frozen=True, slots=True)
class EncodeContext:
    """What the connection negotiated that changes response layouts."""

    version: int = 4
    use_metadata_id: bool = False
    lwt_mark: bool = False
    rate_limit_error: bool = False


@dataclass(slots=True)
class Response:
    """Base of protocol messages other than results: `custom_payload` and `warnings` ride in the
    frame, before the opcode body."""

    custom_payload: dict[str, bytes | None] | None = field(default=None, kw_only=True)
    warnings: list[str] | None = field(default=None, kw_only=True)

    opcode: ClassVar[int]

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        raise NotImplementedError


@dataclass(slots=True)
class Ready(Response):
    opcode = OpCode.READY

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        pass


@dataclass(slots=True)
class Supported(Response):
    options: dict[str, list[str]] = field(default_factory=dict)
    opcode = OpCode.SUPPORTED

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        write_string_multimap(out, self.options)


@dataclass(slots=True)
class Authenticate(Response):
    authenticator: str = ""
    opcode = OpCode.AUTHENTICATE

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        write_string(out, self.authenticator)


@dataclass(slots=True)
class AuthChallenge(Response):
    token: bytes | None = None
    opcode = OpCode.AUTH_CHALLENGE

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        write_bytes(out, self.token)


@dataclass(slots=True)
class AuthSuccess(Response):
    token: bytes | None = b""
    opcode = OpCode.AUTH_SUCCESS

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        write_bytes(out, self.token)


@dataclass(slots=True)
class ErrorResponse(Response):
    error: E.CqlError = field(default_factory=lambda: E.ServerError("unknown error"))
    opcode = OpCode.ERROR

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        encode_error(out, self.error, ctx)


def encode_error(out: bytearray, err: E.CqlError, ctx: EncodeContext) -> None:
    """`[int] code`, `[string] message`, then the code's extra fields (1.9)."""
    message = _clip(err.message)
    if ctx.version < 4:
        err = _v3_equivalent(err)
    if isinstance(err, E.RateLimitReached) and not ctx.rate_limit_error:
        write_int(out, E.ConfigurationError.code)
        write_string(out, message)
        return
    write_int(out, err.code)
    write_string(out, message)
    if isinstance(err, E.Unavailable):
        write_consistency(out, err.consistency)
        write_int(out, err.required)
        write_int(out, err.alive)
    elif isinstance(err, E.WriteTimeout):
        write_consistency(out, err.consistency)
        write_int(out, err.received)
        write_int(out, err.block_for)
        write_string(out, err.write_type)
    elif isinstance(err, E.ReadTimeout):
        write_consistency(out, err.consistency)
        write_int(out, err.received)
        write_int(out, err.block_for)
        write_byte(out, 1 if err.data_present else 0)
    elif isinstance(err, E.ReadFailure):
        write_consistency(out, err.consistency)
        write_int(out, err.received)
        write_int(out, err.block_for)
        write_int(out, err.failures)
        write_byte(out, 1 if err.data_present else 0)
    elif isinstance(err, E.FunctionFailure):
        write_string(out, err.keyspace)
        write_string(out, err.function)
        write_string_list(out, err.arg_types)
    elif isinstance(err, E.WriteFailure):
        write_consistency(out, err.consistency)
        write_int(out, err.received)
        write_int(out, err.block_for)
        write_int(out, err.failures)
        write_string(out, err.write_type)
    elif isinstance(err, E.AlreadyExists):
        write_string(out, err.keyspace)
        write_string(out, err.table)
    elif isinstance(err, E.Unprepared):
        write_short_bytes(out, err.prepared_id)
    elif isinstance(err, E.RateLimitReached):
        write_byte(out, err.op_type)
        write_byte(out, 1 if err.rejected_by_coordinator else 0)


def _v3_equivalent(err: E.CqlError) -> E.CqlError:
    """Protocol v3 has no *_failure codes: send the nearest v3 error, as Cassandra does."""
    if isinstance(err, E.ReadFailure):
        return E.ReadTimeout(err.message, err.consistency, err.received, err.block_for, err.data_present)
    if isinstance(err, E.WriteFailure):
        return E.WriteTimeout(err.message, err.consistency, err.received, err.block_for, err.write_type)
    if isinstance(err, E.FunctionFailure):
        return E.InvalidRequest(err.message)
    return err


def _clip(message: str, limit: int = 0xFFFF) -> str:
    """An error message must fit a `[string]`; a huge one (e.g. echoing a long query) is cut."""
    raw = message.encode("utf-8")
    if len(raw) <= limit:
        return message
    return raw[: limit - 3].decode("utf-8", "ignore") + "..."


Reply = Response | Result
"""Anything a connection sends: a protocol message, or a statement's result (a RESULT body)."""


def _encode_void(out: bytearray, result: VoidResult, ctx: EncodeContext, request: Request | None) -> None:
    out += _VOID_BODY  # the same bytes every time: every INSERT answers with them


def _encode_rows(out: bytearray, result: RowsResult, ctx: EncodeContext, request: Request | None) -> None:
    """A page of rows. The metadata depends on the request: skipped if it asked so, and (with
    SCYLLA_USE_METADATA_ID) sent with the new id when the EXECUTE named another one."""
    write_int(out, RESULT_ROWS)
    meta = result.metadata
    no_metadata = False
    new_id: bytes | None = None
    if isinstance(request, Execute):
        no_metadata = request.params.skip_metadata
        if ctx.use_metadata_id:
            current = metadata_id(meta)
            if request.result_metadata_id != current:
                new_id = current
    elif isinstance(request, Query):
        no_metadata = request.params.skip_metadata
    encode_rows_metadata(out, meta, no_metadata=no_metadata, new_metadata_id=new_id)
    rows = result.rows
    out += _INT.pack(len(rows))
    pack = _INT.pack
    for row in rows:  # write_bytes inlined: a call per cell showed in the SELECT profile
        for cell in row:
            if cell is None:
                out += b"\xff\xff\xff\xff"
            else:
                out += pack(len(cell))
                out += cell


def _encode_prepared(
    out: bytearray, result: PreparedResult, ctx: EncodeContext, request: Request | None
) -> None:
    write_int(out, RESULT_PREPARED)
    write_short_bytes(out, result.id)
    if ctx.use_metadata_id:
        write_short_bytes(out, metadata_id(result.result_metadata))
    table = common_table(result.bind_columns)
    flags = PREPARED_GLOBAL_TABLES_SPEC if table is not None else 0
    if result.is_lwt and ctx.lwt_mark:
        flags |= LWT_METADATA_MASK
    write_uint(out, flags)
    write_int(out, len(result.bind_columns))
    pk_indexes = result.pk_indexes if table is not None else []
    write_int(out, len(pk_indexes))
    for i in pk_indexes:
        write_short(out, i)
    if table is not None:
        write_string(out, table[0])
        write_string(out, table[1])
    write_column_specs(out, result.bind_columns, table is not None)
    encode_rows_metadata(out, result.result_metadata)


def _encode_set_keyspace(
    out: bytearray, result: SetKeyspaceResult, ctx: EncodeContext, request: Request | None
) -> None:
    write_int(out, RESULT_SET_KEYSPACE)
    write_string(out, result.keyspace)


def _encode_schema_change(
    out: bytearray, result: SchemaChangeResult, ctx: EncodeContext, request: Request | None
) -> None:
    write_int(out, RESULT_SCHEMA_CHANGE)
    write_schema_change(out, result.change, result.target, result.keyspace, result.name, result.arg_types)


def write_schema_change(
    out: bytearray, change: str, target: str, keyspace: str, name: str | None, arg_types: list[str] | None
) -> None:
    write_string(out, change)
    write_string(out, target)
    write_string(out, keyspace)
    if target == "KEYSPACE":
        return
    if name is None:
        raise ValueError(f"schema change on a {target} needs a name")
    write_string(out, name)
    if target in ("FUNCTION", "AGGREGATE"):
        write_string_list(out, arg_types or [])


ResultEncoder = Callable[[bytearray, Any, EncodeContext, Request | None], None]
"""Appends the RESULT body of one kind of result, given the connection's facts and the request."""

RESULT_ENCODERS: dict[type, ResultEncoder] = {
    RowsResult: _encode_rows,
    VoidResult: _encode_void,
    PreparedResult: _encode_prepared,
    SchemaChangeResult: _encode_schema_change,
    SetKeyspaceResult: _encode_set_keyspace,
}
"""The RESULT body encoder of each kind of `tabletdb.cql.results.Result`, by exact type: one dict
lookup where a protocol message has its `encode` method, so a result costs the connection no more
than a message did when results were protocol classes (the EXECUTE hot path)."""


@dataclass(slots=True)
class Event(Response):
    """Base of server-pushed EVENTs (stream -1); `event_type` is what REGISTER names."""

    opcode = OpCode.EVENT
    event_type = ""


@dataclass(slots=True)
class TopologyChangeEvent(Event):
    change: str = "NEW_NODE"  # NEW_NODE, REMOVED_NODE, MOVED_NODE
    address: str = "127.0.0.1"
    port: int = 0  # 0: CqlServer.broadcast fills in its own CQL port, as Scylla does
    event_type = "TOPOLOGY_CHANGE"

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        write_string(out, self.event_type)
        write_string(out, self.change)
        write_inet(out, self.address, self.port)


@dataclass(slots=True)
class StatusChangeEvent(Event):
    status: str = "UP"  # UP, DOWN
    address: str = "127.0.0.1"
    port: int = 0  # 0: CqlServer.broadcast fills in its own CQL port, as Scylla does
    event_type = "STATUS_CHANGE"

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        write_string(out, self.event_type)
        write_string(out, self.status)
        write_inet(out, self.address, self.port)


@dataclass(slots=True)
class SchemaChangeEvent(Event):
    change: str = "CREATED"
    target: str = "KEYSPACE"
    keyspace: str = ""
    name: str | None = None
    arg_types: list[str] | None = None
    event_type = "SCHEMA_CHANGE"

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        write_string(out, self.event_type)
        write_schema_change(out, self.change, self.target, self.keyspace, self.name, self.arg_types)


@dataclass(slots=True)
class ClientRoutesChangeEvent(Event):
    """Scylla-only: the client routes of some connections/hosts changed (`UPDATE_NODES`)."""

    change: str = "UPDATE_NODES"
    connection_ids: list[str] = field(default_factory=list)
    host_ids: list[str] = field(default_factory=list)
    event_type = "CLIENT_ROUTES_CHANGE"

    def encode(self, out: bytearray, ctx: EncodeContext, request: Request | None) -> None:
        write_string(out, self.event_type)
        write_string(out, self.change)
        write_string_list(out, self.connection_ids)
        write_string_list(out, self.host_ids)
