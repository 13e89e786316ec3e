"""Response encoders checked by parsing them with scylla-driver's decoder, plus golden bytes."""

from __future__ import annotations

import io
import uuid
from typing import Any, get_args

import pytest
from cassandra import cqltypes
from cassandra import protocol as dp
from cassandra.protocol_features import ProtocolFeatures
from hypothesis import given, settings

from tabletdb.cql import errors as E
from tabletdb.cql import types as T
from tabletdb.cql.results import (
    ColumnSpec,
    PreparedResult,
    Result,
    ResultBase,
    RowsMetadata,
    RowsResult,
    SchemaChangeResult,
    SetKeyspaceResult,
    VoidResult,
)
from tabletdb.protocol.connection import Connection
from tabletdb.protocol.extensions import build_supported
from tabletdb.protocol.metadata import metadata_id, result_metadata_id
from tabletdb.protocol.requests import Execute, QueryParameters
from tabletdb.protocol.responses import (
    RESULT_ENCODERS,
    AuthSuccess,
    ClientRoutesChangeEvent,
    EncodeContext,
    ErrorResponse,
    Reply,
    SchemaChangeEvent,
    StatusChangeEvent,
    Supported,
    TopologyChangeEvent,
)
from tabletdb.protocol.routing import TABLETS_ROUTING_V1_KEY, encode_tablets_routing_v1, routing_payload
from tabletdb.protocol.sasl import parse_plain_token, plain_token
from tabletdb.protocol.types_wire import marshal_class, option_bytes, parse_marshal_class, read_option
from tabletdb.protocol.wire import Reader
from tests.unit.cql.strategies import cql_types, driver_type
from tests.unit.protocol.driver_oracle import PLAIN_FEATURES, SCYLLA_FEATURES, decode_response

SCYLLA_CTX = EncodeContext(use_metadata_id=True, lwt_mark=True, rate_limit_error=True)
PLAIN_CTX = EncodeContext()


def encode(response: Reply, ctx: EncodeContext = PLAIN_CTX, request: Any = None) -> bytes:
    """A full response frame (uncompressed) as a connection with `ctx` would send it."""
    conn = Connection()
    conn._encode_ctx = ctx
    return conn.send(5, response, request)


def unfrozen(t: T.CqlType) -> T.CqlType:
    """Drop frozenness recursively: the wire does not carry it."""
    if isinstance(t, T.ListType):
        return T.ListType(unfrozen(t.element))
    if isinstance(t, T.SetType):
        return T.SetType(unfrozen(t.element))
    if isinstance(t, T.MapType):
        return T.MapType(unfrozen(t.key), unfrozen(t.value))
    if isinstance(t, T.TupleType):
        return T.TupleType(tuple(unfrozen(e) for e in t.elements))
    if isinstance(t, T.UserType):
        return T.UserType(t.keyspace, t.name, t.field_names, tuple(unfrozen(f) for f in t.field_types))
    if isinstance(t, T.VectorType):
        return T.VectorType(unfrozen(t.element), t.dimension)
    return t


@settings(max_examples=150)
@given(cql_types())
def test_option_round_trip_and_driver_agrees(t: T.CqlType) -> None:
    raw = option_bytes(t)
    r = Reader(raw)
    decoded = read_option(r)
    r.expect_end("option")
    assert option_bytes(decoded) == raw
    if b"UserType(" in raw:
        # A UDT inside a vector's class string stays an opaque Custom type here, and the driver's
        # class-string parser mistakes an all-digit hex type name ("udt" = 756474) for a number.
        return
    assert unfrozen(decoded) == unfrozen(t)
    driver = dp.ResultMessage.read_type(io.BytesIO(raw), {})
    # Scylla sends varchar (0x000D) for text; the driver names it varchar.
    expected = _driver_type(t).cql_parameterized_type().replace("text", "varchar")
    assert driver.cql_parameterized_type().replace("text", "varchar") == expected


