"""Random operations under random node kills, against a single-node model (QUORUM/QUORUM).

Three real processes, RF=3 (tablets or vnodes per example). Between operations hypothesis may
kill -9 one node (at most one is down at a time, so a quorum is always live) or bring the dead
one back. Every QUORUM read through any live coordinator must equal a plain dict that applied
every acknowledged write: QUORUM writes and QUORUM reads overlap, and read repair fixes the
node that came back without hints.

The acceptance run (a few examples) is part of `make test`; `make soak` runs many more.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import OPTIONS, available_at_all, pinned, run, wait_for

KEYS = 6
_tables = itertools.count()

operations = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, KEYS - 1), st.integers(0, 1000)),
        st.tuples(st.just("delete"), st.integers(0, KEYS - 1), st.just(0)),
        st.tuples(st.just("read"), st.integers(0, KEYS - 1), st.just(0)),
        st.tuples(st.just("scan"), st.just(0), st.just(0)),
        st.tuples(st.just("kill"), st.integers(0, 2), st.just(0)),
        st.tuples(st.just("revive"), st.just(0), st.just(0)),
    ),
    min_size=4,
    max_size=14,
)


class Sessions:
    """One pinned session per live node, reopened after a restart."""

    def __init__(self, nodes: list[TestNode]) -> None:
        self.nodes = nodes
        self._open: dict[int, tuple[Any, Any]] = {}

    def get(self, i: int) -> Any:
        if i not in self._open:
            manager = pinned(self.nodes[i])
            self._open[i] = (manager, manager.__enter__())
        return self._open[i][1]

    def drop(self, i: int) -> None:
        found = self._open.pop(i, None)
        if found is not None:
            found[0].__exit__(None, None, None)

    def close(self) -> None:
        for i in list(self._open):
            self.drop(i)


@pytest.fixture(scope="module")
def cluster(node_factory_module: NodeFactory) -> Iterator[list[TestNode]]:
    nodes = node_factory_module.start_cluster(3, options=OPTIONS)  # 16 tokens, roomy timeouts
    with pinned(nodes[0]) as s:
        for ks, tablets in (("mt", "true"), ("mv", "false")):
            s.execute(
                f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', "
                f"'replication_factor': 3}} AND tablets = {{'enabled': {tablets}}}"
            )
    yield nodes


@pytest.fixture(scope="module")
def node_factory_module(
    address_allocator: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeFactory]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("model"))
    yield factory
    factory.cleanup()


def _run_against_model(
    cluster: list[TestNode], ops: list[tuple[str, int, int]], keyspace: str, data: st.DataObject
) -> None:
    for node in cluster:
        if not node.running:
            node.start()
    sessions = Sessions(cluster)
    try:
        table = f"{keyspace}.kv{next(_tables)}"
        sessions.get(0).execute(f"CREATE TABLE {table} (k int PRIMARY KEY, v int)")
        model: dict[int, int] = {}
        down: int | None = None
        for op, key, value in ops:
            live = [i for i in range(3) if i != down]
            coordinator = sessions.get(data.draw(st.sampled_from(live), label="coordinator"))
            if op == "write":
                run(coordinator, f"INSERT INTO {table} (k, v) VALUES (%s, %s)", "QUORUM", (key, value))
                model[key] = value
            elif op == "delete":
                run(coordinator, f"DELETE FROM {table} WHERE k = %s", "QUORUM", (key,))
                model.pop(key, None)
            elif op == "read":
                got = [r.v for r in run(coordinator, f"SELECT v FROM {table} WHERE k = %s", "QUORUM", (key,))]
                assert got == ([model[key]] if key in model else [])
            elif op == "scan":
                got_rows = {
                    r.k: r.v for r in run(coordinator, f"SELECT k, v FROM {table}", "QUORUM", fetch_size=2)
                }
                assert got_rows == model
            elif op == "kill" and down is None:
                down = key
                sessions.drop(key)
                cluster[key].kill()
            elif op == "revive" and down is not None:
                cluster[down].start()
                down = None
                for i in range(3):  # kills come between operations, not inside a detector's lag
                    sees_all_up = functools.partial(available_at_all, sessions.get(i), table)
                    wait_for(sees_all_up, "every node to see all up")
        event(f"kills: {sum(1 for op in ops if op[0] == 'kill')}, down at the end: {down is not None}")
        final = sessions.get(0 if down != 0 else 1)
        assert {r.k: r.v for r in run(final, f"SELECT k, v FROM {table}", "QUORUM")} == model
    finally:
        sessions.close()


def _model_test(max_examples: int) -> Any:
    """The property at a given number of examples (each gets its own hypothesis wrapper)."""
    examples = given(ops=operations, keyspace=st.sampled_from(["mt", "mv"]), data=st.data())(
        _run_against_model
    )
    return settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck))(
        examples
    )


test_quorum_reads_match_a_single_node_model_under_kills = _model_test(6)
test_quorum_reads_match_a_single_node_model_under_kills_soak = pytest.mark.slow(_model_test(40))
