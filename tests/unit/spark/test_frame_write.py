"""`df.write.format("tabletdb")`'s write options and auto's per-task choice (`bulk.frame_write`)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tabletdb.spark.bulk.frame_write import (
    FILES_MIN_ROWS,
    WriteMethod,
    WriteMethodError,
    first_rows,
    parse_write_method,
)


def _batches(*sizes: int) -> list[pa.RecordBatch]:
    return [pa.record_batch([pa.array(range(n))], names=["k"]) for n in sizes]


def test_auto_is_the_default_and_cql_takes_no_file_options() -> None:
    assert parse_write_method({}) == WriteMethod("auto", 10000, (), FILES_MIN_ROWS)
    assert parse_write_method({"METHOD": "CQL", "consistency": "ONE"}) == WriteMethod("cql")
    got = parse_write_method(
        {"method": "files", "api_port": "7000", "api_endpoints": "10.0.0.1:7001, 10.0.0.2:7002"}
    )
    assert got == WriteMethod("files", 7000, (("10.0.0.1", 7001), ("10.0.0.2", 7002)), FILES_MIN_ROWS)
    assert parse_write_method({"files_min_rows": "5", "consistency": "ONE"}).files_min_rows == 5


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"method": "bulk"}, "option method must be one of auto, files, cql, got 'bulk'"),
        ({"method": "files", "consistency": "ONE"}, r"option\(s\) consistency apply to method cql"),
        ({"method": "files", "concurrency": "9", "batch_rows": "9"}, "concurrency, batch_rows apply"),
        ({"method": "cql", "api_port": "7000"}, r"option\(s\) api_port apply to method files or auto"),
        ({"method": "files", "files_min_rows": "9"}, "files_min_rows applies to method auto"),
        ({"api_port": "0"}, "option api_port must be a positive integer, got '0'"),
        ({"files_min_rows": "-1"}, "option files_min_rows must be a positive integer"),
        ({"api_endpoints": "10.0.0.1"}, "option api_endpoints takes ADDRESS:PORT"),
    ],
)
def test_options_that_cannot_be_used_are_refused(options: dict[str, str], message: str) -> None:
    with pytest.raises(WriteMethodError, match=message):
        parse_write_method(options)


def test_a_task_is_large_once_its_batches_reach_the_threshold() -> None:
    source = iter(_batches(40, 40, 40, 40))
    held, large = first_rows(source, 100)
    assert large and [b.num_rows for b in held] == [40, 40, 40]
    assert [b.num_rows for b in source] == [40]  # the rest is still to be read
    held, large = first_rows(iter(_batches(40, 59)), 100)
    assert not large and [b.num_rows for b in held] == [40, 59]
    assert first_rows(iter([]), 1) == ([], False)
    assert first_rows(iter(_batches(100)), 100)[1]
