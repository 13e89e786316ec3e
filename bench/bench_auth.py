"""Benchmark: DESC SCHEMA with 5,000 tables, and password logins per second.

Figures (auth issue 4):
- `desc_schema`: wall time of `DESC SCHEMA WITH INTERNALS AND PASSWORDS` through scylla-driver
  against one node holding `--tables` tables (goal: under 1 s for 5,000), and the same rows
  rendered in-process from the node's catalog (what the server spends, without the wire).
- `login`: complete native-protocol logins per second (TCP connect, STARTUP, AUTHENTICATE,
  SASL PLAIN AUTH_RESPONSE, AUTH_SUCCESS) from `--concurrency` raw asyncio clients, for a
  password the node has already verified (cache hit) and for first logins of distinct roles
  (each costs one SHA-512-crypt verification in the node's executor); beside it, how many
  verifications per second one core does in-process.

Reproduce: `.venv/bin/python -m bench.bench_auth [--tables 5000] [--logins 2000] [--concurrency 16]`.
The node runs on 127.0.96.1 (outside the test harness's address blocks).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import RESULT_PREFIX, latency_summary_ms, proc_cpu_seconds
from tabletdb.auth.passwords import hash_password, verify_password

REPO = Path(__file__).resolve().parent.parent
HOST = "127.0.96.1"
PORT = 9042
NTS = "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"
OP_STARTUP, OP_AUTHENTICATE, OP_AUTH_RESPONSE, OP_AUTH_SUCCESS, OP_ERROR = 0x01, 0x03, 0x0F, 0x10, 0x00


@contextlib.contextmanager
def server(workdir: Path) -> Iterator[subprocess.Popen[bytes]]:
    argv = [sys.executable, "-m", "tabletdb.cli.main", "server", "--workdir", str(workdir)]
    argv += ["--listen-address", HOST, "--native-transport-port", str(PORT), "--api-port", "10096"]
    argv += ["-o", "authenticator=PasswordAuthenticator", "-o", "authorizer=CassandraAuthorizer"]
    log = (workdir.parent / "node.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection((HOST, PORT), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"node did not start; see {workdir.parent / 'node.log'}")
            time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def session(user: str = "cassandra", password: str = "cassandra") -> Any:
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile

    cluster = Cluster(
        [HOST],
        port=PORT,
        protocol_version=4,
        auth_provider=PlainTextAuthProvider(user, password),
        execution_profiles={EXEC_PROFILE_DEFAULT: ExecutionProfile(request_timeout=120)},
        schema_metadata_enabled=False,
        token_metadata_enabled=False,
    )
    return cluster.connect()


def create_tables(s: Any, count: int) -> float:
    """`count` tables over a few keyspaces, 16 DDLs in flight; seconds taken."""
    started = time.perf_counter()
    for ks in range(5):
        s.execute(f"CREATE KEYSPACE k{ks} WITH replication = {NTS} AND tablets = {{'enabled': false}}")
    pending: list[Any] = []
    for i in range(count):
        pending.append(
            s.execute_async(f"CREATE TABLE k{i % 5}.t{i} (k int PRIMARY KEY, v text, w map<int, text>)")
        )
        if len(pending) >= 16:
            pending.pop(0).result()
    for future in pending:
        future.result()
    return time.perf_counter() - started


def measure_desc(s: Any, proc: subprocess.Popen[bytes], rounds: int) -> dict[str, Any]:
    latencies, cpu = [], []
    rows = 0
    for _ in range(rounds):
        cpu_before = proc_cpu_seconds(proc.pid)
        started = time.perf_counter()
        rows = len(list(s.execute("DESC SCHEMA WITH INTERNALS AND PASSWORDS")))
        latencies.append(int((time.perf_counter() - started) * 1e6))
        cpu.append(proc_cpu_seconds(proc.pid) - cpu_before)
    return {"rows": rows, "latencies_us": latencies, "server_cpu_s": sorted(cpu)[len(cpu) // 2]}


# --- raw logins -----------------------------------------------------------------------------------


def frame(opcode: int, body: bytes, stream: int = 0) -> bytes:
    return struct.pack(">BBhBi", 0x04, 0, stream, opcode, len(body)) + body


def startup_body() -> bytes:
    pairs = {"CQL_VERSION": "3.0.0"}
    out = struct.pack(">H", len(pairs))
    for k, v in pairs.items():
        out += struct.pack(">H", len(k)) + k.encode() + struct.pack(">H", len(v)) + v.encode()
    return out


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    header = await reader.readexactly(9)
    _, _, _, opcode, length = struct.unpack(">BBhBi", header)
    return opcode, await reader.readexactly(length)


async def login_once(user: str, password: str) -> None:
    reader, writer = await asyncio.open_connection(HOST, PORT)
    try:
        writer.write(frame(OP_STARTUP, startup_body()))
        opcode, _ = await read_frame(reader)
        if opcode != OP_AUTHENTICATE:
            raise RuntimeError(f"expected AUTHENTICATE, got opcode {opcode:#x}")
        token = b"\x00" + user.encode() + b"\x00" + password.encode()
        writer.write(frame(OP_AUTH_RESPONSE, struct.pack(">i", len(token)) + token))
        opcode, body = await read_frame(reader)
        if opcode != OP_AUTH_SUCCESS:
            raise RuntimeError(f"login of {user} failed: opcode {opcode:#x} {body[6:]!r}")
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def logins(credentials: list[tuple[str, str]], concurrency: int) -> tuple[float, list[int]]:
    """Log every (user, password) in once, `concurrency` at a time; (logins/s, latencies us)."""
    queue = list(reversed(credentials))
    latencies: list[int] = []

    async def worker() -> None:
        while queue:
            user, password = queue.pop()
            started = time.perf_counter()
            await login_once(user, password)
            latencies.append(int((time.perf_counter() - started) * 1e6))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return len(credentials) / (time.perf_counter() - started), latencies


def verifications_per_second(seconds: float = 1.0) -> float:
    hashed = hash_password("password")
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        verify_password("password", hashed)
        count += 1
    return count / (time.perf_counter() - started)


def emit(result: dict[str, Any]) -> None:
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--tables", type=int, default=5000)
    parser.add_argument("--logins", type=int, default=2000)
    parser.add_argument("--roles", type=int, default=200, help="distinct roles for first (uncached) logins")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-auth-") as tmp, server(Path(tmp) / "node") as proc:
        s = session()
        created_s = create_tables(s, args.tables)
        print(f"created {args.tables} tables in {created_s:.1f}s", flush=True)
        for i in range(args.roles):
            s.execute(f"CREATE ROLE r{i} WITH LOGIN = true AND PASSWORD = 'p{i}'")
        desc = measure_desc(s, proc, args.rounds)
        summary = latency_summary_ms(desc["latencies_us"])
        emit(
            {
                "benchmark": "auth",
                "workload": f"desc_schema_{args.tables}_tables",
                "ops_per_s": 1e6 / sorted(desc["latencies_us"])[len(desc["latencies_us"]) // 2],
                **summary,
                "rows": desc["rows"],
                "server_cpu_us_per_op": desc["server_cpu_s"] * 1e6,
                "goal_ms": 1000,
            }
        )
        first = [(f"r{i}", f"p{i}") for i in range(args.roles)]
        rate, lat = asyncio.run(logins(first, args.concurrency))
        emit(
            {
                "benchmark": "auth",
                "workload": "login_first_verification",
                "ops_per_s": rate,
                **latency_summary_ms(lat),
            }
        )
        cached = [("cassandra", "cassandra")] * args.logins
        rate, lat = asyncio.run(logins(cached, args.concurrency))
        emit({"benchmark": "auth", "workload": "login_cached", "ops_per_s": rate, **latency_summary_ms(lat)})
    emit(
        {
            "benchmark": "auth",
            "workload": "sha512_crypt_verify_in_process",
            "ops_per_s": verifications_per_second(),
        }
    )


if __name__ == "__main__":
    main()
