from __future__ import annotations

import pytest

from tabletdb.cql.errors import AlreadyExists, ConfigurationError, InvalidRequest, Unauthorized
from tabletdb.schema.ddl_common import Change, SchemaChangeEvent, SchemaConfig, Target
from tabletdb.schema.ddl_keyspace import RfChangeOutcome, alter_keyspace, create_keyspace, drop_keyspace
from tabletdb.schema.model import NTS, SIMPLE, Catalog, KeyspaceTablets
from tabletdb.schema.mutations import PutKeyspace
from tabletdb.schema.rack_rules import ClusterShape

from .helpers import CONFIG, apply, with_keyspace

NTS_REP = {"class": "NetworkTopologyStrategy", "dc1": 3}


def test_create_keyspace_outcome_and_event() -> None:
    outcome = create_keyspace(Catalog(), "ks", NTS_REP, config=CONFIG)
    assert outcome.events == (SchemaChangeEvent(Change.CREATED, Target.KEYSPACE, "ks"),)
    (mutation,) = outcome.mutations
    assert isinstance(mutation, PutKeyspace)
    ks = mutation.keyspace
    assert ks.replication.strategy_class == NTS
    assert ks.replication.options == (("dc1", "3"),)
    assert ks.tablets == KeyspaceTablets(True, None)


def test_existing_keyspace() -> None:
    catalog = with_keyspace()
    with pytest.raises(AlreadyExists, match='Cannot add already existing keyspace "ks"') as e:
        create_keyspace(catalog, "ks", NTS_REP, config=CONFIG)
    assert e.value.keyspace == "ks"
    assert create_keyspace(catalog, "ks", NTS_REP, if_not_exists=True, config=CONFIG).is_noop


