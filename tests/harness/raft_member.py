"""One Raft member as an OS process, run by group0's real shell (`node.group0_shell.raft`).

The Raft crash test and `bench/bench_raft.py` drive members over RPC without the rest of a node,
so this wraps `RaftDriver` with the smallest state machine that lets them check and measure it:
the applied entries themselves, in order (snapshotted and restored whole, so a restarted or
lagging member still reports every entry). Founding members share one fixed member list.

RPC verbs (on the member's own RPC port, next to the shell's ``g0.msg``):
``raft.propose`` (data -> its index once this member, the leader, applied it; payloads are unique,
a repeated one waits for the same entry), ``raft.status`` (the shell's status plus the log's fsync
count and seconds spent persisting), ``raft.dump`` (applied entries as [index, term, data]).

usage: python -m tests.harness.raft_member --id 1 --dir D --peers 1=127.0.0.1:7001,2=...
(prints ``ready <id>`` once serving).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgpack

from tabletdb.net.rpc import RpcNode
from tabletdb.node.group0_shell.raft import RaftDriver
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.storage_fs import OsFileSystem
from tabletdb.raft.types import ConfState, Entry, HardState, NodeId, Snapshot

PROPOSE_TIMEOUT = 5.0


class NotLeader(Exception):
    pass


class TimedLog(DurableLog):
    """The durable log, counting fsyncs and the time spent writing (what a benchmark reports)."""

    def __init__(self, directory: str) -> None:
        self.syncs = 0
        self.persist_seconds = 0.0
        super().__init__(OsFileSystem(directory))

    def append(self, entries: Sequence[Entry]) -> None:
        started = time.perf_counter()
        super().append(entries)
        self.persist_seconds += time.perf_counter() - started

    def set_hard_state(self, hs: HardState) -> None:
        started = time.perf_counter()
        super().set_hard_state(hs)
        self.persist_seconds += time.perf_counter() - started

    def sync(self) -> None:
        started = time.perf_counter()
        super().sync()
        self.syncs += 1
        self.persist_seconds += time.perf_counter() - started


Applied = list[list[Any]]
"""[index, term, data] per applied entry, in order."""


class RaftMember:
    """A founding member: `peers` maps every member's id (this one's too) to its address."""

    def __init__(self, node_id: NodeId, directory: str, peers: dict[NodeId, tuple[str, int]]) -> None:
        self.id = node_id
        self.peers = peers
        self.store = TimedLog(directory)
        if self.store.last_index() == 0 and self.store.snapshot_meta.index == 0:
            self.store.bootstrap(ConfState(voters=frozenset(peers)))
        self.applied: Applied = _decode(self.store.snapshot().data)
        host, port = peers[node_id]
        self.rpc = RpcNode(node_id, host, port)
        self.driver = RaftDriver(node_id, self.rpc, self.store, self._apply, self._install, self._capture)
        self._waiting: dict[bytes, asyncio.Future[int]] = {}

    async def start(self) -> None:
        self.rpc.register("raft.propose", self._on_propose)
        self.rpc.register("raft.status", self._on_status)
        self.rpc.register("raft.dump", self._on_dump)
        await self.rpc.start()
        for peer, (host, port) in self.peers.items():
            self.driver.add_peer(peer, host, port)
        await self.driver.start()

    async def stop(self) -> None:
        await self.driver.stop()
        await self.rpc.stop()

    # --- the state machine -------------------------------------------------------------------------

    def _apply(self, entries: list[Entry]) -> None:
        for entry in entries:
            self.applied.append([entry.index, entry.term, entry.data])
            fut = self._waiting.pop(entry.data, None)
            if fut is not None and not fut.done():
                fut.set_result(entry.index)

    def _install(self, snapshot: Snapshot) -> None:
        self.applied = _decode(snapshot.data)

    def _capture(self) -> Callable[[], bytes]:
        applied = list(self.applied)  # entries are never changed, only appended
        return lambda: msgpack.packb(applied, use_bin_type=True)

    # --- RPC handlers ------------------------------------------------------------------------------

    async def _on_propose(self, src: int, payload: Any) -> int:
        if not self.driver.is_leader:
            raise NotLeader(f"node {self.id} is not the leader; leader={self.driver.raft.leader}")
        data = bytes(payload)
        fut = self._waiting.get(data)
        if fut is None:
            fut = self._waiting[data] = asyncio.get_running_loop().create_future()
        self.driver.propose(data)
        return await asyncio.wait_for(asyncio.shield(fut), timeout=PROPOSE_TIMEOUT)

    async def _on_status(self, src: int, payload: Any) -> dict[str, Any]:
        return {
            **self.driver.status(),
            "syncs": self.store.syncs,
            "persist_seconds": self.store.persist_seconds,
        }

    async def _on_dump(self, src: int, payload: Any) -> Applied:
        return self.applied


def _decode(data: bytes) -> Applied:
    if not data:
        return []
    applied: Applied = msgpack.unpackb(data, raw=False)
    return applied


def parse_peers(text: str) -> dict[NodeId, tuple[str, int]]:
    peers: dict[NodeId, tuple[str, int]] = {}
    for item in text.split(","):
        node, _, address = item.partition("=")
        host, _, port = address.rpartition(":")
        peers[int(node)] = (host, int(port))
    return peers


async def _serve(args: argparse.Namespace) -> None:
    member = RaftMember(args.id, args.dir, parse_peers(args.peers))
    await member.start()
    print(f"ready {args.id}", flush=True)
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run one Raft member on group0's shell.")
    parser.add_argument("--id", type=int, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--peers", required=True, help="id=host:port,... for every member, this one included")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(_serve(args))


if __name__ == "__main__":
    main()
