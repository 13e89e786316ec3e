"""Every exit code a command's --help lists is in the README's paragraph for that command, and
the README lists no other (issue 19 item 7: `load` used to exit 3 on rejects, said nowhere)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

README = Path(__file__).resolve().parents[3] / "README.md"


def _help_codes(command: click.Command, args: list[str]) -> set[str]:
    text = CliRunner().invoke(command, [*args, "--help"]).output
    block = text.split("Exit codes:", 1)[1]
    return set(re.findall(r"^\s+(\d)\s{2}", block, flags=re.MULTILINE))


def _readme_codes(start: str, end: str) -> set[str]:
    text = " ".join(README.read_text().split())  # paragraphs wrap anywhere
    begin = text.index(start)
    return set(re.findall(r"`(\d)`", text[begin : text.index(end, begin + len(start))]))


@pytest.mark.parametrize(
    ("name", "args", "start", "end"),
    [
        ("load", [], "Exit codes of `tabletdb load`:", "rejects directory)"),
        ("backup", [], "Exit codes of `tabletdb backup`:", "Of `tabletdb restore`"),
        ("restore", [], "Of `tabletdb restore`:", "(each listed)"),
        ("cdc", ["export"], "one the Spark workers share. Exit codes:", "could not start."),
    ],
)
def test_help_and_readme_list_the_same_exit_codes(name: str, args: list[str], start: str, end: str) -> None:
    from tabletdb.cli.backup import backup_command, restore_command
    from tabletdb.cli.cdc import cdc_group
    from tabletdb.cli.load import load_command

    command = {"load": load_command, "backup": backup_command, "restore": restore_command, "cdc": cdc_group}
    in_help = _help_codes(command[name], args)
    assert in_help, f"{name} --help lists no exit codes"
    assert _readme_codes(start, end) == in_help
