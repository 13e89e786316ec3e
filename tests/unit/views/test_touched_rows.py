"""Which base rows a write makes view/index upkeep read: only the rows it writes, unless it can
change any row (partition or range tombstones, static cells, a table of one-row partitions)."""

from __future__ import annotations

from tabletdb.cql.types import INT
from tabletdb.schema.model import TableDef
from tabletdb.storage.mutation import Bound, Cell, ClusteringSlice, Mutation, RangeTombstone, RowWrite
from tabletdb.views.base_snapshot import touched_rows
from tests.unit.schema.helpers import with_keyspace, with_table


def _tables() -> tuple[TableDef, TableDef]:
    catalog = with_table(with_keyspace())
    catalog = with_table(catalog, "u", columns=[("k", INT, False)], pk=["k"], ck=[])
    clustered, single = catalog.table("ks", "t"), catalog.table("ks", "u")
    assert clustered is not None and single is not None
    return clustered, single


def _row(ck: bytes, static: bool = False) -> RowWrite:
    return RowWrite(clustering=ck, static=static, cells=(Cell("v", b"1", 1),))


def test_row_writes_touch_only_their_rows_in_key_order() -> None:
    clustered, _ = _tables()
    writes = [Mutation(b"k", 0, rows=(_row(b"b"),)), Mutation(b"k", 0, rows=(_row(b"a"), _row(b"b")))]
    assert touched_rows(clustered, writes) == (b"a", b"b")


def test_writes_that_may_change_any_row_read_the_whole_partition() -> None:
    clustered, single = _tables()
    rt = RangeTombstone(ClusteringSlice(Bound(b"a"), None), 5)
    assert touched_rows(clustered, [Mutation(b"k", 0, partition_tombstone=5)]) is None
    assert touched_rows(clustered, [Mutation(b"k", 0, range_tombstones=(rt,))]) is None
    assert touched_rows(clustered, [Mutation(b"k", 0, rows=(_row(b"", static=True),))]) is None
    assert touched_rows(single, [Mutation(b"k", 0, rows=(_row(b""),))]) is None
