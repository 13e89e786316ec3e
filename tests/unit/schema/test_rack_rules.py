"""Tablets keyspaces must fit the token-owning nodes: enough nodes per DC, known racks, RF-rack-valid."""

from __future__ import annotations

import pytest

from tabletdb.cql.errors import ConfigurationError, InvalidRequest
from tabletdb.cql.types import INT
from tabletdb.schema.ddl_common import SchemaConfig
from tabletdb.schema.ddl_keyspace import alter_keyspace, create_keyspace
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.model import NTS, Catalog, KeyspaceDef, KeyspaceTablets, Replication
from tabletdb.schema.rack_rules import ClusterShape, rack_invalid_dc

from .helpers import apply, next_id, with_keyspace

TWO_NODES = ClusterShape.of([("dc1", "r1"), ("dc1", "r1")])
CONFIG = SchemaConfig(datacenters=("dc1",), cluster=TWO_NODES)


def nts(**dcs: object) -> dict[str, object]:
    return {"class": "NetworkTopologyStrategy", **dcs}


def test_rf_above_the_nodes_of_a_dc_is_refused_with_scyllas_text() -> None:
    with pytest.raises(
        ConfigurationError,
        match=r"^Datacenter dc1 doesn't have enough token-owning nodes for replication_factor=3$",
    ):
        create_keyspace(Catalog(), "ks", nts(dc1=3), config=CONFIG)
    assert not create_keyspace(Catalog(), "ks", nts(dc1=2), config=CONFIG).is_noop
    # vnode keyspaces are not placed tablet by tablet: RF above the nodes stays accepted there
    assert not create_keyspace(Catalog(), "ks", nts(dc1=3), tablets={"enabled": False}, config=CONFIG).is_noop


def test_create_table_in_a_keyspace_the_cluster_cannot_place_is_refused() -> None:
    """A keyspace accepted while three nodes owned tokens, one of which has left since."""
    three = SchemaConfig(datacenters=("dc1",), cluster=ClusterShape.of([("dc1", "r1")] * 3))
    catalog = apply(Catalog(), create_keyspace(Catalog(), "ks", nts(dc1=3), config=three))
    with pytest.raises(ConfigurationError, match="replication_factor=3"):
        create_table(catalog, "ks", "t", [("k", INT, False)], ["k"], new_id=next_id(), config=CONFIG)
    assert not create_table(
        catalog, "ks", "t", [("k", INT, False)], ["k"], new_id=next_id(), config=three
    ).is_noop


def test_alter_raising_rf_beyond_the_nodes_is_refused_and_other_alters_are_not() -> None:
    catalog = with_keyspace(replication=nts(dc1=2))
    with pytest.raises(ConfigurationError, match="replication_factor=3"):
        alter_keyspace(catalog, "ks", replication=nts(dc1=3), config=CONFIG)
    assert not alter_keyspace(catalog, "ks", replication=nts(dc1=1), config=CONFIG).is_noop
    lonely = SchemaConfig(datacenters=("dc1",), cluster=ClusterShape.of([("dc1", "r1")]))
    assert not alter_keyspace(catalog, "ks", durable_writes=False, config=lonely).is_noop


def test_rack_list_may_only_name_racks_with_nodes() -> None:
    shape = ClusterShape.of([("dc1", "r1"), ("dc1", "r2"), ("dc2", "r9")])
    config = SchemaConfig(datacenters=("dc1", "dc2"), cluster=shape)
    assert not create_keyspace(Catalog(), "ks", nts(dc1=["r1", "r2"]), config=config).is_noop
    with pytest.raises(
        ConfigurationError,
        match=r"names rack 'r9', which has no nodes in datacenter dc1 \(its racks: r1, r2\)",
    ):
        create_keyspace(Catalog(), "ks", nts(dc1=["r1", "r9"]), config=config)


def test_unknown_topology_checks_nothing() -> None:
    """A founder deciding before its own join record: nothing to check against yet."""
    config = SchemaConfig(datacenters=("dc1",))
    assert not create_keyspace(
        Catalog(),
        "ks",
        nts(
            dc1=5,
        ),
        config=config,
    ).is_noop


def _ks(**dcs: object) -> KeyspaceDef:
    options = tuple(sorted((dc, tuple(v) if isinstance(v, list) else str(v)) for dc, v in dcs.items()))
    return KeyspaceDef("ks", Replication(NTS, options), True, KeyspaceTablets(True))


@pytest.mark.parametrize(
    ("dcs", "invalid"),
    [
        ({"dc1": 0}, None),
        ({"dc1": 1}, None),
        ({"dc1": 3}, None),
        ({"dc1": 2}, ("dc1", 2, 3)),
        ({"dc1": ["a"]}, None),
        ({"dc1": 3, "dc2": 2}, ("dc2", 2, 1)),
        ({"dc1": 1}, None),  # dc2 absent means RF 0 there
    ],
)
def test_rf_rack_validity_predicate(dcs: dict[str, object], invalid: tuple[str, int, int] | None) -> None:
    shape = ClusterShape.of([("dc1", "a"), ("dc1", "b"), ("dc1", "c"), ("dc1", "c"), ("dc2", "x")])
    assert rack_invalid_dc(_ks(**dcs), shape) == invalid


def test_views_need_rf_rack_validity_only_of_tablets_keyspaces() -> None:
    vnodes = KeyspaceDef("ks", Replication(NTS, (("dc1", "2"),)), True, KeyspaceTablets(False))
    assert rack_invalid_dc(vnodes, ClusterShape.of([("dc1", "a"), ("dc1", "b"), ("dc1", "c")])) is None


def test_invalid_request_is_the_error_class_of_rf_rack_validity() -> None:
    config = SchemaConfig(datacenters=("dc1",), cluster=TWO_NODES, rf_rack_valid_keyspaces=True)
    with pytest.raises(InvalidRequest):
        create_keyspace(Catalog(), "ks", nts(dc1=2), config=config)


def test_a_view_on_a_numeric_rf_warns_that_the_keyspace_must_stay_rf_rack_valid() -> None:
    from tabletdb.schema.rack_rules import views_warning

    (warning,) = views_warning(_ks(dc1=3))
    assert "requires the keyspace to remain RF-rack-valid" in warning
    assert views_warning(_ks(dc1=["a", "b"])) == ()