@pytest.mark.parametrize(
    ("name", "message"),
    [("bad-name", '"bad-name" is not a valid keyspace name'), ("k" * 193, "shouldn't be more than 192")],
)
def test_keyspace_name_rules(name: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        create_keyspace(Catalog(), name, NTS_REP, config=CONFIG)


def test_system_keyspace_refused() -> None:
    with pytest.raises(InvalidRequest, match="system keyspace is not user-modifiable"):
        create_keyspace(Catalog(), "system", NTS_REP, config=CONFIG)
    with pytest.raises(Unauthorized, match="not user-modifiable"):
        drop_keyspace(Catalog(), "system_schema")


@pytest.mark.parametrize(
    ("replication", "message"),
    [
        ({"dc1": 1}, "Missing mandatory replication strategy class"),
        ({"class": "SimpleStrategy"}, "SimpleStrategy requires a replication_factor strategy option."),
        (
            {"class": "SimpleStrategy", "replication_factor": "x"},
            "must be numeric and non-negative, found 'x'",
        ),
        (
            {"class": "SimpleStrategy", "replication_factor": 1, "dc1": 1},
            r"Unrecognized strategy option \{dc1\}",
        ),
        ({"class": "OldNetworkTopologyStrategy"}, "Unable to find replication strategy class"),
        ({"class": "LocalStrategy"}, "internal use only"),
        ({"class": "NetworkTopologyStrategy", "dc9": 1}, r"Unrecognized strategy option \{dc9\}"),
        ({"class": "NetworkTopologyStrategy", "dc1": -1}, "must be numeric and non-negative"),
        ({"class": "NetworkTopologyStrategy", "dc1": ["r1", "r1"]}, "duplicates"),
    ],
)
def test_replication_validation(replication: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        create_keyspace(Catalog(), "ks", replication, config=CONFIG)


def test_replication_factor_expands_to_known_dcs_and_rack_lists_are_kept() -> None:
    rep = {
        "class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
        "replication_factor": 2,
        "dc2": ["a", "b"],
    }
    ks = with_keyspace(replication=rep).keyspaces["ks"].definition
    assert ks.replication.options == (("dc1", "2"), ("dc2", ("a", "b")))
    assert ks.replication.factor("dc2") == 2


def test_tablets_modes() -> None:
    simple = {"class": "SimpleStrategy", "replication_factor": 1}
    assert with_keyspace(replication=simple).keyspaces["ks"].definition.tablets is None
    (warning,) = create_keyspace(Catalog(), "ks", simple, config=CONFIG).warnings
    assert "SimpleStrategy replication class is not recommended" in warning
    assert create_keyspace(Catalog(), "ks", NTS_REP, config=CONFIG).warnings == ()
    with pytest.raises(ConfigurationError, match="only supported with NetworkTopologyStrategy"):
        create_keyspace(Catalog(), "ks", simple, tablets={"enabled": True}, config=CONFIG)
    disabled = SchemaConfig("disabled", ("dc1",))
    off = create_keyspace(Catalog(), "ks", NTS_REP, config=disabled).mutations[0]
    assert isinstance(off, PutKeyspace) and off.keyspace.tablets == KeyspaceTablets(False)
    on = create_keyspace(Catalog(), "ks", NTS_REP, tablets={"enabled": True, "initial": 8}, config=disabled)
    assert isinstance(on.mutations[0], PutKeyspace) and on.mutations[0].keyspace.tablets == KeyspaceTablets(
        True, 8
    )
    enforced = SchemaConfig("enforced", ("dc1",))
    with pytest.raises(ConfigurationError, match="enforced"):
        create_keyspace(Catalog(), "ks", NTS_REP, tablets={"enabled": False}, config=enforced)
    with pytest.raises(ConfigurationError, match="enforced"):
        create_keyspace(Catalog(), "ks", simple, config=enforced)
    with pytest.raises(ConfigurationError, match="Unrecognized tablets option 'foo'"):
        create_keyspace(Catalog(), "ks", NTS_REP, tablets={"foo": 1}, config=CONFIG)
    with pytest.raises(ConfigurationError, match="rack list"):
        create_keyspace(
            Catalog(), "ks", NTS_REP, config=SchemaConfig(datacenters=("dc1",), enforce_rack_list=True)
        )


def test_alter_keyspace_cannot_switch_tablets() -> None:
    catalog = with_keyspace()
    with pytest.raises(ConfigurationError, match="vnode/tablets"):
        alter_keyspace(catalog, "ks", tablets={"enabled": False}, config=CONFIG)
    with pytest.raises(ConfigurationError, match="vnode/tablets"):
        alter_keyspace(
            catalog, "ks", replication={"class": "SimpleStrategy", "replication_factor": 1}, config=CONFIG
        )
    outcome = alter_keyspace(
        catalog, "ks", replication={"class": "NetworkTopologyStrategy", "dc1": 2}, config=CONFIG
    )
    assert outcome.events == (SchemaChangeEvent(Change.UPDATED, Target.KEYSPACE, "ks"),)
    altered = apply(catalog, outcome).keyspaces["ks"].definition
    assert altered.replication.options == (("dc1", "2"),) and altered.uses_tablets


def test_initial_zero_asks_for_the_automatic_count_at_create_and_alter() -> None:
    def tablets_of(catalog: Catalog) -> KeyspaceTablets | None:
        return catalog.keyspaces["ks"].definition.tablets

    created = create_keyspace(Catalog(), "ks", NTS_REP, tablets={"initial": 0}, config=CONFIG)
    catalog = apply(Catalog(), created)
    assert tablets_of(catalog) == KeyspaceTablets(True, None)
    catalog = apply(catalog, alter_keyspace(catalog, "ks", tablets={"initial": 8}, config=CONFIG))
    assert tablets_of(catalog) == KeyspaceTablets(True, 8)
    unchanged = apply(catalog, alter_keyspace(catalog, "ks", durable_writes=False, config=CONFIG))
    assert tablets_of(unchanged) == KeyspaceTablets(True, 8)
    catalog = apply(catalog, alter_keyspace(catalog, "ks", tablets={"initial": 0}, config=CONFIG))
    assert tablets_of(catalog) == KeyspaceTablets(True, None)


def test_tablet_options_on_a_vnode_keyspace_are_refused_with_scyllas_words() -> None:
    off = {"enabled": False, "initial": 4}
    words = r"^tablet options cannot be used when tablets are disabled for the keyspace$"
    with pytest.raises(ConfigurationError, match=words):
        create_keyspace(Catalog(), "ks", NTS_REP, tablets=off, config=CONFIG)
    created = create_keyspace(Catalog(), "ks", NTS_REP, tablets={"enabled": False}, config=CONFIG)
    vnodes = apply(Catalog(), created)
    with pytest.raises(ConfigurationError, match=words):
        alter_keyspace(vnodes, "ks", tablets={"initial": 4}, config=CONFIG)


def test_alter_vnode_keyspace_between_strategies_keeps_contents() -> None:
    simple = {"class": "SimpleStrategy", "replication_factor": 1}
    catalog = with_keyspace(replication=simple)
    outcome = alter_keyspace(
        catalog,
        "ks",
        replication={"class": "NetworkTopologyStrategy", "dc1": 1},
        durable_writes=False,
        config=SchemaConfig("enabled", ("dc1",)),
    )
    ks = apply(catalog, outcome).keyspaces["ks"].definition
    assert ks.replication.strategy_class == NTS and not ks.uses_tablets and not ks.durable_writes
    assert ks.tablets == KeyspaceTablets(False)
    assert SIMPLE != NTS


def test_drop_keyspace() -> None:
    with pytest.raises(ConfigurationError, match=r"Cannot drop non existing keyspace 'ks'\."):
        drop_keyspace(Catalog(), "ks")
    assert drop_keyspace(Catalog(), "ks", if_exists=True).is_noop
    catalog = with_keyspace()
    outcome = drop_keyspace(catalog, "ks")
    assert outcome.events == (SchemaChangeEvent(Change.DROPPED, Target.KEYSPACE, "ks"),)
    assert "ks" not in apply(catalog, outcome).keyspaces


def test_tablet_rf_changes_one_dc_by_one_step_with_scyllas_words() -> None:
    catalog = with_keyspace(replication={"class": "NetworkTopologyStrategy", "dc1": 1, "dc2": 1})
    scylla = r"^Only one DC's RF can be changed at a time and not by more than 1$"
    for dc1, dc2 in ((3, 1), (2, 2), (0, 0), (1, 3)):
        with pytest.raises(InvalidRequest, match=scylla):
            alter_keyspace(
                catalog,
                "ks",
                replication={"class": "NetworkTopologyStrategy", "dc1": dc1, "dc2": dc2},
                config=CONFIG,
            )
    with pytest.raises(
        ConfigurationError,
        match=r"^Attempted to implicitly drop replicas in datacenter dc2\. If this is the desired behavior, "
        r"set replication factor to 0 in dc2 explicitly\.$",
    ):
        alter_keyspace(
            catalog, "ks", replication={"class": "NetworkTopologyStrategy", "dc1": 2}, config=CONFIG
        )
    ok = alter_keyspace(
        catalog, "ks", replication={"class": "NetworkTopologyStrategy", "dc1": 2, "dc2": 1}, config=CONFIG
    )
    # not a schema change: a topology request that writes the definition when the replicas exist
    assert isinstance(ok, RfChangeOutcome) and not ok.is_noop
    assert ok.before == catalog.keyspaces["ks"].definition and ok.after is not None
    assert ok.after.replication.factor("dc1") == 2
    to_zero = alter_keyspace(
        catalog, "ks", replication={"class": "NetworkTopologyStrategy", "dc1": 1, "dc2": 0}, config=CONFIG
    )
    assert isinstance(to_zero, RfChangeOutcome)
    durable = alter_keyspace(catalog, "ks", durable_writes=False, config=CONFIG)
    assert not isinstance(durable, RfChangeOutcome) and not durable.is_noop
    same = alter_keyspace(
        catalog, "ks", replication={"class": "NetworkTopologyStrategy", "dc1": 1, "dc2": 1}, config=CONFIG
    )
    assert not isinstance(same, RfChangeOutcome)


def test_rf_rack_validity() -> None:
    from tabletdb.schema.ddl_views import create_view
    from tabletdb.schema.indexes import create_index
    from tabletdb.schema.rack_rules import ClusterShape

    from .helpers import next_id, with_table

    shape = ClusterShape.of([("dc1", "a"), ("dc1", "b"), ("dc1", "c"), ("dc2", "a"), ("dc2", "b")])
    racks = SchemaConfig(datacenters=("dc1", "dc2"), cluster=shape)
    strict = SchemaConfig(datacenters=("dc1", "dc2"), cluster=shape, rf_rack_valid_keyspaces=True)
    with pytest.raises(
        InvalidRequest,
        match=r"rf_rack_valid_keyspaces` is enabled.*keyspace 'ks' doesn't satisfy it for DC 'dc1': "
        r"RF=2 vs\. rack count=3\.",
    ):
        create_keyspace(Catalog(), "ks", {"class": "NetworkTopologyStrategy", "dc1": 2}, config=strict)
    assert not create_keyspace(
        Catalog(), "ks", {"class": "NetworkTopologyStrategy", "dc1": 3}, config=strict
    ).is_noop
    assert not create_keyspace(  # without the option an RF-rack-invalid keyspace is fine
        Catalog(), "ks", {"class": "NetworkTopologyStrategy", "dc1": 2}, config=racks
    ).is_noop
    catalog = with_table(with_keyspace(replication={"class": "NetworkTopologyStrategy", "dc1": 2}))
    with pytest.raises(
        InvalidRequest, match=r"Cannot create index i on ks\.t: .*required to be RF-rack-valid.*factor 2"
    ):
        create_index(catalog, "ks", "t", "i", "v", config=racks)
    with pytest.raises(
        InvalidRequest, match=r"Cannot create materialized view ks\.mv: .*required to be RF-rack-valid"
    ):
        create_view(
            catalog,
            "ks",
            "mv",
            "t",
            None,
            ["v"],
            ["pk", "ck"],
            where_clause="",
            not_null=["v"],
            new_id=next_id(),
            config=racks,
        )
    catalog = with_table(with_keyspace(replication={"class": "NetworkTopologyStrategy", "dc1": 3}))
    catalog = apply(catalog, create_index(catalog, "ks", "t", "i", "v", config=racks))
    with pytest.raises(InvalidRequest, match=r"Cannot alter keyspace ks: .*required to be RF-rack-valid"):
        alter_keyspace(
            catalog, "ks", replication={"class": "NetworkTopologyStrategy", "dc1": 2}, config=racks
        )
    rack_list = {"class": "NetworkTopologyStrategy", "dc1": ["a", "b"]}
    assert not alter_keyspace(catalog, "ks", replication=rack_list, config=racks).is_noop


def test_no_replication_factor_defaults_to_a_replica_per_token_owning_rack() -> None:
    shape = ClusterShape({"dc1": {"r1": 2, "r2": 1, "rz": 0}, "dc2": {"r1": 1}})
    config = SchemaConfig(
        datacenters=("dc1", "dc2"), cluster=shape, tablets_mode_for_new_keyspaces="disabled"
    )
    for given in (
        {},
        {"class": "NetworkTopologyStrategy"},
        {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy"},
    ):
        ks = apply(Catalog(), create_keyspace(Catalog(), "k", given, config=config))
        assert dict(ks.keyspaces["k"].definition.replication.options) == {"dc1": "2", "dc2": "1"}


def test_default_replication_is_rack_lists_for_rf_rack_valid_tablets_keyspaces() -> None:
    shape = ClusterShape({"dc1": {"r1": 1, "r2": 1}})
    config = SchemaConfig(datacenters=("dc1",), cluster=shape, rf_rack_valid_keyspaces=True)
    ks = apply(Catalog(), create_keyspace(Catalog(), "k", {}, config=config))
    assert dict(ks.keyspaces["k"].definition.replication.options) == {"dc1": ("r1", "r2")}
