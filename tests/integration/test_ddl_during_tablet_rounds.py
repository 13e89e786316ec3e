"""DDL while a co-location round and then a merge are held in progress, on real processes.

A schema change and the topology coordinator's tablet rounds share group0 (and the leader's
event loop), and a DDL reached its client as ServerError when it timed out beside them. Here a
round is held at a step for as long as the DDL runs (the test-only fault injector fails the
group0 leader's ``tablet.stream`` requests, then its ``tablet.resize`` ones; the coordinator
retries them, so the round stays in progress): CREATE, ALTER and DROP TABLE from every node, an
ALTER of the table being co-located and merged, all answer and take effect on every node. Last,
the table being merged is dropped while its merge is held: the drop answers, the coordinator
lets the resize go (its maps are gone), and no node keeps a file of the table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.nemesis import fault
from tests.harness.node import NodeFactory, TestNode
from tests.harness.topology_workload import wait_for
from tests.integration.test_replicated_data import pinned, run
from tests.integration.test_tablet_merge_kill import (
    _held_stream_target,
    _tablets,
    merge_held,
    start_mk_cluster,
)
from tests.integration.test_topology_leader_kill import leader_of


def _ddl_from_every_node(nodes: list[TestNode], prefix: str) -> None:
    """CREATE, ALTER and DROP TABLE through each node, and an ALTER of the table in motion; each
    answers (the pinned sessions never retry) and every node sees the result."""
    for i, node in enumerate(nodes):
        with pinned(node) as s:
            s.execute(f"CREATE TABLE mk.{prefix}{i} (k int PRIMARY KEY, v int)")
            s.execute(f"ALTER TABLE mk.{prefix}{i} ADD w text")
            s.execute(f"CREATE TABLE mk.{prefix}{i}_gone (k int PRIMARY KEY)")
            s.execute(f"DROP TABLE mk.{prefix}{i}_gone")
            s.execute(f"ALTER TABLE mk.t ADD {prefix}{i} int")
            s.execute(f"INSERT INTO mk.{prefix}{i} (k, v, w) VALUES (1, 2, 'x')")
    for node in nodes:
        with pinned(node) as s:
            names = {
                r.table_name
                for r in run(
                    s, "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'mk'", "ONE"
                )
            }
            columns = {
                r.column_name
                for r in run(
                    s,
                    "SELECT column_name FROM system_schema.columns "
                    "WHERE keyspace_name = 'mk' AND table_name = 't'",
                    "ONE",
                )
            }
        mine = {f"{prefix}{i}" for i in range(len(nodes))}
        assert mine <= names and not {f"{n}_gone" for n in mine} & names, names
        assert mine <= columns, columns


def _table_files(node: TestNode) -> list[Path]:
    return list(Path(node.workdir, "data", "mk").glob("t-*/shard-*/tablet-*.db"))


@pytest.mark.timeout(900)
def test_ddl_answers_while_a_colocation_round_and_a_merge_are_held(node_factory: NodeFactory) -> None:
    nodes, ids = start_mk_cluster(node_factory)
    with pinned(nodes[0]) as s:
        for k in range(100):
            run(s, "INSERT INTO mk.t (k, v) VALUES (%s, 'v')", "QUORUM", (k,))
    wait_for(lambda: leader_of(nodes[0]) is not None, "a group0 leader")
    leader_id = leader_of(nodes[0])
    assert leader_id is not None
    leader = ids[leader_id]
    observer = next(n for n in nodes if n is not leader)

    fault(leader, "fail", verb="tablet.stream")
    with pinned(observer) as s:
        s.execute("ALTER TABLE mk.t WITH tablets = {'min_tablet_count': 8}")
    wait_for(
        lambda: _held_stream_target(observer, leader_id) is not None,
        "a co-location move held at streaming",
        seconds=300,
    )
    _ddl_from_every_node(nodes, "c")
    assert _held_stream_target(observer, leader_id) is not None, "the round ended during the DDL"

    fault(leader, "heal")
    fault(leader, "fail", verb="tablet.resize")
    wait_for(
        lambda: merge_held(observer, leader),
        "the merge held at its copies",
        seconds=300,
    )
    _ddl_from_every_node(nodes, "m")
    assert any(t.resize_type == "merge" for t in _tablets(observer)), "the merge ended during the DDL"
    assert len(_tablets(observer)) == 16

    with pinned(observer) as s:
        s.execute("DROP TABLE mk.t")
    fault(leader, "heal")
    for node in nodes:
        wait_for(lambda node=node: _table_files(node) == [], f"{node.host} to drop the files of mk.t")
    with pinned(leader) as s:  # new tables still get their tablets and take writes at ALL
        s.execute("CREATE TABLE mk.after (k int PRIMARY KEY)")
        run(s, "INSERT INTO mk.after (k) VALUES (1)", "ALL")
        assert [r.k for r in run(s, "SELECT k FROM mk.after", "ALL")] == [1]
    wait_for(lambda: _settled(leader), "no round or resize left in progress")


def _settled(node: TestNode) -> bool:
    with pinned(node) as s:
        rows = run(s, "SELECT stage, resize_type FROM system.tablets WHERE keyspace_name = 'mk'", "ONE")
    return bool(rows) and all(r.stage is None and r.resize_type == "none" for r in rows)
