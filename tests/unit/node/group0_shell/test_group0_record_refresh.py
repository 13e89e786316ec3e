"""A member whose record changed while it was down (a new address) has it recorded again when it
restarts; a lone node records it through its own log, since there is no one else to ask."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from tabletdb.group0.topology import NodeRecord
from tabletdb.node.group0_shell.service import Group0Service
from tabletdb.topology.features import supported_features

HOST = uuid.UUID(int=0x5EED << 64)


def _record(address: str) -> NodeRecord:
    return NodeRecord(HOST, address, address, "dc1", "rack1", (1,), supported_features(), storage_port=0)


def test_a_lone_node_restarted_at_a_new_address_records_it(tmp_path: Path) -> None:
    async def run(address: str) -> NodeRecord:
        group0 = Group0Service(tmp_path, _record(address), "c", ())
        await group0.start()
        try:
            return group0.state.topology.members[HOST]
        finally:
            await group0.stop()
            group0.close()

    assert asyncio.run(run("127.0.0.1")).address == "127.0.0.1"
    assert asyncio.run(run("127.0.0.2")) == _record("127.0.0.2")
    assert asyncio.run(run("127.0.0.2")) == _record("127.0.0.2")  # and a plain restart keeps it
