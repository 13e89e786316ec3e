"""Applies a chaos schedule (`tests.harness.chaos`) to real node processes.

Pauses are SIGSTOP/SIGCONT of the node's process. Partitions use each node's test-only REST
fault injector (`test_fault_injection_api`, `tabletdb.node.admin.rest_faults`): a node told to
block an address drops every internode message it would send there, so a two-way cut is a block
on both ends. Client (CQL) traffic is never cut: drivers keep reaching every node.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

from tests.harness.chaos import Fault, FaultKind
from tests.harness.node import TestNode

FAULT_OPTIONS = {"test_fault_injection_api": "true"}
"""Node options a chaos cluster needs."""
REST_TIMEOUT = 60.0


def rest(node: TestNode, method: str, path: str) -> Any:
    request = urllib.request.Request(node.api_url + path, method=method)
    with urllib.request.urlopen(request, timeout=REST_TIMEOUT) as response:
        return json.loads(response.read())


def fault(node: TestNode, action: str, **query: str) -> dict[str, Any]:
    """``POST /faults/<action>?<query>`` on ``node`` (``block``/``fail``/``heal``, see
    ``tabletdb.node.admin.rest_faults``): the node's faults afterwards; a refusal fails the test
    with the node's reason."""
    path = f"/faults/{action}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    try:
        answer: dict[str, Any] = rest(node, "POST", path)
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{node.host}: POST {path}: {exc.code} {exc.read().decode()}") from exc
    return answer


def group0_leader(nodes: Sequence[TestNode], timeout: float = 60.0) -> TestNode:
    """The node that leads group0 now (asked of the first node; faults are healed by then).

    Right after a heal an election may be running and no leader known yet: ask again until the
    bound (a liveness bound, not a speed check).
    """
    deadline = time.monotonic() + timeout
    while (host_id := rest(nodes[0], "GET", "/raft/leader_host")) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"no group0 leader known to {nodes[0]!r} after {timeout:.0f}s")
        time.sleep(0.2)
    for node in nodes:
        if rest(node, "GET", "/storage_service/hostid/local") == host_id:
            return node
    raise AssertionError(f"group0 leader {host_id} is none of {nodes}")


class Nemesis:
    """Applies faults one at a time and always heals them, also when the test fails."""

    def __init__(self, nodes: Sequence[TestNode]) -> None:
        self.nodes = list(nodes)
        self.log: list[str] = []
        self._paused: set[int] = set()
        self.dropped: dict[str, int] = {}
        """Internode messages each node's injector has dropped so far, read at every heal."""

    def run(self, plan: Sequence[Fault], stop_early: Any = None) -> None:
        """Apply `plan` in order; `stop_early()` returning True ends it between faults."""
        for fault in plan:
            if stop_early is not None and stop_early():
                return
            with self.applied(fault):
                time.sleep(fault.seconds)
            time.sleep(fault.rest)

    @contextlib.contextmanager
    def applied(self, fault: Fault) -> Iterator[None]:
        target = self.nodes[fault.target]
        if fault.kind is FaultKind.PAUSE_LEADER:
            target = group0_leader(self.nodes)
        self.log.append(f"{time.strftime('%H:%M:%S')} {fault.describe()} ({target.host})")
        try:
            if fault.kind in (FaultKind.PAUSE, FaultKind.PAUSE_LEADER):
                self._pause(target)
            elif fault.kind is FaultKind.ISOLATE:
                for other in self.nodes:
                    if other is not target:
                        self._cut(target, other)
            elif fault.kind is FaultKind.SPLIT:
                self._cut(target, self.nodes[fault.other])
            else:
                rest(target, "POST", f"/faults/block?address={self.nodes[fault.other].host}")
            yield
        finally:
            self.heal()

    def heal(self) -> None:
        """Resume every paused node first (a paused node cannot answer REST), then lift blocks."""
        for node in self.nodes:
            if node.process.pid in self._paused:
                self._resume(node)
        for node in self.nodes:
            if node.running:
                self.dropped[node.host] = rest(node, "POST", "/faults/heal")["dropped"]

    def _pause(self, node: TestNode) -> None:
        pid = node.process.pid
        assert pid is not None and node.running, f"{node!r} is not running"
        os.kill(pid, signal.SIGSTOP)
        self._paused.add(pid)

    def _resume(self, node: TestNode) -> None:
        pid = node.process.pid
        assert pid is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
        self._paused.discard(pid)

    def _cut(self, a: TestNode, b: TestNode) -> None:
        rest(a, "POST", f"/faults/block?address={b.host}")
        rest(b, "POST", f"/faults/block?address={a.host}")
