"""Progress display shared by `tabletdb load`, `backup` and `restore` (rich, on stderr).

One line per step: what it does, a bar, how much is done in the step's own unit (rows, MB or
items), the rate, the time left and the time spent. A finished step is marked complete and its
clock stops; the next step gets its own line. When stderr is not a terminal (a pipe, a log file,
CI) nothing is drawn at all: the command's one-line summary on stdout is the whole output.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

BYTES = "bytes"
ROWS = "rows"
ITEMS = "items"


def _amount(value: float, unit: str) -> str:
    if unit == BYTES:
        return f"{value / 1e6:,.1f}"
    return f"{int(value):,}"


class AmountColumn(ProgressColumn):
    """`done/total unit`, e.g. `12,000/1,000,000 rows` or `3.2/40.0 MB`."""

    def render(self, task: Task) -> Text:
        unit = str(task.fields.get("unit", ITEMS))
        label = "MB" if unit == BYTES else ("" if unit == ITEMS else unit)
        total = "?" if task.total is None else _amount(task.total, unit)
        return Text(f"{_amount(task.completed, unit)}/{total} {label}".rstrip(), style="progress.download")


class RateColumn(ProgressColumn):
    """Rows/s or MB/s while a step runs (nothing for steps counted in items)."""

    def render(self, task: Task) -> Text:
        unit = str(task.fields.get("unit", ITEMS))
        speed = task.finished_speed or task.speed
        if unit == ITEMS or not speed:
            return Text("")
        text = f"{speed / 1e6:,.1f} MB/s" if unit == BYTES else f"{speed:,.0f} rows/s"
        return Text(text, style="progress.data.speed")


def make_progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        AmountColumn(),
        RateColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    )


class RichReporter:
    """The pipelines' Reporter: one line per step; starting a step finishes the one before."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def step(self, description: str, total: int | None, unit: str = ITEMS) -> None:
        self.finish()
        self._task = self._progress.add_task(description, total=total, unit=unit)

    def advance(self, amount: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, amount)

    def set_total(self, total: int | None) -> None:
        if self._task is not None:
            self._progress.update(self._task, total=total)

    def set_completed(self, completed: float) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=completed)

    def finish(self) -> None:
        """Mark the current step done (its bar full) and stop its clock."""
        if self._task is None:
            return
        task = next(t for t in self._progress.tasks if t.id == self._task)
        done = task.total if task.total is not None else task.completed
        self._progress.update(self._task, total=done, completed=done)
        self.stop()

    def stop(self) -> None:
        """Stop the current step's clock where it is (the step failed or was interrupted)."""
        if self._task is not None:
            self._progress.stop_task(self._task)
            self._task = None


@contextmanager
def reporter(console: Console | None = None) -> Iterator[RichReporter]:
    """A reporter drawing on stderr while the block runs; the last step is finished on exit."""
    progress = make_progress(console or Console(stderr=True))
    with progress:
        out = RichReporter(progress)
        try:
            yield out
        except BaseException:
            out.stop()
            raise
        out.finish()
