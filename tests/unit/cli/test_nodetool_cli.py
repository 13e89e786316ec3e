"""nodetool's command line: its options, and one line when the node cannot be reached."""

from __future__ import annotations

import socket

from click.testing import CliRunner

from tabletdb.cli.main import cli


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when we return: nothing listens there


def test_help_lists_the_commands_and_h_is_the_host() -> None:
    result = CliRunner().invoke(cli, ["nodetool", "--help"])
    assert result.exit_code == 0
    for command in (
        "status",
        "info",
        "ring",
        "describering",
        "decommission",
        "removenode",
        "cleanup",
        "getendpoints",
    ):
        assert command in result.output
    assert "-h, --host" in result.output and "-pw, --password" in result.output


def test_an_unreachable_node_is_one_line_and_exit_1() -> None:
    port = _closed_port()
    result = CliRunner().invoke(cli, ["nodetool", "-h", "127.0.0.1", "-p", str(port), "status"])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot reach the REST API at 127.0.0.1:{port}")
    assert len(result.output.strip().splitlines()) == 1


def test_a_password_needs_a_user() -> None:
    result = CliRunner().invoke(cli, ["nodetool", "-pw", "secret", "status"])
    assert result.exit_code == 2 and "-pw/--password needs -u/--username" in result.output
