from __future__ import annotations

from typing import Any

import pytest

from tabletdb.cql.errors import AlreadyExists, ConfigurationError, InvalidRequest
from tabletdb.cql.types import COUNTER, INT, TEXT, ListType, MapType, SetType, UserType, UserTypeRef
from tabletdb.schema.ddl_alter_table import alter_table_add, alter_table_drop
from tabletdb.schema.ddl_common import Change, DdlOutcome, SchemaChangeEvent, Target
from tabletdb.schema.ddl_table import drop_table
from tabletdb.schema.ddl_types import (
    alter_type_add,
    alter_type_alter_field,
    alter_type_rename,
    create_type,
    drop_type,
)
from tabletdb.schema.ddl_views import alter_view, create_view, drop_view
from tabletdb.schema.index_targets import describe_target, parse_target
from tabletdb.schema.indexes import create_index, drop_index
from tabletdb.schema.model import Catalog, ColumnKind, IndexKind

from .helpers import apply, next_id, with_keyspace, with_table


def _types_catalog() -> Catalog:
    catalog = with_keyspace()
    catalog = apply(catalog, create_type(catalog, "ks", "inner", [("a", INT)]))
    catalog = apply(
        catalog, create_type(catalog, "ks", "outer", [("i", UserTypeRef(None, "inner", frozen=True))])
    )
    columns = [
        ("k", INT, False),
        ("o", UserTypeRef(None, "outer"), False),
        ("l", ListType(UserTypeRef(None, "inner", True)), False),
    ]
    return with_table(catalog, columns=columns, pk=["k"], ck=[])


def test_create_type_rules() -> None:
    catalog = with_keyspace()
    outcome = create_type(catalog, "ks", "t1", [("a", INT)])
    assert outcome.events == (SchemaChangeEvent(Change.CREATED, Target.TYPE, "ks", "t1"),)
    catalog = apply(catalog, outcome)
    with pytest.raises(AlreadyExists, match=r"A user type of name ks\.t1 already exists"):
        create_type(catalog, "ks", "t1", [("a", INT)])
    assert create_type(catalog, "ks", "t1", [("a", INT)], if_not_exists=True).is_noop
    with pytest.raises(InvalidRequest, match="Duplicate field name a"):
        create_type(catalog, "ks", "t2", [("a", INT), ("a", TEXT)])
    with pytest.raises(InvalidRequest, match="reserved type name"):
        create_type(catalog, "ks", "int", [("a", INT)])
    with pytest.raises(InvalidRequest, match="non-frozen UDTs"):
        create_type(catalog, "ks", "t2", [("a", UserTypeRef(None, "t1"))])
    with pytest.raises(InvalidRequest, match="cannot contain counters"):
        create_type(catalog, "ks", "t2", [("a", COUNTER)])
    with pytest.raises(
        InvalidRequest, match="user types can only be used in the keyspace they are defined in"
    ):
        create_type(catalog, "ks", "t2", [("a", UserTypeRef("other", "t1", True))])


def test_alter_type_propagates_to_types_and_tables() -> None:
    catalog = _types_catalog()
    outcome = alter_type_add(catalog, "ks", "inner", "b", TEXT)
    assert [(e.target, e.name) for e in outcome.events] == [
        (Target.TYPE, "inner"),
        (Target.TYPE, "outer"),
        (Target.TABLE, "t"),
    ]
    catalog = apply(catalog, outcome)
    outer = catalog.user_type("ks", "outer")
    assert outer is not None
    inner_in_outer = outer.field_types[0]
    assert (
        isinstance(inner_in_outer, UserType)
        and inner_in_outer.field_names == ("a", "b")
        and inner_in_outer.frozen
    )
    table = catalog.table("ks", "t")
    assert table is not None
    o_type = table.column("o").type  # type: ignore[union-attr]
    assert isinstance(o_type, UserType) and not o_type.frozen
    assert o_type.field_types[0] == inner_in_outer
    l_type = table.column("l").type  # type: ignore[union-attr]
    assert isinstance(l_type, ListType) and isinstance(l_type.element, UserType)
    assert l_type.element.field_names == ("a", "b") and l_type.cql() == "list<frozen<inner>>"
    with pytest.raises(InvalidRequest, match="a field of the same name already exists"):
        alter_type_add(catalog, "ks", "inner", "b", INT)
    renamed = apply(catalog, alter_type_rename(catalog, "ks", "inner", [("a", "x")]))
    assert renamed.user_type("ks", "inner").field_names == ("x", "b")  # type: ignore[union-attr]
    with pytest.raises(InvalidRequest, match="Unknown field zz"):
        alter_type_rename(catalog, "ks", "inner", [("zz", "y")])
    with pytest.raises(InvalidRequest, match="Altering of types is not allowed"):
        alter_type_alter_field(catalog, "ks", "inner", "a")


