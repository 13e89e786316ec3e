"""`tabletdb backup` and `tabletdb restore` (pipelines in tabletdb.spark.backup / .restore).

Both run their per-node and per-file work on Spark: `--master` (default local[*]) and repeatable
`--conf KEY=VALUE` build the session the same way `tabletdb load` does.

Exit codes: 0 done; 1 failed (the message says at which step; a failed restore resumes when run
again); 2 bad options or credentials file; 4 restore finished but row counts differ from the
backup (listed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from tabletdb.cli.credentials import read_credentials
from tabletdb.cli.progress import RichReporter, reporter

EXIT_USAGE = 2
EXIT_MISMATCH = 4


def _cluster_options(
    hosts: str,
    port: int,
    username: str | None,
    password: str | None,
    credentials_file: str | None,
    api_port: int,
    api_endpoints: tuple[str, ...],
    batch: int,
) -> Any:
    from tabletdb.spark.backup import ClusterOptions
    from tabletdb.spark.backup_rest import parse_endpoints

    if credentials_file:
        username, password = read_credentials(credentials_file)
    return ClusterOptions(
        hosts=tuple(h.strip() for h in hosts.split(",") if h.strip()),
        port=port,
        username=username,
        password=password,
        api_port=api_port,
        api_endpoints=parse_endpoints(api_endpoints),
        batch=batch,
    )


def _connection_options(command: Any) -> Any:
    options = [
        click.option("--hosts", required=True, help="Comma-separated contact points."),
        click.option("--port", type=int, default=9042, show_default=True, help="CQL port."),
        click.option("-u", "--username", help="Role for CQL and the REST APIs (HTTP basic auth)."),
        click.option("-p", "--password"),
        click.option("--credentials-file", type=click.Path(exists=True, dir_okay=False)),
        click.option(
            "--api-port", type=int, default=10000, show_default=True, help="REST API port of every node."
        ),
        click.option(
            "--api-endpoint",
            "api_endpoints",
            multiple=True,
            metavar="ADDRESS:PORT",
            help="REST API of one node when its port differs from --api-port; repeatable.",
        ),
        click.option(
            "--batch",
            type=int,
            default=0,
            help="Files per Spark job (default: 4 per core); restore records progress after each job.",
        ),
        click.option("--master", default="local[*]", show_default=True, help="Spark master URL."),
        click.option(
            "--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark configuration, repeatable."
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _store(location: str, option: str) -> str:
    """A path or file: URI made absolute here, or an s3:// URI; other schemes are usage errors."""
    from tabletdb.cli.locations import LocationError, store_location

    try:
        return store_location(location, option)
    except LocationError as exc:
        raise click.UsageError(str(exc)) from None


def _spark(master: str, confs: tuple[str, ...], app_name: str) -> Any:
    """The shared session builder of `tabletdb load`; a bad --conf is a usage error."""
    from tabletdb.spark.session import parse_conf, spark_session

    try:
        conf = parse_conf(confs)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    return spark_session(master, conf, app_name=app_name)


def _run_with_spark(
    master: str, confs: tuple[str, ...], app_name: str, pipeline: Callable[[Any, RichReporter], Any]
) -> Any:
    spark = _spark(master, confs, app_name)
    try:
        with reporter() as shown:
            return pipeline(spark, shown)
    finally:
        spark.stop()


