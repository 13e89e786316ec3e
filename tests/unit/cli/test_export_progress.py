"""`cdc export`'s progress lines: one per pass, streams done from Spark's task counts, nothing
drawn off a terminal."""

from __future__ import annotations

import io

from rich.console import Console

from tabletdb.cli.export_progress import PassProgress, TasksDone, pass_description, pass_progress
from tabletdb.cli.progress import RichReporter, make_progress

T0 = 1_795_780_800_000_000  # 2026-11-27 12:00:00 UTC, µs


class Tasks:
    """A stand-in for Spark's status tracker: the counts each new counter reports."""

    def __init__(self) -> None:
        self.done, self.total, self.counters = 0, 0, 0

    def counter(self) -> TasksDone:
        self.counters += 1
        return lambda: (self.done, self.total)


def test_a_pass_is_named_by_its_window_and_streams() -> None:
    assert pass_description(T0, T0 + 310_000_000, 12) == "pass 2026-11-27 12:00:00 .. 12:05:10, 12 streams"
    assert pass_description(0, T0, 3) == "pass start .. 2026-11-27 12:00:00, 3 streams"
    day_later = T0 + 86_400_000_000
    assert pass_description(T0, day_later, 1).endswith(".. 2026-11-28 12:00:00, 1 streams")


def test_streams_done_follow_the_tasks_finished_and_each_pass_gets_its_line() -> None:
    progress = make_progress(Console(file=io.StringIO(), force_terminal=True, width=160))
    tasks = Tasks()
    shown = PassProgress(RichReporter(progress), tasks.counter)
    shown.poll()  # before any pass: nothing to draw
    assert progress.tasks == []

    shown.started(T0, T0 + 5_000_000, 12, 4)
    tasks.done, tasks.total = 1, 4
    shown.poll()
    assert progress.tasks[0].completed == 3 and progress.tasks[0].total == 12
    tasks.done = 4
    shown.poll()
    shown.finished()
    assert progress.tasks[0].finished and progress.tasks[0].completed == 12

    shown.started(T0 + 5_000_000, T0 + 10_000_000, 8, 2)
    assert tasks.counters == 2  # the new pass counts its own job's tasks only
    assert progress.tasks[1].completed == 0 and not progress.tasks[1].finished
    shown.finished()
    shown.poll()  # between passes: the finished line stays as it was
    assert progress.tasks[1].completed == 8


def test_nothing_is_drawn_when_not_on_a_terminal() -> None:
    out = io.StringIO()
    tasks = Tasks()
    with pass_progress(tasks.counter, Console(file=out, force_terminal=False)) as shown:
        shown.started(T0, T0 + 5_000_000, 12, 4)
        tasks.done, tasks.total = 4, 4
        shown.poll()
        shown.finished()
    assert out.getvalue() == ""


def test_a_terminal_shows_the_pass_and_its_streams() -> None:
    out = io.StringIO()
    tasks = Tasks()
    with pass_progress(tasks.counter, Console(file=out, force_terminal=True, width=160)) as shown:
        shown.started(T0, T0 + 5_000_000, 12, 4)
        tasks.done, tasks.total = 2, 4
        shown.poll()
    drawn = out.getvalue()
    assert "pass 2026-11-27 12:00:00 .. 12:00:05, 12 streams" in drawn and "12/12" in drawn
