"""``batch_size_fail_threshold_in_kb``: a batch that spans several partitions and whose
mutations are larger than the threshold is refused before anything is written, as ScyllaDB
refuses it ("Batch too large"). A batch on one partition is never refused for its size (it is
one mutation, applied atomically anyway).

The size is what the batch would write: keys, clustering prefixes, column names, values and
their timestamps — close to the mutation size ScyllaDB measures, and exact enough for a limit
meant to catch batches used as bulk loads.
"""

from __future__ import annotations

from collections.abc import Iterable

from tabletdb.cql.errors import InvalidRequest
from tabletdb.schema.model import TableDef
from tabletdb.storage.mutation import Mutation

_TIMESTAMP = 8


def mutation_size(m: Mutation) -> int:
    size = len(m.partition_key) + (_TIMESTAMP if m.partition_tombstone is not None else 0)
    for row in m.rows:
        size += len(row.clustering) + (
            _TIMESTAMP if row.marker is not None or row.tombstone is not None else 0
        )
        for cell in row.cells:
            size += len(cell.column) + len(cell.path) + len(cell.value or b"") + _TIMESTAMP
    for rt in m.range_tombstones:
        bounds = (rt.clustering.start, rt.clustering.end)
        size += sum(len(b.key) for b in bounds if b is not None) + _TIMESTAMP
    return size


def check_batch_size(writes: Iterable[tuple[TableDef, list[Mutation]]], fail_kb: int | None) -> None:
    """Refuse the batch if it modifies more than one partition and its mutations are larger than
    ``fail_kb`` KiB (None: no limit)."""
    if fail_kb is None:
        return
    partitions: set[tuple[object, bytes]] = set()
    size = 0
    names: list[str] = []
    for table, mutations in writes:
        names.append(f"{table.keyspace}.{table.name}")
        for m in mutations:
            partitions.add((table.id, m.partition_key))
            size += mutation_size(m)
    limit = fail_kb * 1024
    if len(partitions) > 1 and size > limit:
        raise InvalidRequest(
            f"Batch too large: modifying {len(partitions)} partitions in {', '.join(names)} is of size "
            f"{size} bytes, exceeding the batch_size_fail_threshold_in_kb of {fail_kb} ({limit} bytes) "
            f"by {size - limit}"
        )
