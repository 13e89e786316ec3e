"""The benchmark floor: the least work a server can do and still satisfy the real drivers.

It speaks just enough CQL native protocol v4 for scylla-driver, cassandra-driver and cqlsh to
connect and run statements: SUPPORTED (with Scylla's sharding keys, one shard), READY, canned
system.local / system.peers rows, empty schema tables, and canned answers to QUERY, PREPARE,
EXECUTE and BATCH (one row `k int, v blob` for SELECT, Void otherwise). Every answer body is
encoded once at start-up; a request costs a header parse, a dictionary lookup and one write.

Every server benchmark reports this server's CPU per operation next to tabletdb's: the gap is
what our real work costs, and the floor itself is the cost of asyncio + framing in Python.

Run: `python -m bench.floor_server --host 127.0.0.1 --port 9042`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import ipaddress
import struct
import uuid
from typing import cast

HEADER = struct.Struct(">BBhBi")
OP_ERROR, OP_STARTUP, OP_READY, OP_OPTIONS, OP_SUPPORTED = 0x00, 0x01, 0x02, 0x05, 0x06
OP_QUERY, OP_RESULT, OP_PREPARE, OP_EXECUTE, OP_REGISTER, OP_BATCH = 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0D
ERR_PROTOCOL, ERR_INVALID, ERR_UNPREPARED = 0x000A, 0x2200, 0x2500
T_BLOB, T_INT, T_UUID, T_TEXT, T_INET, T_MAP, T_SET = 0x03, 0x09, 0x0C, 0x0D, 0x10, 0x21, 0x22
KEYSPACE, TABLE = "floor", "t"
BIND_TYPES = {"int": T_INT, "blob": T_BLOB, "text": T_TEXT, "bigint": 0x02}
HOST_ID = uuid.UUID("f1000000-0000-4000-8000-000000000001")
SCHEMA_VERSION = uuid.UUID("f1000000-0000-4000-8000-000000000002")
PARTITIONER = "org.apache.cassandra.dht.Murmur3Partitioner"


# --- [notation] encoders (spec/clients.md) ------------------------------------------------------


def short(n: int) -> bytes:
    return struct.pack(">H", n)


def string(s: str) -> bytes:
    data = s.encode()
    return short(len(data)) + data


def long_string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">i", len(data)) + data


def value(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def string_multimap(entries: dict[str, list[str]]) -> bytes:
    out = short(len(entries))
    for key in sorted(entries):
        out += string(key) + short(len(entries[key])) + b"".join(string(v) for v in entries[key])
    return out


def option(type_id: int, *params: int) -> bytes:
    return short(type_id) + b"".join(short(p) for p in params)


# --- canned rows --------------------------------------------------------------------------------

Column = tuple[str, bytes]  # name, encoded [option]


def rows_result(keyspace: str, table: str, columns: list[Column], rows: list[list[bytes | None]]) -> bytes:
    """RESULT Rows with global_tables_spec."""
    meta = struct.pack(">iii", 0x0002, 0x0001, len(columns)) + string(keyspace) + string(table)
    meta += b"".join(string(name) + opt for name, opt in columns)
    body = b"".join(value(cell) for row in rows for cell in row)
    return meta + struct.pack(">i", len(rows)) + body


def text_set(items: list[str]) -> bytes:
    return struct.pack(">i", len(items)) + b"".join(value(i.encode()) for i in items)


def local_row_result(address: str) -> bytes:
    ip = ipaddress.ip_address(address).packed
    text, inet, uid = option(T_TEXT), option(T_INET), option(T_UUID)
    cells: list[tuple[str, bytes, bytes | None]] = [
        ("key", text, b"local"),
        ("bootstrapped", text, b"COMPLETED"),
        ("broadcast_address", inet, ip),
        ("cluster_name", text, b"Floor Cluster"),
        ("cql_version", text, b"3.3.1"),
        ("data_center", text, b"datacenter1"),
        ("gossip_generation", option(T_INT), struct.pack(">i", 1)),
        ("host_id", uid, HOST_ID.bytes),
        ("listen_address", inet, ip),
        ("native_protocol_version", text, b"4"),
        ("partitioner", text, PARTITIONER.encode()),
        ("rack", text, b"rack1"),
        ("release_version", text, b"3.0.8"),
        ("rpc_address", inet, ip),
        ("schema_version", uid, SCHEMA_VERSION.bytes),
        ("supported_features", text, b""),
        ("tokens", option(T_SET, T_TEXT), text_set(["0"])),
        ("truncated_at", option(T_MAP, T_UUID, T_BLOB), None),
    ]
    return rows_result("system", "local", [(n, o) for n, o, _ in cells], [[c for _, _, c in cells]])


def peers_result() -> bytes:
    text, inet, uid = option(T_TEXT), option(T_INET), option(T_UUID)
    columns = [
        ("peer", inet),
        ("data_center", text),
        ("host_id", uid),
        ("preferred_ip", inet),
        ("rack", text),
        ("release_version", text),
        ("rpc_address", inet),
        ("schema_version", uid),
        ("supported_features", text),
        ("tokens", option(T_SET, T_TEXT)),
    ]
    return rows_result("system", "peers", columns, [])


def text_map(items: dict[str, str]) -> bytes:
    out = struct.pack(">i", len(items))
    return out + b"".join(value(k.encode()) + value(v.encode()) for k, v in items.items())


def schema_results() -> dict[str, bytes]:
    """system_schema rows describing the one table `floor.t (k int PRIMARY KEY, v blob)`.

    cqlsh looks tables up in the driver's schema metadata before it runs a SELECT.
    """
    text, boolean = option(T_TEXT), option(0x0004)
    text_map_t, text_set_t = option(T_MAP, T_TEXT, T_TEXT), option(T_SET, T_TEXT)
    ks, tb = KEYSPACE.encode(), TABLE.encode()
    replication = text_map(
        {"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "1"}
    )
    keyspaces = rows_result(
        "system_schema",
        "keyspaces",
        [("keyspace_name", text), ("durable_writes", boolean), ("replication", text_map_t)],
        [[ks, b"\x01", replication]],
    )
    tables = rows_result(
        "system_schema",
        "tables",
        [("keyspace_name", text), ("table_name", text), ("flags", text_set_t)],
        [[ks, tb, text_set(["compound"])]],
    )
    column_spec = [
        ("keyspace_name", text),
        ("table_name", text),
        ("column_name", text),
        ("clustering_order", text),
        ("kind", text),
        ("position", option(T_INT)),
        ("type", text),
    ]
    columns = rows_result(
        "system_schema",
        "columns",
        column_spec,
        [
            [ks, tb, b"k", b"none", b"partition_key", struct.pack(">i", 0), b"int"],
            [ks, tb, b"v", b"none", b"regular", struct.pack(">i", -1), b"blob"],
        ],
    )
    return {"keyspaces": keyspaces, "tables": tables, "columns": columns}


def user_rows_result() -> bytes:
    return rows_result(
        KEYSPACE, TABLE, [("k", option(T_INT)), ("v", option(T_BLOB))], [[b"\0\0\0\1", b"floor"]]
    )


def error_body(code: int, message: str) -> bytes:
    return struct.pack(">i", code) + string(message)


VOID = struct.pack(">i", 0x0001)


class Canned:
    """Every response body, encoded once."""

    def __init__(self, address: str, bind_types: tuple[str, ...] = ()) -> None:
        unknown = [t for t in bind_types if t not in BIND_TYPES]
        if unknown:
            raise ValueError(f"unknown bind types {unknown}; allowed: {', '.join(BIND_TYPES)}")
        self.bind_types = bind_types
        self.supported = string_multimap(
            {
                "CQL_VERSION": ["3.3.1"],
                "COMPRESSION": [],
                "SCYLLA_SHARD": ["0"],
                "SCYLLA_NR_SHARDS": ["1"],
                "SCYLLA_PARTITIONER": [PARTITIONER],
                "SCYLLA_SHARDING_ALGORITHM": ["biased-token-round-robin"],
                "SCYLLA_SHARDING_IGNORE_MSB": ["12"],
            }
        )
        self.local = local_row_result(address)
        self.peers = peers_result()
        # Drivers cannot parse a Rows result with zero columns, so empty tables get one.
        self.empty = rows_result("system_schema", "empty", [("keyspace_name", option(T_TEXT))], [])
        self.user_rows = user_rows_result()
        self.schema = schema_results()
        self.no_peers_v2 = error_body(ERR_INVALID, "unconfigured table peers_v2")
        self.no_versions = error_body(ERR_INVALID, "unconfigured table versions")
        self.prepared: dict[bytes, tuple[bytes, bytes]] = {}  # id -> (PREPARE answer, EXECUTE answer)

    def _bind_type(self, index: int) -> int:
        return BIND_TYPES[self.bind_types[index]] if index < len(self.bind_types) else T_INT

    def for_query(self, query: str) -> tuple[int, bytes]:
        q = query.lower()
        if "system.local" in q:
            return OP_RESULT, self.local
        if "system.peers_v2" in q:
            return OP_ERROR, self.no_peers_v2
        if "system.peers" in q:
            return OP_RESULT, self.peers
        if "system.versions" in q:
            return OP_ERROR, self.no_versions
        if "system_schema." in q:
            table = q.split("system_schema.", 1)[1].split(None, 1)[0].strip(";")
            return OP_RESULT, self.schema.get(table, self.empty)
        if "system_traces." in q:
            return OP_RESULT, self.empty
        head = q.lstrip().split(None, 1)
        if head and head[0] == "use" and len(head) > 1:
            return OP_RESULT, struct.pack(">i", 0x0003) + string(head[1].strip().rstrip(";").strip('"'))
        if head and head[0] == "select":
            return OP_RESULT, self.user_rows
        return OP_RESULT, VOID

    def prepare(self, query: str) -> bytes:
        """The i-th `?` binds p<i> typed bind_types[i] (default int); p0 is the partition key.

        Answers are cached by the query's MD5, like Scylla's prepared ids.
        """
        query_id = hashlib.md5(query.encode()).digest()
        if query_id not in self.prepared:
            binds = query.count("?")
            meta = struct.pack(">ii", 0x0001, binds)
            meta += struct.pack(">i", 1) + short(0) if binds else struct.pack(">i", 0)
            meta += string(KEYSPACE) + string(TABLE)
            meta += b"".join(string(f"p{i}") + option(self._bind_type(i)) for i in range(binds))
            is_select = query.lstrip().lower().startswith("select")
            if is_select:
                result_meta = struct.pack(">ii", 0x0001, 2) + string(KEYSPACE) + string(TABLE)
                result_meta += string("k") + option(T_INT) + string("v") + option(T_BLOB)
            else:
                result_meta = struct.pack(">ii", 0x0004, 0)
            answer = struct.pack(">i", 0x0004) + short(len(query_id)) + query_id + meta + result_meta
            self.prepared[query_id] = (answer, self.user_rows if is_select else VOID)
        return self.prepared[query_id][0]


class FloorConnection(asyncio.Protocol):
    """One client connection: frames in, canned frames out."""

    def __init__(self, canned: Canned) -> None:
        self.canned = canned
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's class is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= HEADER.size:
            version, _flags, stream, opcode, length = HEADER.unpack_from(self.buffer)
            if version not in (3, 4):
                message = f"Invalid or unsupported protocol version: {version}"
                self.send(stream, OP_ERROR, error_body(ERR_PROTOCOL, message), version=0x84)
                self.close()
                return
            if len(self.buffer) < HEADER.size + length:
                return
            body = bytes(self.buffer[HEADER.size : HEADER.size + length])
            del self.buffer[: HEADER.size + length]
            reply_opcode, reply = self.answer(opcode, body)
            self.send(stream, reply_opcode, reply, version=0x80 | version)

    def answer(self, opcode: int, body: bytes) -> tuple[int, bytes]:
        if opcode == OP_EXECUTE:
            (id_len,) = struct.unpack_from(">H", body)
            query_id = body[2 : 2 + id_len]
            found = self.canned.prepared.get(query_id)
            if found is None:
                unprepared = error_body(ERR_UNPREPARED, "Prepared query not found")
                return OP_ERROR, unprepared + short(id_len) + query_id
            return OP_RESULT, found[1]
        if opcode == OP_QUERY:
            return self.canned.for_query(_long_string_at_start(body))
        if opcode == OP_PREPARE:
            return OP_RESULT, self.canned.prepare(_long_string_at_start(body))
        if opcode == OP_BATCH:
            return OP_RESULT, VOID
        if opcode == OP_OPTIONS:
            return OP_SUPPORTED, self.canned.supported
        if opcode in (OP_STARTUP, OP_REGISTER):
            return OP_READY, b""
        return OP_ERROR, error_body(ERR_PROTOCOL, f"Unsupported opcode {opcode:#04x} in the floor server")

    def send(self, stream: int, opcode: int, body: bytes, version: int) -> None:
        if self.transport is not None:
            self.transport.write(HEADER.pack(version, 0, stream, opcode, len(body)) + body)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _long_string_at_start(body: bytes) -> str:
    (length,) = struct.unpack_from(">i", body)
    return body[4 : 4 + length].decode()


async def serve(host: str, port: int, bind_types: tuple[str, ...] = ()) -> asyncio.Server:
    canned = Canned(host, bind_types)
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: FloorConnection(canned), host, port, reuse_address=True)


async def _main(host: str, port: int, bind_types: tuple[str, ...]) -> None:
    server = await serve(host, port, bind_types)
    print(f"floor server listening on {host}:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--no-uvloop", action="store_true", help="use the default asyncio loop")
    parser.add_argument(
        "--bind-types",
        default="",
        help=f"CQL types of the bind markers in order, comma-separated ({'|'.join(BIND_TYPES)}; default int)",
    )
    args = parser.parse_args()
    if not args.no_uvloop:
        import uvloop

        uvloop.install()
    with contextlib.suppress(KeyboardInterrupt):
        bind_types = tuple(t.strip() for t in args.bind_types.split(",") if t.strip())
        asyncio.run(_main(args.host, args.port, bind_types))


if __name__ == "__main__":
    main()
