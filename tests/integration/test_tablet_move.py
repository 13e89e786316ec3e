"""REST ``tablets/move`` on real node processes (issue #15 item 7, the move part).

Three nodes, an RF=2 tablets keyspace: one replica of one tablet moves to the node that has none
through the topology coordinator's stages. After it: ``system.tablets`` shows the new replica
set and no stage, every row written before reads back at ALL, and a driver that learned the
tablets before the move learns the new replicas from the ``tablets-routing-v1`` payload of its
first misrouted request. Then the other replica moves between the two shards of its node (its
file renamed into the other shard's directory), and every row still reads back at ALL through
every node. Balancing is switched off first: the balancer would undo the moves. Refusals answer
400 with the reason.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for

ROWS = 80


def post(url: str, params: dict[str, object]) -> tuple[int, str]:
    query = urllib.parse.urlencode({k: str(v) for k, v in params.items()})
    request = urllib.request.Request(f"{url}?{query}", method="POST", data=b"")
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def tablets(session: Any) -> dict[int, list[tuple[Any, int]]]:
    rows = run(
        session, "SELECT last_token, replicas, stage FROM system.tablets WHERE keyspace_name = 'mv'", "ONE"
    )
    assert all(r.stage is None for r in rows), "a tablet is still in transition"
    return {r.last_token: [(h, s) for h, s in r.replicas] for r in rows}


def test_move_one_replica_through_rest(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    with pinned(nodes[0]) as s:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(f"CREATE KEYSPACE mv WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 2}}")
        s.execute("CREATE TABLE mv.t (k int PRIMARY KEY, v int) WITH tablets = {'min_tablet_count': 4}")
        for k in range(ROWS):
            run(s, "INSERT INTO mv.t (k, v) VALUES (%s, %s)", "ALL", (k, k))
        hosts = [run(p, "SELECT host_id FROM system.local", "ONE")[0].host_id for p in [s]]
    for node in nodes[1:]:
        with pinned(node) as p:
            hosts.append(run(p, "SELECT host_id FROM system.local", "ONE")[0].host_id)

    # the balancer would even out what the moves below unbalance: placement is this test's to set
    status, body = post(nodes[0].api_url + "/storage_service/tablets/balancing", {"enabled": "false"})
    assert status == 200, body
    with pinned(nodes[0]) as s:  # a round begun before that finishes
        wait_for(
            lambda: all(r.stage is None for r in run(s, "SELECT stage FROM system.tablets", "ONE")), "no move"
        )

    policy = TokenAwarePolicy(DCAwareRoundRobinPolicy())
    profile = {EXEC_PROFILE_DEFAULT: ExecutionProfile(load_balancing_policy=policy)}
    with scylla_cluster(nodes, execution_profiles=profile) as cluster:
        session = cluster.connect(wait_for_all_pools=True)
        select = session.prepare("SELECT v FROM mv.t WHERE k = ?")
        for k in range(ROWS):  # the driver learns every tablet from misrouted requests
            assert session.execute(select, (k,)).one().v == k

        before = tablets(session)
        last_token, replicas = sorted(before.items())[0]
        (source_host, source_shard), kept = replicas[0], replicas[1]
        target = next(h for h in hosts if h not in {r[0] for r in replicas})
        api = nodes[0].api_url + "/storage_service/tablets/move"
        params = {
            "ks": "mv",
            "table": "t",
            "token": last_token,
            "src_host": source_host,
            "src_shard": source_shard,
            "dst_host": target,
            "dst_shard": 0,
        }
        status, body = post(api, {**params, "dst_host": kept[0]})
        assert status == 400 and "already has a replica on" in body, body
        status, body = post(api, {**params, "dst_shard": 99})
        assert status == 400 and "there is no shard 99" in body, body
        status, body = post(api, {k: v for k, v in params.items() if k != "token"})
        assert status == 400 and "missing parameter token" in body, body

        status, body = post(api, params)
        assert status == 200, body
        after = tablets(session)
        assert after[last_token] == [(target, 0), kept]
        assert {t: r for t, r in after.items() if t != last_token} == {
            t: r for t, r in before.items() if t != last_token
        }

        for k in range(ROWS):  # requests still succeed, and the moved tablet's routing is relearned
            assert session.execute(select, (k,)).one().v == k
        learned = {
            t.last_token: [tuple(r) for r in t.replicas]
            for t in cluster.metadata._tablets._tablets[("mv", "t")]
        }
        assert learned[last_token] == [(target, 0), kept]

        # between the two shards of one node: the file is renamed into the other shard's directory
        other_shard = 1 - kept[1]
        status, body = post(
            api,
            {
                **params,
                "src_host": kept[0],
                "src_shard": kept[1],
                "dst_host": kept[0],
                "dst_shard": other_shard,
            },
        )
        assert status == 200, body
        assert tablets(session)[last_token] == [(target, 0), (kept[0], other_shard)]
        for k in range(ROWS):
            assert session.execute(select, (k,)).one().v == k

    for node in nodes:
        with pinned(node) as p:
            assert {(r.k, r.v) for r in run(p, "SELECT k, v FROM mv.t", "ALL")} == {
                (k, k) for k in range(ROWS)
            }
