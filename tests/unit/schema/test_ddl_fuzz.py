"""Property: any sequence of DDL calls either fails with a CQL error or yields a consistent catalog.

Decision functions face arbitrary user input; an IndexError or KeyError would surface to the
client as a server error, and an inconsistent catalog would poison every node.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql.errors import CqlError
from tabletdb.cql.types import COUNTER, INT, TEXT, ListType, MapType, SetType, UserTypeRef
from tabletdb.schema import (
    Catalog,
    ColumnKind,
    alter_keyspace,
    alter_table_add,
    alter_table_drop,
    alter_table_options,
    alter_table_rename,
    alter_type_add,
    create_index,
    create_keyspace,
    create_table,
    create_type,
    create_view,
    drop_index,
    drop_keyspace,
    drop_table,
    drop_type,
    drop_view,
)
from tabletdb.schema.model import order_columns

from .helpers import CONFIG, apply, next_id

names = st.sampled_from(["a", "b", "c", "k", "v"])
types = st.sampled_from(
    [
        INT,
        TEXT,
        COUNTER,
        ListType(INT),
        SetType(TEXT, True),
        MapType(TEXT, INT),
        UserTypeRef(None, "u", True),
        UserTypeRef(None, "u"),
    ]
)
columns = st.lists(st.tuples(names, types, st.booleans()), min_size=1, max_size=4)
keys = st.lists(names, max_size=2)
opts = st.sampled_from(
    [
        {},
        {"comment": "x"},
        {"cdc": {"enabled": True}},
        {"tablets": {"min_tablet_count": 2}},
        {"default_time_to_live": 5},
        {"nope": 1},
    ]
)


@st.composite
def table_args(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly plausible tables (so later ALTERs have something to act on), sometimes broken ones."""
    cols = draw(st.lists(names, min_size=2, max_size=5, unique=True))
    n_pk = draw(st.integers(1, len(cols) - 1))
    n_ck = draw(st.integers(0, len(cols) - n_pk))
    key_types = st.sampled_from([INT, TEXT]) if draw(st.integers(0, 4)) else types
    specs = [(n, draw(key_types), False) for n in cols[: n_pk + n_ck]]
    specs += [(n, draw(types), draw(st.integers(0, 5)) == 0) for n in cols[n_pk + n_ck :]]
    return {
        "keyspace": "ks",
        "name": draw(st.sampled_from(["t", "t2"])),
        "columns": specs,
        "partition_key": cols[:n_pk],
        "clustering_key": cols[n_pk : n_pk + n_ck],
        "options": draw(opts),
    }


