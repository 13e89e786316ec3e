"""A tiny in-test Handler: just enough system tables for scylla-driver's Cluster to connect, plus a
fixed table `ks.t (k int PRIMARY KEY, v text)` with two rows."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from cassandra import cqltypes

from tabletdb.cql import errors as E
from tabletdb.cql import types as T
from tabletdb.cql.results import (
    ColumnSpec,
    PreparedResult,
    Result,
    RowsMetadata,
    RowsResult,
    SetKeyspaceResult,
    VoidResult,
)
from tabletdb.cql.types import CqlType
from tabletdb.protocol.extensions import build_supported
from tabletdb.protocol.handler import ClientState
from tabletdb.protocol.requests import Batch, QueryParameters
from tabletdb.protocol.routing import routing_payload

HOST_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")
TABLE = {1: "one", 2: "two"}
T_COLUMNS = RowsMetadata([ColumnSpec("ks", "t", "k", T.INT), ColumnSpec("ks", "t", "v", T.TEXT)])
SELECT_BY_KEY = "SELECT k, v FROM ks.t WHERE k = ?"

_SET_TEXT = cqltypes.SetType.apply_parameters([cqltypes.UTF8Type])
LOCAL_COLUMNS: list[tuple[str, CqlType, Any, Any]] = [
    ("broadcast_address", T.INET, cqltypes.InetAddressType, "127.0.0.1"),
    ("cluster_name", T.TEXT, cqltypes.UTF8Type, "test"),
    ("data_center", T.TEXT, cqltypes.UTF8Type, "dc1"),
    ("host_id", T.UUID, cqltypes.UUIDType, HOST_ID),
    ("listen_address", T.INET, cqltypes.InetAddressType, "127.0.0.1"),
    ("partitioner", T.TEXT, cqltypes.UTF8Type, "org.apache.cassandra.dht.Murmur3Partitioner"),
    ("rack", T.TEXT, cqltypes.UTF8Type, "rack1"),
    ("release_version", T.TEXT, cqltypes.UTF8Type, "3.0.8"),
    ("rpc_address", T.INET, cqltypes.InetAddressType, "127.0.0.1"),
    ("schema_version", T.UUID, cqltypes.UUIDType, HOST_ID),
    ("tokens", T.SetType(T.TEXT), _SET_TEXT, {"0"}),
]


def _int(v: int) -> bytes:
    return int(v).to_bytes(4, "big", signed=True)


class FakeHandler:
    def __init__(
        self,
        authenticator: str | None = None,
        nr_shards: int | None = None,
        shard_aware_port: int | None = None,
    ):
        self.authenticator = authenticator
        self.nr_shards = nr_shards
        self.shard_aware_port = shard_aware_port
        self.opened: list[ClientState] = []
        self.closed: list[ClientState] = []
        self.queries: list[str] = []

    def supported(self, client: ClientState) -> dict[str, list[str]]:
        if self.nr_shards is None:
            return build_supported(host_id=HOST_ID)
        return build_supported(
            host_id=HOST_ID,
            shard=client.shard,
            nr_shards=self.nr_shards,
            shard_aware_port=self.shard_aware_port,
        )

    async def authenticate(self, client: ClientState, username: str, password: str) -> None:
        if (username, password) != ("cassandra", "secret"):
            raise E.BadCredentials("Username and/or password are incorrect")

    async def query(self, client: ClientState, query: str, params: QueryParameters) -> Result:
        self.queries.append(query)
        q = query.strip()
        if q.upper().startswith("USE "):
            return SetKeyspaceResult(keyspace=q[4:].strip().strip('"'))
        if "system.local" in q:
            cols = [ColumnSpec("system", "local", name, t) for name, t, _, _ in LOCAL_COLUMNS]
            row = [codec.serialize(value, 4) for _, _, codec, value in LOCAL_COLUMNS]
            return RowsResult(metadata=RowsMetadata(cols), rows=[row])
        if "system" in q:  # peers, schema tables: nothing
            return RowsResult(metadata=RowsMetadata([ColumnSpec("system", "x", "dummy", T.TEXT)]), rows=[])
        if q == "SELECT k, v FROM ks.t":
            return RowsResult(metadata=T_COLUMNS, rows=[[_int(k), v.encode()] for k, v in TABLE.items()])
        if q.startswith("SELECT"):
            raise E.InvalidRequest(f"unconfigured table {q.split()[-1]}")
        raise E.CqlSyntaxError(f"line 1:0 no viable alternative at input '{q.split()[0]}'")

    async def prepare(self, client: ClientState, query: str) -> PreparedResult:
        if query != SELECT_BY_KEY:
            raise E.InvalidRequest(f"cannot prepare {query!r} in this fake")
        return PreparedResult(
            id=self.prepared_id(query),
            bind_columns=[ColumnSpec("ks", "t", "k", T.INT)],
            pk_indexes=[0],
            result_metadata=T_COLUMNS,
        )

    @staticmethod
    def prepared_id(query: str) -> bytes:
        return hashlib.md5(query.encode()).digest()

    def execute_now(
        self, client: ClientState, query_id: bytes, result_metadata_id: bytes | None, params: QueryParameters
    ) -> Result | None:
        return None

    async def execute(
        self, client: ClientState, query_id: bytes, result_metadata_id: bytes | None, params: QueryParameters
    ) -> Result:
        if query_id != self.prepared_id(SELECT_BY_KEY):
            raise E.Unprepared(f"Unknown prepared statement {query_id.hex()}", query_id)
        (raw,) = params.values
        assert isinstance(raw, bytes)
        k = int.from_bytes(raw, "big", signed=True)
        rows: list[list[bytes | None]] = [[raw, TABLE[k].encode()]] if k in TABLE else []
        payload = routing_payload(-(2**63), 0, [(HOST_ID, 0)])
        return RowsResult(metadata=T_COLUMNS, rows=rows, custom_payload=payload)

    async def batch(self, client: ClientState, batch: Batch) -> Result:
        return VoidResult()

    def connection_opened(self, client: ClientState) -> None:
        self.opened.append(client)

    def connection_closed(self, client: ClientState) -> None:
        self.closed.append(client)
