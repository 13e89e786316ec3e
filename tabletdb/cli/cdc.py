"""``tabletdb cdc export``: a CDC log table to Parquet through Spark, resumable, optionally following.

Each pass writes the log rows of ``[from, to)`` to ``DIR/pass-<from>-<to>/`` (µs since the
epoch; ``to`` lags the clock by 10 s so no late write is missed) and is committed by renaming
its staging directory: rerun the command after a crash or kill -9 and it resumes after the last
committed pass, with no row twice and none missed. ``--follow`` keeps exporting a pass every
``--every`` seconds, across generation and stream-set changes, until interrupted. On a terminal
each pass draws a progress line on stderr (`cli.export_progress`); piped, only the summaries show.

Exit codes: 0 done (or interrupted between passes); 1 a pass failed (rerun to resume); 2 the
export could not start (options, table without a CDC log, output directory).
"""

from __future__ import annotations

import datetime
import time

import click

from tabletdb.cli.credentials import read_credentials
from tabletdb.cli.export_progress import pass_progress, spark_task_counter

EXIT_USAGE = 2


def _since(text: str | None) -> int:
    """µs since the epoch from an integer (µs) or an ISO-8601 time (UTC unless it says)."""
    if not text:
        return 0
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"expected µs since the epoch or an ISO-8601 time, got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1_000_000)


@click.group("cdc")
def cdc_group() -> None:
    """Change data capture tools."""


@cdc_group.command("export")
@click.option("--hosts", required=True, help="Comma-separated contact points.")
@click.option("--port", type=int, default=9042, show_default=True, help="CQL port.")
@click.option("--table", "table", required=True, help="Base table as ks.t (its log is ks.t_scylla_cdc_log).")
@click.option(
    "--to",
    "out_dir",
    required=True,
    help="Output directory, a path or a file: URI (on a cluster: one every Spark worker mounts).",
)
@click.option("--since", help="Start of the first pass: µs since the epoch or ISO-8601 (default: all).")
@click.option("--follow", is_flag=True, help="Keep exporting new passes until interrupted.")
@click.option("--every", type=float, default=5.0, show_default=True, help="Seconds between --follow passes.")
@click.option("--username")
@click.option("--password")
@click.option(
    "--credentials-file",
    type=click.Path(exists=True, dir_okay=False),
    help="cqlshrc-style file: [authentication] username = ..., password = ...",
)
@click.option("--consistency", default="LOCAL_QUORUM", show_default=True)
@click.option("--tasks", type=int, default=8, show_default=True, help="Spark tasks (stream groups) per pass.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark configuration, repeatable.")
def export_command(
    hosts: str,
    port: int,
    table: str,
    out_dir: str,
    since: str | None,
    follow: bool,
    every: float,
    username: str | None,
    password: str | None,
    credentials_file: str | None,
    consistency: str,
    tasks: int,
    master: str,
    confs: tuple[str, ...],
) -> None:
    """Export a table's CDC log to Parquet, stream by stream, resumably.

    \b
    Exit codes:
      0  exported (or interrupted between passes)
      1  a pass failed (rerun: it resumes after the last committed pass)
      2  the export could not start
    """
    from tabletdb.cli.locations import LocationError, local_path
    from tabletdb.spark.cdc_export import ExportError, ExportOptions, run_pass
    from tabletdb.spark.connection import OptionError, parse_options
    from tabletdb.spark.session import ExecutorSetupError, parse_conf, spark_session

    try:  # made absolute here: Spark's executors do not share our cwd; passes commit by rename
        out_path = local_path(out_dir, "--to")
    except LocationError as exc:
        click.echo(f"tabletdb cdc export: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    if credentials_file:
        username, password = read_credentials(credentials_file)
    raw = {"hosts": hosts, "port": str(port), "table": table, "consistency": consistency}
    if username:
        raw.update(username=username, password=password or "")
    try:
        source = parse_options(raw)
        if tasks < 1:
            raise OptionError(f"--tasks must be >= 1, got {tasks}")
        options = ExportOptions(
            source.connect,
            source.keyspace,
            source.table,
            out_path,
            _since(since),
            source.consistency,
            tasks=tasks,
        )
        spark = spark_session(master, parse_conf(confs), app_name=f"tabletdb cdc export {table}")
    except (OptionError, ValueError, click.BadParameter, ExecutorSetupError) as exc:
        click.echo(f"tabletdb cdc export: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    try:
        with pass_progress(spark_task_counter(spark)) as shown:
            while True:
                done = run_pass(spark, options, started=shown.started)
                shown.finished()
                if done is not None:
                    click.echo(
                        f"exported {done.rows} log rows of {done.streams} streams, cdc$time in "
                        f"[{done.lower}, {done.upper}) µs, to {done.path}"
                    )
                if not follow:
                    break
                time.sleep(every)
    except KeyboardInterrupt:
        click.echo("interrupted: the next run resumes after the last committed pass", err=True)
    except ExportError as exc:
        click.echo(f"tabletdb cdc export: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    except Exception as exc:  # Spark wraps a task's error in tracebacks: its last line names it
        lines = str(exc).strip().splitlines()
        click.echo(f"tabletdb cdc export: failed: {lines[-1] if lines else type(exc).__name__}", err=True)
        raise SystemExit(1) from None
    finally:
        spark.stop()
