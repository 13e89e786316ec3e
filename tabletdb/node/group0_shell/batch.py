"""This node's schema changes, decided and committed in batches: one DDL turn for all that wait.

The cluster-wide turn (`node.group0_shell.guard`) costs round trips to the leader and a read barrier, and
the commit an append, fsync and replication round trip; with one change per turn those are the
whole cost of a DDL, and clients on different nodes queue for them. So the node takes one turn
for every change waiting here, decides each on the state the previous one produces (chained
state ids: DESIGN.md decision 3 is unchanged), and proposes them together. Changes that went
stale (the state moved on under us) are re-decided in the next turn, a bounded number of times.

A change not applied within its caller's budget answers ``WriteTimeout`` (write type SIMPLE, at
QUORUM of group0's voters, as a write that got no acknowledgement in time), naming what it was
still waiting for: its turn from the group0 leader, this node catching up to the turn's commit
index, or group0 committing and applying its entry — the last means it may still take effect,
and the message says to check before retrying. Never a bare TimeoutError, which the protocol
layer would report as a ServerError.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from tabletdb.cql.consistency import QUORUM
from tabletdb.cql.errors import ServerError, WriteTimeout
from tabletdb.group0.cluster_state import Applied, ClusterState, SchemaEntry
from tabletdb.group0.state import Group0State, SchemaCommand, with_auth
from tabletdb.group0.state_id import timeuuid_after
from tabletdb.group0.tablet_planning import TabletPlanner, with_tablet_changes
from tabletdb.node.group0_shell.admission import Unreplicable
from tabletdb.node.group0_shell.guard import DdlTurns
from tabletdb.query.metadata_store import Decision
from tabletdb.schema.ddl_common import DdlOutcome
from tabletdb.schema.ddl_keyspace import RfChangeOutcome

log = logging.getLogger(__name__)

MAX_DDL_ATTEMPTS = 30
MAX_BATCH = 32
"""Changes per turn: bounds one Raft entry's size and how long a turn is held."""
RETRY_PAUSE = 0.005

Submit = Callable[[Sequence[SchemaEntry]], Awaitable[list[Applied]]]
"""Propose entries (as one Raft entry when several) and wait until this node applied them."""


class ConcurrentModification(ServerError):
    """A DDL lost the race against other schema changes every time it was retried."""


TURN = "its turn for schema changes from the group0 leader"
PROPOSED = "group0 to commit and apply its entry (it may still take effect: check the schema before retrying)"


@dataclasses.dataclass(eq=False)
class _Pending:
    decide: Decision
    done: asyncio.Future[DdlOutcome]
    attempts: int = 0
    waiting: str = TURN
    """What the change waits for now (a timeout's message names it)."""