def test_drop_type_in_use() -> None:
    catalog = _types_catalog()
    with pytest.raises(
        InvalidRequest, match=r"Cannot drop user type ks\.inner as it is still used by user type ks\.outer"
    ):
        drop_type(catalog, "ks", "inner")
    with pytest.raises(
        InvalidRequest, match=r"Cannot drop user type ks\.outer as it is still used by table ks\.t"
    ):
        drop_type(catalog, "ks", "outer")
    with pytest.raises(InvalidRequest, match=r"No user type named ks\.nope exists"):
        drop_type(catalog, "ks", "nope")
    catalog = apply(catalog, drop_table(catalog, "ks", "t"))
    catalog = apply(catalog, drop_type(catalog, "ks", "outer"))
    assert catalog.user_type("ks", "outer") is None
    assert drop_type(catalog, "ks", "outer", if_exists=True).is_noop


def _index_catalog() -> Catalog:
    columns = [
        ("k", INT, False),
        ("c", INT, False),
        ("v", INT, False),
        ("m", MapType(TEXT, INT), False),
        ("fl", ListType(INT, frozen=True), False),
        ("s", SetType(INT), False),
    ]
    return with_table(with_keyspace(), columns=columns, pk=["k"], ck=["c"])


def test_create_index_targets_and_events() -> None:
    catalog = _index_catalog()
    outcome = create_index(catalog, "ks", "t", None, "v")
    assert outcome.events == (SchemaChangeEvent(Change.UPDATED, Target.TABLE, "ks", "t"),)
    catalog = apply(catalog, outcome)
    catalog = apply(catalog, create_index(catalog, "ks", "t", "mk", "m", "keys"))
    catalog = apply(catalog, create_index(catalog, "ks", "t", "sv", "s"))
    catalog = apply(catalog, create_index(catalog, "ks", "t", "ff", "fl", "full"))
    catalog = apply(catalog, create_index(catalog, "ks", "t", "loc", "v", local_partition_key=["k"]))
    table = catalog.table("ks", "t")
    assert table is not None
    targets = {i.name: i.target for i in table.indexes}
    assert targets == {
        "t_v_idx": "v",
        "mk": "keys(m)",
        "sv": "values(s)",
        "ff": "full(fl)",
        "loc": '{"pk":["k"],"ck":["v"]}',
    }
    assert all(i.kind is IndexKind.COMPOSITES for i in table.indexes)
    assert describe_target(targets["loc"]) == "(k), v"
    assert parse_target('keys("Odd""Name")') == ('Odd"Name', "keys", ())
    with pytest.raises(InvalidRequest, match="Index mk already exists"):
        create_index(catalog, "ks", "t", "mk", "m", "values")
    assert create_index(catalog, "ks", "t", "mk", "m", "values", if_not_exists=True).is_noop
    with pytest.raises(InvalidRequest, match="is a duplicate of existing index t_v_idx"):
        create_index(catalog, "ks", "t", "other", "v")
    with pytest.raises(InvalidRequest, match="dependent secondary indexes"):
        alter_table_drop(catalog, "ks", "t", ["v"], 5)
    sai = "org.apache.cassandra.index.sai.StorageAttachedIndex"
    for custom_class in ("vector_index", sai, "org.x.Custom"):
        with pytest.raises(InvalidRequest, match=f"Non-supported custom class '{custom_class}' provided"):
            create_index(catalog, "ks", "t", "vec", "c", custom_class=custom_class, options={"x": "1"})
    dropped = apply(catalog, drop_index(catalog, "ks", "mk"))
    assert dropped.find_index("ks", "mk") is None and dropped.find_index("ks", "sv") is not None
    with pytest.raises(InvalidRequest, match="could not be found in any of the tables of keyspace 'ks'"):
        drop_index(catalog, "ks", "nope")


