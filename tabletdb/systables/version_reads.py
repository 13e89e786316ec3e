"""Reads of schema versions (`system.local`, `system.peers`) as drivers use them: one moment per check.

A driver checks schema agreement by reading `system.peers` and `system.local` on one connection
(two requests, sent back to back) and comparing every row's `schema_version`; on any difference
it sleeps (200 ms in the python driver) and asks again. Two things make a difference appear on
a healthy cluster while schema changes stream in:

* the read lands between this node's apply and its peers' reports that they applied the same
  change (a few ms per change). So a read first waits, bounded, until every live peer reported
  this node's current version (`settle`, from `node.group0_versions`): what it shows is a moment
  when the versions agree, if one comes soon.
* the two requests are answered at two moments, and a change applied between them shows the
  old version in one answer and the new one in the other. So the answer to the second read of
  the pair (the other table, same connection, within `PAIR_SECONDS`) is rendered from the state
  the first one showed: the pair describes one moment, as one check means to.

Nothing shown is invented: every version is one this node applied or a peer reported, at the
moment the check's first read was answered. A connection's remembered state is dropped when it
is used, replaced by the next first read, and cleared by a schema change on the connection, so
a client never reads its own schema change's version from before the change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tabletdb.cql import ast
from tabletdb.systables.tables import SystemState

VERSION_TABLES = frozenset({"local", "peers"})
PAIR_SECONDS = 0.5
"""How long the first read's state waits for its pair. Drivers send both at once: the second
arrives well under a millisecond later normally, some ms on a loaded machine."""

Settle = Callable[[], Awaitable[None]]
"""Wait (bounded) until live peers reported this node's current version."""


class Client(Protocol):
    """A client connection as far as its version reads go: room to remember a check's first read
    until its pair arrives. The server's connection state (`protocol.handler.ClientState`) has it;
    named here so that the system tables do not depend on the wire protocol."""

    version_read: Any


@dataclass(frozen=True, slots=True)
class _Shown:
    table: str
    state: asyncio.Future[SystemState]
    """Set once the first read settled and captured its state (its pair may arrive meanwhile)."""
    at: float


class VersionReads:
    def __init__(self, settle: Settle | None, clock: Callable[[], float] = time.monotonic) -> None:
        self._settle = settle
        self._clock = clock

    async def state_for(
        self,
        client: Client | None,
        table: str,
        stmt: ast.SelectStatement,
        fresh: Callable[[], SystemState],
    ) -> SystemState:
        """The state a read of system table `table` is rendered from."""
        if table not in VERSION_TABLES or not reads_version(stmt):
            return fresh()
        if client is None:
            return await self._settled(fresh)
        shown: _Shown | None = client.version_read
        client.version_read = None
        if shown is not None and shown.table != table and self._clock() - shown.at <= PAIR_SECONDS:
            return await asyncio.shield(shown.state)  # the second read of a check: the first one's moment
        first = _Shown(table, asyncio.get_running_loop().create_future(), self._clock())
        client.version_read = first
        try:
            state = await self._settled(fresh)
        except BaseException:  # its pair (if any) reads on its own next time
            first.state.cancel()
            if client.version_read is first:
                client.version_read = None
            raise
        first.state.set_result(state)
        return state

    async def _settled(self, fresh: Callable[[], SystemState]) -> SystemState:
        if self._settle is not None:
            await self._settle()
        return fresh()

    @staticmethod
    def forget(client: Client) -> None:
        """A schema change on the connection: later reads must show it, never the state before."""
        client.version_read = None


def reads_version(stmt: ast.SelectStatement) -> bool:
    """Whether the SELECT may show `schema_version` (`*`, the column, or an expression)."""
    if stmt.selectors is None:
        return True
    return any(
        not isinstance(s.expr, ast.ColumnRef) or s.expr.name == "schema_version" for s in stmt.selectors
    )
