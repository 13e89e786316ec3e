"""`tabletdb load`: bulk load a Parquet, CSV or JSON-lines file into a table through Spark.

Exit codes: 0 every row loaded; 3 loaded, but some rows were rejected (see the rejects location);
2 the load could not start (bad options, unknown table, input fields that match no column);
1 the load failed while writing (the CQL error is printed).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

EXIT_REJECTS = 3
EXIT_USAGE = 2


@contextmanager
def _spark_progress(spark: Any, console: Console) -> Iterator[Any]:
    """A progress bar of the running Spark stages' tasks, refreshed from the status tracker;
    yields a function that names the current step."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    task = progress.add_task("starting", total=None)
    stop = threading.Event()

    def poll() -> None:
        tracker = spark.sparkContext.statusTracker()
        while not stop.wait(0.3):
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                progress.update(task, completed=done, total=total)

    poller = threading.Thread(target=poll, name="load-progress", daemon=True)
    with progress:
        poller.start()
        try:
            yield lambda step: progress.update(task, description=step, completed=0, total=None)
        finally:
            stop.set()
            poller.join()


@click.command("load")
@click.option("--hosts", required=True, help="Comma-separated contact points.")
@click.option("--port", type=int, default=9042, show_default=True, help="CQL port.")
@click.option("--table", "table", required=True, help="Target table as ks.t.")
@click.option("--from", "source", required=True, help="Input file or directory.")
@click.option(
    "--format", "fmt", type=click.Choice(["parquet", "csv", "json"]), default="parquet", show_default=True
)
@click.option(
    "--rejects", help="Directory for rejected rows (default: <input>.rejects-<time>); must not exist."
)
@click.option("--username")
@click.option("--password")
@click.option("--consistency", default="LOCAL_QUORUM", show_default=True)
@click.option(
    "--concurrency", type=int, default=256, show_default=True, help="Writes in flight per Spark task."
)
@click.option("--writetime-column", help="Input field with each row's write timestamp (microseconds).")
@click.option("--ttl-column", help="Input field with each row's TTL in seconds.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark configuration, repeatable.")
def load_command(
    hosts: str,
    port: int,
    table: str,
    source: str,
    fmt: str,
    rejects: str | None,
    username: str | None,
    password: str | None,
    consistency: str,
    concurrency: int,
    writetime_column: str | None,
    ttl_column: str | None,
    master: str,
    confs: tuple[str, ...],
) -> None:
    """Bulk load a file into a table through Spark; rows that do not fit go to the rejects."""
    from tabletdb.spark.connection import OptionError, parse_options
    from tabletdb.spark.load import LoadError, run_load
    from tabletdb.spark.schema_map import SchemaError
    from tabletdb.spark.session import parse_conf, spark_session

    raw = {"hosts": hosts, "port": str(port), "table": table, "consistency": consistency}
    raw["concurrency"] = str(concurrency)
    if writetime_column:
        raw["writetime_column"] = writetime_column
    if ttl_column:
        raw["ttl_column"] = ttl_column
    if username:
        raw.update(username=username, password=password or "")
    rejects_dir = rejects or f"{source.rstrip('/')}.rejects-{time.strftime('%Y%m%dT%H%M%S')}"
    console = Console(stderr=True)
    try:
        options = parse_options(raw)
        spark = spark_session(master, parse_conf(confs), app_name=f"tabletdb load {table}")
    except (OptionError, ValueError) as exc:
        click.echo(f"tabletdb load: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    try:
        with _spark_progress(spark, console) as step:
            summary = run_load(spark, options, raw, source, fmt, rejects_dir, step)
    except (LoadError, SchemaError, OptionError) as exc:
        click.echo(f"tabletdb load: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    except Exception as exc:
        click.echo(f"tabletdb load: failed: {_first_line(exc)}", err=True)
        raise SystemExit(1) from None
    finally:
        spark.stop()
    rate = summary.loaded / summary.seconds if summary.seconds > 0 else 0.0
    click.echo(
        f"read {summary.read} rows: loaded {summary.loaded}, rejected {summary.rejected} "
        f"in {summary.seconds:.1f}s ({rate:.0f} rows/s)"
    )
    if summary.rejected:
        click.echo(f"rejected rows and reasons: {summary.rejects_path}")
        raise SystemExit(EXIT_REJECTS)


def _first_line(exc: BaseException) -> str:
    """Spark wraps a task's Python error in a traceback (and the JVM's); the cause is the line
    where the traceback names the exception: `module.Class: message`."""
    text = str(exc)
    for line in reversed(text.splitlines()):
        name, sep, message = line.partition(": ")
        if sep and name and " " not in name and name.split(".")[-1][:1].isupper():
            return f"{name.split('.')[-1]}: {message}"
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
