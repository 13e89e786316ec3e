"""Where routable requests land (replica, other shard, non-replica) and the tablets-routing-v1 hint."""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import Collection

import pytest
from cassandra import cqltypes
from cassandra.murmur3 import murmur3
from cassandra.query import SimpleStatement
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.types import INT
from tabletdb.cql.values import UNSET, Value
from tabletdb.dht.sharding import shard_of
from tabletdb.dht.token import MIN_TOKEN
from tabletdb.protocol.extensions import TABLETS_ROUTING_V1
from tabletdb.protocol.handler import ClientState
from tabletdb.protocol.routing import TABLETS_ROUTING_V1_KEY
from tabletdb.query.route_check import Op, RouteCheck, RoutePlan, Target, plan_route, routing_token
from tabletdb.schema.model import ColumnDef, ColumnKind, TableDef
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionStage

ME = uuid.UUID(int=1)
OTHER = uuid.UUID(int=2)
THIRD = uuid.UUID(int=3)
SMP, MSB = 2, 12
ROUTING_V1_TYPE = cqltypes.lookup_casstype(
    "TupleType(LongType, LongType, ListType(TupleType(UUIDType, Int32Type)))"
)


def _table(pk: int = 1) -> TableDef:
    cols = tuple(ColumnDef(f"p{i}", INT, ColumnKind.PARTITION_KEY, i) for i in range(pk))
    return TableDef("ks", "t", uuid.UUID(int=99), cols)


def _int(v: int) -> bytes:
    return struct.pack(">i", v)


def _client(shard: int = 0, routing: bool = True) -> ClientState:
    return ClientState(
        1, ("127.0.0.1", 1), shard, extensions=frozenset({TABLETS_ROUTING_V1} if routing else ())
    )


def _check(tablets: dict[uuid.UUID, TabletMap], vnode: Collection[uuid.UUID] = (ME,)) -> RouteCheck:
    return RouteCheck(ME, SMP, MSB, lambda: tablets, lambda _t, _tok: vnode)


def _map(replicas: list[list[TabletReplica]]) -> TabletMap:
    return TabletMap.even(uuid.UUID(int=99), replicas)


def test_plan_route_only_for_dml_with_every_key_column_bound() -> None:
    table = _table()
    select = parse_statement("SELECT * FROM ks.t WHERE p0 = ?")
    insert = parse_statement("INSERT INTO ks.t (p0) VALUES (?)")
    assert plan_route(select, table, [0]) == RoutePlan(table, (0,), Op.READ)
    assert plan_route(insert, table, [0]) == RoutePlan(table, (0,), Op.WRITE)
    assert plan_route(select, table, []) is None
    assert plan_route(select, None, [0]) is None
    assert plan_route(parse_statement("TRUNCATE ks.t"), table, [0]) is None


def test_routing_token_matches_the_drivers_murmur3() -> None:
    assert routing_token([b"hello"], [0]) == murmur3(b"hello") == -3758069500696749310
    a, b = _int(1), b"xyz"
    composite = b"\x00\x04" + a + b"\x00" + b"\x00\x03" + b + b"\x00"  # the driver's routing key layout
    assert routing_token([b, a], [1, 0]) == murmur3(composite)
    values: list[Value] = [None]
    assert routing_token(values, [0]) is None
    assert routing_token([UNSET, a], [0, 1]) is None
    assert routing_token([a], [3]) is None


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_routing_token_agrees_with_the_drivers_routing_key(parts: list[bytes], rng: random.Random) -> None:
    """The driver hashes `SimpleStatement.routing_key` of the bound key parts; so must we."""
    order = list(range(len(parts)))
    rng.shuffle(order)
    values: list[Value] = [b""] * len(parts)
    for position, part in zip(order, parts):
        values[position] = part
    stmt = SimpleStatement("")
    stmt.routing_key = parts
    assert routing_token(values, order) == (murmur3(stmt.routing_key) if stmt.routing_key else MIN_TOKEN)


def test_vnode_check_of_a_dropped_keyspace_counts_nothing() -> None:
    def gone(_table: TableDef, _token: int) -> Collection[uuid.UUID]:
        raise InvalidRequest("Keyspace ks does not exist")

    check = RouteCheck(ME, SMP, MSB, dict, gone)
    assert check.observe(_client(), RoutePlan(_table(), (0,), Op.READ), [_int(1)]) is None
    assert sum(check.counters.snapshot().values()) == 0