operations = st.one_of(
    st.tuples(st.just(create_table), table_args()),
    st.tuples(
        st.just(create_keyspace),
        st.just(
            {"name": "ks", "replication": {"class": "NetworkTopologyStrategy", "dc1": 1}, "config": CONFIG}
        ),
    ),
    st.tuples(
        st.just(create_keyspace),
        st.fixed_dictionaries(
            {
                "name": st.sampled_from(["ks", "k2"]),
                "replication": st.sampled_from(
                    [
                        {"class": "NetworkTopologyStrategy", "dc1": 1},
                        {"class": "SimpleStrategy", "replication_factor": 2},
                    ]
                ),
                "config": st.just(CONFIG),
            }
        ),
    ),
    st.tuples(
        st.just(alter_keyspace),
        st.fixed_dictionaries(
            {"name": st.just("ks"), "durable_writes": st.booleans(), "config": st.just(CONFIG)}
        ),
    ),
    st.tuples(st.just(drop_keyspace), st.fixed_dictionaries({"name": st.just("k2")})),
    st.tuples(
        st.just(create_type),
        st.fixed_dictionaries(
            {
                "keyspace": st.just("ks"),
                "name": st.just("u"),
                "fields": st.lists(st.tuples(names, types), min_size=1, max_size=2, unique_by=lambda f: f[0]),
            }
        ),
    ),
    st.tuples(
        st.just(alter_type_add),
        st.fixed_dictionaries(
            {"keyspace": st.just("ks"), "name": st.just("u"), "field": names, "field_type": types}
        ),
    ),
    st.tuples(st.just(drop_type), st.fixed_dictionaries({"keyspace": st.just("ks"), "name": st.just("u")})),
    st.tuples(
        st.just(create_table),
        st.fixed_dictionaries(
            {
                "keyspace": st.just("ks"),
                "name": st.sampled_from(["t", "t2"]),
                "columns": columns,
                "partition_key": keys,
                "clustering_key": keys,
                "options": opts,
            }
        ),
    ),
    st.tuples(
        st.just(alter_table_add),
        st.fixed_dictionaries(
            {
                "keyspace": st.just("ks"),
                "name": st.just("t"),
                "columns": st.lists(
                    st.tuples(names | st.sampled_from(["x", "y"]), types, st.booleans()),
                    min_size=1,
                    max_size=2,
                ),
            }
        ),
    ),
    st.tuples(
        st.just(alter_table_drop),
        st.fixed_dictionaries(
            {
                "keyspace": st.just("ks"),
                "name": st.just("t"),
                "columns": st.lists(names, min_size=1, max_size=2),
                "timestamp": st.integers(0, 10),
            }
        ),
    ),
    st.tuples(
        st.just(alter_table_rename),
        st.fixed_dictionaries(
            {
                "keyspace": st.just("ks"),
                "name": st.just("t"),
                "renames": st.lists(
                    st.tuples(st.sampled_from(["k", "c", "v"]), st.sampled_from(["k2", "c2", "v"])),
                    min_size=1,
                    max_size=2,
                ),
            }
        ),
    ),
    st.tuples(
        st.just(alter_table_options),
        st.fixed_dictionaries({"keyspace": st.just("ks"), "name": st.just("t"), "options": opts}),
    ),
    st.tuples(st.just(drop_table), st.fixed_dictionaries({"keyspace": st.just("ks"), "name": st.just("t")})),
    st.tuples(
        st.just(create_index),
        st.fixed_dictionaries(
            {
                "keyspace": st.just("ks"),
                "table_name": st.just("t"),
                "name": st.none() | st.just("i"),
                "column": names,
                "kind": st.sampled_from(["simple", "keys", "values", "full"]),
            }
        ),
    ),
    st.tuples(
        st.just(drop_index),
        st.fixed_dictionaries(
            {"keyspace": st.just("ks"), "name": st.sampled_from(["i", "t_v_idx", "t_a_idx"])}
        ),
    ),
    st.tuples(
        st.just(create_view),
        st.fixed_dictionaries(
            {
                "keyspace": st.just("ks"),
                "name": st.just("mv"),
                "base_table": st.just("t"),
                "selected": st.none() | st.just(["v"]),
                "partition_key": st.sampled_from([["v"], ["k"], ["a"]]),
                "clustering_key": st.sampled_from([["k", "c"], ["c", "k"], ["c"], ["v", "c"]]),
                "where_clause": st.just(""),
                "not_null": st.sampled_from([["v"], []]),
            }
        ),
    ),
    st.tuples(st.just(drop_view), st.fixed_dictionaries({"keyspace": st.just("ks"), "name": st.just("mv")})),
)


def _check_invariants(catalog: Catalog) -> None:
    ids = {}
    for ks in catalog.keyspaces.values():
        for table in [*ks.tables.values(), *(v.table for v in ks.views.values())]:
            ids[table.id] = (ks.name, table.name)
            assert table.partition_key, table
            assert table.columns == order_columns(table.columns)
            assert len({c.name for c in table.columns}) == len(table.columns)
            for kind in (ColumnKind.PARTITION_KEY, ColumnKind.CLUSTERING):
                assert [c.position for c in table.columns if c.kind is kind] == list(
                    range(len([c for c in table.columns if c.kind is kind]))
                )
            for index in table.indexes:
                assert index.table == table.name
        for view in ks.views.values():
            assert view.base_table_name in ks.tables
    assert dict(catalog.ids.items()) == ids


def _seed() -> Catalog:
    """A keyspace with a type and a table, so most random statements have something to act on."""
    catalog = apply(
        Catalog(),
        create_keyspace(Catalog(), "ks", {"class": "NetworkTopologyStrategy", "dc1": 1}, config=CONFIG),
    )
    catalog = apply(catalog, create_type(catalog, "ks", "u", [("a", INT)]))
    cols = [
        ("k", INT, False),
        ("c", TEXT, False),
        ("v", INT, False),
        ("a", ListType(INT), False),
        ("b", UserTypeRef(None, "u"), False),
        ("s", INT, True),
    ]
    return apply(catalog, create_table(catalog, "ks", "t", cols, ["k"], ["c"], new_id=next_id()))


@settings(max_examples=150, deadline=None)
@given(st.lists(operations, min_size=1, max_size=12))
def test_random_ddl_sequences(ops: list[tuple[Any, dict[str, Any]]]) -> None:
    catalog = _seed()
    for function, kwargs in ops:
        if function in (create_table, create_view):
            kwargs = {**kwargs, "new_id": next_id()}
        try:
            outcome = function(catalog, **kwargs)
        except CqlError:
            continue
        catalog = apply(catalog, outcome)
        _check_invariants(catalog)
