"""Benchmark: server CPU per prepared INSERT and SELECT, in one process, with no sockets or driver.

The end-to-end benchmark (bench_data_path) shares two cores with the driver and, on this box,
with other people's work, so its CPU per op moves by tens of percent from run to run. This one
drives the real server stack - `_ClientProtocol` (frame decode, dispatch, write coalescing),
`QueryProcessor`, the data path and tablet stores on disk with the group commit's worker
threads - with EXECUTE frames handed to `data_received` in pipelined bursts of `--concurrency`,
as a driver's connection delivers them, and collects the response frames from a fake transport.
CPU is the process's own (`time.process_time`, all threads), so other processes' load barely
moves it. Without sockets and epoll it is a lower bound of the served figure.

Reproduce: `.venv/bin/python -m bench.bench_request_path [--requests N] [--concurrency N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import struct
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from bench.common import RESULT_PREFIX
from tabletdb.cql.results import PreparedResult
from tabletdb.node.gc_tuning import tune_for_serving
from tabletdb.protocol.frames import HEADER, OpCode
from tabletdb.protocol.requests import QF_DEFAULT_TIMESTAMP, QF_PAGE_SIZE, QF_SKIP_METADATA, QF_VALUES
from tabletdb.protocol.server import CqlServer, _ClientProtocol
from tests.unit.query.data_harness import DataNode

INSERT = "INSERT INTO bench.kv (k, v) VALUES (?, ?)"
SELECT = "SELECT k, v FROM bench.kv WHERE k = ?"
LOCAL_ONE = 0x000A


class _Transport:
    """Collects what the server writes; counts response frames."""

    def __init__(self) -> None:
        self.frames = 0
        self.closed = False
        self._target = 0
        self._reached: asyncio.Future[None] | None = None

    async def wait_for(self, frames: int) -> None:
        """Until ``frames`` response frames have been written, sleeping (not spinning) as the
        served loop would in epoll: a busy wait would count as CPU the time a commit's fsync
        takes."""
        if self.frames >= frames:
            return
        self._target = frames
        self._reached = asyncio.get_running_loop().create_future()
        await self._reached

    def write(self, data: bytes) -> None:
        pos = 0
        while pos < len(data):
            length = HEADER.unpack_from(data, pos)[4]
            if data[pos + 4] == OpCode.ERROR:
                raise RuntimeError(f"the server answered an error: {data[pos + 9 : pos + 9 + length]!r}")
            pos += HEADER.size + length
            self.frames += 1
        if self._reached is not None and self.frames >= self._target and not self._reached.done():
            self._reached.set_result(None)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def _frame(stream: int, opcode: int, body: bytes) -> bytes:
    return HEADER.pack(4, 0, stream, opcode, len(body)) + body


def _execute_body(query_id: bytes, values: list[bytes], timestamp: int) -> bytes:
    """EXECUTE as scylla-driver sends it: values, skip metadata, page size, client timestamp."""
    flags = QF_VALUES | QF_SKIP_METADATA | QF_PAGE_SIZE | QF_DEFAULT_TIMESTAMP
    out = bytearray(struct.pack(">H", len(query_id)) + query_id)
    out += struct.pack(">HBH", LOCAL_ONE, flags, len(values))
    for value in values:
        out += struct.pack(">i", len(value)) + value
    out += struct.pack(">iq", 5000, timestamp)
    return bytes(out)


async def _setup(node: DataNode, keys: int) -> None:
    await node.run(
        "CREATE KEYSPACE bench WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
    )
    await node.run("CREATE TABLE bench.kv (k int PRIMARY KEY, v text)")
    for start in range(0, keys, 500):
        batch = "".join(
            f"INSERT INTO bench.kv (k, v) VALUES ({k}, '{k:016x}');"
            for k in range(start, min(keys, start + 500))
        )
        await node.run(f"BEGIN UNLOGGED BATCH {batch} APPLY BATCH")


async def _drive(
    node: DataNode, statement: str, requests: int, concurrency: int, keys: int
) -> dict[str, Any]:
    server = CqlServer(node.processor, nr_shards=2)
    protocol = _ClientProtocol(server, shard_aware=False)
    transport = _Transport()
    protocol.connection_made(cast(asyncio.BaseTransport, transport))
    protocol.data_received(
        _frame(0, OpCode.STARTUP, struct.pack(">H", 1) + _string("CQL_VERSION") + _string("3.0.0"))
    )
    prepared = await node.processor.prepare(node.client, statement)
    assert isinstance(prepared, PreparedResult)
    rng = random.Random(7)
    bursts = []
    for burst in range(requests // concurrency):
        frames = []
        for stream in range(concurrency):
            k = rng.randrange(keys)
            values = [struct.pack(">i", k)] + (
                [f"{rng.getrandbits(64):016x}".encode()] if "INSERT" in statement else []
            )
            frames.append(
                _frame(stream, OpCode.EXECUTE, _execute_body(prepared.id, values, burst * 1000 + stream))
            )
        bursts.append(b"".join(frames))
    await asyncio.sleep(0.05)
    expected = transport.frames
    cpu, wall = time.process_time(), time.perf_counter()
    for data in bursts:
        protocol.data_received(data)
        expected += concurrency
        await transport.wait_for(expected)
    node.storage.write_deferred()  # what the writes left for later is their cost too
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    done = len(bursts) * concurrency
    return {
        "requests": done,
        "cpu_us_per_op": cpu / done * 1e6,
        "ops_per_cpu_s": done / cpu,
        "ops_per_s": done / wall,
    }


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


async def _main(args: argparse.Namespace, profiler: Any = None) -> dict[str, Any]:
    figures: dict[str, Any] = {"benchmark": "request_path", "concurrency": args.concurrency}
    with tempfile.TemporaryDirectory(prefix="bench-request-path-") as tmp:
        node = DataNode(Path(tmp), commitlog_sync_period_s=args.commitlog_sync_period_s)
        try:
            await _setup(node, args.keys)
            tune_for_serving()  # as the node does once it serves
            if profiler is not None:
                profiler.enable()  # the loads only, not the set-up's parsing and batches
            for name, statement in (("insert", INSERT), ("select", SELECT)):
                runs = [
                    await _drive(node, statement, args.requests, args.concurrency, args.keys)
                    for _ in range(args.repeat)
                ]
                figures[name] = min(runs, key=lambda r: r["cpu_us_per_op"])
                figures[name]["runs_cpu_us_per_op"] = [round(r["cpu_us_per_op"], 1) for r in runs]
        finally:
            node.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per statement; the lowest CPU is kept")
    parser.add_argument(
        "--profile", type=Path, help="write a cProfile of the loads (not the set-up) to this file"
    )
    parser.add_argument(
        "--commitlog-sync-period-s",
        type=float,
        default=10.0,
        help="the node's default (periodic, 10 s); 0 or less: batch mode, a sync per record",
    )
    args = parser.parse_args()
    if args.commitlog_sync_period_s <= 0:
        args.commitlog_sync_period_s = None
    import uvloop

    uvloop.install()  # as the node runs
    if args.profile is None:
        figures = asyncio.run(_main(args))
    else:
        import cProfile

        profiler = cProfile.Profile(time.thread_time)  # the loop thread's CPU, not wall time
        figures = asyncio.run(_main(args, profiler))
        profiler.disable()
        profiler.dump_stats(str(args.profile))
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
