"""batch_size_fail_threshold_in_kb: multi-partition batches over the limit are refused, one
partition never is."""

from __future__ import annotations

import pytest

from tabletdb.cql.errors import InvalidRequest
from tabletdb.query.batch_limits import check_batch_size, mutation_size
from tabletdb.storage.mutation import Cell, Mutation, RowWrite
from tests.unit.schema.helpers import representative_catalog


def _mutation(key: bytes, value_bytes: int) -> Mutation:
    row = RowWrite(clustering=b"c", cells=(Cell("v", b"x" * value_bytes, 1),))
    return Mutation(partition_key=key, token=0, rows=(row,))


def test_size_counts_keys_columns_values_and_timestamps() -> None:
    assert mutation_size(_mutation(b"k", 10)) == 1 + 1 + 1 + 10 + 8


def test_over_the_limit_on_several_partitions_is_refused_with_the_numbers() -> None:
    table = next(iter(representative_catalog().keyspaces["ks"].tables.values()))
    many = [_mutation(bytes([i]), 600) for i in range(2)]
    with pytest.raises(
        InvalidRequest, match=r"Batch too large: modifying 2 partitions in ks\.\w+ is of size"
    ):
        check_batch_size([(table, many)], 1)
    check_batch_size([(table, many)], 2)  # under 2 KiB
    check_batch_size([(table, many)], None)  # no limit


def test_one_partition_is_never_refused_for_its_size() -> None:
    table = next(iter(representative_catalog().keyspaces["ks"].tables.values()))
    check_batch_size([(table, [_mutation(b"k", 5000), _mutation(b"k", 5000)])], 1)
