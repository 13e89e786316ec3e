"""Keyspace RF changes on tablets keyspaces as topology requests (``topology.rf_change``): the
coordinator adds or drops tablet replicas of every table of the keyspace (CDC logs with their
bases), and only its last command writes the new replication into the catalog."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql.types import INT
from tabletdb.group0.cluster_state import ClusterState, TopologyEntry, apply_entry
from tabletdb.group0.state import Group0State
from tabletdb.schema.ddl_common import SchemaConfig
from tabletdb.schema.ddl_keyspace import RfChangeOutcome, alter_keyspace, create_keyspace
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import CDC_LOG_SUFFIX, Catalog, KeyspaceDef
from tabletdb.schema.mutations import PutKeyspace, apply_mutations
from tabletdb.schema.rack_rules import ClusterShape
from tabletdb.tablets.allocation import NodeCapacity, allocate_replicas
from tabletdb.tablets.colocation import follow_map, mirror_updates, separated
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica, TransitionKind
from tabletdb.topology import coordinator as co
from tabletdb.topology import rf_change as rfc
from tabletdb.topology.commands import TopologyCommand, command_from_plain, command_to_plain
from tabletdb.topology.requests import RequestRefused, enqueue
from tabletdb.topology.rf_request import KeyspaceRfChange
from tabletdb.topology.state import Request, TopologyState, TopoNode, request_from_plain, request_to_plain
from tabletdb.topology.states import NodeState, RequestKind
from tests.unit.topology.driver import Cluster, host, new_id

Where = tuple[str, str]


def _nts(**dcs: object) -> dict[str, object]:
    return {"class": "NetworkTopologyStrategy", **dcs}


def _catalog(where: list[Where], rf: dict[str, object], tables: int, cdc: bool) -> Catalog:
    config = SchemaConfig(
        datacenters=tuple(sorted({dc for dc, _ in where})),
        cluster=_shape(where),
    )
    catalog = apply_mutations(
        Catalog(), create_keyspace(Catalog(), "ks", _nts(**rf), config=config).mutations, new_id()
    )
    for i in range(tables):
        options = {"cdc": {"enabled": True}} if cdc and i == 0 else None
        made = create_table(
            catalog,
            "ks",
            f"t{i}",
            [("k", INT, False)],
            ["k"],
            options=options,
            new_id=new_id(),
            config=config,
        )
        catalog = apply_mutations(catalog, made.mutations, new_id())
    return catalog


def _shape(where: list[Where]) -> ClusterShape:
    return ClusterShape.of(where)


def _maps(catalog: Catalog, where: list[Where], tablets: int) -> dict[uuid.UUID, TabletMap]:
    nodes = [NodeCapacity(host(i), dc, rack, 2) for i, (dc, rack) in enumerate(where)]
    ks = catalog.keyspaces["ks"]
    replication = {
        dc: (value if isinstance(value, tuple) else int(value))
        for dc, value in ks.definition.replication.options
    }
    maps: dict[uuid.UUID, TabletMap] = {}
    for table in sorted(ks.tables.values(), key=lambda t: t.is_cdc_log):
        base = ks.tables.get(table.name.removesuffix(CDC_LOG_SUFFIX)) if table.is_cdc_log else None
        if base is not None:
            maps[table.id] = follow_map(maps[base.id], table.id)  # logs are co-located with their base
            continue
        replicas, _ = allocate_replicas(tablets, replication, nodes)
        maps[table.id] = TabletMap.even(table.id, replicas)
    return maps


@dataclass
class RfCluster(Cluster):
    """The test driver's cluster with a catalog that the finishing command writes."""

    catalog: Catalog = field(default_factory=Catalog)
    schema_written_at: int = -1

    def view(self) -> co.View:
        return replace(super().view(), catalog=self.catalog)

    def apply(self, command: TopologyCommand) -> bool:
        if command.schema is not None and command.schema.catalog_version != self.catalog.version:
            return False
        ok = super().apply(command)
        if ok and command.schema is not None:
            put = (PutKeyspace(command.schema.keyspace),)
            self.catalog = apply_mutations(self.catalog, put, command.new_state_id)
            self.schema_written_at = len(self.commands)
        return ok

    def alter(self, **rf: object) -> Request:
        where = sorted({dc for dc, _ in self.locations.values()})
        config = SchemaConfig(datacenters=tuple(where), cluster=_shape(list(self.locations.values())))
        outcome = alter_keyspace(self.catalog, "ks", replication=_nts(**rf), config=config)
        assert isinstance(outcome, RfChangeOutcome) and outcome.before and outcome.after
        change = KeyspaceRfChange(outcome.before, outcome.after)
        request = Request(new_id(), RequestKind.KEYSPACE_RF_CHANGE, host(0), rf_change=change)
        assert self.apply(enqueue(self.topology, request, frozenset(self.alive), new_id()))
        return request

    def rf(self) -> KeyspaceDef:
        return self.catalog.keyspaces["ks"].definition


