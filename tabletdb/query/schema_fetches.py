"""A DDL that makes a table its RESULT does not name answers once the client has fetched it.

``CREATE TABLE t ... WITH cdc`` (or an ALTER that enables CDC) also makes ``t_scylla_cdc_log``.
Its RESULT can name one table, the base, as ScyllaDB's does; the log is announced by a pushed
SCHEMA_CHANGE event. Drivers handle the two differently: scylla-driver refreshes the table a
RESULT names before the statement returns, but gathers pushed events for a random part of
``schema_event_refresh_window`` (2 s by default) before refreshing. cqlsh looks a table up in
the driver's metadata to print a SELECT's rows, so the same session's ``SELECT ... FROM
t_scylla_cdc_log`` right after the CREATE fails with "not found" (ScyllaDB's responses allow the
same race).

So such a DDL answers only once every connection of the same client host that REGISTERed for
schema events (the driver's control connection; cqlsh talks to one node) has read the other
table's definition from ``system_schema.columns`` since the DDL began, or after ``WAIT_SECONDS``
(a client that never refreshes, such as a driver with schema metadata off, only delays its own
DDL that long). A control connection to another node is not seen here, and nothing is waited
for.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol


class ClientState(Protocol):
    """What this module reads of a client connection (``protocol.handler.ClientState``), named
    here so the query layer needs nothing of the wire protocol for it."""

    @property
    def connection_id(self) -> int: ...

    @property
    def peer(self) -> tuple[str, int]: ...

    @property
    def registered(self) -> frozenset[str]: ...


log = logging.getLogger(__name__)

WAIT_SECONDS = 2.5
"""Above the python driver's default event window (2 s), so its refresh falls inside."""
_KEEP_SECONDS = 30.0

Fetch = tuple[int, str, str]
"""(connection id, keyspace, table) of a read of a table's columns."""


class SchemaFetches:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seen: dict[Fetch, float] = {}
        self._waiters: set[asyncio.Future[None]] = set()

    def now(self) -> float:
        return self._clock()

    def fetched(self, client: ClientState | None, keyspace: str, table: str) -> None:
        """A read of ``system_schema.columns`` for one table by ``client``."""
        if client is None or "SCHEMA_CHANGE" not in client.registered:
            return
        now = self._clock()
        self._seen[(client.connection_id, keyspace, table)] = now
        if len(self._seen) > 1024:
            self._seen = {k: t for k, t in self._seen.items() if now - t < _KEEP_SECONDS}
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait(
        self,
        asking: ClientState,
        clients: Sequence[ClientState],
        tables: Iterable[tuple[str, str]],
        since: float,
        timeout: float = WAIT_SECONDS,
    ) -> bool:
        """Until every schema-event listener from ``asking``'s host read each of ``tables``
        after ``since``; False if ``timeout`` passed first. True at once without listeners."""
        host = asking.peer[0]
        listeners = [
            c.connection_id
            for c in clients
            if c.peer[0] == host and "SCHEMA_CHANGE" in c.registered and c is not asking
        ]
        tables = list(tables)
        wanted = [(cid, ks, name) for cid in listeners for ks, name in tables]
        deadline = self._clock() + timeout
        while True:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.add(waiter)  # before the check: a fetch after it wakes this waiter
            try:
                if all(self._seen.get(w, -1.0) >= since for w in wanted):
                    return True
                left = deadline - self._clock()
                if left <= 0:
                    return False
                try:
                    await asyncio.wait_for(waiter, left)
                except TimeoutError:
                    log.info(
                        "schema change answered before the client fetched its other tables "
                        "client=%s:%d tables=%s waited_s=%.1f",
                        host,
                        asking.peer[1],
                        ",".join(f"{ks}.{name}" for ks, name in tables),
                        timeout,
                    )
                    return False
            finally:
                self._waiters.discard(waiter)
