"""Uploaded tablet images: what makes one acceptable, and the reason each tampering is refused."""

from __future__ import annotations

import re
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from tabletdb.cql.types import BLOB, INT
from tabletdb.dht import token_of
from tabletdb.dht.token import FULL_RING, TokenRange
from tabletdb.schema.model import ColumnDef, ColumnKind, TableDef
from tabletdb.storage.images.image_validation import FUTURE_TIMESTAMP_LIMIT_US, ImageRejected, validate_image
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.snapshot_files import snapshot_to
from tabletdb.storage.tablet_store import TabletStore

TABLE = TableDef(
    "ks",
    "t",
    uuid.UUID(int=7),
    (
        ColumnDef("k", BLOB, ColumnKind.PARTITION_KEY, 0),
        ColumnDef("c", BLOB, ColumnKind.CLUSTERING, 0),
        ColumnDef("v", INT, ColumnKind.REGULAR),
    ),
)
NOW_US = time.time_ns() // 1000
LIMIT = NOW_US + FUTURE_TIMESTAMP_LIMIT_US


def row(pk: bytes, ts: int = NOW_US, column: str = "v") -> Mutation:
    cell = Cell(column, b"\0\0\0\1", ts, b"", 0, 0)
    return Mutation(pk, token_of(pk), None, (RowWrite(b"c", marker=RowMarker(ts, 0, 0), cells=(cell,)),), ())