def rf_cluster(
    where: list[Where], rf: dict[str, object], tables: int = 2, tablets: int = 4, cdc: bool = True
) -> RfCluster:
    catalog = _catalog(where, rf, tables, cdc)
    hosts = [host(i) for i in range(len(where))]
    topo = TopologyState(state_id=new_id(), nodes={h: TopoNode(h, NodeState.NORMAL) for h in hosts})
    return RfCluster(
        topo,
        _maps(catalog, where, tablets),
        set(hosts),
        locations={host(i): w for i, w in enumerate(where)},
        catalog=catalog,
    )


def _check_fits(c: RfCluster, dc_rf: dict[str, int]) -> None:
    for tm in c.tablets.values():
        for info in tm.tablets:
            assert not info.in_transition
            hosts = [r.host for r in info.replicas]
            assert len(set(hosts)) == len(hosts)
            for dc, rf in dc_rf.items():
                in_dc = [h for h in hosts if c.locations[h][0] == dc]
                assert len(in_dc) == rf
                racks = {r for d, r in c.locations.values() if d == dc}
                assert len({c.locations[h][1] for h in in_dc}) == min(rf, len(racks))


THREE_RACKS = [("dc1", "r1"), ("dc1", "r2"), ("dc1", "r3")]


def test_rf_1_to_2_to_3_adds_a_replica_per_tablet_streamed_from_the_old_ones_and_writes_the_schema_last() -> (
    None
):
    c = rf_cluster([*THREE_RACKS, ("dc1", "r1")], {"dc1": 1})
    for rf in (2, 3):
        before = {t: tm for t, tm in c.tablets.items()}
        commands_before = len(c.commands)
        request = c.alter(dc1=rf)
        c.run()
        assert c.topology.results[-1].request == request and not c.topology.results[-1].error
        assert c.rf().replication.factor("dc1") == rf
        assert c.schema_written_at == len(c.commands)  # the very last command wrote it
        assert c.commands[commands_before].schema is None
        _check_fits(c, {"dc1": rf})
        streams = [
            t
            for a in c.actions
            if isinstance(a, co.Stream)
            for t in a.tasks
            if t.key[0] == request.request_id
        ]
        for table_id, tm in before.items():
            for tid, info in enumerate(tm.tablets):
                after = c.tablets[table_id].tablets[tid]
                assert after.replicas[: len(info.replicas)] == info.replicas  # nothing moved, one added
                (task,) = [t for t in streams if t.key[1:] == (table_id, tid)]
                assert task.sources == info.replicas and task.target == after.replicas[-1]
        assert not any(
            isinstance(a, co.Cleanup) and a.tasks[0].key[0] == request.request_id for a in c.actions
        )
    base, log = sorted(c.catalog.keyspaces["ks"].tables.values(), key=lambda t: t.name)[:2]
    assert log.is_cdc_log and log.name == base.name + CDC_LOG_SUFFIX
    assert [t.replicas for t in c.tablets[log.id].tablets] == [t.replicas for t in c.tablets[base.id].tablets]
    assert not separated(c.tablets)


def test_rf_3_to_2_drops_one_replica_per_tablet_and_deletes_its_file() -> None:
    c = rf_cluster(THREE_RACKS, {"dc1": 3})
    before = dict(c.tablets)
    request = c.alter(dc1=2)
    c.run()
    assert not c.topology.results[-1].error and c.rf().replication.factor("dc1") == 2
    _check_fits(c, {"dc1": 2})
    assert not any(isinstance(a, co.Stream) for a in c.actions)
    cleaned = {
        (t.key[1], t.key[2], t.replica) for a in c.actions if isinstance(a, co.Cleanup) for t in a.tasks
    }
    for table_id, tm in before.items():
        for tid, info in enumerate(tm.tablets):
            (gone,) = set(info.replicas) - set(c.tablets[table_id].tablets[tid].replicas)
            assert (table_id, tid, gone) in cleaned
    assert request.request_id == c.topology.results[-1].request.request_id


