"""CDC delta rows built from base mutations (``replica.cdc_rows``), decoded back to values.

The shapes follow ScyllaDB's CDC documentation: operation codes, keys in every row, deletion
flags, added and removed collection elements, range bounds as start/end rows, and one batch
(sequence numbers from 0, end-of-batch on the last row) per stream and write time.
"""

from __future__ import annotations

import uuid
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.types import INT, TEXT, MapType, SetType
from tabletdb.dht.murmur3 import token_of
from tabletdb.replica.cdc_rows import delta_rows, log_mutations, timeuuid
from tabletdb.schema.model import TableDef
from tabletdb.statements.keys import clustering_bound, decode_clustering, element_path, encode_clustering
from tabletdb.storage.mutation import (
    Bound,
    Cell,
    ClusteringSlice,
    Mutation,
    RangeTombstone,
    RowMarker,
    RowWrite,
)
from tabletdb.storage.reconcile import LiveCell, LiveRow, PartitionData
from tests.unit.schema.helpers import with_keyspace, with_table

TS = 1_700_000_000_123_456
STREAM = bytes(range(16))
COLUMNS = [
    ("pk", INT, False),
    ("ck", INT, False),
    ("v", TEXT, False),
    ("st", INT, True),
    ("s", SetType(INT), False),
    ("m", MapType(INT, TEXT), False),
]


def _tables(cdc: dict[str, Any] | None = None) -> tuple[TableDef, TableDef]:
    catalog = with_table(with_keyspace(), columns=COLUMNS, options={"cdc": cdc or {"enabled": True}})
    base, log = catalog.table("ks", "t"), catalog.table("ks", "t_scylla_cdc_log")
    assert base is not None and log is not None
    return base, log


BASE, LOG = _tables()