def test_tablet_replica_on_its_shard_gets_no_payload() -> None:
    tmap = _map([[TabletReplica(ME, 1)], [TabletReplica(OTHER, 0)]])
    check = _check({tmap.table_id: tmap})
    plan = RoutePlan(_table(), (0,), Op.READ)
    key = next(_int(i) for i in range(1000) if tmap.tablet_id_of(murmur3(_int(i))) == 0)
    assert check.observe(_client(shard=1), plan, [key]) is None
    assert check.counters.counts[Op.READ][Target.REPLICA] == 1
    assert check.counters.payloads_sent == 0


@pytest.mark.parametrize(
    ("tablet", "shard", "target"), [(0, 0, Target.OTHER_SHARD), (1, 1, Target.NON_REPLICA)]
)
def test_misrouted_tablet_request_carries_the_tablet_as_the_driver_decodes_it(
    tablet: int, shard: int, target: Target
) -> None:
    replicas = [[TabletReplica(ME, 1), TabletReplica(THIRD, 0)], [TabletReplica(OTHER, 1)]]
    tmap = _map(replicas)
    check = _check({tmap.table_id: tmap})
    key = next(_int(i) for i in range(1000) if tmap.tablet_id_of(murmur3(_int(i))) == tablet)
    payload = check.observe(_client(shard=shard), RoutePlan(_table(), (0,), Op.WRITE), [key])
    assert payload is not None and list(payload) == [TABLETS_ROUTING_V1_KEY]
    first, last, hosts = ROUTING_V1_TYPE.from_binary(payload[TABLETS_ROUTING_V1_KEY], 4)
    expected_range = tmap.range_of(tablet)
    assert (first, last) == (expected_range.start, expected_range.end)
    assert [tuple(h) for h in hosts] == [tuple(r) for r in replicas[tablet]]
    assert check.counters.counts[Op.WRITE][target] == 1
    assert check.counters.payloads_sent == 1


def test_no_payload_unless_the_client_negotiated_tablets_routing_v1() -> None:
    tmap = _map([[TabletReplica(OTHER, 0)]])
    check = _check({tmap.table_id: tmap})
    assert check.observe(_client(routing=False), RoutePlan(_table(), (0,), Op.READ), [_int(5)]) is None
    assert check.counters.counts[Op.READ][Target.NON_REPLICA] == 1
    assert check.counters.payloads_sent == 0


def test_pending_replica_on_its_shard_is_a_correct_target() -> None:
    moving = TabletInfo(
        2**63 - 1,
        (TabletReplica(OTHER, 0),),
        new_replicas=(TabletReplica(ME, 1),),
        stage=TransitionStage.WRITE_BOTH_READ_NEW,
    )
    tmap = TabletMap(uuid.UUID(int=99), (moving,))
    check = _check({tmap.table_id: tmap})
    plan = RoutePlan(_table(), (0,), Op.READ)
    assert check.observe(_client(shard=1), plan, [_int(5)]) is None
    assert check.observe(_client(shard=0), plan, [_int(5)]) is not None
    assert check.counters.counts[Op.READ][Target.REPLICA] == 1
    assert check.counters.counts[Op.READ][Target.NON_REPLICA] == 1


def test_vnode_tables_use_the_ring_replicas_and_the_token_shard() -> None:
    plan = RoutePlan(_table(), (0,), Op.WRITE)
    key = _int(42)
    owner = shard_of(murmur3(key), SMP, MSB)
    local = _check({}, vnode=(OTHER, ME))
    assert local.observe(_client(shard=owner), plan, [key]) is None
    assert local.observe(_client(shard=1 - owner), plan, [key]) is None  # vnode tables get no hint
    remote = _check({}, vnode=(OTHER, THIRD))
    assert remote.observe(_client(shard=owner), plan, [key]) is None
    assert local.counters.snapshot()[(Op.WRITE, Target.REPLICA)] == 1
    assert local.counters.snapshot()[(Op.WRITE, Target.OTHER_SHARD)] == 1
    assert remote.counters.snapshot()[(Op.WRITE, Target.NON_REPLICA)] == 1
