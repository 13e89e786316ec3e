"""A non-frozen list's cells built in one pass per batch (`bulk.cells.build_cells`) are the
INSERT's layout (element paths above the list middle, numbered from the write timestamp and the
index; a tombstone just below the write), whatever the rows' write times and TTLs."""

from __future__ import annotations

from tabletdb.cql.parser import parse_type
from tabletdb.schema.model import ColumnDef, ColumnKind
from tabletdb.spark.bulk.cells import build_cells
from tabletdb.spark.bulk.columns import Elements
from tabletdb.statements.cells import WriteTime
from tabletdb.statements.keys import LIST_MIDDLE


def test_list_cells_equal_the_element_layout_for_every_write_time() -> None:
    column = ColumnDef("tags", parse_type("list<text>"), ColumnKind.REGULAR, -1)
    shared = WriteTime(1_700_000_000_000_000, 0, 1_700_000_000)
    with_ttl = WriteTime(1_700_000_000_000_001, 60, 1_700_000_000)
    long = Elements(f"e{i}".encode() for i in range(40))  # more elements than the paths cached
    values = [Elements((b"a", b"b")), None, ["x", "y"], long, Elements(()), Elements((b"c",)), long]
    whens = [shared, shared, with_ttl, shared, with_ttl, None, with_ttl]
    built = build_cells(column, values, whens)
    assert built.late == {}
    for value, when, cells in zip(values, whens, built.cells):
        if when is None:
            assert cells is None
            continue
        ts, ttl = when.timestamp, when.ttl
        elements = [] if value is None else [e if isinstance(e, bytes) else e.encode() for e in value]
        expected = tuple(
            (
                "tags",
                (LIST_MIDDLE + ts * 1024 + i).to_bytes(8, "big"),
                ts,
                0,
                e,
                when.now + ttl if ttl else 0,
                ttl,
            )
            for i, e in enumerate(elements)
        )
        assert cells == (expected, (("tags", ts - 1),))
