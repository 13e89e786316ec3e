"""The tokens group0 recorded for a node are its tokens: a node whose identity file says other
tokens (a replacing node that died before it wrote the ones it took over) adopts the recorded
ones at start, instead of asking for its record to change, and the identity file keeps them."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from tabletdb.group0.topology import NodeRecord
from tabletdb.node.group0_shell.service import Group0Service
from tabletdb.node.identity import load_or_create_identity, with_tokens
from tabletdb.topology.features import supported_features

HOST = uuid.UUID(int=0x70CE << 64)


def _record(tokens: tuple[int, ...]) -> NodeRecord:
    return NodeRecord(
        HOST, "127.0.0.1", "127.0.0.1", "dc1", "rack1", tokens, supported_features(), storage_port=0
    )


def test_a_restarted_member_keeps_the_tokens_group0_recorded(tmp_path: Path) -> None:
    adopted: list[tuple[int, ...]] = []

    async def run(tokens: tuple[int, ...]) -> tuple[NodeRecord, NodeRecord]:
        group0 = Group0Service(tmp_path, _record(tokens), "c", ())
        group0.on_tokens = adopted.append
        await group0.start()
        try:
            return group0.record, group0.state.topology.members[HOST]
        finally:
            await group0.stop()
            group0.close()

    assert asyncio.run(run((10, 20))) == (_record((10, 20)), _record((10, 20)))
    assert adopted == []
    mine, recorded = asyncio.run(run((7,)))  # an identity file that lost the tokens it took over
    assert mine.tokens == recorded.tokens == (10, 20)
    assert adopted == [(10, 20)]


def test_adopted_tokens_survive_a_restart_of_the_identity(tmp_path: Path) -> None:
    identity = load_or_create_identity(tmp_path, 4)
    assert len(identity.tokens) == 4
    taken = with_tokens(tmp_path, identity, (30, -5, 12))
    assert taken.host_id == identity.host_id and taken.tokens == (-5, 12, 30)
    assert load_or_create_identity(tmp_path, 4) == taken
