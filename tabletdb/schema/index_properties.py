"""`CREATE INDEX ... WITH <properties>`: the view properties ScyllaDB takes on an index.

ScyllaDB backs a global index with a view and lets CREATE INDEX set that view's properties
(caching, compaction, compression, gc_grace_seconds, tombstone_gc, synchronous_updates, ID, ...).
Here the counterpart is the index's entries table (`schema.index_table`): the properties become
that table's options, so they act on it as the same property acts on any table. What ScyllaDB
refuses on an index is refused with its words: the obsolete table properties (as unknown
properties), a default TTL (as on a view), CDC. Properties on an index with no entries table
(custom, local or static-column indexes here) would have nothing to act on and are refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from tabletdb.cql.errors import CqlSyntaxError, InvalidRequest
from tabletdb.schema.options import TableOptions, apply_options, table_id_option

OBSOLETE = frozenset(
    {
        "index_interval",
        "replicate_on_write",
        "populate_io_cache_on_flush",
        "read_repair_chance",
        "dclocal_read_repair_chance",
        "in_memory",
    }
)
"""Accepted (and ignored) on tables for old schemas; an index has no such past, so refused."""


def index_properties(given: Mapping[str, object]) -> tuple[TableOptions | None, uuid.UUID | None]:
    """The entries table's options (None when no property was given) and its `ID` if given.

    `given` is the WITH map without `options` (the custom index's own map)."""
    for name in given:
        if name.lower() in OBSOLETE:
            raise CqlSyntaxError(f"Unknown property '{name}'")
    table_id = table_id_option(given)
    rest = {k: v for k, v in given.items() if k.lower() != "id"}
    if not rest:
        return None, table_id
    return apply_options(TableOptions(), rest, for_view=True), table_id


def check_index_can_hold(has_table: bool, given: Mapping[str, object]) -> None:
    """Refuse properties on an index without an entries table, naming why."""
    if not given or has_table:
        return
    names = ", ".join(sorted(given))
    raise InvalidRequest(
        f"Index properties ({names}) apply to an index's own entries table; custom, local and "
        "static-column indexes have none, so they cannot take them"
    )
