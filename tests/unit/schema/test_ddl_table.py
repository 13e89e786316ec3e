from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from tabletdb.cql.errors import (
    AlreadyExists,
    ConfigurationError,
    CqlSyntaxError,
    InvalidRequest,
    Unauthorized,
)
from tabletdb.cql.types import (
    COUNTER,
    DURATION,
    INT,
    TEXT,
    CqlType,
    ListType,
    MapType,
    SetType,
    UserType,
    UserTypeRef,
)
from tabletdb.schema.ddl_alter_table import (
    alter_table_add,
    alter_table_alter_type,
    alter_table_drop,
    alter_table_options,
    alter_table_rename,
)
from tabletdb.schema.ddl_common import Change, DdlOutcome, SchemaChangeEvent, SchemaConfig, Target
from tabletdb.schema.ddl_keyspace import create_keyspace
from tabletdb.schema.ddl_table import create_table, drop_table
from tabletdb.schema.ddl_types import create_type
from tabletdb.schema.model import Catalog, ClusteringOrder, ColumnKind, DroppedColumn
from tabletdb.schema.mutations import PutTable

from .helpers import CONFIG, apply, next_id, with_keyspace, with_table

Col = tuple[str, CqlType, bool]


def _create(
    catalog: Catalog, columns: Sequence[Col], pk: list[str], ck: tuple[str, ...] | list[str] = (), **kw: Any
) -> DdlOutcome:
    return create_table(catalog, "ks", "t", columns, pk, ck, new_id=next_id(), **kw)


def test_create_table_columns_and_event() -> None:
    catalog = with_keyspace()
    columns = [
        ("z", TEXT, False),
        ("p2", INT, False),
        ("p1", INT, False),
        ("c", INT, False),
        ("s", INT, True),
        ("a", INT, False),
    ]
    outcome = _create(catalog, columns, ["p1", "p2"], ["c"], clustering_order=[("c", "desc")])
    assert outcome.events == (SchemaChangeEvent(Change.CREATED, Target.TABLE, "ks", "t"),)
    table = apply(catalog, outcome).table("ks", "t")
    assert table is not None
    assert [(c.name, c.kind, c.position) for c in table.columns] == [
        ("p1", ColumnKind.PARTITION_KEY, 0),
        ("p2", ColumnKind.PARTITION_KEY, 1),
        ("c", ColumnKind.CLUSTERING, 0),
        ("s", ColumnKind.STATIC, -1),
        ("a", ColumnKind.REGULAR, -1),
        ("z", ColumnKind.REGULAR, -1),
    ]
    assert table.column("c").clustering_order is ClusteringOrder.DESC  # type: ignore[union-attr]
    assert table.flags == frozenset({"compound"})


def test_already_exists_and_unknown_keyspace() -> None:
    catalog = with_table(with_keyspace())
    with pytest.raises(AlreadyExists, match='Cannot add already existing table "t" to keyspace "ks"') as e:
        with_table(catalog)
    assert (e.value.keyspace, e.value.table) == ("ks", "t")
    assert create_table(
        catalog, "ks", "t", [("a", INT, False)], ["a"], new_id=next_id(), if_not_exists=True
    ).is_noop
    with pytest.raises(InvalidRequest, match="Keyspace nope does not exist"):
        create_table(catalog, "nope", "t", [("a", INT, False)], ["a"], new_id=next_id())


