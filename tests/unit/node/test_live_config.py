"""system.config's rows and live updates (`node.live_config`): sources as given, ScyllaDB's
refusals in its order, and a live timeout reaching the coordinator and Paxos objects that read
it on every request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabletdb.coordinator.context import Timeouts
from tabletdb.node.config import NodeConfig, config_sources
from tabletdb.node.live_config import LiveConfig, apply_timeouts
from tabletdb.paxos.service import PaxosTimeouts
from tabletdb.systables.local_tables import ConfigUpdateRefused


class _Replicas:
    def __init__(self) -> None:
        self.timeouts = Timeouts()

    def set_timeouts(self, timeouts: Timeouts) -> None:
        self.timeouts = timeouts


class _Paxos:
    def __init__(self) -> None:
        self.timeouts = PaxosTimeouts()

    def set_timeouts(self, timeouts: PaxosTimeouts) -> None:
        self.timeouts = timeouts


def _live(tmp_path: Path, **overrides: object) -> tuple[LiveConfig, list[NodeConfig]]:
    seen: list[NodeConfig] = []
    config = NodeConfig(workdir=tmp_path, **overrides)  # type: ignore[arg-type]
    return LiveConfig(config, {"workdir": "cli"}, seen.append), seen


def test_sources_tell_file_from_command_line(tmp_path: Path) -> None:
    yaml_file = tmp_path / "scylla.yaml"
    yaml_file.write_text("cluster_name: c1\nnum_tokens: 16\n")
    sources = config_sources(yaml_file, {"num_tokens": 8, "workdir": str(tmp_path), "dc": None})
    assert sources == {"cluster_name": "config", "num_tokens": "cli", "workdir": "cli"}


def test_entries_are_json_values_with_scylladb_types(tmp_path: Path) -> None:
    live, _ = _live(tmp_path, num_tokens=16)
    rows = {e.name: e for e in live.entries()}
    assert (rows["num_tokens"].type, rows["num_tokens"].value, rows["num_tokens"].source) == (
        "integer",
        "16",
        "internal",
    )
    assert (rows["cluster_name"].value, rows["cluster_name"].source) == ('"Test Cluster"', "default")
    assert json.loads(rows["seeds"].value) == [] and rows["seeds"].type == "string list"
    assert rows["workdir"].source == "cli"
    assert {e.status for e in rows.values()} == {"Used"}


def test_live_update_acts_through_the_objects_that_read_timeouts(tmp_path: Path) -> None:
    replicas, paxos = _Replicas(), _Paxos()
    config = NodeConfig(workdir=tmp_path)
    live = LiveConfig(config, {}, lambda c: apply_timeouts(c, replicas, paxos))  # type: ignore[arg-type]
    live.update("read_request_timeout_in_ms", "1500")
    live.update("cas_contention_timeout_in_ms", "250")
    assert replicas.timeouts.read == 1.5 and paxos.timeouts.cas_contention == 0.25
    assert {e.name: e.source for e in live.entries()}["read_request_timeout_in_ms"] == "cql"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("nope", "1", "no such option"),
        ("num_tokens", "not a number", "option is not live-updateable"),
        ("read_request_timeout_in_ms", "-5", "cannot parse option value"),
    ],
)
def test_refusals_in_scylladb_order(tmp_path: Path, name: str, value: str, message: str) -> None:
    live, seen = _live(tmp_path)
    with pytest.raises(ConfigUpdateRefused, match=message):
        live.update(name, value)
    assert seen == []


def test_disabling_cql_updates_locks_the_table(tmp_path: Path) -> None:
    live, _ = _live(tmp_path)
    live.update("enable_cql_config_updates", "false")
    with pytest.raises(ConfigUpdateRefused, match="doesn't allow updates"):
        live.update("enable_cql_config_updates", "true")