def test_a_drop_needs_no_stream_from_a_dead_replica_and_drops_it_first() -> None:
    """Its barriers wait for the dead member until the operator's removenode declares it dead
    (it may be cut off, not dead); the drop itself needs nothing from it and never rolls back."""
    c = rf_cluster(THREE_RACKS, {"dc1": 3}, tables=1, cdc=False)
    c.alive.discard(host(2))
    c.obs = replace(c.obs, now_ms=0, down_since={host(2): 0})
    c.alter(dc1=2)
    for _ in range(50):
        c.obs = replace(c.obs, now_ms=c.obs.now_ms + 10_000)
        c.execute(c.step())
    assert c.topology.transition is not None and c.topology.results == ()
    c.request(RequestKind.REMOVE, host(2))
    c.run(before=lambda cl: setattr(cl, "obs", replace(cl.obs, now_ms=cl.obs.now_ms + 10_000)))
    assert not c.topology.results[0].error
    assert all(host(2) not in t.replica_hosts() for tm in c.tablets.values() for t in tm.tablets)


def test_a_target_down_too_long_rolls_the_change_back_and_the_schema_keeps_the_old_rf() -> None:
    c = rf_cluster(THREE_RACKS, {"dc1": 2}, tables=1, cdc=False)
    before = dict(c.tablets)

    def kill_target(cl: Cluster) -> None:
        moving = [t for tm in cl.tablets.values() for t in tm.tablets if t.in_transition]
        if moving and cl.alive == {host(0), host(1), host(2)}:
            target = next(r.host for r in moving[0].new_replicas or () if r not in moving[0].replicas)
            cl.alive.discard(target)
            cl.obs = replace(cl.obs, down_since={target: cl.obs.now_ms})
        cl.obs = replace(cl.obs, now_ms=cl.obs.now_ms + 7_000, streamed=frozenset())

    c.alter(dc1=3)
    c.run(before=kill_target)
    error = c.topology.results[-1].error
    assert "keyspace_rf_change of keyspace ks rolled back" in error and "needs it to stream" in error
    assert c.tablets == before and c.rf().replication.factor("dc1") == 2 and c.schema_written_at == -1


def test_admission_refuses_a_second_rf_change_of_a_keyspace_with_scyllas_words() -> None:
    c = rf_cluster(THREE_RACKS, {"dc1": 1}, tables=1, cdc=False)
    c.alter(dc1=2)
    change = c.topology.queue[0].rf_change
    again = Request(new_id(), RequestKind.KEYSPACE_RF_CHANGE, host(1), rf_change=change)
    with pytest.raises(
        RequestRefused, match=r"^Another RF change for this keyspace ks ongoing, please retry\.$"
    ):
        enqueue(c.topology, again, frozenset(c.alive), new_id())
    c.step()
    c.execute(c.actions[-1])  # started: still refused while it runs
    assert c.topology.transition is not None
    with pytest.raises(RequestRefused, match="Another RF change"):
        enqueue(c.topology, again, frozenset(c.alive), new_id())


def test_a_request_decided_on_an_older_replication_is_refused_when_it_starts() -> None:
    c = rf_cluster(THREE_RACKS, {"dc1": 1}, tables=1, cdc=False)
    c.alter(dc1=2)
    moved_on = replace(c.rf(), replication=replace(c.rf().replication, options=(("dc1", "3"),)))
    c.catalog = apply_mutations(c.catalog, (PutKeyspace(moved_on),), new_id())
    c.run()
    assert "changed after the ALTER was decided" in c.topology.results[-1].error


def test_no_node_free_for_a_replica_fails_the_change_naming_the_tablet() -> None:
    c = rf_cluster(THREE_RACKS, {"dc1": 2}, tables=1, cdc=False)
    c.alive.discard(host(2))  # a dead node takes no new replica
    c.alter(dc1=3)
    c.run()
    assert "needs another replica in datacenter 'dc1'" in c.topology.results[-1].error
    assert c.rf().replication.factor("dc1") == 2


