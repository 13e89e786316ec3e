"""The asyncio shell that runs group0's Raft core: ticks, the durable log, RPC and snapshots.

It is the project's one Raft shell: members are added at run time (a peer's address is learnt
from the replicated topology), the state machine comes in as an applier, an installer and a
snapshot capture, and it serves read barriers. The Raft crash test and benchmark run it too,
around a state machine that only keeps the applied entries (`tests.harness.raft_member`).

Each Ready is handled in the order `raft.types` requires: persist (snapshot, entries, hard
state, one fsync), send, apply, advance. Messages to each peer leave through a queue and a
sender task of their own, so a dead peer never delays the others; a failed send is reported to
the core so flow control recovers. When the applied index is `snapshot_every` past the last
snapshot, the applied state is snapshotted and the log before it is dropped. The state is an
immutable value, so it is captured at once and encoded in a worker thread: a snapshot costs
what the whole state costs, and encoding it on the event loop stalled every request for it.

An entry (or snapshot) the state machine cannot apply halts the driver for good: it logs the
entry's index, term and the error at ERROR, stops processing (no more applies, acks, votes or
ticks) and tells its owner, which stops the node with a non-zero exit. Skipping the entry would
let this node's state go its own way; waiting would keep commit and applied index apart for good
and stall every request that waits on applying. A restarted node replays the same entry and
halts the same way, until an operator deals with it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

from tabletdb.net.rpc import RpcNode
from tabletdb.raft import codec
from tabletdb.raft.core import RaftNode
from tabletdb.raft.errors import NotLeaderError
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import (
    ConfChange,
    Config,
    ConfState,
    Entry,
    EntryKind,
    Message,
    MessageType,
    NodeId,
    Ready,
    Role,
    Snapshot,
)

log = logging.getLogger(__name__)

MSG_VERB = "g0.msg"
TICK_SECONDS = 0.05
ELECTION_TICKS = 20
"""1-2 s election timeout at 50 ms ticks: slow enough for a loaded 2-core CI machine."""
SNAPSHOT_EVERY = int(os.environ.get("TABLETDB_GROUP0_SNAPSHOT_EVERY", "1000"))
"""Fewest entries between snapshots (an environment override lets tests force log truncation:
then exactly that many, whatever their size)."""
SNAPSHOT_FIXED = "TABLETDB_GROUP0_SNAPSHOT_EVERY" in os.environ
RETRY_SECONDS = 0.05

Applier = Callable[[list[Entry]], None]
Installer = Callable[[Snapshot], None]
Capture = Callable[[], Callable[[], bytes]]
"""Capture the applied state now; the returned function encodes it (safe in another thread)."""


class ApplyFailed(Exception):
    """The committed entry (or snapshot) at `index`, of `term`, could not be applied here;
    the applier raises it from the error to name the entry at fault."""

    def __init__(self, index: int, term: int, cause: BaseException) -> None:
        super().__init__(f"index={index} term={term}: {type(cause).__name__}: {cause}")
        self.index = index
        self.term = term
        self.cause = cause


class Halted(RuntimeError):
    """The driver halted on an entry it could not apply; nothing more is done through it."""


Halter = Callable[[ApplyFailed], None]


class RaftDriver:
    def __init__(
        self,
        raft_id: NodeId,
        rpc: RpcNode,
        store: DurableLog,
        apply: Applier,
        install: Installer,
        snapshot_capture: Capture,
        snapshot_every: int = SNAPSHOT_EVERY,
        on_halt: Halter | None = None,
    ) -> None:
        self.id = raft_id
        self.rpc = rpc
        self.store = store
        self._apply = apply
        self._install = install
        self._snapshot_capture = snapshot_capture
        self._snapshotting: asyncio.Task[None] | None = None
        self.snapshot_every = snapshot_every
        self.snapshot_by_size = not SNAPSHOT_FIXED
        """Also wait until the log since the last snapshot is as big as that snapshot."""
        self._log_bytes = 0
        """Bytes of entries persisted since the last snapshot was captured or installed."""
        self._snapshot_bytes = 0
        """Size of the last snapshot taken or installed here (0: none yet, count entries only)."""
        config = Config(id=raft_id, election_tick=ELECTION_TICKS, heartbeat_tick=2, seed=raft_id & 0xFFFFFFFF)
        self.raft = RaftNode(config, store)
        self._outboxes: dict[NodeId, asyncio.Queue[Message]] = {}
        self._reads: dict[bytes, asyncio.Future[int]] = {}
        self._applied_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Event()
        self._on_halt = on_halt
        self.halted: ApplyFailed | None = None
        """Set once an entry could not be applied: the driver then does nothing more."""

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        self.rpc.register(MSG_VERB, self._on_message)
        self._tasks.append(asyncio.create_task(self._ticker()))
        self.process()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._snapshotting is not None:  # let it finish: the store must not change under it
            await asyncio.gather(self._snapshotting, return_exceptions=True)
        self.store.sync()

    def add_peer(self, peer: NodeId, host: str, port: int) -> None:
        """Route messages for `peer` to host:port (idempotent; called as members are learnt)."""
        if peer == self.id:
            return
        self.rpc.add_peer(peer, host, port)
        if peer not in self._outboxes:
            self._outboxes[peer] = asyncio.Queue()
            self._tasks.append(asyncio.create_task(self._sender(peer)))

    # --- observers -------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.raft.role == Role.LEADER

    @property
    def conf_state(self) -> ConfState:
        return self.raft.conf_state

    def status(self) -> dict[str, Any]:
        conf = self.raft.conf_state
        return {
            "server_id": self.id,
            "role": self.raft.role.name.lower(),
            "term": self.raft.term,
            "commit_index": self.raft.commit_index,
            "applied_index": self.raft.applied,
            "leader": self.raft.leader,
            "voters": sorted(conf.voters),
            "learners": sorted(conf.learners),
            "snapshot_index": self.store.snapshot_meta.index,
        }

    async def changed(self) -> None:
        """Wait until the next Ready was handled (role, leader or applied index may differ)."""
        self._changed.clear()
        await self._changed.wait()

    # --- requests --------------------------------------------------------------------------------

    def propose(self, data: bytes) -> None:
        """Hand `data` to the leader (NotLeaderError while no leader is known)."""
        self._refuse_if_halted()
        self.raft.propose(data)
        self.process()

    def propose_conf_change(self, cc: ConfChange) -> None:
        self.raft.propose_conf_change(cc)
        self.process()

    def campaign(self) -> None:
        self.raft.campaign()
        self.process()

    async def read_barrier(self) -> None:
        """Return once everything committed before the call is applied here (linearizable read).

        Retries while no leader is known or a request is lost to a leader change; the caller
        bounds the total time.
        """
        while True:
            self._refuse_if_halted()
            context = os.urandom(16)
            fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            self._reads[context] = fut
            try:
                self.raft.read_index(context)
                self.process()
                index = await asyncio.wait_for(fut, timeout=ELECTION_TICKS * TICK_SECONDS * 2)
            except (NotLeaderError, TimeoutError):
                await asyncio.sleep(RETRY_SECONDS)
                continue
            finally:
                self._reads.pop(context, None)
            await self.wait_applied(index)
            return

    async def wait_applied(self, index: int) -> None:
        if self.raft.applied >= index:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._applied_waiters.append((index, fut))
        await fut

    def trigger_snapshot(self) -> int:
        """Snapshot the applied state now; the snapshot's index (0 if nothing new to snapshot)."""
        applied = self.raft.applied
        if applied <= self.store.snapshot_meta.index:
            return 0
        meta = self.raft.snapshot_meta()
        data = self._snapshot_capture()()
        self.store.apply_snapshot(Snapshot(meta, data))
        self._log_bytes, self._snapshot_bytes = 0, len(data)
        log.info("group0 snapshot index=%d", meta.index)
        return meta.index

    def _snapshot_in_background(self) -> None:
        """Start a snapshot of the applied state unless one is being encoded already."""
        if self._snapshotting is not None and not self._snapshotting.done():
            return
        meta = self.raft.snapshot_meta()
        encode = self._snapshot_capture()
        self._log_bytes = 0

        async def finish() -> None:
            data = await asyncio.to_thread(encode)
            if meta.index > self.store.snapshot_meta.index:  # not overtaken by an installed one
                self.store.apply_snapshot(Snapshot(meta, data))
                self._snapshot_bytes = len(data)
                log.info("group0 snapshot index=%d bytes=%d", meta.index, len(data))

        self._snapshotting = asyncio.create_task(finish())

    # --- driving the core ------------------------------------------------------------------------

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            if self.halted is None:
                self.raft.tick()
                self.process()

    def process(self) -> None:
        if self.halted is not None:
            return
        raft = self.raft
        while raft.has_ready():
            rd = raft.ready()
            self._persist(rd)
            for m in rd.messages:
                self._outbox(m.dst).put_nowait(m)
            if not self._apply_ready(rd):
                return  # halted: the Ready is never advanced, nothing after it is applied
            for rs in rd.read_states:
                fut = self._reads.get(rs.context)
                if fut is not None and not fut.done():
                    fut.set_result(rs.index)
            raft.advance(rd)
        self._wake_applied()
        if self._snapshot_due():
            self._snapshot_in_background()
        self._changed.set()

    def _apply_ready(self, rd: Ready) -> bool:
        """Install the Ready's snapshot and apply its new committed entries; False (and the
        driver halted) if the state machine could not."""
        normal = [
            e for e in rd.committed_entries if e.kind == EntryKind.NORMAL and e.index > self.raft.applied
        ]
        try:
            if rd.snapshot is not None:
                try:
                    self._install(rd.snapshot)
                except Exception as exc:
                    raise ApplyFailed(rd.snapshot.meta.index, rd.snapshot.meta.term, exc) from exc
            if normal:
                try:
                    self._apply(normal)
                except ApplyFailed:
                    raise
                except Exception as exc:  # an applier that cannot say which entry: the first
                    raise ApplyFailed(normal[0].index, normal[0].term, exc) from exc
        except ApplyFailed as failure:
            self._halt(failure)
            return False
        return True

    def _halt(self, failure: ApplyFailed) -> None:
        self.halted = failure
        log.error(
            "group0 entry index=%d term=%d could not be applied on this node, which stops now "
            "(it would stop on it again after a restart): %s: %s",
            failure.index,
            failure.term,
            type(failure.cause).__name__,
            failure.cause,
            exc_info=failure.cause,
        )
        self._changed.set()
        if self._on_halt is not None:
            self._on_halt(failure)

    def _refuse_if_halted(self) -> None:
        if self.halted is not None:
            raise Halted(f"group0 halted on an entry it could not apply ({self.halted})")

    def _snapshot_due(self) -> bool:
        """Every `snapshot_every` entries, and not before the log since the last snapshot is as
        big as that snapshot: a snapshot encodes the whole state, so at a fixed count its cost
        per entry grew with the schema (at 2,000 tablet tables one every 1,000 entries doubled
        the mean CREATE TABLE cost). Sized this way a snapshot costs a constant per byte logged,
        and a restart replays at most about one snapshot's worth of log."""
        if self.raft.applied - self.store.snapshot_meta.index < self.snapshot_every:
            return False
        return not self.snapshot_by_size or self._log_bytes >= self._snapshot_bytes

    def _persist(self, rd: Ready) -> None:
        """Make what the Ready's messages promise durable. A hard state that only moves the commit
        index promises nothing (a restarted node relearns commit from the leader), so it rides
        along with the next fsync instead of costing one of its own."""
        store = self.store
        if rd.snapshot is not None and rd.snapshot.meta.index > store.snapshot_meta.index:
            store.apply_snapshot(rd.snapshot)
            self._log_bytes, self._snapshot_bytes = 0, len(rd.snapshot.data)
        store.append(rd.entries)
        self._log_bytes += sum(len(e.data) for e in rd.entries)
        before = store.hard_state
        if rd.hard_state is not None:
            store.set_hard_state(rd.hard_state)
        votes_changed = (before.term, before.vote) != (store.hard_state.term, store.hard_state.vote)
        if rd.entries or rd.snapshot is not None or votes_changed:
            store.sync()

    def _wake_applied(self) -> None:
        applied = self.raft.applied
        keep: list[tuple[int, asyncio.Future[None]]] = []
        for index, fut in self._applied_waiters:
            if index <= applied:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((index, fut))
        self._applied_waiters = keep

    def _outbox(self, peer: NodeId) -> asyncio.Queue[Message]:
        box = self._outboxes.get(peer)
        if box is None:  # address not learnt yet: the sender reports it unreachable until it is
            box = self._outboxes[peer] = asyncio.Queue()
            self._tasks.append(asyncio.create_task(self._sender(peer)))
        return box

    async def _sender(self, peer: NodeId) -> None:
        queue = self._outboxes[peer]
        while True:
            m = await queue.get()
            ok = await self.rpc.send(peer, MSG_VERB, codec.message_to_obj(m))
            if not ok:
                self.raft.report_unreachable(peer)
            if m.type == MessageType.SNAPSHOT:
                self.raft.report_snapshot(peer, ok)
            if not ok or m.type == MessageType.SNAPSHOT:
                self.process()

    async def _on_message(self, src: int, payload: Any) -> None:
        m = codec.message_from_obj(payload)
        if m.dst == self.id and self.halted is None:
            self.raft.step(m)
            self.process()
