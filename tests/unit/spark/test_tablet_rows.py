"""Input rows as the store's mutations and files (``spark.tablet_rows``).

A row loaded from a file must be stored exactly as the INSERT of the same values: the mutation is
compared with the one the node's own INSERT JSON builds, and a written file must pass the checks a
node runs on an upload and merge into the same store contents as applying the mutations.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from tabletdb.cql.jsonvalues import from_json
from tabletdb.cql.parser import parse_statement
from tabletdb.dht.token import FULL_RING
from tabletdb.spark.schema_map import table_schema_from_rows
from tabletdb.spark.tablet_rows import table_def
from tabletdb.statements.cells import WriteTime
from tabletdb.statements.modifications import build_insert
from tabletdb.statements.terms import Bindings
from tabletdb.storage.images.image_validation import validate_image
from tabletdb.storage.mutation import Mutation
from tabletdb.storage.sqlite_schema import DATA_TABLES
from tabletdb.storage.tablet_store import TabletStore
from tests.unit.spark.row_oracle import RowNotEncodable, row_mutation, write_tablet_file

COLUMNS = [
    ("id", "partition_key", 0, "int", "none"),
    ("b", "partition_key", 1, "text", "none"),
    ("seq", "clustering", 0, "int", "desc"),
    ("at", "clustering", 1, "timestamp", "asc"),
    ("note", "static", -1, "text", "none"),
    ("amount", "regular", -1, "decimal", "none"),
    ("props", "regular", -1, "map<text, int>", "none"),
    ("nums", "regular", -1, "set<int>", "none"),
    ("pair", "regular", -1, "frozen<tuple<int, text>>", "none"),
    ("v", "regular", -1, "text", "none"),
]
SCHEMA = table_schema_from_rows(
    "ks",
    "t",
    str(uuid.uuid4()),
    [{"column_name": n, "kind": k, "position": p, "type": t} for n, k, p, t, _ in COLUMNS],
    [],
)
TABLE = table_def(SCHEMA, {n: o for n, _, _, _, o in COLUMNS})
WHEN = WriteTime(1_700_000_000_000_000, 60, 1_700_000_000)


def _row(n: int) -> dict[str, object]:
    return {
        "id": n,
        "b": f"b{n % 3}",
        "seq": n % 5,
        "at": "2024-01-02T03:04:05.678Z",
        "note": f"static {n}",
        "amount": f"{n}.50",
        "props": {"x": n, "y": -n},
        "nums": [n, n + 2],
        "pair": [n, "p"],
        "v": None if n % 2 else f"v{n}",
    }


def _fitted(doc: dict[str, object]) -> tuple[object, ...]:
    columns = [TABLE.column(c.name) for c in SCHEMA.columns]
    return tuple(
        None if doc[c.name] is None else from_json(c.type, doc[c.name], c.name) for c in columns if c
    )


def _normal(m: Mutation) -> Mutation:
    """The same mutation with cells and collection tombstones in one order (INSERT JSON takes
    them in the document's order, the loader in the table's: the store does not care)."""
    rows = tuple(
        replace(
            r,
            cells=tuple(sorted(r.cells, key=repr)),
            collection_tombstones=tuple(sorted(r.collection_tombstones)),
        )
        for r in m.rows
    )
    return replace(m, rows=rows)


def test_a_row_is_stored_as_the_insert_of_its_values() -> None:
    columns = tuple(c for c in (TABLE.column(s.name) for s in SCHEMA.columns) if c is not None)
    for n in range(6):
        doc = _row(n)
        stmt = parse_statement(f"INSERT INTO ks.t JSON '{json.dumps(doc)}' USING TTL 60")
        (expected,) = build_insert(stmt, TABLE, Bindings([]), WHEN)  # type: ignore[arg-type]
        assert _normal(row_mutation(TABLE, columns, _fitted(doc), WHEN)) == _normal(expected)


def test_a_key_the_table_refuses_is_a_reject_with_the_reason() -> None:
    columns = tuple(c for c in (TABLE.column(s.name) for s in SCHEMA.columns) if c is not None)
    doc = {**_row(1), "b": "x" * 70_000}
    with pytest.raises(RowNotEncodable, match="longer than maximum of 65535"):
        row_mutation(TABLE, columns, _fitted(doc), WHEN)


def test_a_written_file_passes_the_upload_checks_and_merges_as_the_mutations_apply(tmp_path: Path) -> None:
    columns = tuple(c for c in (TABLE.column(s.name) for s in SCHEMA.columns) if c is not None)
    mutations = [row_mutation(TABLE, columns, _fitted(_row(n)), WHEN) for n in range(50)]
    mutations.append(mutations[3])  # a repeated input row: reconciled, as the store does
    image = tmp_path / "load.db"
    assert write_tablet_file(image, reversed(mutations)) == len({m.partition_key for m in mutations})
    validate_image(image, TABLE, FULL_RING, max_timestamp_us=WHEN.timestamp + 1)
    with TabletStore(tmp_path / "merged.db") as merged, TabletStore(tmp_path / "applied.db") as applied:
        merged.merge_image(image)
        applied.apply(mutations)
    contents = []
    for path in (tmp_path / "merged.db", tmp_path / "applied.db"):
        conn = sqlite3.connect(path)
        contents.append({t: sorted(conn.execute(f"SELECT * FROM {t}")) for t, _, _ in DATA_TABLES})
        conn.close()
    assert contents[0] == contents[1]
