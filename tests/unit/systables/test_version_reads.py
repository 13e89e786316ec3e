"""Reads of schema versions: a driver's agreement check (system.peers, then system.local on one
connection) is answered from one settled moment, whatever the node applies between the two."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from tabletdb.cql import ast
from tabletdb.cql.parser import parse_statement
from tabletdb.protocol.handler import ClientState
from tabletdb.systables.tables import SystemState
from tabletdb.systables.version_reads import PAIR_SECONDS, VersionReads, reads_version

PEERS = "SELECT peer, host_id, rpc_address, schema_version FROM system.peers"
LOCAL = "SELECT schema_version FROM system.local WHERE key='local'"


def _select(text: str) -> ast.SelectStatement:
    stmt = parse_statement(text)
    assert isinstance(stmt, ast.SelectStatement)
    return stmt


class Node:
    """A node whose state moves on (an apply) whenever the test says so."""

    def __init__(self) -> None:
        self.version = 0
        self.settles = 0
        self.now = 0.0
        self.gate: asyncio.Event | None = None

    def fresh(self) -> SystemState:
        return cast(SystemState, self.version)  # opaque to VersionReads: what the read renders

    async def settle(self) -> None:
        self.settles += 1
        if self.gate is not None:
            await self.gate.wait()

    def reads(self) -> VersionReads:
        return VersionReads(self.settle, lambda: self.now)


def _client() -> ClientState:
    return ClientState(connection_id=1, peer=("127.0.0.1", 1), shard=0)


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_the_second_read_of_a_check_shows_the_first_reads_moment() -> None:
    async def go() -> tuple[Any, Any, Any]:
        node, client = Node(), _client()
        reads = node.reads()
        peers = await reads.state_for(client, "peers", _select(PEERS), node.fresh)
        node.version = 1  # applied between the two requests
        local = await reads.state_for(client, "local", _select(LOCAL), node.fresh)
        later = await reads.state_for(client, "local", _select(LOCAL), node.fresh)  # a new check
        return peers, local, later

    assert _run(go()) == (0, 0, 1)


def test_every_first_read_waits_for_the_peers_to_settle() -> None:
    async def go() -> int:
        node, client = Node(), _client()
        reads = node.reads()
        for text, table in ((PEERS, "peers"), (LOCAL, "local"), (PEERS, "peers"), (PEERS, "peers")):
            await reads.state_for(client, table, _select(text), node.fresh)
        return node.settles

    assert _run(go()) == 3  # the local read was the pair of the first peers read


def test_a_pair_arriving_while_the_first_read_settles_gets_its_moment() -> None:
    async def go() -> tuple[Any, Any]:
        node, client = Node(), _client()
        node.gate = asyncio.Event()
        reads = node.reads()
        first = asyncio.create_task(reads.state_for(client, "peers", _select(PEERS), node.fresh))
        await asyncio.sleep(0)
        second = asyncio.create_task(reads.state_for(client, "local", _select(LOCAL), node.fresh))
        await asyncio.sleep(0)
        node.version = 7
        node.gate.set()
        return await first, await second

    assert _run(go()) == (7, 7)


def test_a_late_pair_a_schema_change_or_another_connection_reads_fresh() -> None:
    async def go() -> list[Any]:
        node = Node()
        reads = node.reads()
        seen = []
        late = _client()
        await reads.state_for(late, "peers", _select(PEERS), node.fresh)
        node.version, node.now = 1, PAIR_SECONDS * 2
        seen.append(await reads.state_for(late, "local", _select(LOCAL), node.fresh))
        changed = _client()
        await reads.state_for(changed, "peers", _select(PEERS), node.fresh)
        node.version = 2
        VersionReads.forget(changed)  # it ran a schema change
        seen.append(await reads.state_for(changed, "local", _select(LOCAL), node.fresh))
        await reads.state_for(_client(), "peers", _select(PEERS), node.fresh)
        node.version = 3
        seen.append(await reads.state_for(_client(), "local", _select(LOCAL), node.fresh))
        seen.append(await reads.state_for(None, "local", _select(LOCAL), node.fresh))
        return seen

    assert _run(go()) == [1, 2, 3, 3]


def test_reads_that_show_no_schema_version_neither_wait_nor_pair() -> None:
    async def go() -> tuple[int, Any]:
        node, client = Node(), _client()
        reads = node.reads()
        await reads.state_for(client, "peers", _select("SELECT peer, host_id FROM system.peers"), node.fresh)
        await reads.state_for(client, "local", _select("SELECT * FROM system.local"), node.fresh)
        node.version = 1
        state = await reads.state_for(client, "peers", _select("SELECT peer FROM system.peers"), node.fresh)
        await reads.state_for(client, "clients", _select("SELECT * FROM system.clients"), node.fresh)
        return node.settles, state

    assert _run(go()) == (1, 1)


def test_which_selects_show_the_schema_version() -> None:
    assert reads_version(_select("SELECT * FROM system.local"))
    assert reads_version(_select("SELECT schema_version FROM system.local"))
    assert reads_version(_select("SELECT peer, schema_version AS v FROM system.peers"))
    assert not reads_version(_select("SELECT peer, host_id, tokens FROM system.peers"))
