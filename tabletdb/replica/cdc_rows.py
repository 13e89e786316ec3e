"""CDC delta rows of a base write: the log table mutations that describe a list of base mutations.

Pure. Every replica of the base write derives the same log rows from the same base mutations
(``replica.cdc_log``): the stream comes from the base token, ``cdc$time`` is a timeuuid whose
time is the write timestamp and whose low bits hash the rows it stamps, and the log cells
expire ``ttl`` seconds after the write time, not after each replica's clock. Operation codes and
row shapes follow spec/cdc.md and ScyllaDB's documented log rows: one row per partition delete,
range delete bound, static row change, row delete and row write (insert = with a row marker);
rows of one stream and write time are one batch (``cdc$batch_seq_no`` 0.., ``cdc$end_of_batch``
on the last).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tabletdb.cdc.list_keys import key_of_position
from tabletdb.cdc.stream_id import stream_id_token
from tabletdb.cql import bytecomparable
from tabletdb.cql.types import ListType, MapType, SetType, UserType
from tabletdb.replica.cdc_images import (
    ImageOptions,
    after_write,
    changed_columns,
    image_values,
    read_image,
    row_columns,
)
from tabletdb.schema.cdc_log import (
    DELETED,
    DELETED_ELEMENTS,
    END_OF_BATCH,
    OPERATION,
    TTL,
    CdcOptions,
)
from tabletdb.schema.model import TableDef
from tabletdb.statements.keys import element_of_path, encode_clustering, split_key
from tabletdb.statements.udt_cells import field_index, join_fields
from tabletdb.storage.mutation import Bound, Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.reconcile import PartitionData

PRE_IMAGE, UPDATE, INSERT, ROW_DELETE, PARTITION_DELETE = 0, 1, 2, 3, 4
RANGE_START_INCLUSIVE, RANGE_START_EXCLUSIVE, RANGE_END_INCLUSIVE, RANGE_END_EXCLUSIVE = 5, 6, 7, 8
POST_IMAGE = 9

_UUID_EPOCH_OFFSET = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 to 1970-01-01
_TRUE = b"\x01"

StreamOf = Callable[[int], bytes]
"""The stream id a write of a base token logs to."""
Before = Mapping[bytes, PartitionData | None]
"""Each written partition (by key) as the replica read it before the write, for the images."""


@dataclass
class _LogRow:
    """One delta row before it gets its place (time, sequence number) in the log."""

    operation: int
    timestamp: int
    values: dict[str, bytes] = field(default_factory=dict)
    ttl: int = 0


def timeuuid(micros: int, low_bits: int) -> bytes:
    """A version-1 UUID at ``micros`` (µs since the epoch) with 62 given clock-sequence/node bits."""
    t = micros * 10 + _UUID_EPOCH_OFFSET
    time_hi = ((t >> 48) & 0x0FFF) | 0x1000
    clock_seq = ((low_bits >> 48) & 0x3FFF) | 0x8000
    node = low_bits & 0xFFFF_FFFF_FFFF
    return struct.pack(">IHHH", t & 0xFFFF_FFFF, (t >> 32) & 0xFFFF, time_hi, clock_seq) + node.to_bytes(
        6, "big"
    )


def _serialize_items(items: Sequence[bytes]) -> bytes:
    return len(items).to_bytes(4, "big", signed=True) + b"".join(
        len(i).to_bytes(4, "big", signed=True) + i for i in items
    )


def _key_values(base: TableDef, m: Mutation) -> dict[str, bytes]:
    return {c.name: v for c, v in zip(base.partition_key, split_key(base, m.partition_key))}


def _clustering_values(base: TableDef, key: bytes) -> dict[str, bytes]:
    types = [(c.type, c.clustering_order.value == "DESC") for c in base.clustering_key]
    values = bytecomparable.decode_clustering(types, key)
    return {c.name: v for c, v in zip(base.clustering_key, values) if v is not None}


def _bound_values(base: TableDef, bound: Bound) -> tuple[dict[str, bytes], bool]:
    """The clustering prefix of a range bound and whether the prefix itself is included.

    Bounds are ``bytecomparable.lower_bound``/``upper_bound`` encodings: the prefix, or the
    prefix followed by ``AFTER_PREFIX`` (past every key starting with it).
    """
    key = bound.key
    if key.endswith(bytecomparable.AFTER_PREFIX):
        try:
            return _clustering_values(base, key[: -len(bytecomparable.AFTER_PREFIX)]), True
        except (bytecomparable.CorruptClusteringKey, ValueError, IndexError):
            pass  # the prefix's own last byte is 0x60
    return _clustering_values(base, key), False


def _range_rows(base: TableDef, m: Mutation, keys: dict[str, bytes]) -> Iterable[_LogRow]:
    for rt in m.range_tombstones:
        start, end = rt.clustering.start, rt.clustering.end
        if start is None:
            yield _LogRow(RANGE_START_INCLUSIVE, rt.timestamp, dict(keys))
        else:
            values, past = _bound_values(base, start)
            op = RANGE_START_EXCLUSIVE if past else RANGE_START_INCLUSIVE
            yield _LogRow(op, rt.timestamp, keys | values)
        if end is None:
            yield _LogRow(RANGE_END_INCLUSIVE, rt.timestamp, dict(keys))
        else:
            values, past = _bound_values(base, end)
            op = RANGE_END_INCLUSIVE if past else RANGE_END_EXCLUSIVE
            yield _LogRow(op, rt.timestamp, keys | values)


def _cells_row(base: TableDef, row: RowWrite, keys: dict[str, bytes]) -> _LogRow | None:
    """The update or insert row of a row's cells, marker and collection overwrites (None: none)."""
    if row.marker is None and not row.cells and not row.collection_tombstones:
        return None
    values = dict(keys)
    if not row.static:
        values |= _clustering_values(base, row.clustering)
    ttl = row.marker.ttl if row.marker is not None else 0
    added: dict[str, list[Cell]] = {}
    removed: dict[str, list[bytes]] = {}
    for cell in row.cells:
        ttl = max(ttl, cell.ttl)
        if cell.path:
            if cell.value is None:
                removed.setdefault(cell.column, []).append(cell.path)
            else:
                added.setdefault(cell.column, []).append(cell)
        elif cell.value is None:
            values[DELETED + cell.column] = _TRUE
        else:
            values[cell.column] = cell.value
    for column, _ in row.collection_tombstones:
        values[DELETED + column] = _TRUE
    for name in _touched_udts(base, row):  # as ScyllaDB: a UDT with no field added shows all nulls
        values.setdefault(name, _udt_value(base.column(name).type, []))  # type: ignore[union-attr,arg-type]
    for name, cells in added.items():
        values[name] = _collection_value(base, name, cells)
    for name, paths in removed.items():
        values[DELETED_ELEMENTS + name] = _deleted_elements(base, name, paths)
    op = INSERT if row.marker is not None else UPDATE
    return _LogRow(op, _write_time(row), values, ttl)


