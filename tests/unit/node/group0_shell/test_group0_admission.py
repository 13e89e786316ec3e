"""Before an entry is proposed it must decode, on every node, to what was decided: the round trip
in `admission`, and the DDL batcher failing only the change at fault when one does not."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tabletdb.cql.types import INT, CqlType, ListType
from tabletdb.group0.balancing import BalancingCommand
from tabletdb.group0.cluster_state import (
    Applied,
    BatchEntry,
    ClusterState,
    SchemaEntry,
    apply_entry,
    encode_entry,
)
from tabletdb.group0.state import SchemaCommand
from tabletdb.group0.topology import JoinCommand, NodeRecord
from tabletdb.node.group0_shell import admission
from tabletdb.node.group0_shell.admission import Unreplicable, encode_checked
from tabletdb.node.group0_shell.batch import DdlBatcher
from tabletdb.schema.ddl_common import DdlOutcome
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.model import Catalog
from tabletdb.schema.mutations import PutKeyspace, PutTable
from tests.unit.schema.helpers import with_keyspace


def _deep(levels: int) -> CqlType:
    t: CqlType = INT
    for _ in range(levels):
        t = ListType(t, frozen=True)
    return t


def _create(name: str, levels: int = 0) -> Callable[[Catalog], DdlOutcome]:
    """A CREATE TABLE decision; `levels` > 0 swaps in a column type that deep, as no validated
    statement can (what a bug in a check, or a codec's bound lower than a check's, would let by)."""

    def decide(catalog: Catalog) -> DdlOutcome:
        outcome = create_table(
            catalog, "ks", name, [("k", INT, False), ("v", INT, False)], ["k"], new_id=uuid.uuid4()
        )
        if not levels:
            return outcome
        (put,) = outcome.mutations
        assert isinstance(put, PutTable)
        columns = tuple(
            dataclasses.replace(c, type=_deep(levels)) if c.name == "v" else c for c in put.table.columns
        )
        return dataclasses.replace(
            outcome, mutations=(PutTable(dataclasses.replace(put.table, columns=columns)),)
        )

    return decide


def _initial() -> ClusterState:
    catalog = with_keyspace(None, "ks")
    first = SchemaCommand(
        ClusterState().state_id, uuid.uuid1(), (PutKeyspace(catalog.keyspaces["ks"].definition),)
    )
    state, _ = apply_entry(ClusterState(), SchemaEntry(first, ()))
    return state


def _entry(state: ClusterState, decide: Callable[[Catalog], DdlOutcome]) -> SchemaEntry:
    outcome = decide(state.metadata.catalog)
    return SchemaEntry(SchemaCommand(state.state_id, uuid.uuid1(), outcome.mutations), outcome.events)


def test_an_entry_that_survives_is_proposed_as_it_encodes() -> None:
    entry = _entry(_initial(), _create("t"))
    assert encode_checked(entry) == encode_entry(entry)


@pytest.mark.parametrize("levels", [400, 5_000])
def test_an_entry_nested_too_deeply_for_the_codec_is_refused(levels: int) -> None:
    entry = _entry(_initial(), _create("deep", levels))
    with pytest.raises(Unreplicable, match="cannot be replicated to the cluster") as refused:
        encode_checked(entry)
    assert refused.value.command_id == entry.command_id


def test_a_batch_names_the_command_at_fault() -> None:
    state = _initial()
    good = _entry(state, _create("a"))
    bad = _entry(state, _create("deep", 400))
    batch = BatchEntry((good, bad, _entry(state, _create("b"))))
    with pytest.raises(Unreplicable) as refused:
        encode_checked(batch)
    assert refused.value.command_id == bad.command_id


def test_an_entry_that_would_decode_to_something_else_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _initial()
    entry, other = _entry(state, _create("t")), _entry(state, _create("u"))
    monkeypatch.setattr(admission, "decode_entry", lambda data: other)  # a codec that is not symmetric
    with pytest.raises(Unreplicable, match="would not decode to the change that was decided"):
        encode_checked(entry)


def test_membership_and_balancing_commands_pass_unchanged() -> None:
    record = NodeRecord(
        uuid.uuid4(), "127.0.0.1", "127.0.0.1", "dc1", "r1", (1, -5), frozenset({"B", "A", "C"})
    )
    for entry in (JoinCommand(uuid.uuid4(), "cluster", record), BalancingCommand(uuid.uuid4(), False)):
        assert encode_checked(entry) == encode_entry(entry)


def test_a_nan_inside_is_not_mistaken_for_a_difference() -> None:
    entry = _entry(_initial(), _create("t"))
    (put,) = entry.command.mutations
    assert isinstance(put, PutTable)
    options = dataclasses.replace(put.table.options, crc_check_chance=math.nan)
    table = dataclasses.replace(put.table, options=options)
    nan_entry = dataclasses.replace(
        entry, command=dataclasses.replace(entry.command, mutations=(PutTable(table),))
    )
    assert encode_checked(nan_entry) == encode_entry(nan_entry)


class _Turns:
    async def acquire(self) -> tuple[bytes, int | None, int]:
        return b"turn", None, 0

    async def release(self, token: bytes, leader: int | None) -> None:
        return None

    async def keep(self, token: bytes, leader: int | None) -> None:
        return None


class _Group0:
    """group0 reduced to what the batcher sees: entries pass the round trip, then apply in order."""

    def __init__(self) -> None:
        self.state = _initial()
        self.proposed: list[int] = []

    async def submit(self, entries: Sequence[SchemaEntry]) -> list[Applied]:
        entry: Any = entries[0] if len(entries) == 1 else BatchEntry(tuple(entries))
        encode_checked(entry)
        self.proposed.append(len(entries))
        self.state, outcomes = apply_entry(self.state, entry)
        return list(outcomes)


def test_the_batcher_fails_only_the_change_at_fault() -> None:
    async def go() -> tuple[list[Any], _Group0]:
        group0 = _Group0()

        async def applied(index: int) -> None:
            return None

        batcher = DdlBatcher(lambda: group0.state, _Turns(), applied, group0.submit, None)  # type: ignore[arg-type]
        changes = [_create("a"), _create("deep", 400), _create("b")]
        results = await asyncio.gather(*(batcher.change(c, 10.0) for c in changes), return_exceptions=True)
        await batcher.stop()
        return results, group0

    results, group0 = asyncio.run(go())
    assert isinstance(results[1], Unreplicable)
    assert not isinstance(results[0], BaseException) and not isinstance(results[2], BaseException)
    assert sorted(group0.state.metadata.catalog.keyspaces["ks"].tables) == ["a", "b"]
    assert group0.proposed == [2]  # nothing proposed with the bad change; the others in one entry
