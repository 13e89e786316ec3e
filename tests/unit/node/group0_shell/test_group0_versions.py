"""Peer schema versions: what system.peers shows, and reads that wait for the peers to settle."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

from tabletdb.net.rpc import RpcNode
from tabletdb.node.group0_shell.versions import PeerVersions

V1, V2, V3 = (uuid.UUID(int=i) for i in (1, 2, 3))


class Node:
    def __init__(self) -> None:
        self.index = 1
        self.versions = PeerVersions(cast(RpcNode, None), lambda: (V1, self.index), lambda: [2, 3])

    async def report(self, peer: int, version: uuid.UUID, index: int) -> None:
        await self.versions._on_version(peer, [version.bytes, index])


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_settled_read_waits_for_every_live_peer_and_follows_new_applies() -> None:
    async def go() -> list[str]:
        node = Node()
        await node.report(2, V1, 1)
        await node.report(3, V1, 1)
        steps: list[str] = []
        await node.versions.settle(lambda: node.index, 60)
        steps.append("settled at once")
        node.index = 2  # this node applied a change its peers have not reported yet
        waiting = asyncio.create_task(node.versions.settle(lambda: node.index, 60))
        await node.report(2, V2, 2)
        await asyncio.sleep(0)
        steps.append("done" if waiting.done() else "waits for peer 3")
        node.index = 3  # and another one meanwhile: the read waits for that too
        await node.report(3, V2, 2)
        await asyncio.sleep(0)
        steps.append("done" if waiting.done() else "waits for index 3")
        await node.report(2, V3, 3)
        await node.report(3, V3, 3)
        await waiting
        steps.append("settled")
        return steps

    assert _run(go()) == ["settled at once", "waits for peer 3", "waits for index 3", "settled"]


def test_a_read_never_waits_for_an_unknown_peer_and_waits_boundedly_for_a_stuck_one() -> None:
    async def go() -> bool:
        node = Node()
        await node.versions.settle(lambda: node.index, 60)  # nobody reported: nobody to wait for
        await node.report(2, V1, 0)  # heard, but behind and never catching up
        await node.versions.settle(lambda: node.index, 0.01)
        return node.versions.version_of(2, V2, 1) == V1

    assert _run(go())  # still shown as what it reported, never as ours
