"""Restore's last step: the restored rows counted range by range against the manifest.

A whole-table ``COUNT(*)`` of a large table takes longer than any sensible client timeout, and a
rerun would start it again from nothing. Instead every table is cut into the token ranges of its
backed-up tablets (vnode tables: `VNODE_SLICES` equal slices of the ring) and each range is
counted on its own, several at a time; a range that matches is recorded in the restore progress
file, so a rerun counts only what is left. File checksums are not re-checked here: every file's
sha256 was compared with the manifest before it left and by the node when it arrived.

`plan_checks` and `judge` are pure; `count_ranges` does the CQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from tabletdb.cql.identifiers import quote_identifier
from tabletdb.spark.backup_manifest import Manifest, TableEntry

MIN_TOKEN = -(2**63)
MAX_TOKEN = 2**63 - 1
VNODE_SLICES = 16
"""Vnode tables have no tablets to follow; their ring is counted in this many equal pieces."""
PARALLEL_COUNTS = 8
RANGE_COUNT_TIMEOUT = 600.0
"""Seconds for one range's count: a tablet, not a table, so this is generous."""


@dataclass(frozen=True)
class RangeCheck:
    """Count one token range (first, last] of a table; ``expected`` None: only the table's sum
    is known (vnode tables)."""

    table_id: str
    keyspace: str
    table: str
    first: int
    last: int
    expected: int | None

    @property
    def key(self) -> str:
        return f"{self.table_id}:{self.first}:{self.last}"

    @property
    def name(self) -> str:
        return f"{self.keyspace}.{self.table}"


def _tablet_checks(entry: TableEntry) -> Iterator[RangeCheck]:
    rows: dict[tuple[int, int], int] = {}
    for f in entry.files:  # with --all-replicas a tablet has several files: the fullest counts
        span = (f.first_token, f.last_token)
        rows[span] = max(rows.get(span, 0), f.rows)
    first = MIN_TOKEN
    for last in entry.last_tokens:
        yield RangeCheck(entry.id, entry.keyspace, entry.table, first, last, rows.get((first, last), 0))
        first = last


def _vnode_checks(entry: TableEntry) -> Iterator[RangeCheck]:
    step = (MAX_TOKEN - MIN_TOKEN) // VNODE_SLICES
    first = MIN_TOKEN
    for i in range(VNODE_SLICES):
        last = MAX_TOKEN if i == VNODE_SLICES - 1 else first + step
        yield RangeCheck(entry.id, entry.keyspace, entry.table, first, last, None)
        first = last


def plan_checks(manifest: Manifest) -> list[RangeCheck]:
    """Every table's ring as ranges to count; together they cover each table exactly once."""
    out: list[RangeCheck] = []
    for entry in manifest.tables:
        by_tablet = entry.uses_tablets and len(entry.last_tokens) > 0
        out.extend(_tablet_checks(entry) if by_tablet else _vnode_checks(entry))
    return out


def range_ok(check: RangeCheck, count: int, exact: bool) -> bool:
    """A tablet range matches when its count is the backup's (at least it, for --all-replicas
    backups whose row counts are lower bounds); a vnode slice is judged with its table."""
    if check.expected is None:
        return True
    return count == check.expected if exact else count >= check.expected


def judge(manifest: Manifest, checks: Sequence[RangeCheck], counts: dict[str, int]) -> list[str]:
    """Mismatches, one line each, naming the table and (for tablets) the token range."""
    exact = manifest.replicas == "one"
    problems: list[str] = []
    totals: dict[str, int] = {}
    for check in checks:
        count = counts[check.key]
        totals[check.table_id] = totals.get(check.table_id, 0) + count
        if not range_ok(check, count, exact):
            problems.append(
                f"{check.name} tokens ({check.first}, {check.last}]: {count} rows, "
                f"the backup has {check.expected}"
            )
    for entry in manifest.tables:
        total = totals.get(entry.id, 0)
        if total < entry.row_count or (exact and total != entry.row_count):
            problems.append(f"{entry.keyspace}.{entry.table}: {total} rows, the backup has {entry.row_count}")
    return problems


def _partition_key(session: Any, keyspace: str, table: str) -> list[str]:
    rows = session.execute(
        "SELECT column_name, kind, position FROM system_schema.columns "
        "WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    )
    keys = sorted((r.position, r.column_name) for r in rows if r.kind == "partition_key")
    if not keys:
        raise LookupError(f"{keyspace}.{table} has no partition key in system_schema.columns")
    return [name for _, name in keys]


def count_ranges(
    session: Any, checks: Sequence[RangeCheck], counted: Callable[[RangeCheck, int], None]
) -> None:
    """Count every range, `PARALLEL_COUNTS` at a time; ``counted`` runs on this thread as each
    finishes (so progress and the progress file see results in completion order)."""
    keys: dict[str, str] = {}
    for check in checks:
        if check.table_id not in keys:
            columns = _partition_key(session, check.keyspace, check.table)
            keys[check.table_id] = ", ".join(quote_identifier(c) for c in columns)

    def count(check: RangeCheck) -> int:
        name = f"{quote_identifier(check.keyspace)}.{quote_identifier(check.table)}"
        token = f"token({keys[check.table_id]})"
        query = f"SELECT COUNT(*) FROM {name} WHERE {token} > %s AND {token} <= %s"
        row = session.execute(query, (check.first, check.last), timeout=RANGE_COUNT_TIMEOUT).one()
        return int(row[0])

    pool = ThreadPoolExecutor(PARALLEL_COUNTS, thread_name_prefix="restore-verify")
    try:
        futures = {pool.submit(count, check): check for check in checks}
        for future in as_completed(futures):
            counted(futures[future], future.result())
    finally:  # on a failure, counts not yet started are dropped rather than waited for
        pool.shutdown(wait=True, cancel_futures=True)
