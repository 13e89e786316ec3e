from __future__ import annotations

import uuid

import pytest

from tabletdb.cql.types import INT
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.model import Catalog, ColumnDef, ColumnKind, TableDef
from tabletdb.schema.mutations import CatalogApplyError, DropKeyspace, DropTable, PutTable, apply_mutations

from .helpers import next_id, with_keyspace, with_table


def test_apply_is_deterministic_and_leaves_input_untouched() -> None:
    base = with_table(with_keyspace())
    outcome = create_table(base, "ks", "t2", [("a", INT, False)], ["a"], new_id=uuid.UUID(int=99))
    version = uuid.UUID(int=1234)
    first = apply_mutations(base, outcome.mutations, version)
    second = apply_mutations(base, outcome.mutations, version)
    assert first == second and first.version == version
    assert base.table("ks", "t2") is None and first.table("ks", "t2") is not None
    assert first.keyspaces["ks"].tables["t"] is base.keyspaces["ks"].tables["t"]


def test_put_table_replacing_id_and_drops_update_id_index() -> None:
    catalog = with_table(with_keyspace())
    table = catalog.table("ks", "t")
    assert table is not None
    new_id = uuid.UUID(int=77)
    replaced = apply_mutations(catalog, [PutTable(TableDef("ks", "t", new_id, table.columns))], next_id())
    assert table.id not in replaced.ids and replaced.by_id(new_id) is not None
    dropped = apply_mutations(replaced, [DropTable("ks", "t")], next_id())
    assert not dropped.ids
    gone = apply_mutations(catalog, [DropKeyspace("ks")], next_id())
    assert not gone.keyspaces and not gone.ids


def test_apply_into_missing_keyspace_is_an_error() -> None:
    column = ColumnDef("a", INT, ColumnKind.PARTITION_KEY, 0)
    with pytest.raises(CatalogApplyError, match="keyspace 'nope' does not exist"):
        apply_mutations(Catalog(), [PutTable(TableDef("nope", "t", uuid.UUID(int=1), (column,)))], next_id())


def test_catalog_lookups() -> None:
    from .helpers import representative_catalog

    catalog = representative_catalog()
    ks = catalog.keyspaces["ks"]
    assert sorted(ks.indexes) == ["Events_s_idx", "m_keys"]
    assert [f.name for f in ks.functions_named("acc")] == ["acc"] and ks.aggregates_named("nope") == []
    assert [v.name for v in ks.views_of("base")] == ["by_v"]
    view = catalog.view("ks", "by_v")
    assert view is not None and catalog.table_or_view("ks", "by_v") is view.table
    assert catalog.by_id(view.table.id) is view.table
    found = catalog.find_index("ks", "m_keys")
    assert found is not None and found[0].name == "Events" and found[1].target == "keys(m)"
    assert catalog.user_type("ks", "addr") is not None and catalog.user_type("nope", "addr") is None
