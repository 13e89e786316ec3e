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
)
from rich.table import Column
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


def average_rate(task: Task) -> float | None:
    """Units per second over the whole step. Not rich's recent-samples speed: amounts here often
    move in jumps (a Spark task's rows at once, files already done on a resumed run), and a
    short window over a jump reports many times the real rate."""
    elapsed = task.elapsed
    if not elapsed or task.completed <= 0:
        return None
    return task.completed / elapsed


class RateColumn(ProgressColumn):
    """Rows/s or MB/s of the step so far (nothing for steps counted in items)."""

    def render(self, task: Task) -> Text:
        unit = str(task.fields.get("unit", ITEMS))
        rate = average_rate(task)
        if unit == ITEMS or rate is None:
            return Text("")
        text = f"{rate / 1e6:,.1f} MB/s" if unit == BYTES else f"{rate:,.0f} rows/s"
        return Text(text, style="progress.data.speed")


class EtaColumn(ProgressColumn):
    """Time left at the step's average rate; `-:--:--` until something is done."""

    def render(self, task: Task) -> Text:
        rate = average_rate(task)
        if task.finished:
            return Text("eta 0:00:00", style="progress.remaining")
        if rate is None or task.total is None:
            return Text("eta -:--:--", style="progress.remaining")
        left = int(max(0.0, task.total - task.completed) / rate)
        return Text(f"eta {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}", style="progress.remaining")


_FIGURES_WIDTH = 56
"""Room the figures need: `50,000/50,000 rows`, `1,234 rows/s`, `eta 0:00:00`, `0:00:00`."""
_BAR_WIDTH = 20


def make_progress(console: Console) -> Progress:
    """Figures are never cut: a narrow terminal gets no bar and a shortened description."""
    room = console.width - _FIGURES_WIDTH
    bar = room >= 40 + _BAR_WIDTH
    description = Column(
        max_width=max(12, room - (_BAR_WIDTH + 1 if bar else 0)), overflow="ellipsis", no_wrap=True
    )
    columns: list[ProgressColumn] = [TextColumn("[bold]{task.description}", table_column=description)]
    if bar:
        columns.append(BarColumn(bar_width=_BAR_WIDTH))
    for column in (AmountColumn, RateColumn, EtaColumn, TimeElapsedColumn):
        columns.append(column(table_column=Column(no_wrap=True)))
    return Progress(*columns, console=console, disable=not console.is_terminal)


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
