"""Three Raft processes on group0's shell over loopback: kill -9 the leader during 1,000 proposals.

Every proposal acknowledged to the client must be in every node's committed log afterwards, and
all committed logs must be identical. The members are `tests.harness.raft_member` processes:
`RaftDriver` with a state machine that keeps the applied entries.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tabletdb.net.rpc import RpcError, RpcNode

REPO = Path(__file__).resolve().parents[4]

PROPOSALS = 1000
CONCURRENCY = 16


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.ports = dict(zip((1, 2, 3), _free_ports(3)))
        self.peers = ",".join(f"{i}=127.0.0.1:{p}" for i, p in self.ports.items())
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, node: int) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.harness.raft_member", "--id", str(node), "--dir",
             str(self.tmp / f"n{node}"), "--peers", self.peers],
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": "0"},
            cwd=REPO,
        )  # fmt: skip
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"ready")
        self.procs[node] = proc

    def kill(self, node: int) -> None:
        proc = self.procs.pop(node)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def stop_all(self) -> None:
        for node in list(self.procs):
            self.kill(node)


async def _leader(client: RpcNode, alive: set[int]) -> int | None:
    for node in sorted(alive):
        try:
            status: dict[str, Any] = await client.call(node, "raft.status", timeout=0.5)
        except (RpcError, OSError):
            continue
        if status["role"] == "leader":
            return node
    return None


async def _drive(cluster: Cluster) -> None:
    client = RpcNode(99)
    for node, port in cluster.ports.items():
        client.add_peer(node, "127.0.0.1", port)
    alive = {1, 2, 3}
    acked: set[bytes] = set()
    todo = [f"cmd-{i}".encode() for i in range(PROPOSALS)]
    state: dict[str, Any] = {"leader": None, "killed": None}

    async def propose(data: bytes) -> None:
        while True:
            leader = state["leader"]
            if leader is None or leader not in alive:
                await asyncio.sleep(0.05)
                state["leader"] = await _leader(client, alive)
                continue
            try:
                await client.call(leader, "raft.propose", data, timeout=3.0)
                acked.add(data)
                return
            except (RpcError, OSError):
                state["leader"] = None  # not leader, dead, or timed out: find the leader and retry

    async def worker(items: list[bytes]) -> None:
        for data in items:
            await propose(data)
            if len(acked) >= PROPOSALS // 3 and state["killed"] is None and state["leader"] is not None:
                victim = state["leader"]
                state["killed"] = victim
                alive.discard(victim)
                cluster.kill(victim)
                state["leader"] = None
            if (
                len(acked) >= 2 * PROPOSALS // 3
                and state["killed"] is not None
                and state["killed"] not in alive
            ):
                cluster.start(state["killed"])
                alive.add(state["killed"])

    await asyncio.gather(*(worker(todo[i::CONCURRENCY]) for i in range(CONCURRENCY)))
    assert state["killed"] is not None
    assert len(acked) == PROPOSALS

    dumps: dict[int, list[list[Any]]] = {}
    while True:  # wait for the restarted node to catch up (bounded by the test's overall budget)
        dumps = {n: await client.call(n, "raft.dump", timeout=30.0) for n in sorted(alive)}
        if len({len(d) for d in dumps.values()}) == 1:
            break
        await asyncio.sleep(0.05)
    logs = list(dumps.values())
    assert all(d == logs[0] for d in logs), "committed logs differ between nodes"
    committed = {bytes(entry[2]) for entry in logs[0]}
    lost = acked - committed
    assert not lost, f"{len(lost)} acknowledged proposals missing from the committed log"
    await client.stop()


def test_kill_leader_during_proposals(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    try:
        for node in (1, 2, 3):
            cluster.start(node)
        asyncio.run(asyncio.wait_for(_drive(cluster), timeout=300))
    finally:
        cluster.stop_all()
