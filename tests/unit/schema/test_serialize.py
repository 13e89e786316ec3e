from __future__ import annotations

import uuid

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql.types import (
    NATIVE_TYPE_NAMES,
    CqlType,
    CustomType,
    ListType,
    MapType,
    NativeType,
    SetType,
    TupleType,
    UserType,
    UserTypeRef,
    VectorType,
)
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import (
    Catalog,
    ClusteringOrder,
    ColumnDef,
    ColumnKind,
    DroppedColumn,
    IndexDef,
    IndexKind,
    KeyspaceDef,
    KeyspaceSchema,
    KeyspaceTablets,
    Replication,
    TableDef,
    UserTypeDef,
    ViewDef,
)
from tabletdb.schema.mutations import DropFunction, PutTable
from tabletdb.schema.options import TableOptions
from tabletdb.schema.serialize import (
    SchemaDecodeError,
    catalog_from_plain,
    catalog_to_plain,
    from_plain,
    mutations_from_plain,
    mutations_to_plain,
    type_from_plain,
    type_to_plain,
)

from .helpers import representative_catalog

names = st.text(alphabet="abcXYZ_1\"'", min_size=1, max_size=6)
natives = st.sampled_from(NATIVE_TYPE_NAMES).map(NativeType)
cql_types: st.SearchStrategy[CqlType] = st.recursive(
    natives,
    lambda inner: st.one_of(
        st.builds(ListType, inner, st.booleans()),
        st.builds(SetType, inner, st.booleans()),
        st.builds(MapType, inner, inner, st.booleans()),
        st.builds(TupleType, st.lists(inner, min_size=1, max_size=3).map(tuple)),
        st.builds(VectorType, inner, st.integers(1, 5)),
        st.builds(
            UserType,
            names,
            names,
            st.lists(names, min_size=1, max_size=3).map(tuple),
            st.lists(inner, min_size=1, max_size=3).map(tuple),
            st.booleans(),
        ),
        st.builds(UserTypeRef, st.none() | names, names, st.booleans()),
        st.builds(CustomType, names),
    ),
    max_leaves=4,
)
pairs = st.dictionaries(names, names, max_size=3).map(lambda d: tuple(sorted(d.items())))
options = st.builds(
    TableOptions,
    bloom_filter_fp_chance=st.floats(0.001, 1),
    comment=st.text(max_size=10),
    caching=pairs,
    cdc=st.none() | pairs,
    tablets=st.none() | pairs,
    paxos_grace_seconds=st.none() | st.integers(0, 10**6),
    synchronous_updates=st.none() | st.booleans(),
)


@st.composite
def tables(draw: st.DrawFn, keyspace: str) -> TableDef:
    name = draw(names)
    column_names = draw(st.lists(names, min_size=1, max_size=5, unique=True))
    kinds = [ColumnKind.PARTITION_KEY] + [draw(st.sampled_from(list(ColumnKind))) for _ in column_names[1:]]
    columns = tuple(
        ColumnDef(
            n, draw(cql_types), k, draw(st.integers(-1, 3)), draw(st.sampled_from(list(ClusteringOrder)))
        )
        for n, k in zip(column_names, kinds)
    )
    dropped = draw(
        st.lists(st.tuples(names, st.builds(DroppedColumn, cql_types, st.integers(0, 2**62))), max_size=2)
    )
    indexes = draw(
        st.lists(
            st.builds(IndexDef, names, st.just(name), st.sampled_from(list(IndexKind)), pairs), max_size=2
        )
    )
    return TableDef(
        keyspace,
        name,
        draw(st.uuids()),
        columns,
        draw(options),
        tuple(dropped),
        draw(st.booleans()),
        tuple(indexes),
    )


@st.composite
def catalogs(draw: st.DrawFn) -> Catalog:
    keyspaces = {}
    for ks_name in draw(st.lists(names, max_size=3, unique=True)):
        rep_options = draw(
            st.lists(st.tuples(names, names | st.lists(names, max_size=2).map(tuple)), max_size=2)
        )
        definition = KeyspaceDef(
            ks_name,
            Replication(draw(names), tuple(rep_options)),
            draw(st.booleans()),
            draw(st.none() | st.builds(KeyspaceTablets, st.booleans(), st.none() | st.integers(0, 64))),
            draw(st.none() | names),
            draw(pairs),
        )
        table_list = draw(st.lists(tables(ks_name), max_size=3))
        view_list = [
            ViewDef(t, draw(st.uuids()), draw(names), draw(st.text(max_size=10)), draw(st.booleans()))
            for t in draw(st.lists(tables(ks_name), max_size=2))
        ]
        types = [
            UserTypeDef(ks_name, n, ("a",), (draw(cql_types),)) for n in draw(st.lists(names, max_size=2))
        ]
        keyspaces[ks_name] = KeyspaceSchema(
            definition,
            FrozenMap((t.name, t) for t in table_list),
            FrozenMap((v.name, v) for v in view_list),
            FrozenMap((u.name, u) for u in types),
        )
    ids = FrozenMap((uuid.UUID(int=i), ("k", f"t{i}")) for i in range(draw(st.integers(0, 2))))
    return Catalog(FrozenMap(keyspaces), draw(st.uuids()), ids)


def _through_msgpack(data: object) -> object:
    return msgpack.unpackb(msgpack.packb(data, use_bin_type=True), raw=False, strict_map_key=False)


@settings(max_examples=25, deadline=None)
@given(catalogs())
def test_random_catalogs_round_trip(catalog: Catalog) -> None:
    assert catalog_from_plain(_through_msgpack(catalog_to_plain(catalog))) == catalog


@settings(max_examples=100, deadline=None)
@given(cql_types)
def test_types_round_trip(t: CqlType) -> None:
    assert type_from_plain(_through_msgpack(type_to_plain(t))) == t


def test_representative_catalog_and_mutations_round_trip() -> None:
    catalog = representative_catalog()
    restored = catalog_from_plain(_through_msgpack(catalog_to_plain(catalog)))
    assert restored == catalog
    table = restored.table("ks", "Events")
    assert table is not None and table.column("who") == catalog.table("ks", "Events").column("who")  # type: ignore[union-attr]
    mutations = (PutTable(table), DropFunction("ks", "f", ("int", "text")))
    assert mutations_from_plain(_through_msgpack(mutations_to_plain(mutations))) == mutations


def test_decode_rejects_unknown_classes() -> None:
    with pytest.raises(SchemaDecodeError, match=r"unknown class 'os\.system'"):
        from_plain({"@": "os.system"})
    with pytest.raises(SchemaDecodeError, match="expected a Catalog"):
        catalog_from_plain({"@n": "int"})
    with pytest.raises(SchemaDecodeError, match="bad fields for ColumnDef"):
        from_plain({"@": "ColumnDef", "bogus": 1})
