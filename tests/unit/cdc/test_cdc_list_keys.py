"""Timeuuid keys of list elements in the CDC log (``cdc.list_keys``) and the log rows and images
of non-frozen lists (``replica.cdc_rows``, ``replica.cdc_images``)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cdc.list_keys import key_of_position, position_of_key
from tabletdb.cql import codec
from tabletdb.cql.types import INT, TIMEUUID, ListType, MapType, SetType
from tabletdb.dht.murmur3 import token_of
from tabletdb.replica.cdc_rows import log_mutations
from tabletdb.schema.model import TableDef
from tabletdb.statements.keys import decode_clustering, encode_clustering, list_paths
from tabletdb.storage.mutation import Cell, Mutation, RowWrite
from tabletdb.storage.reconcile import LiveCell, LiveRow, PartitionData
from tests.unit.schema.helpers import with_keyspace, with_table

TS = 1_700_000_000_123_456
STREAM = bytes(range(16))
positions = st.integers(0, 2**64 - 1).map(lambda p: p.to_bytes(8, "big"))


def _order(key: bytes) -> tuple[int, bytes]:
    u = uuid.UUID(bytes=key)
    return u.time, key[8:]


@given(positions, positions)
def test_keys_are_version_one_uuids_in_list_order_and_map_back(a: bytes, b: bytes) -> None:
    ka, kb = key_of_position(a), key_of_position(b)
    assert uuid.UUID(bytes=ka).version == 1 and uuid.UUID(bytes=ka).variant == uuid.RFC_4122
    assert position_of_key(ka) == a and position_of_key(kb) == b
    assert (a < b) == (_order(ka) < _order(kb))


def test_appends_and_prepends_get_keys_in_their_reading_order() -> None:
    later = list_paths(TS + 1, 2, prepend=False)
    earlier = list_paths(TS, 2, prepend=False)
    front = list_paths(TS + 2, 1, prepend=True)
    ordered = front + earlier + later
    assert sorted(ordered, key=lambda p: _order(key_of_position(p))) == ordered


def test_a_foreign_or_non_time_uuid_key() -> None:
    scylla = uuid.UUID("cc5baec0-2fec-11eb-af55-000000000001").bytes
    assert position_of_key(key_of_position(position_of_key(scylla))) == position_of_key(scylla)
    with pytest.raises(ValueError, match="version 1"):
        position_of_key(uuid.uuid4().bytes)


def _tables(cdc: dict[str, Any]) -> tuple[TableDef, TableDef]:
    columns = [("pk", INT, False), ("ck", INT, False), ("l", ListType(INT), False)]
    catalog = with_table(with_keyspace(), columns=columns, options={"cdc": cdc})
    base, log = catalog.table("ks", "t"), catalog.table("ks", "t_scylla_cdc_log")
    assert base is not None and log is not None
    return base, log


def _i(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def _rows(cdc: dict[str, Any], m: Mutation, before: PartitionData | None = None) -> list[dict[str, Any]]:
    base, log = _tables(cdc)
    reads = None if before is None else {_i(1): before}
    out = []
    for lm in log_mutations(base, log, [m], lambda token: STREAM, reads):
        for row in lm.rows:
            _, seq = decode_clustering(log, row.clustering)
            values: dict[str, Any] = {"seq": codec.deserialize(INT, seq or b"")}
            for cell in row.cells:
                column = log.column(cell.column)
                assert column is not None
                values[cell.column] = codec.deserialize(column.type, cell.value or b"")
            out.append(values)
    return sorted(out, key=lambda r: r["seq"])


def _key(path: bytes) -> uuid.UUID:
    return uuid.UUID(bytes=key_of_position(path))


def test_log_columns_of_a_list() -> None:
    _, log = _tables({"enabled": True})
    assert log.column("l").type == MapType(TIMEUUID, INT, frozen=True)  # type: ignore[union-attr]
    assert log.column("cdc$deleted_elements_l").type == SetType(TIMEUUID, frozen=True)  # type: ignore[union-attr]


def test_added_and_removed_elements_and_overwrites_by_key() -> None:
    base, _ = _tables({"enabled": True})
    ck = encode_clustering(base, [_i(0)])
    first, second = list_paths(TS, 2, prepend=False)
    gone = list_paths(TS - 10, 1, prepend=False)[0]
    cells = (
        Cell("l", _i(7), TS, path=first),
        Cell("l", _i(8), TS, path=second),
        Cell("l", None, TS, path=gone),
    )
    m = Mutation(
        _i(1), token_of(_i(1)), rows=(RowWrite(ck, cells=cells, collection_tombstones=(("l", TS - 1),)),)
    )
    (row,) = _rows({"enabled": True}, m)
    assert dict(row["l"]) == {_key(first): 7, _key(second): 8}
    assert set(row["cdc$deleted_elements_l"]) == {_key(gone)}
    assert row["cdc$deleted_l"] is True and row["cdc$operation"] == 1


def test_images_show_a_list_by_key() -> None:
    base, _ = _tables({"enabled": True, "preimage": "full", "postimage": True})
    ck = encode_clustering(base, [_i(0)])
    old = list_paths(TS - 10, 1, prepend=False)[0]
    new = list_paths(TS, 1, prepend=False)[0]
    before = PartitionData(
        _i(1),
        token_of(_i(1)),
        None,
        (LiveRow(ck, False, (TS - 10, None), (LiveCell("l", old, _i(1), TS - 10, None),)),),
    )
    m = Mutation(_i(1), token_of(_i(1)), rows=(RowWrite(ck, cells=(Cell("l", _i(2), TS, path=new),)),))
    pre, delta, post = _rows({"enabled": True, "preimage": "full", "postimage": True}, m, before)
    assert pre["cdc$operation"] == 0 and dict(pre["l"]) == {_key(old): 1}
    assert dict(delta["l"]) == {_key(new): 2}
    assert post["cdc$operation"] == 9 and dict(post["l"]) == {_key(old): 1, _key(new): 2}