def _touched_udts(base: TableDef, row: RowWrite) -> set[str]:
    names = {c.column for c in row.cells} | {name for name, _ in row.collection_tombstones}
    out = set()
    for name in names:
        col = base.column(name)
        if col is not None and isinstance(col.type, UserType) and col.type.is_multi_cell:
            out.add(name)
    return out


def _udt_value(t: UserType, cells: list[Cell]) -> bytes:
    """The added fields as the frozen UDT the log column holds (fields not added are null)."""
    fields: list[bytes | None] = [None] * len(t.field_types)
    for c in cells:
        if 0 <= field_index(c.path) < len(fields):
            fields[field_index(c.path)] = c.value
    return join_fields(fields)


def _write_time(row: RowWrite) -> int:
    """The time of a row's cells, marker and collection overwrites (not its delete)."""
    stamps = [ts for _, ts in row.collection_tombstones] + [c.timestamp for c in row.cells]
    if row.marker is not None:
        stamps.append(row.marker.timestamp)
    return max(stamps)


def image_rows(
    base: TableDef, m: Mutation, before: PartitionData | None, options: ImageOptions
) -> tuple[list[_LogRow], list[_LogRow]]:
    """The pre-image and post-image rows of one base mutation (``replica.cdc_images``)."""
    keys = _key_values(base, m)
    read = {} if before is None else {r.clustering: r for r in before.rows}
    pre: list[_LogRow] = []
    post: list[_LogRow] = []
    for row in m.rows:
        writes = row.marker is not None or bool(row.cells) or bool(row.collection_tombstones)
        if not writes and row.tombstone is None:
            continue
        live = (before.static_row if before is not None else None) if row.static else read.get(row.clustering)
        image = read_image(base, live, row.static)
        row_keys = keys if row.static else keys | _clustering_values(base, row.clustering)
        every = [c.name for c in row_columns(base, row.static)]
        if options.preimage != "false" and image is not None:
            changed = changed_columns(base, row)
            shown = every if options.preimage == "full" else [n for n in every if n in changed]
            stamp = row.tombstone if row.tombstone is not None else _write_time(row)
            pre.append(_LogRow(PRE_IMAGE, stamp, row_keys | image_values(base, image, shown, True)))
        if options.postimage and writes:
            after = after_write(image, row, m.partition_tombstone is not None)
            post.append(
                _LogRow(POST_IMAGE, _write_time(row), row_keys | image_values(base, after, every, False))
            )
    return pre, post