def _driver_type(t: T.CqlType, in_class_string: bool = False) -> Any:
    """driver_type, but with UDTs keeping their real name (the wire carries it) and, inside a
    marshal class string (vector subtypes), frozenness spelled out as FrozenType."""
    d = in_class_string
    if isinstance(t, T.UserType):
        subs = tuple(_driver_type(f, d) for f in t.field_types)
        out = cqltypes.UserType.make_udt_class(t.keyspace, t.name, t.field_names, subs)
    elif isinstance(t, T.ListType | T.SetType):
        cls = cqltypes.ListType if isinstance(t, T.ListType) else cqltypes.SetType
        out = cls.apply_parameters([_driver_type(t.element, d)], None)
    elif isinstance(t, T.MapType):
        out = cqltypes.MapType.apply_parameters([_driver_type(t.key, d), _driver_type(t.value, d)], None)
    elif isinstance(t, T.TupleType):
        return cqltypes.TupleType.apply_parameters([_driver_type(e, d) for e in t.elements], None)
    elif isinstance(t, T.VectorType):
        return cqltypes.VectorType.apply_parameters([_driver_type(t.element, True), t.dimension], None)
    else:
        return driver_type(t)
    if in_class_string and not t.is_multi_cell:
        return cqltypes.FrozenType.apply_parameters([out], None)
    return out


def test_text_is_sent_as_varchar_and_vector_as_custom() -> None:
    assert option_bytes(T.TEXT) == b"\x00\x0d"
    vec = T.VectorType(T.FLOAT, 3)
    assert marshal_class(vec) == (
        "org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType, 3)"
    )
    assert parse_marshal_class(marshal_class(vec)) == vec
    assert parse_marshal_class("com.example.Weird") == T.CustomType("com.example.Weird")


COLS = [ColumnSpec("ks", "t", "k", T.INT), ColumnSpec("ks", "t", "v", T.TEXT)]
ROWS: list[list[bytes | None]] = [[b"\x00\x00\x00\x01", b"one"], [b"\x00\x00\x00\x02", None]]


def test_rows_result_global_spec_and_paging() -> None:
    meta = RowsMetadata(COLS, paging_state=b"\x01\x02")
    frame = encode(RowsResult(metadata=meta, rows=ROWS))
    msg = decode_response(frame)
    assert msg.kind == dp.RESULT_KIND_ROWS
    assert msg.paging_state == b"\x01\x02"
    assert msg.column_names == ["k", "v"]
    assert msg.parsed_rows == [(1, "one"), (2, None)]
    assert [c[:2] for c in msg.column_metadata] == [("ks", "t"), ("ks", "t")]
    flags = int.from_bytes(frame[13:17], "big")
    assert flags == 0x0001 | 0x0002


def test_rows_from_two_tables_are_not_global() -> None:
    cols = [ColumnSpec("ks", "a", "x", T.INT), ColumnSpec("ks", "b", "y", T.INT)]
    frame = encode(RowsResult(metadata=RowsMetadata(cols), rows=[[b"\0\0\0\1", b"\0\0\0\2"]]))
    assert int.from_bytes(frame[13:17], "big") == 0
    msg = decode_response(frame)
    assert [c[1] for c in msg.column_metadata] == ["a", "b"]


def test_execute_skip_metadata_and_metadata_id_changes() -> None:
    meta = RowsMetadata(COLS)
    params = QueryParameters(1, skip_metadata=True)
    current = Execute(b"qid", metadata_id(meta), params)
    frame = encode(RowsResult(metadata=meta, rows=ROWS), SCYLLA_CTX, current)
    assert int.from_bytes(frame[13:17], "big") == 0x0004  # no_metadata
    cached = [("ks", "t", "k", cqltypes.Int32Type), ("ks", "t", "v", cqltypes.UTF8Type)]
    msg = decode_response(frame, SCYLLA_FEATURES, result_metadata=cached)
    assert msg.parsed_rows == [(1, "one"), (2, None)]

    stale = Execute(b"qid", b"", params)
    frame = encode(RowsResult(metadata=meta, rows=ROWS), SCYLLA_CTX, stale)
    assert int.from_bytes(frame[13:17], "big") == 0x0008 | 0x0001
    msg = decode_response(frame, SCYLLA_FEATURES)
    assert msg.result_metadata_id == metadata_id(meta)
    assert msg.parsed_rows == [(1, "one"), (2, None)]


def test_page_copies_share_what_the_encoder_derives_from_the_columns() -> None:
    """The column block and the metadata id are derived once per statement: a page's copy fills
    the memo its statement's metadata and every later page share, and encodes as a fresh one."""
    statement = RowsMetadata(COLS)
    first = statement.with_paging_state(b"\x01")
    encode(RowsResult(metadata=first, rows=ROWS))
    second = statement.with_paging_state(None)
    memo = statement.wire
    assert memo is not None and first.wire is memo and second.wire is memo
    assert memo.column_block is not None and memo.metadata_id is None
    assert metadata_id(second) == result_metadata_id(COLS) == memo.metadata_id
    fresh = RowsMetadata(COLS)
    assert encode(RowsResult(metadata=second, rows=ROWS)) == encode(RowsResult(metadata=fresh, rows=ROWS))
    assert second == fresh  # the memo is no part of the value


