"""Paths and file: URIs are made absolute where the command runs; other schemes are refused by the
commands that do their own file I/O, and passed to Spark by `load`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tabletdb.cli.locations import LocationError, local_path, scheme, spark_location

HOSTS = ["--hosts", "127.0.0.1"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/abs/dir", None),
        ("rel/dir", None),
        ("a:b/c", None),
        ("file:///abs", "file"),
        ("file:/abs", "file"),
        ("FILE:rel", "file"),
        ("hdfs://nn:8020/x", "hdfs"),
        ("s3a://bucket/key", "s3a"),
    ],
)
def test_scheme(text: str, expected: str | None) -> None:
    assert scheme(text) == expected


def test_every_hadoop_spelling_of_a_file_uri_is_the_same_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    want = tmp_path / "back ups" / "b1"
    for text in (
        f"file://{tmp_path}/back%20ups/b1",
        f"file:{tmp_path}/back%20ups/b1",
        f"file://localhost{tmp_path}/back%20ups/b1",
        "file:back%20ups/b1",
        "back ups/b1",
        str(want),
    ):
        assert local_path(text, "--to") == want, text


def test_other_schemes_and_hosts_are_refused_with_what_to_do() -> None:
    with pytest.raises(LocationError, match=r"--to hdfs://nn/b: only a path or a file: URI .* mount"):
        local_path("hdfs://nn/b", "--to")
    with pytest.raises(LocationError, match="'otherhost' is not this machine"):
        local_path("file://otherhost/b", "--to")
    with pytest.raises(LocationError, match="no query or fragment"):
        local_path("file:///b?x=1", "--to")


def test_spark_locations_keep_other_uris_and_resolve_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert spark_location("s3a://bucket/in.parquet", "--from") == "s3a://bucket/in.parquet"
    assert spark_location("in.csv", "--from") == str(tmp_path / "in.csv")
    assert spark_location("file:///data/in.csv", "--from") == "/data/in.csv"


def test_backup_restore_and_export_refuse_a_store_they_cannot_write(tmp_path: Path) -> None:
    from tabletdb.cli.backup import backup_command, restore_command
    from tabletdb.cli.cdc import cdc_group

    runner = CliRunner()
    result = runner.invoke(backup_command, [*HOSTS, "--to", "gs://bucket/b1"])
    assert result.exit_code == 2 and "a file: URI or s3:// here (gs:// has not been tested" in result.output
    result = runner.invoke(restore_command, [*HOSTS, "--from", "hdfs://nn/b1"])
    assert result.exit_code == 2 and "mount that store" in result.output
    result = runner.invoke(restore_command, [*HOSTS, "--from", "s3://"])
    assert result.exit_code == 2 and "names a bucket" in result.output
    result = runner.invoke(cdc_group, ["export", *HOSTS, "--table", "ks.t", "--to", "s3://b/x"])
    assert result.exit_code == 2 and "only a path or a file: URI" in result.output


def test_backup_and_restore_take_s3_uris_in_hadoops_spellings(tmp_path: Path) -> None:
    from tabletdb.cli.locations import store_location

    assert store_location("s3://bucket/backups/b1", "--to") == "s3://bucket/backups/b1"
    assert store_location("s3a://bucket/b1", "--to") == "s3://bucket/b1"
    assert store_location("s3n://bucket/b1", "--from") == "s3://bucket/b1"
    assert store_location(f"file://{tmp_path}/b1", "--to") == str(tmp_path / "b1")


def test_backup_to_a_file_is_a_usage_error(tmp_path: Path) -> None:
    from tabletdb.cli.backup import backup_command

    (tmp_path / "taken").write_text("")
    result = CliRunner().invoke(backup_command, [*HOSTS, "--to", f"file:{tmp_path}/taken"])
    assert result.exit_code == 2 and f"{tmp_path / 'taken'} is a file, not a directory" in result.output


def test_restore_from_a_file_uri_reads_that_directory(tmp_path: Path) -> None:
    from tabletdb.cli.backup import restore_command

    result = CliRunner().invoke(restore_command, [*HOSTS, "--from", tmp_path.as_uri()])
    assert result.exit_code == 2 and f"{tmp_path} has no manifest.json" in result.output
    missing = tmp_path / "missing"
    result = CliRunner().invoke(restore_command, [*HOSTS, "--from", missing.as_uri()])
    assert result.exit_code == 2 and f"{missing} is not a directory" in result.output


def test_load_resolves_a_relative_file_uri_before_its_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tabletdb.cli.load import load_command

    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.txt").write_text("k\n1\n")
    result = CliRunner().invoke(load_command, [*HOSTS, "--table", "ks.t", "--from", "file:rows.txt"])
    assert result.exit_code == 2 and f"cannot tell the format of {tmp_path / 'rows.txt'}" in result.output