def _i(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def _ck(n: int) -> bytes:
    return encode_clustering(BASE, [_i(n)])


def _mutation(**kwargs: Any) -> Mutation:
    return Mutation(_i(1), token_of(_i(1)), **kwargs)


def _decoded(mutations: list[Mutation]) -> list[dict[str, Any]]:
    """Every log row as {column: value} (frozen collections as sorted tuples), with its sequence
    number, in log order."""
    out = []
    for m in mutations:
        assert m.partition_key == STREAM and m.token == int.from_bytes(STREAM[:8], "big", signed=True)
        for row in m.rows:
            time, seq = decode_clustering(LOG, row.clustering)
            values: dict[str, Any] = {"seq": codec.deserialize(INT, seq or b""), "time": time}
            for cell in row.cells:
                column = LOG.column(cell.column)
                assert column is not None and cell.timestamp == TS
                values[cell.column] = codec.deserialize(column.type, cell.value or b"")
            out.append(values)
    return sorted(out, key=lambda r: (r["time"], r["seq"]))


def _log(*mutations: Mutation, base: TableDef = BASE, log: TableDef = LOG) -> list[dict[str, Any]]:
    rows = _decoded(log_mutations(base, log, list(mutations), lambda token: STREAM))
    for r in rows:
        del r["time"]
    return rows


def _one(**values: Any) -> dict[str, Any]:
    return {"seq": 0, "cdc$end_of_batch": True, "pk": 1, **values}


def test_update_insert_and_column_delete() -> None:
    cell = Cell("v", b"x", TS)
    assert _log(_mutation(rows=(RowWrite(_ck(2), cells=(cell,)),))) == [
        _one(**{"cdc$operation": 1, "ck": 2, "v": "x"})
    ]
    marker = RowMarker(TS, 60, TS // 10**6 + 60)
    inserted = RowWrite(_ck(2), marker=marker, cells=(Cell("v", b"y", TS, ttl=60, expiry=TS // 10**6 + 60),))
    assert _log(_mutation(rows=(inserted,))) == [
        _one(**{"cdc$operation": 2, "ck": 2, "v": "y", "cdc$ttl": 60})
    ]
    deleted = RowWrite(_ck(2), cells=(Cell("v", None, TS),))
    assert _log(_mutation(rows=(deleted,))) == [_one(**{"cdc$operation": 1, "ck": 2, "cdc$deleted_v": True})]


def test_deletes_of_rows_partitions_and_ranges() -> None:
    assert _log(_mutation(rows=(RowWrite(_ck(3), tombstone=TS),))) == [_one(**{"cdc$operation": 3, "ck": 3})]
    assert _log(_mutation(partition_tombstone=TS)) == [_one(**{"cdc$operation": 4})]
    start = Bound(clustering_bound(BASE, [_i(0)], lower=True, inclusive=False))
    end = Bound(clustering_bound(BASE, [_i(5)], lower=False, inclusive=True), inclusive=False)
    ranged = _mutation(range_tombstones=(RangeTombstone(ClusteringSlice(start, end), TS),))
    assert _log(ranged) == [
        {"seq": 0, "pk": 1, "ck": 0, "cdc$operation": 6},
        {"seq": 1, "pk": 1, "ck": 5, "cdc$operation": 7, "cdc$end_of_batch": True},
    ]
    start = Bound(clustering_bound(BASE, [_i(0)], lower=True, inclusive=True))
    end = Bound(clustering_bound(BASE, [_i(5)], lower=False, inclusive=False), inclusive=False)
    ranged = _mutation(range_tombstones=(RangeTombstone(ClusteringSlice(start, end), TS),))
    assert [(r["cdc$operation"], r["ck"]) for r in _log(ranged)] == [(5, 0), (8, 5)]
    open_ended = _mutation(range_tombstones=(RangeTombstone(ClusteringSlice(None, end), TS),))
    assert [(r["cdc$operation"], r.get("ck")) for r in _log(open_ended)] == [(5, None), (8, 5)]


def test_static_rows_carry_no_clustering_key() -> None:
    static = RowWrite(static=True, cells=(Cell("st", _i(9), TS),))
    assert _log(_mutation(rows=(static,))) == [_one(**{"cdc$operation": 1, "st": 9})]


def test_collection_elements_and_overwrites() -> None:
    added = (
        Cell("s", b"", TS, path=element_path(INT, _i(2))),
        Cell("s", b"", TS, path=element_path(INT, _i(1))),
    )
    entry = Cell("m", b"a", TS, path=element_path(INT, _i(7)))
    row = RowWrite(_ck(0), cells=(*added, entry))
    expected = _one(**{"cdc$operation": 1, "ck": 0, "s": (1, 2), "m": ((7, "a"),)})
    assert _log(_mutation(rows=(row,))) == [expected]
    removed = RowWrite(_ck(0), cells=(Cell("s", None, TS, path=element_path(INT, _i(2))),))
    assert _log(_mutation(rows=(removed,))) == [
        _one(**{"cdc$operation": 1, "ck": 0, "cdc$deleted_elements_s": (2,)})
    ]
    overwrite = RowWrite(_ck(0), cells=added[:1], collection_tombstones=(("s", TS - 1),))
    assert _log(_mutation(rows=(overwrite,))) == [
        _one(**{"cdc$operation": 1, "ck": 0, "s": (2,), "cdc$deleted_s": True})
    ]


def test_one_batch_per_stream_and_time() -> None:
    first = _mutation(rows=(RowWrite(_ck(1), tombstone=TS),))
    second = _mutation(rows=(RowWrite(_ck(2), cells=(Cell("v", b"z", TS),)),))
    rows = _log(first, second)
    assert [(r["seq"], r.get("cdc$end_of_batch"), r["cdc$operation"]) for r in rows] == [
        (0, None, 3),
        (1, True, 1),
    ]
    (only,) = log_mutations(BASE, LOG, [first, second], lambda token: STREAM)
    assert len({decode_clustering(LOG, r.clustering)[0] for r in only.rows}) == 1


def test_log_cells_expire_after_the_cdc_ttl_from_the_write_time() -> None:
    (m,) = log_mutations(BASE, LOG, [_mutation(partition_tombstone=TS)], lambda token: STREAM)
    (row,) = m.rows
    assert row.marker is not None and row.marker.ttl == 86400
    assert {c.expiry for c in row.cells} == {TS // 10**6 + 86400}


def test_same_write_same_rows_on_every_replica() -> None:
    write = [_mutation(rows=(RowWrite(_ck(2), cells=(Cell("v", b"x", TS),)),))]
    assert log_mutations(BASE, LOG, write, lambda t: STREAM) == log_mutations(
        BASE, LOG, write, lambda t: STREAM
    )
    other = [_mutation(rows=(RowWrite(_ck(2), cells=(Cell("v", b"y", TS),)),))]
    times = {
        decode_clustering(LOG, m.rows[0].clustering)[0]
        for m in [
            *log_mutations(BASE, LOG, write, lambda t: STREAM),
            *log_mutations(BASE, LOG, other, lambda t: STREAM),
        ]
    }
    assert len(times) == 2  # same time, different changes: different ids, no overwrite


def test_keys_only_delta() -> None:
    base, log = _tables({"enabled": True, "delta": "keys"})
    row = RowWrite(_ck(2), marker=RowMarker(TS), cells=(Cell("v", b"x", TS),))
    rows = _log(_mutation(rows=(row,)), base=base, log=log)
    assert rows == [_one(**{"cdc$operation": 2, "ck": 2})]


def test_timeuuid_is_a_version_one_uuid_at_the_write_time() -> None:
    value = uuid.UUID(bytes=timeuuid(TS, 0x3FFF_FFFF_FFFF_FFFF))
    assert value.version == 1 and value.variant == uuid.RFC_4122
    assert (value.time - 0x01B21DD213814000) // 10 == TS
    assert value.node == 0xFFFF_FFFF_FFFF and value.clock_seq == 0x3FFF


def test_delta_rows_keep_statement_order() -> None:
    m = _mutation(partition_tombstone=TS - 1, rows=(RowWrite(_ck(1), tombstone=TS),))
    assert [r.operation for r in delta_rows(BASE, m)] == [4, 3]


def _images_log(
    cdc: dict[str, Any], before: PartitionData | None, *mutations: Mutation
) -> list[dict[str, Any]]:
    base, log = _tables(cdc)
    rows = _decoded(log_mutations(base, log, list(mutations), lambda token: STREAM, {_i(1): before}))
    for r in rows:
        del r["time"]
    return rows


def _before(*rows: LiveRow, static: LiveRow | None = None) -> PartitionData:
    return PartitionData(_i(1), token_of(_i(1)), static, rows)


def _live(ck: int, *cells: LiveCell, marker: bool = True) -> LiveRow:
    return LiveRow(_ck(ck), False, (TS - 5, None) if marker else None, cells)


def test_preimage_shows_changed_or_all_columns_of_a_live_row() -> None:
    before = _before(
        _live(
            0,
            LiveCell("v", b"", b"old", TS - 5, None),
            LiveCell("m", element_path(INT, _i(1)), b"a", TS - 5, None),
        )
    )
    update = _mutation(rows=(RowWrite(_ck(0), cells=(Cell("s", b"", TS, path=element_path(INT, _i(3))),)),))
    changed = _images_log({"enabled": True, "preimage": True}, before, update)
    assert changed == [
        {"seq": 0, "pk": 1, "ck": 0, "cdc$operation": 0, "cdc$deleted_s": True},
        _one(**{"seq": 1, "cdc$operation": 1, "ck": 0, "s": (3,)}),
    ]
    full = _images_log({"enabled": True, "preimage": "full"}, before, update)
    assert full[0] == {
        "seq": 0,
        "pk": 1,
        "ck": 0,
        "cdc$operation": 0,
        "v": "old",
        "m": ((1, "a"),),
        "cdc$deleted_s": True,
    }
    assert _images_log({"enabled": True, "preimage": True}, None, update) == [
        _one(**{"cdc$operation": 1, "ck": 0, "s": (3,)})
    ]  # no live row before: no pre-image


def test_postimage_applies_the_write_to_the_row_read() -> None:
    before = _before(
        _live(
            0,
            LiveCell("v", b"", b"old", TS - 5, None),
            LiveCell("m", element_path(INT, _i(1)), b"a", TS - 5, None),
            LiveCell("m", element_path(INT, _i(2)), b"b", TS - 5, None),
        ),
        static=LiveRow(b"", True, None, (LiveCell("st", b"", _i(4), TS - 5, None),)),
    )
    write = _mutation(
        rows=(
            RowWrite(static=True, cells=(Cell("st", _i(5), TS),)),
            RowWrite(
                _ck(0),
                cells=(
                    Cell("m", None, TS, path=element_path(INT, _i(1))),
                    Cell("m", b"c", TS, path=element_path(INT, _i(3))),
                    Cell("v", None, TS),
                ),
            ),
        )
    )
    rows = _images_log({"enabled": True, "postimage": True}, before, write)
    assert [r["cdc$operation"] for r in rows] == [1, 1, 9, 9]
    assert rows[2] == {"seq": 2, "pk": 1, "cdc$operation": 9, "st": 5}
    assert rows[3] == {
        "seq": 3,
        "pk": 1,
        "ck": 0,
        "cdc$operation": 9,
        "m": ((2, "b"), (3, "c")),
        "cdc$end_of_batch": True,
    }
    deleted = _mutation(rows=(RowWrite(_ck(0), tombstone=TS),))
    both = {"enabled": True, "preimage": True, "postimage": True}
    assert [r["cdc$operation"] for r in _images_log(both, before, deleted)] == [0, 3]  # no post-image
    overwrite = _mutation(partition_tombstone=TS, rows=(RowWrite(_ck(0), cells=(Cell("v", b"new", TS),)),))
    post = _images_log(both, before, overwrite)[-1]
    assert (post["cdc$operation"], post.get("m"), post["v"]) == (
        9,
        None,
        "new",
    )  # the partition delete cleared it
