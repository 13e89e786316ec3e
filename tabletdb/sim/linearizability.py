"""Linearizability checking of client histories (Wing & Gong's search with Lowe's memoisation).

The simulator records every client operation with its call and return times on the virtual
clock. A history is linearizable if each operation can be given a single instant between its
call and its return such that the sequence of operations, in instant order, is accepted by a
sequential model. The search follows Porcupine: events sit in a doubly-linked list ordered by
time; the search repeatedly "lifts" a call that the model accepts next, and backtracks when it
meets the return of an operation it has not yet placed. A cache of (set of placed operations,
model state) pairs prunes the search: reaching the same pair twice cannot lead anywhere new.

Operations on different keys are independent (each key is its own object), so histories are
partitioned by key and each partition is checked on its own; this keeps the search small.

Indeterminate operations (the client timed out: the operation may or may not have taken effect)
have no return time. They may linearize anywhere after their call, with any output, or not at
all: the search succeeds once every *completed* operation is placed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

State = Hashable


@dataclass(frozen=True)
class Operation:
    """One client operation. `ret is None` marks it indeterminate (its `output` is ignored)."""

    client: int
    key: Hashable
    input: tuple[Any, ...]
    output: Any
    call: int
    ret: int | None

    @property
    def indeterminate(self) -> bool:
        return self.ret is None


class Model(Protocol):
    """A sequential specification of one object."""

    def init(self) -> State:
        """The object's state before any operation."""
        ...

    def step(self, state: State, input: tuple[Any, ...], output: Any) -> tuple[bool, State]:
        """Whether `input` applied to `state` may produce `output`, and the state after."""
        ...

    def step_unknown(self, state: State, input: tuple[Any, ...]) -> State:
        """The state after `input` when its output was never observed."""
        ...

    def is_read_only(self, input: tuple[Any, ...]) -> bool:
        """Read-only operations with unknown outputs cannot affect the verdict and are skipped."""
        ...

    def observes(self, output: Any, input: tuple[Any, ...]) -> bool:
        """Whether a read's `output` shows the effect of the write `input` (see `check_partition`)."""
        ...


class RegisterModel:
    """A read/write register: inputs ("write", v) -> None and ("read",) -> value (None unset)."""

    def init(self) -> State:
        return None

    def step(self, state: State, input: tuple[Any, ...], output: Any) -> tuple[bool, State]:
        if input[0] == "write":
            return True, input[1]
        return output == state, state

    def step_unknown(self, state: State, input: tuple[Any, ...]) -> State:
        return input[1] if input[0] == "write" else state

    def is_read_only(self, input: tuple[Any, ...]) -> bool:
        return bool(input[0] == "read")

    def observes(self, output: Any, input: tuple[Any, ...]) -> bool:
        return bool(output == input[1])


class SetModel:
    """A grow-only set: ("add", x) -> None and ("read",) -> frozenset of all members."""

    def init(self) -> State:
        return frozenset()

    def step(self, state: State, input: tuple[Any, ...], output: Any) -> tuple[bool, State]:
        assert isinstance(state, frozenset)
        if input[0] == "add":
            return True, state | {input[1]}
        return frozenset(output) == state, state

    def step_unknown(self, state: State, input: tuple[Any, ...]) -> State:
        assert isinstance(state, frozenset)
        return state | {input[1]} if input[0] == "add" else state

    def is_read_only(self, input: tuple[Any, ...]) -> bool:
        return bool(input[0] == "read")

    def observes(self, output: Any, input: tuple[Any, ...]) -> bool:
        return input[1] in output


class AppendLogModel:
    """An append-only list: ("append", x) -> None and ("read",) -> tuple of items in order."""

    def init(self) -> State:
        return ()

    def step(self, state: State, input: tuple[Any, ...], output: Any) -> tuple[bool, State]:
        assert isinstance(state, tuple)
        if input[0] == "append":
            return True, (*state, input[1])
        return tuple(output) == state, state

    def step_unknown(self, state: State, input: tuple[Any, ...]) -> State:
        assert isinstance(state, tuple)
        return (*state, input[1]) if input[0] == "append" else state

    def is_read_only(self, input: tuple[Any, ...]) -> bool:
        return bool(input[0] == "read")

    def observes(self, output: Any, input: tuple[Any, ...]) -> bool:
        return input[1] in output


