"""The chaos test's schedule and verdicts (tests.harness.chaos), without processes."""

from __future__ import annotations

import pytest

from tests.harness.chaos import FaultKind, History, cas_problem, missing_tables, missing_writes, plan_faults


def test_plan_replays_from_its_seed_and_covers_every_kind_early() -> None:
    plan = plan_faults(7, rounds=10, nodes=3)
    assert plan == plan_faults(7, rounds=10, nodes=3)
    assert plan != plan_faults(8, rounds=10, nodes=3)
    assert {f.kind for f in plan[: len(FaultKind)]} == set(FaultKind)
    for fault in plan:
        assert 0 <= fault.target < 3 and 0 <= fault.other < 3 and fault.other != fault.target
        assert 1.0 <= fault.seconds <= 4.0


def test_plan_refuses_clusters_without_a_majority_left() -> None:
    with pytest.raises(ValueError, match="at least 3 nodes"):
        plan_faults(1, rounds=3, nodes=2)


def test_writes_lost_or_invented_are_reported() -> None:
    history = History()
    for key in range(5):
        history.write(key, acked=key != 4)
    assert missing_writes(history, [0, 1, 2, 3]) == []
    assert missing_writes(history, [0, 1, 2, 3, 4]) == []  # an unacknowledged write may land
    assert missing_writes(history, [0, 1, 3]) == ["1 acknowledged keys missing, e.g. [2]"]
    assert missing_writes(history, [0, 1, 2, 3, 9]) == ["1 keys never written were read, e.g. [9]"]


def test_cas_counter_counts_acknowledged_rounds_plus_at_most_the_unanswered() -> None:
    history = History()
    for applied in (True, True, None, False):
        history.cas(applied)
    assert cas_problem(history, 2) is None
    assert cas_problem(history, 3) is None
    assert cas_problem(history, 1) is not None
    assert cas_problem(history, 4) is not None


def test_tables_lost_or_invented_are_reported() -> None:
    history = History()
    history.table("ddl_0", acked=True)
    history.table("ddl_1", acked=False)
    assert missing_tables(history, "n1", {"kv", "cas", "ddl_0", "ddl_1"}) == []
    assert missing_tables(history, "n1", {"kv", "ddl_1"}) == ["n1: acknowledged tables missing: ['ddl_0']"]
    assert missing_tables(history, "n1", {"ddl_0", "ddl_7"}) == ["n1: tables never created exist: ['ddl_7']"]
