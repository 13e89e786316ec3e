"""A damaged paxos.db refuses to open with ``CorruptFile`` (one line: file, damage, remedy)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tabletdb.storage.corruption import CorruptFile
from tabletdb.storage.paxos_state import PaxosRecord, PaxosStateStore

PAGE = 4096


def _written(path: Path) -> None:
    store = PaxosStateStore(path)
    store.save_many(
        [(i.to_bytes(8, "big"), PaxosRecord(promised=b"b" * 16, history=b"h" * 200)) for i in range(2000)]
    )
    store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()


@pytest.mark.parametrize("where", ["header", "middle"])
def test_a_damaged_paxos_file_refuses_to_open_naming_file_damage_and_remedy(
    tmp_path: Path, where: str
) -> None:
    path = tmp_path / "paxos" / "paxos.db"
    _written(path)
    data = bytearray(path.read_bytes())
    at = 0 if where == "header" else len(data) // PAGE // 2 * PAGE
    data[at : at + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptFile) as info:
        PaxosStateStore(path)
    message = str(info.value)
    assert re.match(re.escape(f"{path} is corrupt: "), message)
    assert "move it" in message and "LWT" in message and "\n" not in message


def test_a_sound_paxos_file_opens(tmp_path: Path) -> None:
    path = tmp_path / "paxos.db"
    _written(path)
    store = PaxosStateStore(path)
    assert store.count() == 2000
    store.close()
