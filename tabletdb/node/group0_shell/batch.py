"""This node's schema changes, decided and committed in batches: one DDL turn for all that wait.

The cluster-wide turn (`node.group0_shell.guard`) costs round trips to the leader and a read barrier, and
the commit an append, fsync and replication round trip; with one change per turn those are the
whole cost of a DDL, and clients on different nodes queue for them. So the node takes one turn
for every change waiting here, decides each on the state the previous one produces (chained
state ids: DESIGN.md decision 3 is unchanged), and proposes them together. Changes that went
stale (the state moved on under us) are re-decided in the next turn, a bounded number of times.
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

from tabletdb.cql.errors import ServerError
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


@dataclasses.dataclass(eq=False)
class _Pending:
    decide: Decision
    done: asyncio.Future[DdlOutcome]
    attempts: int = 0


class DdlBatcher:
    def __init__(
        self,
        state: Callable[[], ClusterState],
        turns: DdlTurns,
        wait_applied: Callable[[int], Awaitable[None]],
        submit: Submit,
        tablet_planner: TabletPlanner | None,
    ) -> None:
        self._state = state
        self._turns = turns
        self._wait_applied = wait_applied
        self._submit = submit
        self._tablet_planner = tablet_planner
        self._queue: deque[_Pending] = deque()
        self._runner: asyncio.Task[None] | None = None
        self._rng = random.Random()

    async def change(self, decide: Decision, timeout: float) -> DdlOutcome:
        """Queue `decide`; its outcome once this node applied the change (or decide's error)."""
        item = _Pending(decide, asyncio.get_running_loop().create_future())
        self._queue.append(item)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        try:
            return await asyncio.wait_for(asyncio.shield(item.done), timeout)
        finally:
            if not item.done.done():  # timed out or cancelled: not decided in a later turn
                item.done.cancel()

    async def stop(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner

    async def _run(self) -> None:
        while self._queue:
            batch: list[_Pending] = []
            try:
                token, leader, granted_at = await self._turns.acquire()
                try:
                    await self._wait_applied(granted_at)
                    batch = self._take()
                    stale = await self._commit(batch)
                finally:
                    await self._turns.release(token, leader)
            except Exception as exc:  # a bug or a lost node: fail the changes, keep the node serving
                log.exception("group0 schema change batch failed")
                for item in batch or self._take_all():
                    _settle(item, error=exc)
                continue
            if stale:
                self._queue.extendleft(reversed(stale))  # first in line for the next turn
                await asyncio.sleep(self._rng.uniform(0, RETRY_PAUSE * max(i.attempts for i in stale)))

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
