"""A damaged commit log stops the node instead of silently losing acknowledged writes.

3,000 acknowledged rows, kill -9, one byte flipped inside the log's second record: the restart
refuses with one line naming the file, the offset and the way out, and leaves the file as it
was; a restart with ``commitlog_skip_corrupt_records`` reports the loss at ERROR, keeps a copy
of the damaged log, and every row of every other record is back.
"""

from __future__ import annotations

import struct
from pathlib import Path

import msgpack

from tests.harness.clients import scylla_session
from tests.harness.node import NodeFactory, TestNode
from tests.harness.process import wait_for_exit

ROWS = 3000
HEADER = struct.Struct("<II")  # the commit log's record header: length, crc32


def _write_acknowledged_rows(node: TestNode) -> None:
    from cassandra.concurrent import execute_concurrent_with_args

    with scylla_session(node) as session:
        session.execute(
            "CREATE KEYSPACE cl WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        )
        session.execute("CREATE TABLE cl.t (k int PRIMARY KEY, v text)")
        insert = session.prepare("INSERT INTO cl.t (k, v) VALUES (?, ?)")
        results = execute_concurrent_with_args(
            session, insert, [(k, f"v{k}") for k in range(ROWS)], concurrency=32, raise_on_first_error=True
        )
        assert all(ok for ok, _ in results)


def _records(log: Path) -> list[tuple[int, bytes]]:
    """(offset, payload) of each record of a whole log."""
    data = log.read_bytes()
    out, at = [], 0
    while at < len(data):
        length, _ = HEADER.unpack_from(data, at)
        out.append((at, data[at + HEADER.size : at + HEADER.size + length]))
        at += HEADER.size + length
    return out


def _keys_in(payload: bytes) -> set[int]:
    """The ``cl.t`` partition keys a write record holds (``storage.commit_replay`` has the shape)."""
    kind, stores = msgpack.unpackb(payload)
    keys: set[int] = set()
    if kind != "w":
        return keys
    for name, writers in stores:
        if name.startswith("cl/"):
            for blob in writers:
                partitions = msgpack.unpackb(blob)[0]
                keys.update(int.from_bytes(p[0], "big", signed=True) for p in partitions)
    return keys


def _output_of_last_start(node: TestNode) -> str:
    text = node.process.log_path.read_text(errors="replace")
    return text.rsplit("=== harness: start #", 1)[1]


def test_a_corrupt_record_stops_the_start_and_skipping_it_loses_only_that_record(
    node_factory: NodeFactory,
) -> None:
    node = node_factory.start_node()
    _write_acknowledged_rows(node)
    node.kill()
    log = node.workdir / "data" / ".commitlog" / "commit.log"
    records = _records(log)
    assert len(records) >= 3
    offset, payload = records[1]
    in_damaged_record = _keys_in(payload)
    assert in_damaged_record, "the second record should hold rows of cl.t"
    data = bytearray(log.read_bytes())
    data[offset + HEADER.size + len(payload) // 2] ^= 0x55
    log.write_bytes(bytes(data))

    node.start(wait=False)
    assert wait_for_exit(node.process, timeout=120) != 0
    output = _output_of_last_start(node)
    assert "Traceback" not in output
    (refusal,) = [line for line in output.splitlines() if "cannot start" in line]
    assert str(log) in refusal and f"byte offset {offset}" in refusal
    assert "crc32 does not match" in refusal and "commitlog_skip_corrupt_records" in refusal
    assert log.read_bytes() == bytes(data)
    assert [p.name for p in log.parent.iterdir()] == ["commit.log"]

    node.process.argv += ["-o", "commitlog_skip_corrupt_records=true"]
    node.start()
    output = _output_of_last_start(node)
    (error,) = [line for line in output.splitlines() if "level=ERROR" in line]
    assert "is corrupt; skipping 1 record(s)" in error and f"bytes {offset}-" in error
    (copy,) = [p for p in log.parent.iterdir() if p.name.startswith("commit.log.corrupt-")]
    assert copy.read_bytes() == bytes(data)
    with scylla_session(node) as session:
        stored = {r.k: r.v for r in session.execute("SELECT k, v FROM cl.t")}
    missing = {k for k in range(ROWS) if stored.get(k) != f"v{k}"}
    assert missing <= in_damaged_record, (
        f"rows of intact records lost: {sorted(missing - in_damaged_record)[:5]}"
    )
