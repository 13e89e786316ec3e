"""`tabletdb backup` / `restore` refuse bad Spark options and unusable directories before Spark
(or any connection) starts."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tabletdb.cli.backup import backup_command, restore_command

HOSTS = ["--hosts", "127.0.0.1"]


def test_a_conf_without_equals_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(backup_command, [*HOSTS, "--to", str(tmp_path / "b"), "--conf", "nokey"])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output


def test_backup_into_a_finished_backup_fails_at_once(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    result = CliRunner().invoke(backup_command, [*HOSTS, "--to", str(tmp_path), "--conf", "nokey"])
    assert result.exit_code == 1 and "already holds a backup" in result.output


def test_restore_from_a_directory_without_manifest_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(restore_command, [*HOSTS, "--from", str(tmp_path)])
    assert result.exit_code == 2 and "manifest.json" in result.output


def test_load_without_format_and_an_unknown_extension_is_one_line(tmp_path: Path) -> None:
    from tabletdb.cli.load import load_command

    (tmp_path / "rows.txt").write_text("k\n1\n")
    args = [*HOSTS, "--table", "ks.t", "--from", str(tmp_path / "rows.txt")]
    result = CliRunner().invoke(load_command, args)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "pass --format" in result.output


def test_load_refuses_csv_options_it_would_ignore(tmp_path: Path) -> None:
    from tabletdb.cli.load import load_command

    (tmp_path / "rows.parquet").write_text("")
    args = [*HOSTS, "--table", "ks.t", "--from", str(tmp_path / "rows.parquet"), "-o", "header=false"]
    result = CliRunner().invoke(load_command, args)
    assert result.exit_code == 2 and "apply to CSV input" in result.output


def test_exit_codes_are_in_help() -> None:
    from tabletdb.cli.load import load_command

    assert "3  loaded, but some rows were rejected" in CliRunner().invoke(load_command, ["--help"]).output
    assert "4  restored, but row counts differ" in CliRunner().invoke(restore_command, ["--help"]).output
    assert "Exit codes" in CliRunner().invoke(backup_command, ["--help"]).output


def test_load_reads_a_cqlshrc_credentials_file_and_refuses_an_incomplete_one(tmp_path: Path) -> None:
    from tabletdb.cli.credentials import read_credentials
    from tabletdb.cli.load import load_command

    good = tmp_path / "cqlshrc"
    good.write_text("[authentication]\nusername = loader\npassword = s3cret\n")
    assert read_credentials(str(good)) == ("loader", "s3cret")
    bad = tmp_path / "partial"
    bad.write_text("username = loader\n")
    (tmp_path / "rows.csv").write_text("k\n1\n")
    args = [*HOSTS, "--table", "ks.t", "--from", str(tmp_path / "rows.csv"), "--credentials-file", str(bad)]
    result = CliRunner().invoke(load_command, args)
    assert result.exit_code == 2 and "needs username and password" in result.output
