"""CREATE INDEX ... WITH <properties>: they become the entries table's options, DESCRIBE shows
them, and what ScyllaDB refuses on an index is refused."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tabletdb.cql.errors import CqlSyntaxError, InvalidRequest
from tabletdb.cql.types import INT
from tabletdb.schema.describe import index_statement
from tabletdb.schema.index_table import index_table
from tabletdb.schema.indexes import create_index
from tabletdb.schema.model import Catalog, IndexDef, TableDef

from .helpers import apply, next_id, with_keyspace, with_table


def _catalog() -> Catalog:
    columns = [("k", INT, False), ("c", INT, False), ("v", INT, False), ("st", INT, True)]
    return with_table(with_keyspace(), columns=columns, pk=["k"], ck=["c"])


def _indexed(catalog: Catalog, properties: dict[str, Any], **kw: Any) -> tuple[Catalog, TableDef, IndexDef]:
    catalog = apply(
        catalog, create_index(catalog, "ks", "t", "i", "v", properties=properties, table_id=next_id(), **kw)
    )
    base = catalog.table("ks", "t")
    assert base is not None
    index = base.index("i")
    assert index is not None
    return catalog, base, index


def test_properties_become_the_entries_tables_options_and_describe_shows_them() -> None:
    properties = {
        "gc_grace_seconds": 3,
        "compaction": {"class": "TimeWindowCompactionStrategy"},
        "tombstone_gc": {"mode": "timeout", "propagation_delay_in_seconds": "4200"},
        "synchronous_updates": True,
    }
    _, base, index = _indexed(_catalog(), properties)
    entries = index_table(base, index)
    assert entries is not None
    assert entries.options.gc_grace_seconds == 3
    assert dict(entries.options.compaction)["class"] == "TimeWindowCompactionStrategy"
    assert dict(entries.options.tombstone_gc)["mode"] == "timeout"
    assert index_statement("ks", index) == (
        "CREATE INDEX i ON ks.t(v) WITH compaction = {'class': 'TimeWindowCompactionStrategy'}\n"
        "    AND gc_grace_seconds = 3\n"
        "    AND tombstone_gc = {'mode': 'timeout', 'propagation_delay_in_seconds': '4200'}\n"
        "    AND synchronous_updates = true;\n"
    )


def test_without_properties_the_entries_table_has_the_defaults_and_describe_is_unchanged() -> None:
    _, base, index = _indexed(_catalog(), {})
    entries = index_table(base, index)
    assert index.table_options is None and entries is not None and entries.options.gc_grace_seconds == 864000
    assert index_statement("ks", index) == "CREATE INDEX i ON ks.t(v);\n"


def test_id_names_the_entries_table_and_must_be_unused() -> None:
    wanted = uuid.UUID("018ad550-b25d-09d0-7e90-ea5438411dc7")
    catalog, _, index = _indexed(_catalog(), {"ID": wanted})
    assert index.table_id == wanted and index.table_options is None
    with pytest.raises(InvalidRequest, match=f"Table with ID {wanted} already exists: ks.i_index"):
        create_index(catalog, "ks", "t", "j", "c", properties={"id": wanted}, table_id=next_id())


@pytest.mark.parametrize(
    "name", ["index_interval", "replicate_on_write", "populate_io_cache_on_flush", "read_repair_chance"]
)
def test_obsolete_table_properties_are_unknown_on_an_index(name: str) -> None:
    with pytest.raises(CqlSyntaxError, match=f"Unknown property '{name}'"):
        create_index(_catalog(), "ks", "t", "i", "v", properties={name: 1}, table_id=next_id())


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"default_time_to_live": 13}, "Cannot set or alter default_time_to_live for a materialized view"),
        ({"cdc": {"enabled": True}}, "Cannot enable CDC for a materialized view"),
    ],
)
def test_what_a_view_refuses_an_index_refuses(properties: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        create_index(_catalog(), "ks", "t", "i", "v", properties=properties, table_id=next_id())


def test_indexes_without_an_entries_table_refuse_properties() -> None:
    catalog = _catalog()
    with pytest.raises(InvalidRequest, match=r"Index properties \(comment\) apply to an index's own entries"):
        create_index(catalog, "ks", "t", "i", "v", local_partition_key=["k"], properties={"comment": "x"})
    with pytest.raises(InvalidRequest, match=r"Index properties \(gc_grace_seconds\)"):
        create_index(catalog, "ks", "t", "i", "st", properties={"gc_grace_seconds": 5}, table_id=next_id())


def test_bad_properties_are_refused_even_when_if_not_exists_would_end_the_statement() -> None:
    catalog, _, _ = _indexed(_catalog(), {})
    with pytest.raises(CqlSyntaxError, match="Unknown property 'replicate_on_write'"):
        create_index(
            catalog, "ks", "t", "i", "v", properties={"replicate_on_write": True}, if_not_exists=True
        )
    assert create_index(catalog, "ks", "t", "i", "v", properties={"comment": "x"}, if_not_exists=True).is_noop