@click.command("backup")
@_connection_options
@click.option(
    "--to",
    "to_dir",
    required=True,
    help="Backup directory: a path or a file: URI (on a cluster: one every worker mounts), or s3://bucket/prefix.",
)
@click.option(
    "--keyspace", "keyspaces", multiple=True, help="Keyspace to back up (default: all); repeatable."
)
@click.option(
    "--all-replicas",
    is_flag=True,
    help="Copy every replica of each tablet (safe when replicas may differ; restore merges them).",
)
def backup_command(
    to_dir: str,
    keyspaces: tuple[str, ...],
    all_replicas: bool,
    master: str,
    confs: tuple[str, ...],
    **connection: Any,
) -> None:
    """Back up schema, roles and data: per-tablet files, schema.cql and manifest.json.

    \b
    Exit codes:
      0  the backup is complete (manifest.json written last)
      1  it failed; the message names the step and the node
      2  bad options or credentials file
    """

    from tabletdb.cli.load import _first_line
    from tabletdb.spark.backup import BackupError, check_target, run_backup
    from tabletdb.spark.backup_rest import RestError

    try:
        options = dataclasses.replace(_cluster_options(**connection), all_replicas=all_replicas)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    from tabletdb.spark.backup_store import BackupStore, StoreError

    target = BackupStore(_store(to_dir, "--to"))  # executors must not depend on our cwd
    local = target.local
    if local is not None and local.exists() and not local.is_dir():
        raise click.UsageError(f"--to {to_dir}: {local} is a file, not a directory")
    try:
        check_target(target)  # before Spark starts
        summary = _run_with_spark(
            master,
            confs,
            "tabletdb backup",
            lambda spark, shown: run_backup(spark, options, target, keyspaces, shown),
        )
    except (BackupError, RestError, StoreError) as exc:
        click.echo(f"tabletdb backup: failed: {exc}", err=True)
        raise SystemExit(1) from None
    except click.UsageError:
        raise
    except Exception as exc:  # driver, Spark and OS errors: one line, not a traceback
        click.echo(f"tabletdb backup: failed: {_first_line(exc)}", err=True)
        raise SystemExit(1) from None
    mb = summary.bytes / 1e6
    click.echo(
        f"backed up {summary.tables} table(s), {summary.files} file(s), {summary.rows} rows, {mb:.1f} MB "
        f"in {summary.seconds:.1f}s ({mb / max(summary.seconds, 1e-9):.1f} MB/s) to {summary.directory}"
    )


@click.command("restore")
@_connection_options
@click.option(
    "--from", "from_dir", required=True, help="Backup directory: a path, a file: URI or s3://bucket/prefix."
)
@click.option(
    "--progress-file",
    help="Where restore records finished steps: a path, a file: URI or s3:// (default: in the backup).",
)
def restore_command(
    from_dir: str, progress_file: str | None, master: str, confs: tuple[str, ...], **connection: Any
) -> None:
    """Restore a backup into an empty cluster; rerun after an interruption to resume.

    \b
    Exit codes:
      0  restored, and every tablet's row count matches the manifest
      1  failed; run the same command again to resume where it stopped
      2  bad options, credentials file or backup directory
      4  restored, but row counts differ from the backup (listed)
    """
    from tabletdb.cli.load import _first_line
    from tabletdb.spark.backup_manifest import ManifestError, read_manifest
    from tabletdb.spark.backup_rest import RestError
    from tabletdb.spark.restore import RestoreError, run_restore

    try:
        options = _cluster_options(**connection)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    from tabletdb.spark.backup_store import BackupStore, StoreError

    progress = BackupStore(_store(progress_file, "--progress-file")) if progress_file else None
    source = BackupStore(_store(from_dir, "--from"))  # executors must not depend on our cwd
    local = source.local
    if local is not None and not local.is_dir():
        raise click.UsageError(f"--from {from_dir}: {local} is not a directory")
    try:
        read_manifest(source)  # before Spark starts
        summary = _run_with_spark(
            master,
            confs,
            "tabletdb restore",
            lambda spark, shown: run_restore(spark, options, source, shown, progress),
        )
    except ManifestError as exc:
        click.echo(f"tabletdb restore: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    except (RestoreError, RestError, StoreError) as exc:
        click.echo(f"tabletdb restore: failed: {exc}; run it again to resume", err=True)
        raise SystemExit(1) from None
    except click.UsageError:
        raise
    except Exception as exc:  # driver, Spark and OS errors: one line, not a traceback
        click.echo(f"tabletdb restore: failed: {_first_line(exc)}; run it again to resume", err=True)
        raise SystemExit(1) from None
    mb = summary.bytes / 1e6
    click.echo(
        f"restored {summary.tables} table(s){' (resumed)' if summary.resumed else ''}: "
        f"{summary.files_loaded} file(s) loaded ({summary.whole_file_installs} whole-file installs, "
        f"{summary.row_loads} row loads), {summary.files_skipped} already done, {summary.rows} rows, "
        f"{mb:.1f} MB in {summary.seconds:.1f}s ({mb / max(summary.seconds, 1e-9):.1f} MB/s)"
    )
    if summary.mismatches:
        click.echo("row counts differ from the backup:\n  " + "\n  ".join(summary.mismatches), err=True)
        raise SystemExit(EXIT_MISMATCH)
