"""`tabletdb cdc export`'s progress lines: one per pass, drawn as load and backup draw theirs.

A pass's line names its time window and counts the streams read so far. Spark reports tasks,
not streams: each task reads one group of streams adjacent in token order (groups differ by at
most one stream), so the streams done are the pass's streams times the fraction of its job's
tasks finished, polled from Spark's status tracker. As everywhere in `cli.progress`, nothing is
drawn when stderr is not a terminal: the one summary line per pass on stdout is the output.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

from tabletdb.cli.progress import RichReporter, reporter

_POLL = 0.5

TasksDone = Callable[[], tuple[int, int]]
"""(finished tasks, all tasks) of the jobs that ran since it was made."""
TaskCounter = Callable[[], TasksDone]
"""Makes a fresh TasksDone as a pass starts."""


def _moment(micros: int) -> str:
    moment = datetime.datetime.fromtimestamp(micros / 1e6, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def pass_description(lower: int, upper: int, streams: int) -> str:
    """`pass 2026-11-27 18:00:00 .. 18:05:10, 12 streams` (the start date is left out when the
    pass starts from the beginning of the log)."""
    start = "start" if lower <= 0 else _moment(lower)
    end = _moment(upper)
    if start[:10] == end[:10]:
        end = end[11:]
    return f"pass {start} .. {end}, {streams} streams"


class PassProgress:
    """Turns `run_pass`'s `started` calls and Spark's task counts into reporter steps."""

    def __init__(self, shown: RichReporter, counter: TaskCounter) -> None:
        self._shown = shown
        self._counter = counter
        self._tasks_done: TasksDone | None = None
        self._lock = threading.Lock()
        self._streams = 0

    def started(self, lower: int, upper: int, streams: int, tasks: int) -> None:
        with self._lock:
            self._streams = streams
            self._tasks_done = self._counter()
            self._shown.step(pass_description(lower, upper, streams), streams)

    def finished(self) -> None:
        with self._lock:
            self._streams = 0
            self._shown.finish()

    def poll(self) -> None:
        with self._lock:
            if not self._streams or self._tasks_done is None:
                return
            done, tasks = self._tasks_done()
            if tasks:
                self._shown.set_completed(self._streams * min(done, tasks) / tasks)


def spark_task_counter(spark: Any) -> TaskCounter:
    """Counters of the tasks of every stage seen active since the counter was made (a pass
    runs one job; its stages are remembered once seen, so a finished stage still counts)."""
    tracker = spark.sparkContext.statusTracker()

    def counter() -> TasksDone:
        seen: set[int] = set()

        def tasks_done() -> tuple[int, int]:
            seen.update(tracker.getActiveStageIds())
            infos = [i for i in map(tracker.getStageInfo, seen) if i is not None]
            return sum(i.numCompletedTasks for i in infos), sum(i.numTasks for i in infos)

        return tasks_done

    return counter


@contextmanager
def pass_progress(counter: TaskCounter, console: Console | None = None) -> Iterator[PassProgress]:
    """A PassProgress drawing on stderr (or `console`), polled in a thread while the block runs."""
    stop = threading.Event()
    with reporter(console) as shown:
        progress = PassProgress(shown, counter)

        def poll() -> None:
            while not stop.wait(_POLL):
                progress.poll()

        poller = threading.Thread(target=poll, name="cdc-export-progress", daemon=True)
        poller.start()
        try:
            yield progress
        finally:
            stop.set()
            poller.join()
