"""Progress state transitions and flow control."""

from __future__ import annotations

from tabletdb.raft.progress import Progress, ProgressState
from tabletdb.raft.readonly import ReadOnly


def test_probe_sends_one_at_a_time() -> None:
    pr = Progress(match=0, next=5, max_inflight=4)
    assert not pr.is_paused()
    pr.sent_entries(7)
    assert pr.is_paused() and pr.next == 5
    assert pr.maybe_decrease_to(4, hint=2)
    assert pr.next == 3 and not pr.is_paused()
    assert not pr.maybe_decrease_to(9, hint=1), "a reject for another probe is stale"


def test_replicate_bounded_inflight() -> None:
    pr = Progress(match=4, next=5, max_inflight=2)
    pr.become_replicate()
    pr.sent_entries(6)
    pr.sent_entries(8)
    assert pr.next == 9 and pr.is_paused()
    assert pr.maybe_update(6)
    pr.free_inflight_up_to(6)
    assert not pr.is_paused() and pr.match == 6
    assert not pr.maybe_update(5), "stale acknowledgement"


def test_replicate_reject_falls_back_to_match() -> None:
    pr = Progress(match=4, next=5, max_inflight=2)
    pr.become_replicate()
    pr.sent_entries(9)
    assert not pr.maybe_decrease_to(3, hint=3), "reject below match is stale"
    assert pr.maybe_decrease_to(6, hint=5)
    assert pr.next == 5


def test_snapshot_state_pauses_until_done() -> None:
    pr = Progress(match=2, next=3, max_inflight=2)
    pr.become_snapshot(50)
    assert pr.is_paused() and pr.state == ProgressState.SNAPSHOT
    pr.become_probe()
    assert (pr.next, pr.state) == (51, ProgressState.PROBE)


def test_read_only_releases_prefix() -> None:
    ro = ReadOnly()
    assert ro.add(5, b"a", 1) and ro.add(6, b"b", 2)
    assert not ro.add(7, b"a", 1)
    assert ro.ack(3, b"b") == {3}
    assert ro.ack(3, b"zzz") is None
    released = ro.release(b"b")
    assert [(r.index, r.context, r.origin) for r in released] == [(5, b"a", 1), (6, b"b", 2)]
    assert len(ro) == 0 and ro.last_context() is None