def test_metadata_id_definition_is_stable() -> None:
    import hashlib

    expected = hashlib.sha256(b"\x00\x01k\x00\x03int\x00\x01v\x00\x04text").digest()[:16]
    assert result_metadata_id(COLS) == expected
    assert result_metadata_id(COLS[:1]) != expected
    assert result_metadata_id([ColumnSpec("ks", "t", "k", T.BIGINT), COLS[1]]) != expected


def _prepared(is_lwt: bool = False) -> PreparedResult:
    binds = [ColumnSpec("ks", "t", "k", T.INT), ColumnSpec("ks", "t", "c", T.TEXT)]
    return PreparedResult(
        id=b"\xaa" * 16, bind_columns=binds, pk_indexes=[0], result_metadata=RowsMetadata(COLS), is_lwt=is_lwt
    )


def test_prepared_plain_v4() -> None:
    msg = decode_response(encode(_prepared()))
    assert msg.kind == dp.RESULT_KIND_PREPARED
    assert msg.query_id == b"\xaa" * 16
    assert msg.result_metadata_id is None
    assert msg.pk_indexes == [0]
    assert [(b.keyspace_name, b.table_name, b.name) for b in msg.bind_metadata] == [
        ("ks", "t", "k"),
        ("ks", "t", "c"),
    ]
    assert [c[2] for c in msg.column_metadata] == ["k", "v"]


def test_prepared_with_scylla_extensions_and_lwt_bit() -> None:
    frame = encode(_prepared(is_lwt=True), SCYLLA_CTX)
    msg = decode_response(frame, SCYLLA_FEATURES)
    assert msg.result_metadata_id == metadata_id(RowsMetadata(COLS))
    assert msg.is_lwt
    flags_at = 9 + 4 + 2 + 16 + 2 + 16
    assert frame[flags_at : flags_at + 4] == b"\x80\x00\x00\x01"
    # Without the LWT extension the bit is not set.
    plain = decode_response(
        encode(_prepared(is_lwt=True)), ProtocolFeatures(lwt_info=SCYLLA_FEATURES.lwt_info)
    )
    assert not plain.is_lwt


def test_prepared_non_select_and_mixed_tables() -> None:
    binds = [ColumnSpec("ks", "a", "x", T.INT), ColumnSpec("ks", "b", "y", T.INT)]
    frame = encode(PreparedResult(id=b"\x01", bind_columns=binds, pk_indexes=[0]))
    msg = decode_response(frame)
    assert msg.pk_indexes == []  # only sent with the global flag
    assert msg.column_metadata == [] or msg.column_metadata is None
    tail = frame[-8:]
    assert tail == b"\x00\x00\x00\x04\x00\x00\x00\x00"  # non-SELECT result metadata


def test_void_set_keyspace_schema_change() -> None:
    assert decode_response(encode(VoidResult())).kind == dp.RESULT_KIND_VOID
    msg = decode_response(encode(SetKeyspaceResult(keyspace="ks1")))
    assert msg.new_keyspace == "ks1"
    msg = decode_response(
        encode(SchemaChangeResult(change="CREATED", target="TABLE", keyspace="ks", name="t"))
    )
    assert msg.schema_change_event == {
        "change_type": "CREATED",
        "target_type": "TABLE",
        "keyspace": "ks",
        "table": "t",
    }
    f = SchemaChangeResult(
        change="DROPPED", target="FUNCTION", keyspace="ks", name="f", arg_types=["int", "text"]
    )
    ev = decode_response(encode(f)).schema_change_event
    assert ev["function"].name == "f" and ev["function"].argument_types == ["int", "text"]
    assert decode_response(encode(SchemaChangeResult(keyspace="ks"))).schema_change_event["keyspace"] == "ks"


def test_every_kind_of_result_has_an_encoder() -> None:
    """The connection finds a result's encoder by its exact type: a kind missing from the table
    would be refused at send time, so the table must name every member of `Result`."""
    assert set(RESULT_ENCODERS) == set(get_args(Result))
    with pytest.raises(TypeError):
        encode(ResultBase())  # type: ignore[arg-type]  # no kind of result: nothing to encode