@dataclass(frozen=True)
class CheckResult:
    """`ok` is None when the search gave up after `max_steps` on some partition."""

    ok: bool | None
    failed_key: Hashable = None
    failed_ops: tuple[Operation, ...] = ()
    steps: int = 0

    def describe(self) -> str:
        if self.ok:
            return f"linearizable ({self.steps} search steps)"
        verdict = "not linearizable" if self.ok is False else "undecided (search budget exhausted)"
        lines = [f"{verdict}: key {self.failed_key!r}, {len(self.failed_ops)} operations"]
        lines += [f"  {op}" for op in self.failed_ops[:50]]
        return "\n".join(lines)


class _Node:
    """An event in the time-ordered doubly-linked list; a call node points at its return."""

    __slots__ = ("match", "next", "op_id", "prev")

    def __init__(self, op_id: int) -> None:
        self.op_id = op_id
        self.match: _Node | None = None
        self.prev: _Node | None = None
        self.next: _Node | None = None


def _build_list(ops: Sequence[Operation]) -> _Node:
    """Events sorted by time; at equal times calls come first, so touching ops count as concurrent."""
    events: list[tuple[int, int, int]] = []  # (time, 0=call/1=return, op id)
    for i, op in enumerate(ops):
        events.append((op.call, 0, i))
        if op.ret is not None:
            events.append((op.ret, 1, i))
    events.sort()
    head = _Node(-1)
    tail = head
    calls: dict[int, _Node] = {}
    for _, kind, op_id in events:
        node = _Node(op_id)
        if kind == 0:
            calls[op_id] = node
        else:
            calls[op_id].match = node
        node.prev = tail
        tail.next = node
        tail = node
    return head


def _unlink(node: _Node) -> None:
    assert node.prev is not None
    node.prev.next = node.next
    if node.next is not None:
        node.next.prev = node.prev


def _relink(node: _Node) -> None:
    assert node.prev is not None
    node.prev.next = node
    if node.next is not None:
        node.next.prev = node


def _lift(call: _Node) -> None:
    _unlink(call)
    if call.match is not None:
        _unlink(call.match)


def _unlift(call: _Node) -> None:
    if call.match is not None:
        _relink(call.match)
    _relink(call)


def check_partition(
    model: Model, ops: Sequence[Operation], max_steps: int = 2_000_000
) -> tuple[bool | None, int]:
    """Search one object's history; returns (verdict or None if out of budget, steps taken).

    Indeterminate operations no completed read observes are dropped before the search: placing
    such a write anywhere would make every later read observe it, so "it never happened" is
    always at least as good a choice. This keeps timed-out writes from multiplying the search
    space by every subset and order of them.
    """
    reads = [op.output for op in ops if not op.indeterminate and model.is_read_only(op.input)]
    ops = [
        op
        for op in ops
        if not op.indeterminate
        or (not model.is_read_only(op.input) and any(model.observes(out, op.input) for out in reads))
    ]
    head = _build_list(ops)
    state: State = model.init()
    placed = 0  # bitset of linearized op ids
    cache: set[tuple[int, State]] = set()
    stack: list[tuple[_Node, State]] = []
    entry = head.next
    steps = 0
    while entry is not None:
        steps += 1
        if steps > max_steps:
            return None, steps
        if entry.match is not None or ops[entry.op_id].indeterminate:
            op = ops[entry.op_id]
            if op.indeterminate:
                ok, new_state = True, model.step_unknown(state, op.input)
            else:
                ok, new_state = model.step(state, op.input, op.output)
            if ok:
                new_placed = placed | (1 << entry.op_id)
                if (new_placed, new_state) not in cache:
                    cache.add((new_placed, new_state))
                    stack.append((entry, state))
                    state, placed = new_state, new_placed
                    _lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            # The return of an operation that is still unplaced: this prefix cannot work.
            if not stack:
                return False, steps
            call, state = stack.pop()
            placed &= ~(1 << call.op_id)
            _unlift(call)
            entry = call.next
    return True, steps


def check_history(model: Model, history: Iterable[Operation], max_steps: int = 2_000_000) -> CheckResult:
    """Check a whole history, one key at a time; stops at the first non-linearizable key."""
    by_key: dict[Hashable, list[Operation]] = defaultdict(list)
    for op in history:
        by_key[op.key].append(op)
    total = 0
    undecided: tuple[Hashable, tuple[Operation, ...]] | None = None
    for key, ops in by_key.items():
        verdict, steps = check_partition(model, ops, max_steps)
        total += steps
        if verdict is False:
            return CheckResult(False, key, tuple(ops), total)
        if verdict is None and undecided is None:
            undecided = (key, tuple(ops))
    if undecided is not None:
        return CheckResult(None, undecided[0], undecided[1], total)
    return CheckResult(True, steps=total)