@pytest.mark.parametrize(
    ("column", "kind", "message"),
    [
        ("nope", "simple", "No column definition found for column nope"),
        ("v", "keys", "Non-collection columns support only simple indexes"),
        ("s", "keys", "with non-map type"),
        ("s", "full", "full\\(\\) indexes can only be created on frozen collections"),
        ("fl", "values", "Frozen collections only support full\\(\\) indexes"),
    ],
)
def test_index_validation(column: str, kind: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        create_index(_index_catalog(), "ks", "t", None, column, kind)


def test_index_names_past_the_table_name_limit_are_refused() -> None:
    long_name = "i" * 193
    with pytest.raises(InvalidRequest, match="index names shouldn't be more than 192 characters long"):
        create_index(_index_catalog(), "ks", "t", long_name, "v")
    assert not create_index(_index_catalog(), "ks", "t", "i" * 192, "v").is_noop


def test_local_index_on_a_static_column_is_refused() -> None:
    columns = [("k", INT, False), ("c", INT, False), ("st", INT, True)]
    catalog = with_table(with_keyspace(), columns=columns, pk=["k"], ck=["c"])
    with pytest.raises(InvalidRequest, match="Local indexes containing static columns are not supported"):
        create_index(catalog, "ks", "t", None, "st", local_partition_key=["k"])
    assert not create_index(catalog, "ks", "t", None, "st").is_noop


def test_index_on_only_partition_key_column() -> None:
    catalog = with_table(with_keyspace(), columns=[("k", INT, False), ("v", INT, False)], pk=["k"], ck=[])
    with pytest.raises(InvalidRequest, match="the only partition key column k"):
        create_index(catalog, "ks", "t", None, "k")


def _view(catalog: Catalog, name: str = "mv", **kw: Any) -> DdlOutcome:
    args: dict[str, Any] = {
        "selected": None,
        "partition_key": ["v"],
        "clustering_key": ["pk", "ck"],
        "where_clause": "v IS NOT NULL AND pk IS NOT NULL AND ck IS NOT NULL",
        "not_null": ["v", "pk", "ck"],
        "new_id": next_id(),
    }
    args.update(kw)
    return create_view(catalog, "ks", name, "t", **args)


def test_create_view_and_base_interactions() -> None:
    catalog = with_table(with_keyspace())
    outcome = _view(catalog)
    assert outcome.events == (SchemaChangeEvent(Change.CREATED, Target.TABLE, "ks", "mv"),)
    catalog = apply(catalog, outcome)
    view = catalog.view("ks", "mv")
    assert view is not None and view.include_all_columns and view.base_table_name == "t"
    assert [(c.name, c.kind) for c in view.table.columns] == [
        ("v", ColumnKind.PARTITION_KEY),
        ("pk", ColumnKind.CLUSTERING),
        ("ck", ColumnKind.CLUSTERING),
    ]
    with pytest.raises(AlreadyExists):
        _view(catalog)
    with pytest.raises(InvalidRequest, match="materialized views still depend on it"):
        drop_table(catalog, "ks", "t")
    with pytest.raises(
        InvalidRequest, match=r"from base table ks\.t: materialized view mv needs this column"
    ):
        alter_table_drop(catalog, "ks", "t", ["v"], 1)
    added = alter_table_add(catalog, "ks", "t", [("w", INT, False)])
    assert [e.name for e in added.events] == ["t", "mv"]
    assert apply(catalog, added).view("ks", "mv").table.column("w") is not None  # type: ignore[union-attr]
    with pytest.raises(InvalidRequest, match="default_time_to_live for a materialized view"):
        alter_view(catalog, "ks", "mv", {"default_time_to_live": 1})
    altered = apply(catalog, alter_view(catalog, "ks", "mv", {"comment": "x", "synchronous_updates": True}))
    assert altered.view("ks", "mv").table.options.synchronous_updates is True  # type: ignore[union-attr]
    with pytest.raises(InvalidRequest, match="Cannot use DROP MATERIALIZED VIEW on Table"):
        drop_view(catalog, "ks", "t")
    with pytest.raises(ConfigurationError, match="Cannot drop non existing materialized view 'x'"):
        drop_view(catalog, "ks", "x")
    gone = apply(catalog, drop_view(catalog, "ks", "mv"))
    assert gone.view("ks", "mv") is None and not drop_table(gone, "ks", "t").is_noop


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            {"partition_key": ["v"], "clustering_key": ["pk"]},
            r"without primary key columns from base t \(ck\)",
        ),
        (
            {"partition_key": ["nope"]},
            "Unknown column name detected in CREATE MATERIALIZED VIEW statement: nope",
        ),
        ({"not_null": ["pk", "ck"]}, "Primary key column 'v' is required to be filtered by 'IS NOT NULL'"),
    ],
)
def test_view_validation(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        _view(with_table(with_keyspace()), **kw)


def test_view_with_two_non_key_columns_rejected() -> None:
    catalog = with_table(
        with_keyspace(),
        columns=[("pk", INT, False), ("ck", INT, False), ("a", INT, False), ("b", INT, False)],
    )
    with pytest.raises(InvalidRequest, match="more than one non-primary key column"):
        _view(catalog, partition_key=["a"], clustering_key=["b", "pk", "ck"], not_null=["a", "b"])
