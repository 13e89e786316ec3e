"""TOPOLOGY_CHANGE and STATUS_CHANGE reach a real driver, and its metadata follows the cluster.

Two nodes and a driver connected to the first; a third node joins (NEW_NODE, the driver adds
it), is killed -9 (STATUS_CHANGE DOWN), restarted (UP) and decommissioned with nodetool
(REMOVED_NODE: the driver drops it from its metadata, which without the event it keeps).
The driver's own control connection records the events it receives.
"""

from __future__ import annotations

import threading
from typing import Any

from click.testing import CliRunner

from tabletdb.cli.main import cli
from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, wait_for


class Recorder:
    """The driver's event handlers, wrapped to remember (kind, change, address) first."""

    def __init__(self, control: Any) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()
        for kind, name in (
            ("TOPOLOGY_CHANGE", "_handle_topology_change"),
            ("STATUS_CHANGE", "_handle_status_change"),
        ):
            setattr(control, name, self._wrap(kind, getattr(control, name)))

    def _wrap(self, kind: str, handler: Any) -> Any:
        def record(event: dict[str, Any]) -> Any:
            with self.lock:
                self.seen.append((kind, event["change_type"], event["address"][0]))
            return handler(event)

        return record

    def saw(self, kind: str, change: str, address: str) -> bool:
        with self.lock:
            return (kind, change, address) in self.seen


def test_driver_follows_a_node_joining_going_down_and_leaving(node_factory: NodeFactory) -> None:
    first, second = node_factory.start_cluster(2, options=OPTIONS)
    with scylla_cluster(first) as cluster:
        recorder = Recorder(cluster.control_connection)
        session = cluster.connect()

        def hosts() -> set[str]:
            return {h.address for h in cluster.metadata.all_hosts()}

        assert hosts() == {first.host, second.host}
        third = node_factory.create(seeds=[first.host], options=OPTIONS)
        third.start()
        wait_for(lambda: recorder.saw("TOPOLOGY_CHANGE", "NEW_NODE", third.host), "NEW_NODE of the joiner")
        wait_for(lambda: third.host in hosts(), "the driver to add the joiner")
        assert not recorder.saw("TOPOLOGY_CHANGE", "NEW_NODE", first.host)  # never announces itself

        third.kill()
        wait_for(lambda: recorder.saw("STATUS_CHANGE", "DOWN", third.host), "STATUS_CHANGE DOWN")
        third.start()
        wait_for(lambda: recorder.saw("STATUS_CHANGE", "UP", third.host), "STATUS_CHANGE UP")

        result = CliRunner().invoke(
            cli, ["nodetool", "-h", third.host, "-p", str(third.endpoints.api_port), "decommission"]
        )
        assert result.exit_code == 0, result.output
        wait_for(lambda: recorder.saw("TOPOLOGY_CHANGE", "REMOVED_NODE", third.host), "REMOVED_NODE")
        wait_for(lambda: third.host not in hosts(), "the driver to drop the node that left")
        assert session.execute("SELECT count(*) FROM system.peers").one()[0] == 1
