"""The `tabletdb` command: flag plumbing into NodeConfig, config errors, logging, lazy subcommands."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from tabletdb.cli import main as cli_main
from tabletdb.cli.logfmt import LogfmtFormatter, configure_logging
from tabletdb.node.config import NodeConfig, read_effective_config


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[NodeConfig]]:
    """Stand in for tabletdb.node.runner so the command can be tested without a server."""
    seen: list[NodeConfig] = []
    module = types.ModuleType("tabletdb.node.runner")

    def run_server(config: NodeConfig, sources: dict[str, str]) -> int:
        seen.append(config)
        return 7

    module.run_server = run_server  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tabletdb.node.runner", module)
    yield seen
    logging.getLogger().handlers.clear()


def invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli_main.cli, list(args), catch_exceptions=False)


def test_flags_reach_runner_and_node_yaml(tmp_path: Path, fake_runner: list[NodeConfig]) -> None:
    workdir = tmp_path / "n1"
    result = invoke(
        "server",
        "--workdir",
        str(workdir),
        "--listen-address",
        "127.0.9.1",
        "--native-transport-port",
        "9142",
        "--seeds",
        "127.0.9.1,127.0.9.2",
        "--smp",
        "3",
        "--authenticator",
        "org.apache.cassandra.auth.PasswordAuthenticator",
        "--api-port",
        "10100",
        "--dc",
        "east",
        "--maintenance-mode",
        "-o",
        "target_tablet_size_in_bytes=1000",
    )
    assert result.exit_code == 7, result.output
    (config,) = fake_runner
    assert config.listen_address == "127.0.9.1" and config.native_transport_port == 9142
    assert config.seeds == ("127.0.9.1", "127.0.9.2") and config.smp == 3
    assert config.authenticator == "PasswordAuthenticator" and config.api_port == 10100
    assert config.dc == "east" and config.maintenance_mode
    assert config.target_tablet_size_in_bytes == 1000
    assert read_effective_config(workdir) == config


def test_flags_override_the_file(tmp_path: Path, fake_runner: list[NodeConfig]) -> None:
    path = tmp_path / "scylla.yaml"
    path.write_text(yaml.safe_dump({"workdir": str(tmp_path / "w"), "smp": 4, "cluster_name": "c1"}))
    assert invoke("server", "--config", str(path), "--smp", "1").exit_code == 7
    assert (fake_runner[0].smp, fake_runner[0].cluster_name) == (1, "c1")


@pytest.mark.parametrize(
    "args",
    [
        ("--smp", "0"),
        ("-o", "no_such_key=1"),
        ("-o", "smp=0"),
        ("-o", "missing-equals-sign"),
        ("--authenticator", "Kerberos"),
    ],
)
def test_config_errors_print_one_line_and_exit_2(
    tmp_path: Path, fake_runner: list[NodeConfig], args: tuple[str, ...]
) -> None:
    result = CliRunner().invoke(cli_main.cli, ["server", "--workdir", str(tmp_path), *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tabletdb: config error:")
    assert not fake_runner


def test_missing_workdir_is_a_config_error(fake_runner: list[NodeConfig]) -> None:
    result = CliRunner().invoke(cli_main.cli, ["server"])
    assert result.exit_code == 2 and "--workdir" in result.output


def test_missing_runner_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tabletdb.node.runner", None)  # makes the import fail
    result = CliRunner().invoke(cli_main.cli, ["server", "--workdir", str(tmp_path)])
    assert result.exit_code == 1 and "tabletdb.node.runner" in result.output


def test_sim_subcommand_is_loaded_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("tabletdb.cli.sim_cmd")

    @click.group("sim")
    def sim_group() -> None:
        """Simulator."""

    @sim_group.command("hello")
    def hello() -> None:
        click.echo("hello from sim")

    module.sim_group = sim_group  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tabletdb.cli.sim_cmd", module)
    result = invoke("sim", "hello")
    assert result.exit_code == 0 and result.output == "hello from sim\n"


def test_sim_without_module_fails_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tabletdb.cli.sim_cmd", types.ModuleType("tabletdb.cli.sim_cmd"))
    result = CliRunner().invoke(cli_main.cli, ["sim"])
    assert result.exit_code != 0 and "unavailable" in result.output


def test_logfmt_line_carries_extra_fields_and_quotes() -> None:
    record = logging.LogRecord("tabletdb.node", logging.WARNING, "f.py", 1, "peer %s down", ("n2",), None)
    record.peer = "127.0.0.2"
    record.reason = 'said "bye" now'
    line = LogfmtFormatter().format(record)
    assert "level=WARNING logger=tabletdb.node" in line
    assert 'msg="peer n2 down"' in line
    assert "peer=127.0.0.2" in line
    assert 'reason="said \\"bye\\" now"' in line


def test_default_level_is_quiet() -> None:
    stream = io.StringIO()
    configure_logging("WARNING", stream)
    try:
        logging.getLogger("tabletdb.x").info("hidden")
        logging.getLogger("tabletdb.x").warning("shown", extra={"k": 1})
    finally:
        logging.getLogger().handlers.clear()
    out = stream.getvalue()
    assert "hidden" not in out and "msg=shown k=1" in out


def test_main_entry_point_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tabletdb.cli.main", "server", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for flag in (
        "--workdir",
        "--listen-address",
        "--native-transport-port",
        "--seeds",
        "--smp",
        "--log-level",
    ):
        assert flag in done.stdout


def test_main_accepts_argv() -> None:
    with pytest.raises(SystemExit) as info:
        cli_main.main(["--version"])
    assert info.value.code == 0