def test_events() -> None:
    msg = decode_response(encode(TopologyChangeEvent(change="NEW_NODE", address="127.0.0.2", port=9042)))
    assert (msg.event_type, msg.event_args) == (
        "TOPOLOGY_CHANGE",
        {"change_type": "NEW_NODE", "address": ("127.0.0.2", 9042)},
    )
    msg = decode_response(encode(StatusChangeEvent(status="DOWN", address="::1", port=9042)))
    assert msg.event_args == {"change_type": "DOWN", "address": ("::1", 9042)}
    msg = decode_response(encode(SchemaChangeEvent(change="UPDATED", target="TYPE", keyspace="ks", name="u")))
    assert msg.event_args["type"] == "u"
    msg = decode_response(
        encode(ClientRoutesChangeEvent(connection_ids=["c1"], host_ids=[str(uuid.UUID(int=1))]))
    )
    assert msg.event_args == {
        "change_type": "UPDATE_NODES",
        "connection_ids": ["c1"],
        "host_ids": ["00000000-0000-0000-0000-000000000001"],
    }


def test_huge_error_message_is_clipped_to_a_string() -> None:
    msg = decode_response(encode(ErrorResponse(error=E.InvalidRequest("é" * 40000))))
    assert msg.message.endswith("...") and len(msg.message.encode()) <= 0xFFFF


ERRORS: list[tuple[E.CqlError, type, dict[str, Any]]] = [
    (E.ServerError("boom"), dp.ServerError, {}),
    (E.ProtocolError("bad"), dp.ProtocolException, {}),
    (E.BadCredentials("Username and/or password are incorrect"), dp.BadCredentials, {}),
    (
        E.Unavailable("u", 4, 2, 1),
        dp.UnavailableErrorMessage,
        {"consistency": 4, "required_replicas": 2, "alive_replicas": 1},
    ),
    (E.Overloaded("shed"), dp.OverloadedErrorMessage, {}),
    (
        E.WriteTimeout("wt", 6, 1, 2, "BATCH_LOG"),
        dp.WriteTimeoutErrorMessage,
        {"consistency": 6, "received_responses": 1, "required_responses": 2, "write_type": 4},
    ),
    (
        E.ReadTimeout("rt", 1, 0, 1, True),
        dp.ReadTimeoutErrorMessage,
        {"consistency": 1, "received_responses": 0, "required_responses": 1, "data_retrieved": True},
    ),
    (
        E.ReadFailure("rf", 4, 1, 2, 1, False),
        dp.ReadFailureMessage,
        {
            "consistency": 4,
            "received_responses": 1,
            "required_responses": 2,
            "failures": 1,
            "data_retrieved": False,
        },
    ),
    (
        E.FunctionFailure("ff", "ks", "f", ["int"]),
        dp.FunctionFailureMessage,
        {"keyspace": "ks", "function": "f", "arg_types": ["int"]},
    ),
    (
        E.WriteFailure("wf", 4, 1, 2, 1, "CAS"),
        dp.WriteFailureMessage,
        {"consistency": 4, "received_responses": 1, "required_responses": 2, "failures": 1, "write_type": 5},
    ),
    (E.CdcWriteFailure("cdc"), dp.CDCWriteException, {}),
    (E.CqlSyntaxError("line 1:0 no viable alternative"), dp.SyntaxException, {}),
    (E.Unauthorized("no"), dp.UnauthorizedErrorMessage, {}),
    (E.InvalidRequest("unconfigured table x"), dp.InvalidRequestException, {}),
    (E.ConfigurationError("cfg"), dp.ConfigurationException, {}),
    (E.AlreadyExists("exists", "ks", "t"), dp.AlreadyExistsException, {"keyspace": "ks", "table": "t"}),
    (E.Unprepared("unknown id", b"\x01\x02"), dp.PreparedQueryNotFound, {}),
]


@pytest.mark.parametrize(
    ("err", "driver_cls", "info"), ERRORS, ids=lambda x: type(x).__name__ if isinstance(x, E.CqlError) else ""
)
def test_errors_decode_in_driver(err: E.CqlError, driver_cls: Any, info: dict[str, Any]) -> None:
    msg: Any = decode_response(encode(ErrorResponse(error=err)))
    assert msg.__class__ is driver_cls
    assert msg.code == err.code and msg.message == err.message
    for key, value in info.items():
        assert msg.info[key] == value
    if isinstance(err, E.Unprepared):
        assert msg.info == b"\x01\x02"


def test_rate_limit_error_needs_the_extension() -> None:
    err = E.RateLimitReached("Per-partition rate limit reached", 1, True)
    msg = decode_response(encode(ErrorResponse(error=err), SCYLLA_CTX), SCYLLA_FEATURES)
    assert type(msg) is dp.RateLimitReachedException
    assert msg.info == {"op_type": dp.OperationType.Write, "rejected_by_coordinator": True}
    plain = decode_response(encode(ErrorResponse(error=err)), PLAIN_FEATURES)
    assert type(plain) is dp.ConfigurationException and plain.code == 0x2300


