"""A node that cannot apply a committed group0 entry stops loudly: an ERROR naming the entry's
index and term and the error, and a non-zero exit. Restarted, it replays the entry and stops the
same way again; it never skips it.

No CQL statement can commit such an entry any more (every entry is checked before it is
proposed), so the test plants one, as the deep type of the issue used to be committed, into a
stopped node's log with the project's own log writer.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import msgpack

from tabletdb.group0.cluster_state import ENTRY_FORMAT
from tabletdb.group0.state import FORMAT_VERSION
from tabletdb.node.membership import GROUP0_DIR
from tabletdb.node.runner import EXIT_GROUP0_HALTED
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import Entry
from tests.harness.clients import scylla_session
from tests.harness.node import NodeFactory, TestNode
from tests.harness.process import wait_for_exit

EXIT_WAIT = 120.0


def _deep_type_plain(levels: int) -> dict[str, Any]:
    """A column type nested `levels` deep, in the schema codec's plain form."""
    plain: dict[str, Any] = {"@n": "int"}
    for _ in range(levels):
        plain = {"@": "ListType", "element": plain, "frozen": True}
    return plain


def _entry_with_a_deep_type() -> bytes:
    """A schema entry the way the issue's CREATE TABLE was committed: its mutation carries a
    type nested 500 deep (here only that type, which is where decoding gives up)."""
    command = {
        "f": FORMAT_VERSION,
        "k": "schema",
        "prev": uuid.uuid4().bytes,
        "new": uuid.uuid1().bytes,
        "m": [_deep_type_plain(500)],
    }
    body = {"f": ENTRY_FORMAT, "k": "schema", "c": msgpack.packb(command, use_bin_type=True), "ev": []}
    return bytes(msgpack.packb(body, use_bin_type=True))


def _plant(node: TestNode, data: bytes) -> tuple[int, int]:
    """Append a committed entry to the stopped node's group0 log; its (index, term)."""
    store = DurableLog.open(str(node.workdir.joinpath(*GROUP0_DIR)))
    index, term = store.last_index() + 1, store.hard_state.term
    store.append([Entry(term=term, index=index, data=data)])
    store.set_hard_state(dataclasses.replace(store.hard_state, commit=index))  # the lone voter has it
    store.sync()
    return index, term


def _starts_and_stops(node: TestNode) -> int:
    node.start(wait=False)
    return wait_for_exit(node.process, EXIT_WAIT)


def test_a_node_stops_on_an_entry_it_cannot_apply_and_again_after_a_restart(
    node_factory: NodeFactory,
) -> None:
    node = node_factory.start_node()
    with scylla_session(node) as session:
        session.execute(
            "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"
        )
        session.execute("CREATE TABLE ks.t (k int PRIMARY KEY)")
    assert node.stop() == 0
    index, term = _plant(node, _entry_with_a_deep_type())
    stopped_with = f"group0 entry index={index} term={term} could not be applied on this node"

    assert _starts_and_stops(node) == EXIT_GROUP0_HALTED
    node.process.wait_for_output(stopped_with)
    assert "PlainNestingError" in node.log_tail(400)

    assert _starts_and_stops(node) == EXIT_GROUP0_HALTED  # replayed, not skipped
    node.process.wait_for_output(stopped_with, count=2)
