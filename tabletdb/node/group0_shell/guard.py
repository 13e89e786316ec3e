"""A cluster-wide turn for schema changes, granted by the group0 leader in arrival order.

The state-id guard makes concurrent schema changes safe, but not fair: the leader applies its
own commands one hop earlier than followers do, so under a steady stream of DDL on the leader
a follower's command is always built on a state that has already moved on, and it starves.
Taking a turn from the leader first (a FIFO lock with a lease) serialises deciders across the
cluster, so a command is almost never stale. Safety never depends on it: a lease that expires,
or a leader change that forgets the holder, only brings back retries on a stale state id.

A live holder renews its lease while it works (``keep``: every third of the lease), so a turn
outlasts the lease when deciding and committing a batch takes longer — on a loaded box a batch
of CREATE TABLEs, each placing its tablets, does. An expired lease there handed the turn to a
node that then decided on a state about to move, lost the race, and decided again: every batch
paid twice, and DDL timed out under load. Only a holder that died (or stalled for a whole
lease) loses its turn early, and none keeps it beyond ``MAX_HOLD_SECONDS``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from tabletdb.net.rpc import RpcError, RpcNode
from tabletdb.node.group0_shell.raft import RaftDriver

log = logging.getLogger(__name__)

ACQUIRE_VERB = "g0.turn"
RELEASE_VERB = "g0.turn_done"
RENEW_VERB = "g0.turn_renew"
LEASE_SECONDS = 3.0
"""A holder that died or stalls loses its turn after this long (changes normally take ms, and
an expired lease only costs exclusivity, never safety), so a killed node stalls DDL briefly."""
RENEW_EVERY = LEASE_SECONDS / 3
MAX_HOLD_SECONDS = 30.0
"""A turn ends after this long however often it is renewed (a DDL's own budget is 30 s)."""
ACQUIRE_TIMEOUT = 30.0
"""How long to wait in the leader's queue before asking again (at most one waiter per node)."""


class NotLeaderNow(Exception):
    """The node asked for a turn is not the leader (any more); ask the current one."""


class DdlTurns:
    def __init__(self, driver: RaftDriver, rpc: RpcNode) -> None:
        self._driver = driver
        self._rpc = rpc
        self._lock = asyncio.Lock()
        self._holder: bytes | None = None
        self._lease: asyncio.TimerHandle | None = None
        self._granted_at = 0.0

    def register(self) -> None:
        self._rpc.register(ACQUIRE_VERB, self._on_acquire)
        self._rpc.register(RELEASE_VERB, self._on_release)
        self._rpc.register(RENEW_VERB, self._on_renew)

    async def acquire(self) -> tuple[bytes, int | None, int]:
        """Wait for our turn: (token, leader id to hand it back to or None if we are the leader,
        the leader's commit index when it granted the turn).

        The leader confirms its leadership with a quorum (a read barrier) before it answers, and
        every change made in earlier turns was committed by then, so once this node has applied
        up to that index it decides on the latest state.
        """
        while True:
            if self._driver.is_leader:
                token = await self._grant()
                return token, None, await self._confirmed_commit_index()
            leader = self._driver.raft.leader
            if leader is None:
                await asyncio.sleep(0.05)
                continue
            try:
                token, index = await self._rpc.call(leader, ACQUIRE_VERB, None, timeout=ACQUIRE_TIMEOUT)
                return bytes(token), leader, int(index)
            except RpcError as exc:  # leader changed or unreachable: ask again
                log.debug("group0 turn from %s failed: %s", leader, exc)
                await asyncio.sleep(0.05)

    async def release(self, token: bytes, leader: int | None) -> None:
        if leader is None:
            self._finish(token)
        else:
            await self._rpc.send(leader, RELEASE_VERB, token)

    async def keep(self, token: bytes, leader: int | None) -> None:
        """Renew the turn's lease until cancelled (run beside the work done in the turn)."""
        while True:
            await asyncio.sleep(RENEW_EVERY)
            if leader is None:
                self._renew(token)
            else:
                await self._rpc.send(leader, RENEW_VERB, token)

    async def _grant(self) -> bytes:
        await self._lock.acquire()
        token = os.urandom(8)
        self._holder = token
        loop = asyncio.get_running_loop()
        self._granted_at = loop.time()
        self._lease = loop.call_later(LEASE_SECONDS, self._expire, token)
        return token

    def _renew(self, token: bytes) -> None:
        if self._holder != token or self._lease is None:
            return
        loop = asyncio.get_running_loop()
        left = self._granted_at + MAX_HOLD_SECONDS - loop.time()
        self._lease.cancel()
        self._lease = loop.call_later(max(0.0, min(LEASE_SECONDS, left)), self._expire, token)

    def _expire(self, token: bytes) -> None:
        if self._holder == token:
            held = asyncio.get_running_loop().time() - self._granted_at
            log.warning("group0 schema-change turn expired after %.0fs held; passing it on", held)
            self._finish(token)

    def _finish(self, token: bytes) -> None:
        if self._holder != token:
            return
        self._holder = None
        if self._lease is not None:
            self._lease.cancel()
            self._lease = None
        self._lock.release()

    async def _on_acquire(self, src: int, payload: Any) -> list[Any]:
        if not self._driver.is_leader:
            raise NotLeaderNow(f"node {self._driver.id} is not the group0 leader")
        token = await self._grant()
        return [token, await self._confirmed_commit_index()]

    async def _confirmed_commit_index(self) -> int:
        """The commit index once a quorum confirmed we still lead: the read barrier of the
        issue, taken once at the leader instead of by the deciding node."""
        await self._driver.read_barrier()
        return self._driver.raft.commit_index

    async def _on_release(self, src: int, payload: Any) -> None:
        self._finish(bytes(payload))

    async def _on_renew(self, src: int, payload: Any) -> None:
        self._renew(bytes(payload))