def test_warnings_and_custom_payload_frame_flags() -> None:
    payload = routing_payload(-(2**63), 0, [(uuid.uuid4(), 1)])
    frame = encode(VoidResult(warnings=["careful"], custom_payload=payload))
    assert frame[1] == 0x08 | 0x04
    msg = decode_response(frame)
    assert msg.warnings == ["careful"]
    assert msg.custom_payload == payload


def test_tablets_routing_v1_worked_example() -> None:
    host = uuid.UUID("11111111-2222-3333-4444-555555555555")
    value = encode_tablets_routing_v1(-(2**63), 0, [(host, 0)])
    expected = bytes.fromhex(
        "00000008 8000000000000000 00000008 0000000000000000 00000024"
        " 00000001 0000001c 00000010 11111111222233334444555555555555 00000004 00000000".replace(" ", "")
    )
    assert value == expected
    typ = cqltypes.TupleType.apply_parameters(
        [
            cqltypes.LongType,
            cqltypes.LongType,
            cqltypes.ListType.apply_parameters(
                [cqltypes.TupleType.apply_parameters([cqltypes.UUIDType, cqltypes.Int32Type])]
            ),
        ]
    )
    assert typ.deserialize(value, 4) == (-(2**63), 0, [(host, 0)])
    assert TABLETS_ROUTING_V1_KEY == "tablets-routing-v1"
    with pytest.raises(ValueError, match="bad tablet range"):
        encode_tablets_routing_v1(5, 5, [])


def test_plain_token_golden_and_parsing() -> None:
    assert plain_token("cassandra", "secret").hex() == "0063617373616e64726100736563726574"
    assert parse_plain_token(bytes.fromhex("0063617373616e64726100736563726574")) == ("cassandra", "secret")
    assert parse_plain_token(b"authz\x00bob\x00pw") == ("bob", "pw")
    with pytest.raises(E.BadCredentials, match="Authentication ID must not be null"):
        parse_plain_token(b"\x00\x00pw")
    with pytest.raises(E.BadCredentials, match="Password must not be null"):
        parse_plain_token(b"\x00bob\x00")


def test_supported_and_auth_success() -> None:
    host = uuid.uuid4()
    opts = build_supported(host_id=host, shard=1, nr_shards=2, shard_aware_port=19042)
    assert list(opts) == sorted(opts)
    msg = decode_response(encode(Supported(options=opts)))
    assert msg.cql_versions == ["3.3.1"]
    assert msg.options == {k: v for k, v in opts.items() if k != "CQL_VERSION"}
    features = ProtocolFeatures.parse_from_supported(msg.options)
    assert features.shard_id == 1 and features.sharding_info.shards_count == 2
    assert features.rate_limit_error == 0xF000 and features.use_metadata_id and features.tablets_routing_v1
    assert features.lwt_info.lwt_meta_bit_mask == 0x80000000
    with pytest.raises(ValueError, match="all-or-none"):
        build_supported(shard=1)
    frame = encode(AuthSuccess())
    assert frame[9:] == b"\x00\x00\x00\x00"  # an empty [bytes], as Scylla sends
    assert decode_response(frame).token in ("", b"")


def test_v3_gets_v3_error_codes() -> None:
    v3 = EncodeContext(version=3)
    out = bytearray()
    from tabletdb.protocol.responses import encode_error

    encode_error(out, E.ReadFailure("rf", 4, 1, 2, 1, True), v3)
    assert bytes(out[:4]) == b"\x00\x00\x12\x00" and len(out) == 4 + 4 + 2 + 4 + 4 + 1
    out.clear()
    encode_error(out, E.WriteFailure("wf", 4, 1, 2, 1, "SIMPLE"), v3)
    assert bytes(out[:4]) == b"\x00\x00\x11\x00"
    out.clear()
    encode_error(out, E.FunctionFailure("ff", "ks", "f", []), v3)
    assert bytes(out) == b"\x00\x00\x22\x00\x00\x02ff"


def test_prepared_statement_id_depends_on_keyspace() -> None:
    import hashlib

    from tabletdb.protocol.metadata import prepared_statement_id

    assert prepared_statement_id("ks", "SELECT 1") == hashlib.md5(b"ksSELECT 1").digest()
    assert prepared_statement_id(None, "SELECT 1") == hashlib.md5(b"SELECT 1").digest()
    assert prepared_statement_id("a", "SELECT 1") != prepared_statement_id("b", "SELECT 1")
