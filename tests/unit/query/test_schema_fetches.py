"""A DDL that makes a table its RESULT does not name waits for the client's control connection
to fetch that table (``query.schema_fetches``), bounded."""

from __future__ import annotations

import asyncio

from tabletdb.protocol.handler import ClientState
from tabletdb.query.schema_fetches import SchemaFetches


def _client(cid: int, host: str = "10.0.0.1", listening: bool = False) -> ClientState:
    registered = frozenset({"SCHEMA_CHANGE"}) if listening else frozenset()
    return ClientState(cid, (host, 40000 + cid), 0, registered=registered)


def test_answers_once_every_listener_of_the_host_fetched_the_table() -> None:
    async def go() -> None:
        fetches = SchemaFetches()
        asking, control, other_host = _client(1), _client(2, listening=True), _client(3, "10.0.0.2", True)
        since = fetches.now()
        waiting = asyncio.create_task(
            fetches.wait(asking, [asking, control, other_host], [("ks", "t_scylla_cdc_log")], since, 30)
        )
        await asyncio.sleep(0.01)
        fetches.fetched(control, "ks", "t")  # another table: not it
        await asyncio.sleep(0.01)
        assert not waiting.done()
        fetches.fetched(control, "ks", "t_scylla_cdc_log")
        assert await asyncio.wait_for(waiting, 5) is True  # the other host's listener is not waited for

    asyncio.run(go())


def test_no_listener_no_wait_and_a_silent_listener_only_until_the_bound() -> None:
    async def go() -> None:
        fetches = SchemaFetches()
        asking = _client(1)
        assert await fetches.wait(asking, [asking], [("ks", "x")], fetches.now(), 30) is True
        silent = _client(2, listening=True)
        assert await fetches.wait(asking, [asking, silent], [("ks", "x")], fetches.now(), 0.05) is False

    asyncio.run(go())


def test_a_fetch_before_the_ddl_began_does_not_count() -> None:
    async def go() -> None:
        fetches = SchemaFetches()
        asking, control = _client(1), _client(2, listening=True)
        fetches.fetched(control, "ks", "x")
        await asyncio.sleep(0.01)
        since = fetches.now()
        assert await fetches.wait(asking, [asking, control], [("ks", "x")], since, 0.05) is False

    asyncio.run(go())