def test_the_finishing_command_is_stale_once_the_catalog_moved_and_then_decided_again() -> None:
    c = rf_cluster(THREE_RACKS, {"dc1": 1}, tables=1, cdc=False)
    c.alter(dc1=2)
    for _ in range(200):
        action = c.step()
        if isinstance(action, co.Propose) and action.command.schema is not None:
            break
        c.execute(action)
    assert isinstance(action, co.Propose) and action.command.schema is not None
    # a table created meanwhile, with the old replication (one replica per tablet)
    config = SchemaConfig(datacenters=("dc1",), cluster=_shape(THREE_RACKS))
    made = create_table(c.catalog, "ks", "late", [("k", INT, False)], ["k"], new_id=new_id(), config=config)
    c.catalog = apply_mutations(c.catalog, made.mutations, new_id())
    late = c.catalog.keyspaces["ks"].tables["late"].id
    c.tablets[late] = TabletMap.even(late, [[TabletReplica(host(0), 0)]] * 2)
    assert not c.apply(action.command)  # stale: decided on the catalog before the table
    cluster_state = ClusterState(
        metadata=Group0State(c.catalog, FrozenMap(c.tablets)), topology_state=c.topology
    )
    after, (applied,) = apply_entry(cluster_state, TopologyEntry(action.command))
    assert not applied.took_effect and after is cluster_state
    c.run()
    assert c.rf().replication.factor("dc1") == 2
    _check_fits(c, {"dc1": 2})


def test_rf_change_requests_and_commands_round_trip() -> None:
    c = rf_cluster(THREE_RACKS, {"dc1": 1}, tables=1, cdc=False)
    request = c.alter(dc1=2)
    assert request_from_plain(request_to_plain(request)) == request
    c.run()
    finishing = c.commands[-1]
    assert finishing.schema is not None
    assert command_from_plain(command_to_plain(finishing)) == finishing


# --- the planner alone, under hypothesis --------------------------------------------------------


@st.composite
def _plans(draw: st.DrawFn) -> tuple[list[Where], dict[str, int], dict[str, int]]:
    where: list[Where] = []
    for dc in ("dc1", "dc2")[: draw(st.integers(1, 2))]:
        racks = draw(st.integers(1, 4))
        where += [(dc, f"r{draw(st.integers(1, racks))}") for _ in range(draw(st.integers(1, 6)))]
    dcs = sorted({dc for dc, _ in where})
    sizes = {dc: sum(1 for d, _ in where if d == dc) for dc in dcs}
    old = {dc: draw(st.integers(0, sizes[dc])) for dc in dcs}
    if not any(old.values()):
        old[dcs[0]] = 1  # a keyspace replicated nowhere has no tablets to speak of
    changed = draw(st.sampled_from(dcs))  # one ALTER: one DC, by one (ScyllaDB's rule)
    new = dict(old)
    new[changed] = min(sizes[changed], max(0, old[changed] + draw(st.sampled_from((-1, 1)))))
    return where, old, new


@settings(max_examples=60, deadline=None)
@given(_plans(), st.booleans())
def test_every_tablet_ends_with_exactly_rf_replicas_on_distinct_nodes_spread_over_racks(
    plan: tuple[list[Where], dict[str, int], dict[str, int]], cdc: bool
) -> None:
    where, old, new = plan
    catalog = _catalog(where, {dc: str(n) for dc, n in old.items()}, tables=2, cdc=cdc)
    maps = _maps(catalog, where, tablets=4)
    locations = {host(i): w for i, w in enumerate(where)}
    eligible = frozenset(locations)
    moves = rfc.plan(
        catalog,
        "ks",
        {dc: str(n) for dc, n in new.items()},
        maps,
        {h: 2 for h in locations},
        locations,
        eligible,
    )
    ends = dict(maps)
    for u in mirror_updates(maps, rfc._updates(maps, moves)):  # as the coordinator's command does
        info = u.after
        assert info.new_replicas is not None
        assert info.transition is TransitionKind.REBUILD  # numbers only add or drop: no replica moves
        ends[u.table_id] = ends[u.table_id].with_tablet(
            u.tablet_id,
            replace(info, replicas=info.new_replicas, new_replicas=None, stage=None, transition=None),
        )
    for table_id, tm in ends.items():
        for tid, info in enumerate(tm.tablets):
            hosts = [r.host for r in info.replicas]
            assert len(set(hosts)) == len(hosts)
            kept = set(info.replicas) & set(maps[table_id].tablets[tid].replicas)
            for dc, rf in new.items():
                in_dc = [h for h in hosts if locations[h][0] == dc]
                assert len(in_dc) == rf
                racks = {r for d, r in where if d == dc}
                assert len({locations[h][1] for h in in_dc}) == min(rf, len(racks))
                old_in_dc = [r for r in maps[table_id].tablets[tid].replicas if locations[r.host][0] == dc]
                assert sum(1 for r in kept if locations[r.host][0] == dc) == min(rf, len(old_in_dc))
    assert not separated(ends)  # CDC logs kept their base's replicas


