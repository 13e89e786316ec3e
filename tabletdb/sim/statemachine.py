"""The replicated state machine the simulated clients talk to: registers, sets and append logs.

Commands carry a (client, seq) id and are applied at most once, the way a real client session
table works, because a duplicated network message can make the same proposal appear twice in
the log. The whole state is msgpack-able so it can be snapshotted at any applied index.
"""

from __future__ import annotations

from typing import Any

import msgpack

OpId = tuple[int, int]


def encode_command(client: int, seq: int, kind: str, key: str, value: Any) -> bytes:
    return msgpack.packb([client, seq, kind, key, value], use_bin_type=True)


def decode_command(data: bytes) -> tuple[OpId, str, str, Any]:
    client, seq, kind, key, value = msgpack.unpackb(data, raw=False)
    return (client, seq), kind, key, value


class KVStateMachine:
    def __init__(self) -> None:
        self.registers: dict[str, Any] = {}
        self.sets: dict[str, set[Any]] = {}
        self.logs: dict[str, list[Any]] = {}
        self.applied_ops: set[OpId] = set()

    def apply(self, data: bytes) -> tuple[OpId, bool]:
        """Apply one command; returns its id and whether it took effect (False: a duplicate)."""
        op_id, kind, key, value = decode_command(data)
        if op_id in self.applied_ops:
            return op_id, False
        self.applied_ops.add(op_id)
        if kind == "write":
            self.registers[key] = value
        elif kind == "add":
            self.sets.setdefault(key, set()).add(value)
        elif kind == "append":
            self.logs.setdefault(key, []).append(value)
        else:
            raise ValueError(f"unknown command kind {kind!r} in {op_id}")
        return op_id, True

    def read(self, kind: str, key: str) -> Any:
        """The value a linearizable read of `key` returns, in the checker's model's terms."""
        if kind == "register":
            return self.registers.get(key)
        if kind == "set":
            return frozenset(self.sets.get(key, ()))
        return tuple(self.logs.get(key, ()))

    def snapshot(self) -> bytes:
        return msgpack.packb(
            [
                sorted(self.registers.items()),
                sorted((k, sorted(v)) for k, v in self.sets.items()),
                sorted(self.logs.items()),
                sorted(self.applied_ops),
            ],
            use_bin_type=True,
        )

    @classmethod
    def restore(cls, data: bytes) -> KVStateMachine:
        sm = cls()
        if not data:
            return sm
        registers, sets, logs, ops = msgpack.unpackb(data, raw=False)
        sm.registers = dict(registers)
        sm.sets = {k: set(v) for k, v in sets}
        sm.logs = {k: list(v) for k, v in logs}
        sm.applied_ops = {(c, s) for c, s in ops}
        return sm
