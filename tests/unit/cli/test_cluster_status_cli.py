"""`tabletdb cluster up` command lines and `tabletdb status` rendering (no processes started)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tabletdb.cli.cluster import node_address, node_argv
from tabletdb.cli.main import cli
from tabletdb.cli.status import render


def test_nodes_get_consecutive_loopback_addresses_and_seed_node_one() -> None:
    argv = node_argv(3, Path("w"), node_address(1), "INFO")
    assert argv[argv.index("--listen-address") + 1] == "127.0.0.3"
    assert argv[argv.index("--seeds") + 1] == "127.0.0.1"
    assert argv[argv.index("--workdir") + 1] == str(Path("w") / "node3")
    assert node_address(2, "127.0.97") == "127.0.97.2"


@pytest.mark.parametrize("index", [0, 255])
def test_node_index_outside_one_octet_is_rejected(index: int) -> None:
    with pytest.raises(click.BadParameter, match=r"outside 1\.\.254"):
        node_address(index)


def test_status_marks_state_voter_and_leader() -> None:
    status = {
        "cluster_name": "C",
        "schema_version": "v",
        "enabled_features": ["F"],
        "nodes": [
            {
                "address": "127.0.0.1",
                "host_id": "h1",
                "datacenter": "dc",
                "rack": "r1",
                "state": "normal",
                "voter": True,
                "leader": True,
            },
            {
                "address": "127.0.0.2",
                "host_id": "h2",
                "datacenter": "dc",
                "rack": "r2",
                "state": "normal",
                "voter": False,
                "leader": False,
            },
        ],
    }
    text = render(status, {"127.0.0.1": True, "127.0.0.2": False})
    lines = text.splitlines()
    assert lines[0] == "Cluster: C"
    node1 = next(line for line in lines if "127.0.0.1" in line)
    node2 = next(line for line in lines if "127.0.0.2" in line)
    assert node1.startswith("UN") and "voter" in node1 and node1.rstrip().endswith("*")
    assert node2.startswith("DN") and "learner" in node2 and not node2.rstrip().endswith("*")


def test_commands_are_registered_and_status_reports_an_unreachable_api() -> None:
    runner = CliRunner()
    assert "--nodes" in runner.invoke(cli, ["cluster", "up", "--help"]).output
    result = runner.invoke(cli, ["status", "--host", "127.0.0.1", "--api-port", "1"])
    assert result.exit_code != 0
    assert "cannot reach the REST API at 127.0.0.1:1" in result.output
