"""Tablets keyspaces against the real topology, through the real driver (issue #15 items 5 and 6).

Three nodes in one datacenter: n1 in rack r1, n2 and n3 in rack r2; n3 runs with
``rf_rack_valid_keyspaces: true`` and n2 with ``enforce_rack_list: true``, so one cluster shows
each setting reaching its check on the node that decides the statement. Checked: RF above the
nodes is refused with ScyllaDB's text (CREATE KEYSPACE, ALTER), a rack list places one replica
in each named rack and refuses an unknown rack, DESCRIBE prints it as a list, views need an
RF-rack-valid keyspace, an ALTER raising the RF adds the replicas before it answers, and a
decommission that would empty a listed rack is refused.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import OPTIONS, pinned, run

DC = "datacenter1"


@pytest.fixture(scope="module")
def racked(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[TestNode]]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("racks"))
    try:
        first = factory.start_node(options={**OPTIONS, "rack": "r1"})
        second = factory.start_node(
            seeds=[first.host], options={**OPTIONS, "rack": "r2", "enforce_rack_list": "true"}
        )
        third = factory.start_node(
            seeds=[first.host], options={**OPTIONS, "rack": "r2", "rf_rack_valid_keyspaces": "true"}
        )
        yield [first, second, third]
    finally:
        factory.cleanup()


def nts(value: str) -> str:
    return f"{{'class': 'NetworkTopologyStrategy', '{DC}': {value}}} AND tablets = {{'enabled': true}}"


def host_ids(nodes: list[TestNode]) -> list[Any]:
    ids = []
    for node in nodes:
        with pinned(node) as s:
            ids.append(run(s, "SELECT host_id FROM system.local", "ONE")[0].host_id)
    return ids


def test_rf_above_the_nodes_of_the_dc_is_refused(racked: list[TestNode]) -> None:
    from cassandra.protocol import ConfigurationException

    with pinned(racked[0]) as s:
        with pytest.raises(
            ConfigurationException,
            match=f"Datacenter {DC} doesn't have enough token-owning nodes for replication_factor=4",
        ):
            s.execute(f"CREATE KEYSPACE big WITH replication = {nts('4')}")
        s.execute(f"CREATE KEYSPACE grow WITH replication = {nts('3')}")
        s.execute("CREATE TABLE grow.t (k int PRIMARY KEY, v int)")
        with pytest.raises(ConfigurationException, match="replication_factor=4"):
            s.execute(
                f"ALTER KEYSPACE grow WITH replication = {{'class': 'NetworkTopologyStrategy', '{DC}': 4}}"
            )


def test_alter_raising_the_rf_adds_the_replicas_before_all_may_count_on_them(racked: list[TestNode]) -> None:
    """The ALTER answers once every tablet has its second replica (issue #15 item 4): ALL is then
    met by two real copies, the row written before is on both, and LWT has its quorum. A tablet
    short of its RF counting the RF is unit-tested (``test_short_replica_sets``): an ALTER no
    longer leaves one behind."""
    with pinned(racked[0]) as s:
        s.execute(f"CREATE KEYSPACE short WITH replication = {nts('1')}")
        s.execute("CREATE TABLE short.t (k int PRIMARY KEY, v int)")
        run(s, "INSERT INTO short.t (k, v) VALUES (1, 1)", "ALL")
        s.execute(
            f"ALTER KEYSPACE short WITH replication = {{'class': 'NetworkTopologyStrategy', '{DC}': 2}}",
            timeout=120,
        )
        tablets = run(s, "SELECT replicas FROM system.tablets WHERE keyspace_name = 'short'", "ONE")
        assert tablets and all(len({h for h, _ in r.replicas}) == 2 for r in tablets)
    for k, node in enumerate(racked, start=2):
        with pinned(node) as s:
            run(s, "INSERT INTO short.t (k, v) VALUES (%s, %s)", "ALL", (k, k))
            assert [r.v for r in run(s, "SELECT v FROM short.t WHERE k = 1", "ALL")] == [1]
            assert run(s, "INSERT INTO short.t (k, v) VALUES (%s, %s) IF NOT EXISTS", "ONE", (k + 10, k))[0][
                0
            ]


def test_rack_list_places_one_replica_in_each_named_rack(racked: list[TestNode]) -> None:
    from cassandra.protocol import ConfigurationException

    r1, *r2 = host_ids(racked)
    with pinned(racked[0]) as s:
        with pytest.raises(ConfigurationException, match="names rack 'r9', which has no nodes in datacenter"):
            s.execute(f"CREATE KEYSPACE nowhere WITH replication = {nts(repr(['r1', 'r9']))}")
        s.execute(f"CREATE KEYSPACE listed WITH replication = {nts(repr(['r1', 'r2']))}")
        s.execute("CREATE TABLE listed.t (k int PRIMARY KEY, v int)")
        tablets = run(s, "SELECT replicas FROM system.tablets WHERE keyspace_name = 'listed'", "ONE")
        assert tablets
        for row in tablets:
            hosts = [h for h, _ in row.replicas]
            assert len(hosts) == 2 and r1 in hosts and len(set(hosts) & set(r2)) == 1, row.replicas
        described = run(s, "DESCRIBE KEYSPACE listed", "ONE")[0].create_statement
        assert f"'{DC}': ['r1', 'r2']" in described
        # a view on a rack-list keyspace is always fine
        s.execute(
            "CREATE MATERIALIZED VIEW listed.mv AS SELECT * FROM listed.t "
            "WHERE v IS NOT NULL PRIMARY KEY (v, k)"
        )


def test_views_need_an_rf_rack_valid_keyspace(racked: list[TestNode]) -> None:
    from cassandra.protocol import InvalidRequest

    with pinned(racked[0]) as s:
        s.execute(f"CREATE KEYSPACE loose WITH replication = {nts('3')}")  # 3 nodes, 2 racks
        s.execute("CREATE TABLE loose.t (k int PRIMARY KEY, v int)")
        with pytest.raises(InvalidRequest, match="required to be RF-rack-valid"):
            s.execute(
                "CREATE MATERIALIZED VIEW loose.mv AS SELECT * FROM loose.t "
                "WHERE v IS NOT NULL PRIMARY KEY (v, k)"
            )
        with pytest.raises(InvalidRequest, match="required to be RF-rack-valid"):
            s.execute("CREATE INDEX ON loose.t (v)")
        s.execute(f"CREATE KEYSPACE tight WITH replication = {nts('2')}")  # RF = racks
        s.execute("CREATE TABLE tight.t (k int PRIMARY KEY, v int)")
        future = s.execute_async("CREATE INDEX ON tight.t (v)")
        future.result()
        assert any("requires the keyspace to remain RF-rack-valid" in w for w in future.warnings or ())
        with pytest.raises(
            InvalidRequest, match=r"Cannot alter keyspace tight: .*required to be RF-rack-valid"
        ):
            s.execute(
                f"ALTER KEYSPACE tight WITH replication = {{'class': 'NetworkTopologyStrategy', '{DC}': 3}}"
            )


def test_node_settings_reach_the_checks_of_the_node_that_decides(racked: list[TestNode]) -> None:
    from cassandra.protocol import ConfigurationException, InvalidRequest

    with pinned(racked[2]) as s:  # rf_rack_valid_keyspaces: true
        with pytest.raises(
            InvalidRequest,
            match=r"The option `rf_rack_valid_keyspaces` is enabled\. It requires that all keyspaces are "
            rf"RF-rack-valid\. That condition is violated: keyspace 'strict3' doesn't satisfy it "
            rf"for DC '{DC}': RF=3 vs\. rack count=2\.",
        ):
            s.execute(f"CREATE KEYSPACE strict3 WITH replication = {nts('3')}")
        s.execute(f"CREATE KEYSPACE strict2 WITH replication = {nts('2')}")
    with pinned(racked[1]) as s:  # enforce_rack_list: true
        with pytest.raises(
            ConfigurationException, match="must be a rack list because enforce_rack_list is set"
        ):
            s.execute(f"CREATE KEYSPACE numeric WITH replication = {nts('2')}")
        s.execute(f"CREATE KEYSPACE racks WITH replication = {nts(repr(['r2']))}")


def test_decommission_that_empties_a_listed_rack_is_refused(racked: list[TestNode]) -> None:
    with pinned(racked[1]) as s:
        s.execute(f"CREATE KEYSPACE IF NOT EXISTS keep_r1 WITH replication = {nts(repr(['r1']))}")
    request = urllib.request.Request(
        racked[0].api_url + "/storage_service/decommission", method="POST", data=b""
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=120)
    body = info.value.read().decode()
    assert info.value.code == 400, body
    assert (
        "node decommission rejected: Cannot remove the node because its removal would make some existing"
        in body
    )
    assert "lists rack r1" in body
    with pinned(racked[0]) as s:  # still a member, still serving
        assert run(s, "SELECT rack FROM system.local", "ONE")[0].rack == "r1"