def test_a_rack_list_places_one_replica_in_each_named_rack() -> None:
    where = [("dc1", "r1"), ("dc1", "r2"), ("dc1", "r3"), ("dc1", "r3")]
    catalog = _catalog(where, {"dc1": ["r1", "r2"]}, tables=1, cdc=False)
    maps = _maps(catalog, where, tablets=4)
    locations = {host(i): w for i, w in enumerate(where)}
    moves = rfc.plan(
        catalog, "ks", {"dc1": ("r2", "r3")}, maps, {h: 2 for h in locations}, locations, frozenset(locations)
    )
    assert len(moves) == 4
    for _, _, info in moves:
        assert info.new_replicas is not None and info.transition is TransitionKind.MIGRATION
        assert sorted(locations[r.host][1] for r in info.new_replicas) == ["r2", "r3"]
        assert [r for r in info.replicas if locations[r.host][1] == "r2"] == [
            r for r in info.new_replicas if locations[r.host][1] == "r2"
        ]


def test_a_new_coordinator_at_any_step_resumes_to_the_same_end() -> None:
    """The coordinator's observations (barriers confirmed, tablets streamed and cleaned) are lost
    with it; group0 has everything else. Losing them before any step ends the same way."""
    reference = rf_cluster(THREE_RACKS, {"dc1": 2}, tables=1)
    reference.alter(dc1=3)
    reference.run()
    steps = len(reference.actions)
    for crash_at in range(steps):
        c = rf_cluster(THREE_RACKS, {"dc1": 2}, tables=1)
        c.alter(dc1=3)
        count = [0]

        def crash(cl: Cluster, at: int = crash_at, count: list[int] = count) -> None:
            if count[0] == at:
                cl.obs = co.Observations(alive=frozenset(cl.alive))
            count[0] += 1

        c.run(before=crash)
        assert not c.topology.results[-1].error
        assert _by_name(c) == _by_name(reference) and c.rf() == reference.rf()


def _by_name(c: RfCluster) -> dict[str, object]:
    """Each table's tablets by name (two clusters built alike get different table ids)."""
    tables = c.catalog.keyspaces["ks"].tables.values()
    return {t.name: [(i.replicas, i.stage) for i in c.tablets[t.id].tablets] for t in tables}


def test_a_table_created_meanwhile_that_cannot_be_placed_fails_the_change_instead_of_holding_the_queue() -> (
    None
):
    c = rf_cluster(THREE_RACKS, {"dc1": 1}, tables=1, cdc=False)
    c.alter(dc1=2)
    for _ in range(200):
        action = c.step()
        if isinstance(action, co.Propose) and action.command.schema is not None:
            break
        c.execute(action)
    config = SchemaConfig(datacenters=("dc1",), cluster=_shape(THREE_RACKS))
    made = create_table(c.catalog, "ks", "late", [("k", INT, False)], ["k"], new_id=new_id(), config=config)
    c.catalog = apply_mutations(c.catalog, made.mutations, new_id())
    late = c.catalog.keyspaces["ks"].tables["late"].id
    c.tablets[late] = TabletMap.even(late, [[TabletReplica(host(0), 0)]] * 2)
    c.alive -= {host(1), host(2)}
    c.run()
    assert "needs another replica" in c.topology.results[-1].error
    assert c.topology.transition is None and c.rf().replication.factor("dc1") == 1
