"""The progress lines of load, backup and restore: finished steps stop, pipes get nothing."""

from __future__ import annotations

import io

from rich.console import Console

from tabletdb.cli.progress import BYTES, ROWS, RichReporter, make_progress, reporter


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=160), out


def test_starting_a_step_finishes_the_one_before_and_stops_its_clock() -> None:
    console, _ = _terminal()
    progress = make_progress(console)
    shown = RichReporter(progress)
    shown.step("copying tablet files", 1000, BYTES)
    shown.advance(400)
    shown.step("verifying", 3)
    first, second = progress.tasks
    assert first.finished and first.completed == 1000 and first.stop_time is not None
    assert not second.finished and second.stop_time is None
    shown.finish()
    assert second.finished and second.stop_time is not None


def test_a_resumed_step_starts_from_what_was_done() -> None:
    console, _ = _terminal()
    progress = make_progress(console)
    shown = RichReporter(progress)
    shown.step("loading tablet files", 100, BYTES)
    shown.advance(60)  # files an earlier run finished
    assert progress.tasks[0].percentage == 60


def test_a_failed_step_keeps_its_amount() -> None:
    console, _ = _terminal()
    try:
        with reporter(console) as shown:
            shown.step("writing rows", 10, ROWS)
            shown.advance(4)
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert "4/10 rows" in console.file.getvalue()  # type: ignore[attr-defined]


def test_nothing_is_drawn_when_not_on_a_terminal() -> None:
    out = io.StringIO()
    with reporter(Console(file=out, force_terminal=False)) as shown:
        shown.step("writing rows", 10, ROWS)
        shown.advance(10)
    assert out.getvalue() == ""


def test_amounts_and_rates_in_the_step_unit() -> None:
    console, out = _terminal()
    with reporter(console) as shown:
        shown.step("copying", 3_000_000, BYTES)
        shown.advance(1_500_000)
    assert "3.0/3.0 MB" in out.getvalue()


def test_rate_and_eta_are_the_step_average_not_a_burst() -> None:
    from rich.progress import Task

    from tabletdb.cli.progress import EtaColumn, RateColumn

    task = Task(0, "writing rows", 1000, 250, _get_time=lambda: 100.0, fields={"unit": ROWS})
    task.start_time = 50.0  # 250 rows in 50 s, all arriving in one jump
    assert RateColumn().render(task).plain == "5 rows/s"
    assert EtaColumn().render(task).plain == "eta 0:02:30"


def test_figures_stay_on_one_line_on_a_narrow_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    with reporter(console) as shown:
        shown.step("removing snapshots, resuming balancing and a long description", 10_000_000, BYTES)
        shown.advance(5_000_000)
    lines = [line for line in out.getvalue().splitlines() if "MB" in line]
    assert lines and "10.0/10.0 MB" in lines[-1] and "eta 0:00:00" in lines[-1]