class DdlBatcher:
    def __init__(
        self,
        state: Callable[[], ClusterState],
        turns: DdlTurns,
        wait_applied: Callable[[int], Awaitable[None]],
        submit: Submit,
        tablet_planner: TabletPlanner | None,
        quorum: Callable[[], int] = lambda: 1,
    ) -> None:
        """``quorum``: how many group0 voters must take an entry (a timeout's ``block_for``)."""
        self._state = state
        self._quorum = quorum
        self._turns = turns
        self._wait_applied = wait_applied
        self._submit = submit
        self._tablet_planner = tablet_planner
        self._queue: deque[_Pending] = deque()
        self._runner: asyncio.Task[None] | None = None
        self._rng = random.Random()
        self._queued_waits = TURN

    async def change(self, decide: Decision, timeout: float) -> DdlOutcome:
        """Queue `decide`; its outcome once this node applied the change (or decide's error)."""
        item = _Pending(decide, asyncio.get_running_loop().create_future())
        self._queue.append(item)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        else:
            item.waiting = self._queued_waits
        try:
            return await asyncio.wait_for(asyncio.shield(item.done), timeout)
        except TimeoutError:
            raise self._timed_out(item, timeout) from None
        finally:
            if not item.done.done():  # timed out or cancelled: not decided in a later turn
                item.done.cancel()

    def _timed_out(self, item: _Pending, timeout: float) -> WriteTimeout:
        lost = f"; it lost {item.attempts} race(s) to concurrent schema changes" if item.attempts else ""
        message = f"schema change not applied within {timeout:g}s: still waiting for {item.waiting}{lost}"
        log.warning("%s", message)
        return WriteTimeout(message, QUORUM, 0, self._quorum(), "SIMPLE")

    async def stop(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner

    async def _run(self) -> None:
        while self._queue:
            batch: list[_Pending] = []
            try:
                self._waiting(TURN)
                token, leader, granted_at = await self._turns.acquire()
                lease = asyncio.create_task(self._turns.keep(token, leader))
                try:
                    self._waiting(f"this node to apply group0 up to the turn's commit index {granted_at}")
                    await self._wait_applied(granted_at)
                    batch = self._take()
                    self._waiting(f"{TURN}, behind a batch of {len(batch)} change(s) being committed")
                    stale = await self._commit(batch)
                finally:
                    lease.cancel()
                    await self._turns.release(token, leader)
            except Exception as exc:  # a bug or a lost node: fail the changes, keep the node serving
                log.exception("group0 schema change batch failed")
                for item in batch or self._take_all():
                    _settle(item, error=exc)
                continue
            if stale:
                self._queue.extendleft(reversed(stale))  # first in line for the next turn
                await asyncio.sleep(self._rng.uniform(0, RETRY_PAUSE * max(i.attempts for i in stale)))

    def _waiting(self, what: str) -> None:
        """What every queued change (and one queued from now on) waits for."""
        self._queued_waits = what
        for item in self._queue:
            item.waiting = what

    def _take_all(self) -> list[_Pending]:
        items = list(self._queue)
        self._queue.clear()
        return items

    def _take(self) -> list[_Pending]:
        batch: list[_Pending] = []
        while self._queue and len(batch) < MAX_BATCH:
            item = self._queue.popleft()
            if not item.done.done():
                batch.append(item)
        return batch

    async def _commit(self, batch: list[_Pending]) -> list[_Pending]:
        """Decide and commit `batch`; the changes that went stale and may be retried."""
        # No read barrier: the turn came with the leader's commit index, which covers every
        # change made in earlier turns, and we waited to apply up to it. If the leader was
        # deposed unawares, the state-id guard turns a stale command into a no-op.
        cluster = self._state()
        state = cluster.metadata
        decided: list[tuple[_Pending, DdlOutcome, SchemaEntry]] = []
        for item in batch:
            # Deciding a change can take tens of ms (a CREATE TABLE places its tablets): let the
            # loop breathe between changes, so the turn's lease renewals, Raft ticks and
            # heartbeats are not held up for a whole batch (the decisions stay chained on `state`).
            await asyncio.sleep(0)
            if item.done.done():  # its client gave up: do not make the change behind its back
                continue
            try:
                outcome = item.decide(state.catalog)
            except Exception as exc:  # the change is invalid on this state: tell its client
                _settle(item, error=exc)
                continue
            if outcome.is_noop or isinstance(outcome, RfChangeOutcome):
                _settle(item, outcome)  # an RF change is a topology request: its caller queues it
                continue
            command = self._command(state, outcome)
            # the next change is decided on the state this one leaves
            command, state = with_tablet_changes(
                dataclasses.replace(cluster, metadata=state), command, self._tablet_planner
            )
            decided.append((item, outcome, SchemaEntry(command, outcome.events)))
            item.waiting = PROPOSED
        if not decided:
            return []
        try:
            applied = await self._submit([entry for _, _, entry in decided])
        except Unreplicable as refused:
            return _without_culprit(decided, refused)
        stale: list[_Pending] = []
        for (item, outcome, _), result in zip(decided, applied, strict=True):
            if result.took_effect:
                _settle(item, outcome)
                continue
            item.attempts += 1
            if item.attempts < MAX_DDL_ATTEMPTS:
                item.waiting = TURN
                stale.append(item)
            else:
                message = f"schema change lost to concurrent schema changes {MAX_DDL_ATTEMPTS} times in a row"
                _settle(item, error=ConcurrentModification(message + "; retry it"))
        return stale

    def _command(self, state: Group0State, outcome: DdlOutcome) -> SchemaCommand:
        """``outcome`` as a command on ``state``: its mutations under a new state id."""
        new_id = timeuuid_after(state.state_id, time.time_ns(), self._rng)
        return with_auth(SchemaCommand(state.state_id, new_id, outcome.mutations), outcome)


def _without_culprit(
    decided: list[tuple[_Pending, DdlOutcome, SchemaEntry]], refused: Unreplicable
) -> list[_Pending]:
    """Fail the change whose command would not replicate; the others, decided on top of it and
    not proposed either, are decided again in the next turn (not counted as lost races)."""
    culprits = [item for item, _, entry in decided if entry.command_id == refused.command_id]
    for item in culprits or [item for item, _, _ in decided]:
        _settle(item, error=refused)
    return [item for item, _, _ in decided if culprits and item not in culprits]


def _settle(item: _Pending, outcome: DdlOutcome | None = None, error: BaseException | None = None) -> None:
    """Answer the change's client, unless it already gave up waiting."""
    if item.done.done():
        return
    if error is not None:
        item.done.set_exception(error)
    else:
        assert outcome is not None
        item.done.set_result(outcome)