def image(tmp_path: Path, *mutations: Mutation) -> Path:
    """A snapshot of a real store holding `mutations`, as backup sends it."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    with TabletStore(tmp_path / "live.db") as store:
        store.apply(list(mutations))
    snapshot_to(tmp_path / "live.db", tmp_path / "image.db")
    return tmp_path / "image.db"


def tamper(path: Path, *sql: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        for statement in sql:
            conn.execute(statement)
    conn.close()


def test_a_real_snapshot_within_its_range_is_accepted(tmp_path: Path) -> None:
    keys = [bytes([n]) for n in range(30)]
    path = image(tmp_path, *(row(k) for k in keys))
    validate_image(path, TABLE, FULL_RING, LIMIT)
    validate_image(path, TABLE, TokenRange(min(map(token_of, keys)) - 1, max(map(token_of, keys))), LIMIT)


def test_a_token_outside_the_named_range_is_refused(tmp_path: Path) -> None:
    keys = [bytes([n]) for n in range(30)]
    path = image(tmp_path, *(row(k) for k in keys))
    highest = max(map(token_of, keys))
    with pytest.raises(ImageRejected, match=rf"token {highest}, outside the token range"):
        validate_image(path, TABLE, TokenRange(-(2**63), highest - 1), LIMIT)


def test_a_partition_moved_to_another_token_is_refused(tmp_path: Path) -> None:
    path = image(tmp_path, row(b"a"))
    tamper(path, "UPDATE partitions SET token = token + 1")
    with pytest.raises(ImageRejected, match="not its key's token"):
        validate_image(path, TABLE, FULL_RING, LIMIT)


def test_data_of_a_partition_the_image_does_not_list_is_refused(tmp_path: Path) -> None:
    path = image(tmp_path, row(b"a"))
    tamper(path, "DELETE FROM partitions")
    with pytest.raises(ImageRejected, match="holds rows of a partition it does not list"):
        validate_image(path, TABLE, FULL_RING, LIMIT)


@pytest.mark.parametrize(
    ("child", "sql"),
    [
        ("rows", "INSERT INTO rows VALUES (x'ff', 1, x'', 1, 0, 0, NULL)"),
        ("cells", "INSERT INTO cells VALUES (x'ff', 1, x'', 'v', x'', 1, 0, x'00', 0, 0)"),
        ("collection_tombstones", "INSERT INTO collection_tombstones VALUES (x'ff', 1, x'', 'v', 1)"),
        ("range_tombstones", "INSERT INTO range_tombstones VALUES (x'ff', 0, x'', 0, x'', 1)"),
    ],
)
def test_data_of_an_unlisted_partition_is_refused_in_every_table(
    tmp_path: Path, child: str, sql: str
) -> None:
    path = image(tmp_path, row(b"a"))
    tamper(path, sql)
    with pytest.raises(ImageRejected, match=f"holds {child} of a partition it does not list"):
        validate_image(path, TABLE, FULL_RING, LIMIT)


@pytest.mark.parametrize(
    ("column", "sql"),
    [
        ("rows.marker_ts", "UPDATE rows SET marker_ts = {ts}"),
        ("rows.tombstone", "UPDATE rows SET tombstone = {ts}"),
        ("collection_tombstones.ts", "INSERT INTO collection_tombstones VALUES (x'61', 1, x'63', 'v', {ts})"),
        ("range_tombstones.ts", "INSERT INTO range_tombstones VALUES (x'61', 0, x'', 0, x'', {ts})"),
    ],
)
def test_a_far_future_timestamp_in_each_table_is_refused(tmp_path: Path, column: str, sql: str) -> None:
    path = image(tmp_path, row(b"a"))
    tamper(path, sql.format(ts=3_980_000_000 * 1_000_000))
    with pytest.raises(ImageRejected, match=rf"{re.escape(column)}.*restrict_future_timestamp"):
        validate_image(path, TABLE, FULL_RING, LIMIT)
    validate_image(path, TABLE, FULL_RING, None)  # restrict_future_timestamp: false


def test_a_far_future_timestamp_anywhere_is_refused(tmp_path: Path) -> None:
    in_2096 = 3_980_000_000 * 1_000_000
    with pytest.raises(ImageRejected, match=r"cells\.ts.*restrict_future_timestamp"):
        validate_image(image(tmp_path / "a", row(b"a", ts=in_2096)), TABLE, FULL_RING, LIMIT)
    path = image(tmp_path / "b", row(b"a"))
    tamper(path, f"UPDATE partitions SET tombstone = {in_2096}")
    with pytest.raises(ImageRejected, match=r"partitions\.tombstone"):
        validate_image(path, TABLE, FULL_RING, LIMIT)
    validate_image(path, TABLE, FULL_RING, None)  # restrict_future_timestamp: false


def test_a_day_ahead_is_within_the_bound(tmp_path: Path) -> None:
    validate_image(image(tmp_path, row(b"a", ts=NOW_US + 86_400_000_000)), TABLE, FULL_RING, LIMIT)


def test_cells_of_a_column_the_table_never_had_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ImageRejected, match="column 'other'"):
        validate_image(image(tmp_path, row(b"a", column="other")), TABLE, FULL_RING, LIMIT)


def test_unknown_columns_are_refused_for_tables_of_many_columns_too(tmp_path: Path) -> None:
    """Past a few columns the test is a NOT IN list rather than a chain of comparisons."""
    wide = TableDef(
        "ks",
        "wide",
        uuid.UUID(int=8),
        (
            ColumnDef("k", BLOB, ColumnKind.PARTITION_KEY, 0),
            ColumnDef("c", BLOB, ColumnKind.CLUSTERING, 0),
            *(ColumnDef(f"v{n}" if n else "v", INT, ColumnKind.REGULAR) for n in range(12)),
        ),
    )
    validate_image(image(tmp_path / "a", row(b"a", column="v7")), wide, FULL_RING, LIMIT)
    with pytest.raises(ImageRejected, match="column 'v12'"):
        validate_image(image(tmp_path / "b", row(b"a", column="v12")), wide, FULL_RING, LIMIT)


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TRIGGER t AFTER INSERT ON cells BEGIN DELETE FROM cells; END",
        "CREATE VIEW v AS SELECT * FROM cells",
        "CREATE TABLE extra (x)",
        "DROP INDEX partitions_by_token",
    ],
)
def test_a_schema_other_than_a_tablet_files_is_refused(tmp_path: Path, sql: str) -> None:
    path = image(tmp_path, row(b"a"))
    tamper(path, sql)
    with pytest.raises(ImageRejected, match="not a tablet file: its schema differs"):
        validate_image(path, TABLE, FULL_RING, LIMIT)


def test_another_schema_version_or_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = image(tmp_path, row(b"a"))
    tamper(path, "UPDATE meta SET value = 99 WHERE key = 'schema_version'")
    with pytest.raises(ImageRejected, match="schema version 99"):
        validate_image(path, TABLE, FULL_RING, LIMIT)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    with pytest.raises(ImageRejected, match="not a readable"):
        validate_image(junk, TABLE, FULL_RING, LIMIT)


def test_a_wrapping_range_takes_tokens_on_both_sides_of_the_ring_and_nothing_between(
    tmp_path: Path,
) -> None:
    keys = sorted((bytes([n]) for n in range(30)), key=token_of)
    tokens = [token_of(k) for k in keys]
    path = image(tmp_path, *(row(k) for k in keys))
    # (tokens[9], tokens[0]] wraps: it holds the first key and everything from the eleventh on
    with pytest.raises(ImageRejected, match=rf"token {tokens[1]}, outside"):
        validate_image(path, TABLE, TokenRange(tokens[9], tokens[0]), LIMIT)
    small = image(tmp_path / "small", *(row(k) for k in keys[:1] + keys[10:]))
    validate_image(small, TABLE, TokenRange(tokens[9], tokens[0]), LIMIT)


def test_a_token_or_key_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    path = image(tmp_path, row(b"a"))
    tamper(path, "UPDATE partitions SET token = 'x'")
    with pytest.raises(ImageRejected, match="token x, outside the token range"):
        validate_image(path, TABLE, FULL_RING, LIMIT)
    other = image(tmp_path / "other", row(b"a"))
    tamper(other, "UPDATE partitions SET pk = 'a'", "DELETE FROM rows", "DELETE FROM cells")
    with pytest.raises(ImageRejected, match="not its key's token"):
        validate_image(other, TABLE, FULL_RING, LIMIT)


def test_with_structure_a_damaged_page_is_refused_and_a_sound_file_accepted(tmp_path: Path) -> None:
    path = image(tmp_path, *(row(n.to_bytes(4, "big")) for n in range(400)))
    validate_image(path, TABLE, FULL_RING, LIMIT, structure=True)
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) >= 8 * page, "the image needs pages to damage"
    middle = (len(data) // page // 2) * page
    data[middle + 8 : middle + page] = b"\xa5" * (page - 8)  # keep the page header, wreck its cells
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(bytes(data))
    with pytest.raises(ImageRejected, match=r"integrity check|not a readable"):
        validate_image(damaged, TABLE, FULL_RING, LIMIT, structure=True)
