"""A committed entry the state machine cannot apply halts group0's Raft driver: an ERROR names the
entry's index and term and the error, nothing after it is applied, the owner is told once (the
node then stops), and a driver restarted on the same log halts on the same entry again."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from tabletdb.net.rpc import RpcNode
from tabletdb.node.group0_shell.raft import ApplyFailed, Halted, RaftDriver
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import ConfState, Entry, Snapshot

POISON = b"cannot be applied"


class _StateMachine:
    """Applies entries in order, and fails the way a real apply fails on the poisoned one."""

    def __init__(self) -> None:
        self.applied: list[bytes] = []
        self.halts: list[ApplyFailed] = []

    def apply(self, entries: list[Entry]) -> None:
        for entry in entries:
            if entry.data == POISON:
                raise ApplyFailed(entry.index, entry.term, RecursionError("maximum recursion depth exceeded"))
            self.applied.append(entry.data)

    def install(self, snapshot: Snapshot) -> None:
        pass


def _driver(store: DurableLog, machine: _StateMachine) -> RaftDriver:
    return RaftDriver(
        1,
        RpcNode(1),
        store,
        machine.apply,
        machine.install,
        lambda: lambda: b"",
        on_halt=machine.halts.append,
    )


def _run(directory: Path, proposals: list[bytes]) -> tuple[_StateMachine, RaftDriver]:
    async def go() -> tuple[_StateMachine, RaftDriver]:
        store = DurableLog.open(str(directory))
        if store.last_index() == 0:
            store.bootstrap(ConfState(voters=frozenset({1})))
        machine = _StateMachine()
        driver = _driver(store, machine)
        driver.process()  # replays what the log holds committed
        if driver.halted is None:
            driver.campaign()
        for data in proposals:
            if driver.halted is not None:
                break
            driver.propose(data)
        store.sync()
        return machine, driver

    return asyncio.run(go())


def test_an_entry_that_cannot_be_applied_halts_the_driver(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    machine, driver = _run(tmp_path, [b"a", b"b", POISON, b"after"])
    assert machine.applied == [b"a", b"b"]
    failure = driver.halted
    assert failure is not None and machine.halts == [failure]
    assert driver.raft.applied < failure.index <= driver.raft.commit_index  # apart, and the node stops
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    message = record.getMessage()
    assert f"index={failure.index} term={failure.term}" in message and "RecursionError" in message
    with pytest.raises(Halted):
        driver.propose(b"more")


def test_a_restarted_driver_halts_on_the_same_entry(tmp_path: Path) -> None:
    _, first = _run(tmp_path, [b"a", POISON])
    assert first.halted is not None
    machine, again = _run(tmp_path, [])
    assert again.halted is not None
    assert (again.halted.index, again.halted.term) == (first.halted.index, first.halted.term)
    assert machine.applied == [b"a"] and len(machine.halts) == 1


def test_an_applier_that_cannot_name_the_entry_blames_the_first_of_the_batch(tmp_path: Path) -> None:
    def broken(entries: list[Entry]) -> None:
        raise KeyError("k")

    async def go() -> RaftDriver:
        store = DurableLog.open(str(tmp_path))
        store.bootstrap(ConfState(voters=frozenset({1})))
        driver = RaftDriver(1, RpcNode(1), store, broken, lambda s: None, lambda: lambda: b"")
        driver.campaign()
        driver.propose(b"x")
        return driver

    driver = asyncio.run(go())
    assert driver.halted is not None and isinstance(driver.halted.cause, KeyError)
