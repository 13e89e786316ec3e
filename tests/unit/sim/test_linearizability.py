"""Hand-made histories with known verdicts, and generated sequential histories (always accepted)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.sim.linearizability import (
    AppendLogModel,
    Model,
    Operation,
    RegisterModel,
    SetModel,
    check_history,
)


def op(client: int, inp: tuple[Any, ...], out: Any, call: int, ret: int | None, key: str = "k") -> Operation:
    return Operation(client=client, key=key, input=inp, output=out, call=call, ret=ret)


def test_sequential_register_history_is_linearizable() -> None:
    h = [op(0, ("write", 1), None, 0, 1), op(1, ("read",), 1, 2, 3), op(0, ("write", 2), None, 4, 5)]
    assert check_history(RegisterModel(), h).ok is True


def test_stale_read_after_completed_write_is_rejected() -> None:
    h = [
        op(0, ("write", 1), None, 0, 1),
        op(0, ("write", 2), None, 2, 3),
        op(1, ("read",), 1, 4, 5),
    ]
    result = check_history(RegisterModel(), h)
    assert result.ok is False
    assert result.failed_key == "k"
    assert "not linearizable" in result.describe()


def test_concurrent_read_may_see_either_value() -> None:
    for seen in (1, 2):
        h = [
            op(0, ("write", 1), None, 0, 1),
            op(0, ("write", 2), None, 2, 10),
            op(1, ("read",), seen, 3, 4),
        ]
        assert check_history(RegisterModel(), h).ok is True


def test_reads_must_not_go_back_in_time() -> None:
    # Two sequential reads during a long write: new value then old value is impossible.
    h = [
        op(0, ("write", 1), None, 0, 1),
        op(0, ("write", 2), None, 2, 20),
        op(1, ("read",), 2, 3, 4),
        op(2, ("read",), 1, 5, 6),
    ]
    assert check_history(RegisterModel(), h).ok is False


def test_indeterminate_write_can_explain_a_read() -> None:
    base = [op(0, ("write", 1), None, 0, 1), op(1, ("read",), 7, 5, 6)]
    assert check_history(RegisterModel(), base).ok is False
    timed_out = op(2, ("write", 7), None, 2, None)
    assert check_history(RegisterModel(), [*base, timed_out]).ok is True


def test_indeterminate_write_may_never_happen() -> None:
    h = [op(2, ("write", 7), None, 0, None), op(0, ("write", 1), None, 1, 2), op(1, ("read",), 1, 5, 6)]
    assert check_history(RegisterModel(), h).ok is True


def test_indeterminate_write_cannot_take_effect_before_its_call() -> None:
    h = [op(1, ("read",), 7, 0, 1), op(2, ("write", 7), None, 2, None)]
    assert check_history(RegisterModel(), h).ok is False


def test_keys_are_checked_independently() -> None:
    h = [
        op(0, ("write", 1), None, 0, 1, key="a"),
        op(1, ("read",), None, 2, 3, key="b"),
        op(1, ("read",), 1, 4, 5, key="a"),
    ]
    assert check_history(RegisterModel(), h).ok is True
    bad = [*h, op(1, ("read",), 1, 6, 7, key="b")]
    result = check_history(RegisterModel(), bad)
    assert result.ok is False and result.failed_key == "b"


def test_set_model() -> None:
    h = [
        op(0, ("add", 1), None, 0, 1),
        op(1, ("add", 2), None, 0, 10),
        op(2, ("read",), frozenset({1, 2}), 2, 3),
        op(2, ("read",), frozenset({1, 2}), 4, 5),
    ]
    assert check_history(SetModel(), h).ok is True
    lost = [*h, op(3, ("read",), frozenset({1}), 6, 7)]
    assert check_history(SetModel(), lost).ok is False


def test_append_log_model_order_matters() -> None:
    h = [
        op(0, ("append", "a"), None, 0, 1),
        op(1, ("append", "b"), None, 2, 3),
        op(2, ("read",), ("a", "b"), 4, 5),
    ]
    assert check_history(AppendLogModel(), h).ok is True
    swapped = [*h[:2], op(2, ("read",), ("b", "a"), 4, 5)]
    assert check_history(AppendLogModel(), swapped).ok is False
    concurrent = [
        op(0, ("append", "a"), None, 0, 3),
        op(1, ("append", "b"), None, 1, 2),
        op(2, ("read",), ("b", "a"), 4, 5),
    ]
    assert check_history(AppendLogModel(), concurrent).ok is True


def test_budget_exhaustion_is_undecided_not_a_verdict() -> None:
    h = [op(i, ("write", i), None, 0, 100) for i in range(12)] + [op(99, ("read",), -1, 101, 102)]
    result = check_history(RegisterModel(), h, max_steps=50)
    assert result.ok is None


def _sequential_history(model: Model, seed: int, n_ops: int, n_clients: int) -> list[Operation]:
    """Run a random workload against the model itself, each op at an instant inside a random
    call/return window; some ops lose their return (indeterminate) after taking effect or not."""
    rng = random.Random(seed)
    states: dict[str, Any] = {}
    ops: list[Operation] = []
    kinds = {RegisterModel: ("write", "read"), SetModel: ("add", "read"), AppendLogModel: ("append", "read")}
    writer, _ = kinds[type(model)]
    t = 0
    for i in range(n_ops):
        key = rng.choice("xy")
        state = states.get(key, model.init())
        inp: tuple[Any, ...] = (writer, i) if rng.random() < 0.5 else ("read",)
        call = t - rng.randint(0, 5)
        effective = rng.random() < 0.9
        if effective:
            out = None if inp[0] != "read" else state
            ok, state = model.step(state, inp, out)
            assert ok
            states[key] = state
        else:
            out = None
        t += 1
        indeterminate = not effective or rng.random() < 0.1
        ret = None if indeterminate else t + rng.randint(0, 5)
        t += 1
        ops.append(Operation(rng.randrange(n_clients), key, inp, out, call, ret))
    return ops


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n_ops=st.integers(1, 40),
    model_kind=st.sampled_from([RegisterModel, SetModel, AppendLogModel]),
)
def test_histories_from_the_sequential_model_are_accepted(seed: int, n_ops: int, model_kind: type) -> None:
    model = model_kind()
    history = _sequential_history(model, seed, n_ops, 4)
    assert check_history(model, history).ok is True
