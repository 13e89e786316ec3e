"""schema.cql splitting, tablet-count pinning and the manifest file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabletdb.spark.backup_manifest import (
    BackupFile,
    Manifest,
    ManifestError,
    TableEntry,
    created_table_id,
    creates_index,
    granted_keyspace,
    pin_tablet_count,
    read_manifest,
    split_statements,
    tablets_option,
    write_manifest,
)

TABLE = """CREATE TABLE ks.t (
    a int,
    "b;c" text,
    PRIMARY KEY (a)
) WITH ID = 436eaf0c-e62c-11f1-8a00-02fc00000001
    AND comment = 'it''s; here'
    AND speculative_retry = '99.0PERCENTILE'"""


def test_split_keeps_semicolons_inside_literals_identifiers_bodies_and_comments() -> None:
    script = (
        f"{TABLE};\n"
        "CREATE FUNCTION ks.f(x int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua\n"
        "AS $$ return x; $$;\n"
        "-- a comment; with a semicolon\n"
        "/* block; comment */ CREATE ROLE r WITH LOGIN = true;\n"
        "GRANT SELECT ON ks.t TO r"
    )
    statements = split_statements(script)
    assert statements[0] == TABLE
    assert statements[1].endswith("return x; $$")
    assert statements[2].startswith("-- a comment; with a semicolon\n/* block; comment */ CREATE ROLE r")
    assert statements[3] == "GRANT SELECT ON ks.t TO r"
    assert len(statements) == 4


def test_created_table_id_only_for_create_table() -> None:
    assert created_table_id(TABLE) == "436eaf0c-e62c-11f1-8a00-02fc00000001"
    assert created_table_id("CREATE MATERIALIZED VIEW ks.v AS SELECT * FROM ks.t WITH ID = x") is None


def test_pin_adds_the_tablets_option_and_unpin_finds_none() -> None:
    pinned = pin_tablet_count(TABLE, 16)
    assert pinned.endswith("AND tablets = {'min_tablet_count': 16, 'max_tablet_count': 16}")
    assert tablets_option(TABLE) == "{}"
    assert tablets_option(pinned) == "{'min_tablet_count': 16, 'max_tablet_count': 16}"


def test_pin_replaces_an_existing_tablets_option_and_unpin_restores_it() -> None:
    table = TABLE + "\n    AND tablets = {'min_tablet_count': '2'}\n    AND tombstone_gc = {'mode': 'repair'}"
    pinned = pin_tablet_count(table, 8)
    assert "'min_tablet_count': '2'" not in pinned
    assert pinned.count("tablets =") == 1 and pinned.endswith("AND tombstone_gc = {'mode': 'repair'}")
    assert tablets_option(table) == "{'min_tablet_count': '2'}"


def test_manifest_round_trips(tmp_path: Path) -> None:
    files = [BackupFile(0, -(2**63), -1, "data/ks/t-x/tablet-0.db", 4096, "ab" * 32, 7, "host")]
    entry = TableEntry("ks", "t", "436eaf0c-e62c-11f1-8a00-02fc00000001", True, 2, [-1, 2**63 - 1], 7, files)
    manifest = Manifest("c", "2026-01-01T00:00:00Z", "tag", ["ks"], [entry])
    write_manifest(tmp_path, manifest)
    assert read_manifest(tmp_path) == manifest
    assert manifest.total_bytes == 4096 and manifest.total_rows == 7


def test_a_directory_without_a_manifest_is_not_a_backup(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="did not finish"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": 99}')
    with pytest.raises(ManifestError, match="format 99"):
        read_manifest(tmp_path)


@pytest.mark.parametrize(
    ("grant", "keyspace"),
    [
        ("GRANT SELECT ON KEYSPACE bk TO reader;", "bk"),
        ("GRANT MODIFY ON bk.kv TO writer;", "bk"),
        ("GRANT SELECT ON TABLE Bk.kv TO w;", "bk"),
        ('GRANT ALTER ON KEYSPACE "My""Ks" TO w;', 'My"Ks'),
        ("GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE fx TO w;", "fx"),
        ("GRANT EXECUTE ON FUNCTION fx.f(int) TO w;", "fx"),
        ("GRANT SELECT ON ALL KEYSPACES TO w;", None),
        ("GRANT AUTHORIZE ON ROLE reader TO w;", None),
        ("GRANT reader TO writer;", None),
    ],
)
def test_granted_keyspace(grant: str, keyspace: str | None) -> None:
    assert granted_keyspace(grant) == keyspace


def test_creates_index_picks_out_secondary_indexes() -> None:
    assert creates_index("CREATE INDEX kv_by_n ON ks.kv (n)")
    assert creates_index("  create custom index i ON ks.kv (n) USING 'x'")
    assert not creates_index(TABLE)
    assert not creates_index("CREATE MATERIALIZED VIEW ks.v AS SELECT * FROM ks.t")
