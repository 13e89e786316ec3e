"""Normal start-up is quiet: a joiner started before its seed retries at DEBUG, one line per try,
and neither node logs an ERROR, a traceback or a WARNING while the cluster forms; lifecycle
events (serving CQL, peers up) are INFO."""

from __future__ import annotations

from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for


def lines(text: str, *needles: str) -> list[str]:
    return [line for line in text.splitlines() if all(n in line for n in needles)]


def test_a_joiner_waiting_for_its_seed_logs_only_debug_lines(node_factory: NodeFactory) -> None:
    seed = node_factory.create(options=OPTIONS)
    joiner = node_factory.create(seeds=[seed.host], options=OPTIONS, log_level="DEBUG")
    joiner.start(wait=False)
    wait_for(lambda: bool(lines(joiner.log_tail(400), "group0 join attempt failed")), "the joiner to retry")
    seed.start()
    joiner.wait_ready()
    with pinned(seed) as s:
        wait_for(lambda: len(run(s, "SELECT peer FROM system.peers", "ONE")) == 1, "the join")
    joiner_log, seed_log = joiner.log_tail(100_000), seed.log_tail(100_000)
    retries = lines(joiner_log, "group0 join attempt failed")
    assert retries and all("level=DEBUG" in line for line in retries), retries
    for log in (joiner_log, seed_log):
        assert not lines(log, "level=ERROR") and not lines(log, "exc="), log
        assert not lines(log, "level=WARNING"), lines(log, "level=WARNING")
        assert lines(log, "level=INFO", "node serving CQL"), log