@pytest.mark.parametrize(
    ("columns", "pk", "ck", "message"),
    [
        ([("a", INT, False), ("a", TEXT, False)], ["a"], [], "Multiple definition of identifier a"),
        ([("a", INT, False)], [], [], "No PRIMARY KEY specifed"),
        ([("a", INT, False)], ["b"], [], "Unknown definition b referenced in PRIMARY KEY"),
        (
            [("a", ListType(INT), False)],
            ["a"],
            [],
            "Invalid non-frozen collection type for PRIMARY KEY component a",
        ),
        (
            [("a", INT, False), ("c", COUNTER, False)],
            ["a"],
            ["c"],
            "counter type is not supported for PRIMARY KEY",
        ),
        ([("a", DURATION, False)], ["a"], [], "duration type is not supported"),
        ([("a", INT, False), ("s", INT, True)], ["a"], [], "Static columns are only useful"),
        (
            [("a", INT, False), ("c", INT, True)],
            ["a"],
            ["c"],
            "Static column c cannot be part of the PRIMARY KEY",
        ),
        (
            [("a", INT, False), ("n", COUNTER, False), ("v", INT, False)],
            ["a"],
            [],
            "Cannot mix counter and non counter",
        ),
        (
            [("a", INT, False), ("m", ListType(ListType(INT)), False)],
            ["a"],
            [],
            "Non-frozen collections are not allowed",
        ),
        (
            [("a", INT, False), ("m", SetType(COUNTER), False)],
            ["a"],
            [],
            "Counters are not allowed inside collections",
        ),
    ],
)
def test_create_table_validation(columns: list[Col], pk: list[str], ck: list[str], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        _create(with_keyspace(), columns, pk, ck)


def test_frozen_collection_in_key_is_fine() -> None:
    catalog = with_keyspace()
    outcome = _create(catalog, [("a", ListType(ListType(INT), frozen=True), False)], ["a"])
    table = apply(catalog, outcome).table("ks", "t")
    assert table is not None and table.columns[0].type.cql() == "frozen<list<frozen<list<int>>>>"


@pytest.mark.parametrize(
    ("order", "message"),
    [
        ([("a", "ASC")], "Only clustering key columns can be defined in CLUSTERING ORDER"),
        ([("c2", "ASC")], "Missing CLUSTERING ORDER for column c1"),
        ([("c2", "ASC"), ("c1", "ASC")], "must match that of the clustering columns"),
        ([("c1", "UP")], "Invalid clustering order"),
        ([("c1", "ASC"), ("c1", "DESC")], "Duplicate column c1 in CLUSTERING ORDER"),
    ],
)
def test_clustering_order_validation(order: list[tuple[str, str]], message: str) -> None:
    columns = [("a", INT, False), ("c1", INT, False), ("c2", INT, False)]
    with pytest.raises(InvalidRequest, match=message):
        _create(with_keyspace(), columns, ["a"], ["c1", "c2"], clustering_order=order)


def test_table_name_rules_and_system_keyspace() -> None:
    catalog = with_keyspace()
    with pytest.raises(InvalidRequest, match="is not a valid table name"):
        create_table(catalog, "ks", "t-1", [("a", INT, False)], ["a"], new_id=next_id())
    with pytest.raises(InvalidRequest, match="shouldn't be more than 192 characters"):
        create_table(catalog, "ks", "t" * 193, [("a", INT, False)], ["a"], new_id=next_id())
    catalog = (
        apply(
            catalog,
            create_keyspace(
                Catalog(), "system_auth", {"class": "SimpleStrategy", "replication_factor": 1}, config=CONFIG
            ),
        )
        if False
        else catalog
    )
    from tabletdb.schema.model import KeyspaceDef, Replication
    from tabletdb.schema.mutations import PutKeyspace, apply_mutations

    sys_catalog = apply_mutations(catalog, [PutKeyspace(KeyspaceDef("system", Replication("x")))], next_id())
    with pytest.raises(Unauthorized, match="system keyspace is not user-modifiable"):
        create_table(sys_catalog, "system", "t", [("a", INT, False)], ["a"], new_id=next_id())


def test_options_validation_and_defaults() -> None:
    catalog = with_keyspace()
    cols = [("a", INT, False), ("v", INT, False)]
    with pytest.raises(CqlSyntaxError, match="Unknown property 'foo'"):
        _create(catalog, cols, ["a"], options={"foo": 1})
    with pytest.raises(ConfigurationError, match="Unable to find compaction strategy class 'Nope'"):
        _create(catalog, cols, ["a"], options={"compaction": {"class": "Nope"}})
    with pytest.raises(ConfigurationError, match="Unknown tablet hint 'bogus'"):
        _create(catalog, cols, ["a"], options={"tablets": {"bogus": 1}})
    with pytest.raises(ConfigurationError, match="exceeds"):
        _create(catalog, cols, ["a"], options={"tablets": {"min_tablet_count": 5, "max_tablet_count": 6}})
    with pytest.raises(ConfigurationError, match="gc_grace_seconds"):
        _create(catalog, cols, ["a"], options={"gc_grace_seconds": -1})
    outcome = _create(
        catalog,
        cols,
        ["a"],
        options={
            "comment": "hi",
            "compaction": {"class": "org.apache.cassandra.db.compaction.LeveledCompactionStrategy"},
            "tablets": {"min_tablet_count": 4, "expected_data_size_in_gb": 0},
            "cdc": {"enabled": True},
            "speculative_retry": "95percentile",
        },
    )
    table = apply(catalog, outcome).table("ks", "t")
    assert table is not None
    o = table.options
    assert o.comment == "hi" and o.compaction == (("class", "LeveledCompactionStrategy"),)
    assert o.tablets == (("min_tablet_count", "4"),)
    assert o.cdc == (
        ("delta", "full"),
        ("enabled", "true"),
        ("postimage", "false"),
        ("preimage", "false"),
        ("ttl", "86400"),
    )
    assert o.speculative_retry == "95.0PERCENTILE"
    assert o.gc_grace_seconds == 864000 and o.caching == (("keys", "ALL"), ("rows_per_partition", "ALL"))


def test_counter_table_rules() -> None:
    catalog = with_keyspace()
    cols = [("a", INT, False), ("n", COUNTER, False)]
    with pytest.raises(InvalidRequest, match="default_time_to_live on a table with counters"):
        _create(catalog, cols, ["a"], options={"default_time_to_live": 5})
    catalog = apply(catalog, _create(catalog, cols, ["a"]))
    table = catalog.table("ks", "t")
    assert table is not None and table.flags == frozenset({"compound", "counter"})
    with pytest.raises(
        InvalidRequest, match=r"Cannot add a non counter column \(v\) in a counter column family"
    ):
        alter_table_add(catalog, "ks", "t", [("v", INT, False)])


def test_table_ids_explicit_and_unique() -> None:
    catalog = with_keyspace()
    wanted = uuid.UUID("11111111-2222-1333-8444-555555555555")
    catalog = with_table(catalog, options={"id": str(wanted)})
    table = catalog.table("ks", "t")
    assert table is not None and table.id == wanted and catalog.by_id(wanted) == table
    with pytest.raises(InvalidRequest, match=r"already used by ks\.t"):
        with_table(catalog, name="t2", options={"id": wanted})
    with pytest.raises(InvalidRequest, match=r"already used by ks\.t"):
        with_table(catalog, name="t2", table_id=str(wanted))
    with pytest.raises(ConfigurationError, match="not a UUID"):
        with_table(catalog, name="t2", table_id="nope")
    with pytest.raises(InvalidRequest, match="Cannot alter table id"):
        alter_table_options(catalog, "ks", "t", {"id": uuid.uuid4()})


def test_compact_storage_needs_config_and_sets_flags() -> None:
    catalog = with_keyspace()
    cols = [("a", INT, False), ("c", INT, False), ("v", INT, False)]
    with pytest.raises(InvalidRequest, match="COMPACT STORAGE' is disabled"):
        _create(catalog, cols, ["a"], ["c"], compact_storage=True)
    allow = SchemaConfig(enable_create_table_with_compact_storage=True)
    table = apply(catalog, _create(catalog, cols, ["a"], ["c"], compact_storage=True, config=allow)).table(
        "ks", "t"
    )
    assert table is not None and table.flags == frozenset({"dense"})
    static_only = apply(catalog, _create(catalog, cols, ["a"], compact_storage=True, config=allow)).table(
        "ks", "t"
    )
    assert static_only is not None and static_only.flags == frozenset()


def test_alter_add_drop_readd() -> None:
    catalog = with_table(with_keyspace())
    outcome = alter_table_add(catalog, "ks", "t", [("b", MapType(TEXT, INT), False), ("s", INT, True)])
    assert outcome.events == (SchemaChangeEvent(Change.UPDATED, Target.TABLE, "ks", "t"),)
    catalog = apply(catalog, outcome)
    table = catalog.table("ks", "t")
    assert table is not None and [c.name for c in table.columns] == ["pk", "ck", "s", "b", "v"]
    with pytest.raises(
        InvalidRequest, match="Invalid column name v because it conflicts with an existing column"
    ):
        alter_table_add(catalog, "ks", "t", [("v", INT, False)])
    with pytest.raises(InvalidRequest, match="Cannot drop PRIMARY KEY part ck"):
        alter_table_drop(catalog, "ks", "t", ["ck"], 10)
    with pytest.raises(InvalidRequest, match="Column nope was not found in table t"):
        alter_table_drop(catalog, "ks", "t", ["nope"], 10)
    catalog = apply(catalog, alter_table_drop(catalog, "ks", "t", ["b"], 1_000_000))
    table = catalog.table("ks", "t")
    assert table is not None and table.column("b") is None
    assert table.dropped("b") == DroppedColumn(MapType(TEXT, INT), 1_000_000)
    with pytest.raises(InvalidRequest, match="Cannot re-add previously dropped column 'b'"):
        alter_table_add(catalog, "ks", "t", [("b", INT, False)])
    catalog = apply(catalog, alter_table_add(catalog, "ks", "t", [("b", MapType(TEXT, INT), False)]))
    assert catalog.table("ks", "t").column("b") is not None  # type: ignore[union-attr]


def test_alter_rename_and_type_and_unconfigured() -> None:
    catalog = with_table(with_keyspace())
    with pytest.raises(InvalidRequest, match="Cannot rename non PRIMARY KEY part v"):
        alter_table_rename(catalog, "ks", "t", [("v", "w")])
    with pytest.raises(InvalidRequest, match="another column of that name already exist"):
        alter_table_rename(catalog, "ks", "t", [("ck", "v")])
    with pytest.raises(InvalidRequest, match="Cannot rename unknown column x in table t"):
        alter_table_rename(catalog, "ks", "t", [("x", "y")])
    renamed = apply(catalog, alter_table_rename(catalog, "ks", "t", [("ck", "c2")])).table("ks", "t")
    assert renamed is not None and renamed.clustering_key[0].name == "c2"
    with pytest.raises(InvalidRequest, match="Altering of types is not allowed"):
        alter_table_alter_type(catalog, "ks", "t", "v")
    with pytest.raises(InvalidRequest, match="unconfigured table nope"):
        alter_table_add(catalog, "ks", "nope", [("x", INT, False)])


def test_udt_columns_are_resolved() -> None:
    catalog = with_keyspace()
    catalog = apply(catalog, create_type(catalog, "ks", "addr", [("street", TEXT), ("no", INT)]))
    with pytest.raises(InvalidRequest, match=r"Unknown type ks\.nope"):
        _create(catalog, [("a", INT, False), ("x", UserTypeRef(None, "nope"), False)], ["a"])
    with pytest.raises(
        InvalidRequest, match="Invalid non-frozen user-defined type for PRIMARY KEY component a"
    ):
        _create(catalog, [("a", UserTypeRef(None, "addr"), False)], ["a"])
    outcome = _create(
        catalog, [("a", INT, False), ("x", ListType(UserTypeRef("ks", "addr", frozen=True)), False)], ["a"]
    )
    (put,) = outcome.mutations
    assert isinstance(put, PutTable)
    t = put.table.column("x").type  # type: ignore[union-attr]
    assert (
        isinstance(t, ListType)
        and isinstance(t.element, UserType)
        and t.element.field_names == ("street", "no")
    )
    assert t.cql() == "list<frozen<addr>>"


def test_drop_table() -> None:
    catalog = with_table(with_keyspace())
    with pytest.raises(ConfigurationError, match="Cannot drop non existing table 'x' in keyspace 'ks'"):
        drop_table(catalog, "ks", "x")
    assert drop_table(catalog, "ks", "x", if_exists=True).is_noop
    outcome = drop_table(catalog, "ks", "t")
    assert outcome.events == (SchemaChangeEvent(Change.DROPPED, Target.TABLE, "ks", "t"),)
    after = apply(catalog, outcome)
    assert after.table("ks", "t") is None and not after.ids
