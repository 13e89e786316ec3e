"""The real shell around the Raft core: asyncio ticks, RPC transport and the durable log on disk.

`RaftHost` drives `RaftNode` by the contract in `raft.types`: for each Ready it persists the
snapshot, entries and hard state and fsyncs once (group commit), then sends the messages, then
applies committed entries and calls `advance`. With `batch` on (the default) an incoming proposal
or message does not produce a Ready at once: processing is deferred to the end of the event-loop
iteration, so every proposal and message read from the sockets in that iteration shares one Ready
and one fsync. With `batch` off each input is processed on arrival (one fsync per proposal); the
benchmark (bench/bench_raft.py) measures both. Messages to each peer leave through one queue
and sender task as one-way RPCs, so a slow or dead peer never blocks the others; failed sends
(the connection cannot be opened or written) are reported to the core (`report_unreachable`,
`report_snapshot`) so flow control recovers.

RPC verbs: ``raft.msg`` (one-way, a Raft message), ``raft.propose`` (request: data -> index once
this leader applied it), ``raft.status`` (role, term, indexes, counts of Readies and fsyncs and the
seconds spent persisting, so a benchmark sees entries per fsync and the disk's pace during the run)
and ``raft.dump`` (committed entries, for tests).

Run one host as a process: ``python -m tabletdb.net.raft_host --id 1 --dir D --peers
1=127.0.0.1:7001,2=...`` (every founding member lists the same peers; ``--no-batch`` turns batching off).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import time
from typing import Any

from tabletdb.net.rpc import RpcNode
from tabletdb.raft import codec
from tabletdb.raft.core import RaftNode
from tabletdb.raft.errors import RaftError
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import Config, ConfState, EntryKind, Message, MessageType, NodeId, Ready, Role

log = logging.getLogger(__name__)


class NotLeader(Exception):
    pass


class RaftHost:
    def __init__(
        self,
        node_id: NodeId,
        directory: str,
        peers: dict[NodeId, tuple[str, int]],
        tick_seconds: float = 0.02,
        config: Config | None = None,
        batch: bool = True,
    ) -> None:
        self.id = node_id
        self.directory = directory
        self.peers = peers
        self.tick_seconds = tick_seconds
        self.batch = batch
        self.config = config or Config(id=node_id, election_tick=10, heartbeat_tick=1, seed=node_id)
        host, port = peers[node_id]
        self.rpc = RpcNode(node_id, host, port)
        self.log_store: DurableLog | None = None
        self.raft: RaftNode | None = None
        self._outboxes: dict[NodeId, asyncio.Queue[Message]] = {}
        self._waiting: dict[bytes, asyncio.Future[int]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._process_scheduled = False
        self.readies = 0
        self.syncs = 0
        self.persist_seconds = 0.0

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        store = DurableLog.open(self.directory)
        if store.last_index() == 0 and store.hard_state.term == 0:
            store.bootstrap(ConfState(voters=frozenset(self.peers)))
        self.log_store = store
        self.raft = RaftNode(self.config, store)
        for peer, (host, port) in self.peers.items():
            if peer != self.id:
                self.rpc.add_peer(peer, host, port)
                self._outboxes[peer] = asyncio.Queue()
                self._tasks.append(asyncio.create_task(self._sender(peer)))
        self.rpc.register("raft.msg", self._on_message)
        self.rpc.register("raft.propose", self._on_propose)
        self.rpc.register("raft.status", self._on_status)
        self.rpc.register("raft.dump", self._on_dump)
        await self.rpc.start()
        self._tasks.append(asyncio.create_task(self._ticker()))
        self._process()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await self.rpc.stop()

    # --- driving the core ----------------------------------------------------------------------

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(self.tick_seconds)
            assert self.raft is not None
            self.raft.tick()
            self._process()

    def _kick(self) -> None:
        """Process new input now (batching off) or once, at the end of this loop iteration."""
        if not self.batch:
            self._process()
        elif not self._process_scheduled:
            self._process_scheduled = True
            asyncio.get_running_loop().call_soon(self._process_deferred)

    def _process_deferred(self) -> None:
        self._process_scheduled = False
        self._process()

    def _process(self) -> None:
        raft, store = self.raft, self.log_store
        assert raft is not None and store is not None
        while raft.has_ready():
            rd = raft.ready()
            self.readies += 1
            started = time.perf_counter()
            self.syncs += self._persist(store, rd)
            self.persist_seconds += time.perf_counter() - started
            for m in rd.messages:
                self._outboxes[m.dst].put_nowait(m)
            for entry in rd.committed_entries:
                if entry.kind == EntryKind.NORMAL:
                    fut = self._waiting.pop(entry.data, None)
                    if fut is not None and not fut.done():
                        fut.set_result(entry.index)
            raft.advance(rd)

    @staticmethod
    def _persist(store: DurableLog, rd: Ready) -> int:
        """Persist the Ready durably; returns 1 if it had anything to write (one fsync), else 0."""
        writes = rd.snapshot is not None or bool(rd.entries) or rd.hard_state is not None
        if rd.snapshot is not None:
            store.apply_snapshot(rd.snapshot)
        store.append(rd.entries)
        if rd.hard_state is not None:
            store.set_hard_state(rd.hard_state)
        store.sync()
        return int(writes)

    async def _sender(self, peer: NodeId) -> None:
        queue = self._outboxes[peer]
        while True:
            m = await queue.get()
            ok = await self.rpc.send(peer, "raft.msg", codec.message_to_obj(m))
            if self.raft is None:
                continue
            if not ok:
                self.raft.report_unreachable(peer)
            if m.type == MessageType.SNAPSHOT:
                self.raft.report_snapshot(peer, ok)
            if not ok or m.type == MessageType.SNAPSHOT:
                self._process()

    # --- RPC handlers --------------------------------------------------------------------------

    async def _on_message(self, src: int, payload: Any) -> None:
        assert self.raft is not None
        m = codec.message_from_obj(payload)
        if m.dst == self.id:
            self.raft.step(m)
            self._kick()

    async def _on_propose(self, src: int, payload: Any) -> int:
        raft = self.raft
        assert raft is not None
        if raft.role != Role.LEADER:
            raise NotLeader(f"node {self.id} is not the leader; leader={raft.leader}")
        data = bytes(payload)
        fut = self._waiting.get(data)
        if fut is None:
            fut = self._waiting[data] = asyncio.get_running_loop().create_future()
        try:
            raft.propose(data)
        except RaftError as exc:
            raise NotLeader(str(exc)) from exc
        self._kick()
        return await asyncio.wait_for(asyncio.shield(fut), timeout=5.0)

    async def _on_status(self, src: int, payload: Any) -> dict[str, Any]:
        raft = self.raft
        assert raft is not None
        return {
            "id": self.id,
            "role": raft.role.name,
            "term": raft.term,
            "leader": raft.leader,
            "commit": raft.commit_index,
            "applied": raft.applied,
            "readies": self.readies,
            "syncs": self.syncs,
            "persist_seconds": self.persist_seconds,
        }

    async def _on_dump(self, src: int, payload: Any) -> list[list[Any]]:
        """Committed entries from the durable log as [index, term, data] (tests compare nodes)."""
        raft, store = self.raft, self.log_store
        assert raft is not None and store is not None
        hi = min(raft.commit_index, store.last_index())
        return [[e.index, e.term, e.data] for e in store.entries(store.first_index(), hi + 1)]


def _parse_peers(text: str) -> dict[NodeId, tuple[str, int]]:
    peers: dict[NodeId, tuple[str, int]] = {}
    for item in text.split(","):
        node, _, address = item.partition("=")
        host, _, port = address.rpartition(":")
        peers[int(node)] = (host, int(port))
    return peers


async def _serve(args: argparse.Namespace) -> None:
    host = RaftHost(args.id, args.dir, _parse_peers(args.peers), tick_seconds=args.tick, batch=args.batch)
    await host.start()
    print(f"ready {args.id}", flush=True)
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run one Raft host (the durable log + RPC shell).")
    parser.add_argument("--id", type=int, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--peers", required=True, help="id=host:port,... for every member, this one included")
    parser.add_argument("--tick", type=float, default=0.02, help="seconds per Raft tick")
    parser.add_argument(
        "--no-batch",
        dest="batch",
        action="store_false",
        help="process each proposal and message on arrival (one fsync each) instead of per loop iteration",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(_serve(args))


if __name__ == "__main__":
    main()