def _collection_value(base: TableDef, name: str, cells: list[Cell]) -> bytes:
    """Added set elements, map entries or list elements (by timeuuid key, ``cdc.list_keys``) as
    the frozen collection the log column holds."""
    t = base.column(name).type  # type: ignore[union-attr]  # cells name the base's own columns
    ordered = sorted(cells, key=lambda c: c.path)
    if isinstance(t, UserType):
        return _udt_value(t, ordered)
    if isinstance(t, SetType):
        return _serialize_items([element_of_path(t.element, c.path) for c in ordered])
    if isinstance(t, MapType | ListType):
        pairs: list[bytes] = []
        for c in ordered:
            key = key_of_position(c.path) if isinstance(t, ListType) else element_of_path(t.key, c.path)
            pairs += [key, c.value or b""]
        return len(ordered).to_bytes(4, "big", signed=True) + b"".join(
            len(p).to_bytes(4, "big", signed=True) + p for p in pairs
        )
    raise ValueError(f"CDC cannot log element cells of column {name} ({t.cql()})")


def _deleted_elements(base: TableDef, name: str, paths: list[bytes]) -> bytes:
    t = base.column(name).type  # type: ignore[union-attr]
    if isinstance(t, ListType):
        return _serialize_items([key_of_position(p) for p in sorted(set(paths))])
    if isinstance(t, UserType):  # field indexes as smallints, which is what the paths are
        return _serialize_items(sorted(set(paths)))
    element = t.element if isinstance(t, SetType) else t.key if isinstance(t, MapType) else None
    if element is None:
        raise ValueError(f"CDC cannot log removed elements of column {name} ({t.cql()})")
    return _serialize_items([element_of_path(element, p) for p in sorted(set(paths))])


def delta_rows(base: TableDef, m: Mutation) -> list[_LogRow]:
    """The delta rows of one base mutation, in log order: partition delete, static row, range
    deletes, then each row's delete and write."""
    keys = _key_values(base, m)
    rows: list[_LogRow] = []
    if m.partition_tombstone is not None:
        rows.append(_LogRow(PARTITION_DELETE, m.partition_tombstone, dict(keys)))
    for row in m.rows:
        if row.static:
            found = _cells_row(base, row, keys)
            if found is not None:
                rows.append(found)
    rows.extend(_range_rows(base, m, keys))
    for row in m.rows:
        if row.static:
            continue
        if row.tombstone is not None:
            rows.append(_LogRow(ROW_DELETE, row.tombstone, keys | _clustering_values(base, row.clustering)))
        found = _cells_row(base, row, keys)
        if found is not None:
            rows.append(found)
    return rows


def _keys_only(base: TableDef, row: _LogRow) -> _LogRow:
    keep = {c.name for c in base.primary_key}
    return _LogRow(row.operation, row.timestamp, {k: v for k, v in row.values.items() if k in keep}, row.ttl)


def log_mutations(
    base: TableDef,
    log: TableDef,
    mutations: Sequence[Mutation],
    stream_of: StreamOf,
    before: Before | None = None,
) -> list[Mutation]:
    """The log table mutations for ``mutations`` of ``base`` (one per stream touched); with
    ``before`` (the written partitions as read first), also the images the options ask for.
    Rows of one stream and time form one batch: pre-images, delta rows, then post-images."""
    options = CdcOptions.of(base)
    keys_only = options.delta == "keys"
    images = ImageOptions(options.preimage, options.postimage)
    log_ttl = log.options.default_time_to_live
    groups: dict[tuple[bytes, int], tuple[list[_LogRow], list[_LogRow], list[_LogRow]]] = {}
    for m in mutations:
        stream = stream_of(m.token)
        for row in delta_rows(base, m):
            group = groups.setdefault((stream, row.timestamp), ([], [], []))
            group[1].append(_keys_only(base, row) if keys_only else row)
        if before is not None and images.wanted:
            pre, post = image_rows(base, m, before.get(m.partition_key), images)
            for row in pre:
                groups.setdefault((stream, row.timestamp), ([], [], []))[0].append(row)
            for row in post:
                groups.setdefault((stream, row.timestamp), ([], [], []))[2].append(row)
    by_stream: dict[bytes, list[RowWrite]] = {}
    for (stream, ts), (pre_rows, delta, post_rows) in groups.items():
        rows = pre_rows + delta + post_rows
        digest = hashlib.blake2b(
            repr((stream, [(r.operation, r.values) for r in rows])).encode(), digest_size=8
        )
        time = timeuuid(ts, int.from_bytes(digest.digest(), "big"))
        expiry = ts // 1_000_000 + log_ttl if log_ttl else 0
        for seq, row in enumerate(rows):
            values = dict(row.values)
            values[OPERATION] = row.operation.to_bytes(1, "big")
            if row.ttl:
                values[TTL] = row.ttl.to_bytes(8, "big", signed=True)
            if seq == len(rows) - 1:
                values[END_OF_BATCH] = _TRUE
            cells = tuple(
                Cell(name, value, ts, ttl=log_ttl, expiry=expiry) for name, value in sorted(values.items())
            )
            clustering = encode_clustering(log, [time, seq.to_bytes(4, "big", signed=True)])
            marker = RowMarker(ts, log_ttl, expiry)
            by_stream.setdefault(stream, []).append(RowWrite(clustering, marker=marker, cells=cells))
    return [Mutation(stream, stream_id_token(stream), rows=tuple(rows)) for stream, rows in by_stream.items()]
