"""Index entries tables: their shape, their ids in the catalog, and their lifetime with the index."""

from __future__ import annotations

from tabletdb.cql.types import BIGINT, BLOB, INT, TEXT, MapType, SetType, TupleType
from tabletdb.schema.ddl_table import drop_table
from tabletdb.schema.index_table import index_table, index_tables
from tabletdb.schema.indexes import create_index, drop_index
from tabletdb.schema.model import Catalog, ColumnKind

from .helpers import apply, next_id, with_keyspace, with_table


def _catalog() -> Catalog:
    columns = [
        ("p", INT, False),
        ("c", INT, False),
        ("v", TEXT, False),
        ("s", INT, True),
        ("m", MapType(TEXT, INT), False),
        ("st", SetType(INT), False),
    ]
    return with_table(with_keyspace(), columns=columns, pk=["p"], ck=["c"])


def test_entries_table_shape_per_target_kind() -> None:
    catalog = _catalog()
    for name, column, kind in (("vi", "v", "simple"), ("mk", "m", "keys"), ("me", "m", "entries")):
        catalog = apply(catalog, create_index(catalog, "ks", "t", name, column, kind, table_id=next_id()))
    catalog = apply(catalog, create_index(catalog, "ks", "t", "sti", "st", table_id=next_id()))
    base = catalog.table("ks", "t")
    assert base is not None
    shapes = {i.name: e for i, e in index_tables(base)}
    assert {n: e.partition_key[0].type for n, e in shapes.items()} == {
        "vi": TEXT,
        "mk": TEXT,
        "me": TupleType((TEXT, INT)),
        "sti": INT,
    }
    entries = shapes["vi"]
    assert entries.name == "vi_index"
    assert [(c.name, c.type, c.kind) for c in entries.clustering_key] == [
        ("idx_token", BIGINT, ColumnKind.CLUSTERING),
        ("idx_pk", BLOB, ColumnKind.CLUSTERING),
        ("idx_ck", BLOB, ColumnKind.CLUSTERING),
    ]
    assert catalog.by_id(entries.id) == entries


def test_static_indexes_have_no_entries_table() -> None:
    catalog = _catalog()
    catalog = apply(catalog, create_index(catalog, "ks", "t", "si", "s", table_id=next_id()))
    base = catalog.table("ks", "t")
    assert base is not None
    assert [i.table_id for i in base.indexes] == [None]
    assert all(index_table(base, i) is None for i in base.indexes)


def test_entries_table_ids_follow_the_index_and_the_table() -> None:
    catalog = _catalog()
    entries_id = next_id()
    catalog = apply(catalog, create_index(catalog, "ks", "t", "vi", "v", table_id=entries_id))
    assert catalog.ids[entries_id] == ("ks", "vi_index")
    dropped = apply(catalog, drop_index(catalog, "ks", "vi"))
    assert entries_id not in dropped.ids
    gone = apply(catalog, drop_table(catalog, "ks", "t"))
    assert entries_id not in gone.ids
