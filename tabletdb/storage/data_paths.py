"""Where a table's files live on disk, one rule for the data directory and for snapshots.

Directory names are `<keyspace>/<table>-<table id>` as in ScyllaDB, but the names are cut to
`NAME_PART` characters: CQL names may have 192 characters, and SQLite's unix VFS refuses paths
over 512 bytes ("unable to open database file") — a 192-character keyspace and table under a
test's temporary directory went past it. The table id keeps every table's directory unique, so a
cut name only shortens what a human reads; a keyspace directory shared by two keyspaces whose
names agree in their first `NAME_PART` characters holds tables with different ids.
"""

from __future__ import annotations

import uuid

NAME_PART = 64


def table_directory_name(keyspace: str, table: str, table_id: uuid.UUID) -> str:
    """The path of a table's directory relative to a data or snapshot root."""
    return f"{keyspace[:NAME_PART]}/{table[:NAME_PART]}-{table_id.hex}"
