"""`tabletdb load`: bulk load a Parquet, CSV or JSON-lines file into a table through Spark.

Exit codes (also in --help and the README): 0 every row loaded; 3 loaded, but some rows were
rejected (see the rejects location); 2 the load could not start (bad options, unknown format,
unknown table, input fields that match no column); 1 the load failed while writing (the CQL
error is printed). A failed or killed load can simply be run again: rows are upserts, so the
rows written twice end up once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from tabletdb.cli.credentials import read_credentials
from tabletdb.cli.progress import reporter

EXIT_REJECTS = 3
EXIT_USAGE = 2
_POLL = 0.5


@contextmanager
def _spark_progress(spark: Any) -> Iterator[Any]:
    """Draw the load's steps; yields the `StepReporter` that run_load calls as each step starts.

    Spark reports tasks, not rows: a step's amount is its total (rows or input bytes) times the
    fraction of tasks done in the stages that ran during the step (stages skipped because their
    output was cached never run, and are not counted).
    """
    context = spark.sparkContext
    tracker = context.statusTracker()
    lock = threading.Lock()
    state: dict[str, Any] = {"total": None, "stages": set()}
    stop = threading.Event()

    with reporter() as shown:

        def step(name: str, total: int | None, unit: str) -> None:
            with lock:
                if name:
                    shown.step(name, total, unit)
                else:
                    shown.finish()
                state.update(total=total if name else None, stages=set())

        def poll() -> None:
            while not stop.wait(_POLL):
                with lock:
                    total, seen = state["total"], state["stages"]
                    seen.update(tracker.getActiveStageIds())
                    infos = [i for i in map(tracker.getStageInfo, seen) if i is not None]
                    tasks = sum(i.numTasks for i in infos)
                    if total and tasks:
                        done = sum(i.numCompletedTasks for i in infos)
                        shown.set_completed(total * done / tasks)

        poller = threading.Thread(target=poll, name="load-progress", daemon=True)
        poller.start()
        try:
            yield step
        finally:
            stop.set()
            poller.join()


def _credentials(
    username: str | None, password: str | None, credentials_file: str | None
) -> tuple[str | None, str | None]:
    if credentials_file:
        return read_credentials(credentials_file)
    return username, password


@click.command("load")
@click.option("--hosts", required=True, help="Comma-separated contact points.")
@click.option("--port", type=int, default=9042, show_default=True, help="CQL port.")
@click.option("--table", "table", required=True, help="Target table as ks.t.")
@click.option(
    "--from",
    "source",
    required=True,
    help="Input file or directory: a path, a file: URI, or a URI of any filesystem Spark reads.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "csv", "json"]),
    help="Input format (default: from the file's extension: .parquet, .csv, .json/.jsonl).",
)
@click.option(
    "-o",
    "--option",
    "input_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="CSV reader option, by Spark's name: header (true), delimiter/sep (,), quote (\"), "
    'escape ("), multiLine (true), nullValue (empty); repeatable.',
)
@click.option(
    "--rejects",
    help="Directory (or Spark URI) for rejected rows (default: <input>.rejects-<time>); must not exist.",
)
@click.option("--username")
@click.option("--password")
@click.option(
    "--credentials-file",
    type=click.Path(exists=True, dir_okay=False),
    help="cqlshrc-style file: [authentication] username = ..., password = ...",
)
@click.option(
    "--consistency",
    help="Consistency of the INSERTs (--via cql; default LOCAL_QUORUM). Files go to every replica.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="INSERTs in flight per Spark task (--via cql; default 256).",
)
@click.option("--writetime-column", help="Input field with each row's write timestamp (microseconds).")
@click.option("--ttl-column", help="Input field with each row's TTL in seconds.")
@click.option(
    "--via",
    type=click.Choice(["files", "cql"]),
    help="files: per-tablet SQLite files merged on the replicas (the default); cql: INSERTs "
    "through the driver (the default for counter tables and tables with views, indexes or CDC).",
)
@click.option(
    "--file-rows",
    type=click.IntRange(min=1),
    default=None,
    help="Rows of one tablet a Spark task sends as one file (--via files; default 100000).",
)
@click.option("--api-port", type=int, default=10000, show_default=True, help="REST API port of every node.")
@click.option(
    "--api-endpoint",
    "api_endpoints",
    multiple=True,
    metavar="ADDRESS:PORT",
    help="REST API of one node when its port differs from --api-port; repeatable (--via files).",
)
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark configuration, repeatable.")
def load_command(
    hosts: str,
    port: int,
    table: str,
    source: str,
    fmt: str | None,
    input_options: tuple[str, ...],
    rejects: str | None,
    username: str | None,
    password: str | None,
    credentials_file: str | None,
    consistency: str | None,
    concurrency: int | None,
    writetime_column: str | None,
    ttl_column: str | None,
    via: str | None,
    file_rows: int | None,
    api_port: int,
    api_endpoints: tuple[str, ...],
    master: str,
    confs: tuple[str, ...],
) -> None:
    """Bulk load a file into a table through Spark; rows that do not fit go to the rejects.

    \b
    By default rows go as per-tablet SQLite files that each replica merges (--via files; the
    nodes' REST API must be reachable: --api-port, --api-endpoint); counter tables and tables
    with views, indexes or CDC load through CQL INSERTs (--via cql).

    \b
    Exit codes:
      0  every row loaded
      1  the load failed while writing (rerun it: rows are upserts)
      2  the load could not start (options, format, table, input fields)
      3  loaded, but some rows were rejected (reasons in the rejects directory)
    """
    from tabletdb.cli.locations import LocationError, spark_location
    from tabletdb.spark.backup_rest import RestError, parse_endpoints
    from tabletdb.spark.connection import OptionError, parse_options
    from tabletdb.spark.file_load import FLUSH_ROWS, FileTarget, choose_via, run_file_load
    from tabletdb.spark.input_options import InputOptionError, infer_format, parse_csv_options, parse_pairs
    from tabletdb.spark.load import LoadError, run_load
    from tabletdb.spark.schema_map import SchemaError
    from tabletdb.spark.session import ExecutorSetupError, parse_conf, spark_session

    try:  # made absolute here: Spark's executors do not share our cwd
        source = spark_location(source, "--from")
        rejects = spark_location(rejects, "--rejects") if rejects else None
    except LocationError as exc:
        click.echo(f"tabletdb load: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    username, password = _credentials(username, password, credentials_file)
    raw = {"hosts": hosts, "port": str(port), "table": table}
    if consistency:
        raw["consistency"] = consistency
    if concurrency:
        raw["concurrency"] = str(concurrency)
    if writetime_column:
        raw["writetime_column"] = writetime_column
    if ttl_column:
        raw["ttl_column"] = ttl_column
    if username:
        raw.update(username=username, password=password or "")
    rejects_dir = rejects or f"{source.rstrip('/')}.rejects-{time.strftime('%Y%m%dT%H%M%S')}"
    try:
        fmt = fmt or infer_format(source)
        csv = parse_csv_options(parse_pairs(input_options), fmt)
        options = parse_options(raw)
        rest_login = (username, password or "") if username else None
        target = FileTarget(api_port, parse_endpoints(api_endpoints), rest_login, file_rows or FLUSH_ROWS)
        via = choose_via(options, via)
        if via == "files" and (consistency or concurrency):
            raise LoadError(
                "--consistency and --concurrency apply to --via cql: a load through files sends "
                "each tablet's file to every one of its replicas"
            )
        spark = spark_session(master, parse_conf(confs), app_name=f"tabletdb load {table}")
    except (
        OptionError,
        LoadError,
        SchemaError,
        ValueError,
        ExecutorSetupError,
    ) as exc:  # InputOptionError is a ValueError
        click.echo(f"tabletdb load: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    try:
        with _spark_progress(spark) as step:
            if via == "files":
                summary = run_file_load(spark, options, target, source, fmt, rejects_dir, step, csv)
            else:
                summary = run_load(spark, options, raw, source, fmt, rejects_dir, step, csv)
    except (LoadError, SchemaError, OptionError, InputOptionError, RestError) as exc:
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
        f"in {summary.seconds:.1f}s ({rate:.0f} rows/s, via {via})"
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
