from __future__ import annotations

import pytest

from tabletdb.cql.errors import ConfigurationError, CqlSyntaxError, InvalidRequest
from tabletdb.cql.types import COUNTER, INT
from tabletdb.schema.ddl_alter_table import alter_table_options
from tabletdb.schema.options import TableOptions, apply_options, validate_cdc, validate_tablet_hints

from .helpers import apply, with_keyspace, with_table

LZ4 = "org.apache.cassandra.io.compress.LZ4Compressor"


def test_defaults_follow_describe_spec() -> None:
    o = TableOptions()
    assert (o.bloom_filter_fp_chance, o.crc_check_chance, o.default_time_to_live) == (0.01, 1.0, 0)
    assert (o.gc_grace_seconds, o.max_index_interval, o.min_index_interval) == (864000, 2048, 128)
    assert o.compression == (("sstable_compression", LZ4),) and o.speculative_retry == "99.0PERCENTILE"
    assert o.cdc is None and not o.cdc_enabled and o.tablets is None


def test_value_normalisation() -> None:
    o = apply_options(
        TableOptions(),
        {
            "compression": {"class": "ZstdCompressor", "chunk_length_in_kb": 64},
            "speculative_retry": "50ms",
            "tombstone_gc": {"mode": "timeout"},
            "crc_check_chance": "0.5",
            "caching": {"keys": "NONE", "rows_per_partition": 10},
            "per_partition_rate_limit": {"max_writes_per_second": 10},
            "read_repair_chance": 0.1,
            "GC_GRACE_SECONDS": "10",
        },
    )
    assert o.compression == (
        ("chunk_length_in_kb", "64"),
        ("sstable_compression", "org.apache.cassandra.io.compress.ZstdCompressor"),
    )
    assert o.speculative_retry == "50.00ms" and o.crc_check_chance == 0.5 and o.gc_grace_seconds == 10
    assert o.tombstone_gc == (("mode", "timeout"), ("propagation_delay_in_seconds", "3600"))
    assert o.caching == (("keys", "NONE"), ("rows_per_partition", "10"))
    assert o.per_partition_rate_limit == (("max_writes_per_second", "10"),)
    assert apply_options(TableOptions(), {"compression": {"enabled": False}}).compression == ()
    assert apply_options(TableOptions(), {"speculative_retry": "always"}).speculative_retry == "ALWAYS"


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        ({"bloom_filter_fp_chance": 0}, ConfigurationError, "bloom_filter_fp_chance must be larger than 0"),
        ({"crc_check_chance": 2}, ConfigurationError, "crc_check_chance should be between 0.0 and 1.0"),
        (
            {"min_index_interval": 4096},
            ConfigurationError,
            "max_index_interval must be greater than or equal",
        ),
        (
            {"compression": {"sstable_compression": "Nope"}},
            ConfigurationError,
            "Unknown compression class 'Nope'",
        ),
        (
            {"compression": {"class": "LZ4Compressor", "chunk_length_in_kb": 3}},
            ConfigurationError,
            "power of 2",
        ),
        ({"compaction": {"min_threshold": 4}}, ConfigurationError, "Missing sub-option 'class'"),
        ({"caching": {"bogus": "x"}}, ConfigurationError, "Invalid caching sub-option 'bogus'"),
        ({"caching": "ALL"}, CqlSyntaxError, "It should be a map"),
        (
            {"speculative_retry": "sometimes"},
            ConfigurationError,
            "Invalid value sometimes for option 'speculative_retry'",
        ),
        ({"default_time_to_live": "x"}, ConfigurationError, "Invalid integer value 'x'"),
        ({"default_time_to_live": 630720001}, ConfigurationError, "less than or equal to 630720000"),
        ({"tombstone_gc": {"mode": "never"}}, ConfigurationError, "Invalid tombstone_gc mode"),
        ({"synchronous_updates": True}, InvalidRequest, "only applicable to materialized views"),
    ],
)
def test_bad_values(given: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        apply_options(TableOptions(), given)


def test_cdc_and_tablet_hints() -> None:
    assert dict(validate_cdc({"enabled": "true", "preimage": "full", "ttl": 60}))["preimage"] == "full"
    with pytest.raises(ConfigurationError, match="Invalid CDC option: bogus"):
        validate_cdc({"bogus": 1})
    with pytest.raises(ConfigurationError, match='Invalid value for CDC option "delta"'):
        validate_cdc({"delta": "some"})
    assert validate_tablet_hints({"min_tablet_count": 0}) is None
    assert validate_tablet_hints({"min_per_shard_tablet_count": 0.8, "max_tablet_count": 200}) == (
        ("max_tablet_count", "200"),
        ("min_per_shard_tablet_count", "0.8"),
    )
    with pytest.raises(ConfigurationError, match="must be positive"):
        validate_tablet_hints({"max_tablet_count": 0})
    with pytest.raises(ConfigurationError, match="must be positive"):
        validate_tablet_hints({"min_tablet_count": -1})
    assert validate_tablet_hints({"min_tablet_count": 3, "max_tablet_count": 4}) == (
        ("max_tablet_count", "4"),
        ("min_tablet_count", "3"),
    )


def test_alter_table_options_cross_checks() -> None:
    catalog = with_table(with_keyspace(), columns=[("pk", INT, False), ("n", COUNTER, False)], ck=[])
    with pytest.raises(InvalidRequest, match=r"CDC log for table ks.t\. Counter support not implemented"):
        alter_table_options(catalog, "ks", "t", {"cdc": {"enabled": True}})
    with pytest.raises(InvalidRequest, match="default_time_to_live on a table with counters"):
        alter_table_options(catalog, "ks", "t", {"default_time_to_live": 3})
    vnodes = with_table(with_keyspace(tablets={"enabled": False}))
    with pytest.raises(ConfigurationError, match="tablet options cannot be used when tablets are disabled"):
        alter_table_options(vnodes, "ks", "t", {"tablets": {"min_tablet_count": 2}})
    changed = apply(vnodes, alter_table_options(vnodes, "ks", "t", {"comment": "new", "gc_grace_seconds": 5}))
    table = changed.table("ks", "t")
    assert table is not None and table.options.comment == "new" and table.options.gc_grace_seconds == 5


def test_cdc_log_name_conflicts_with_user_table() -> None:
    from dataclasses import replace

    from tabletdb.schema.model import CDC_PARTITIONER
    from tabletdb.schema.mutations import PutTable, apply_mutations

    from .helpers import next_id

    catalog = with_table(with_table(with_keyspace()), "t_scylla_cdc_log")
    with pytest.raises(InvalidRequest, match="already has a table named t_scylla_cdc_log"):
        alter_table_options(catalog, "ks", "t", {"cdc": {"enabled": True}})
    log = catalog.table("ks", "t_scylla_cdc_log")
    assert log is not None and not log.is_cdc_log
    catalog = apply_mutations(catalog, [PutTable(replace(log, partitioner=CDC_PARTITIONER))], next_id())
    enabled = apply(catalog, alter_table_options(catalog, "ks", "t", {"cdc": {"enabled": True}}))
    assert enabled.table("ks", "t").options.cdc_enabled  # type: ignore[union-attr]


def test_cdc_log_follows_its_base() -> None:
    from dataclasses import replace

    from tabletdb.cql.types import TEXT
    from tabletdb.schema.ddl_alter_table import alter_table_add, alter_table_drop
    from tabletdb.schema.ddl_table import drop_table
    from tabletdb.schema.model import CDC_PARTITIONER
    from tabletdb.schema.mutations import PutTable, apply_mutations

    from .helpers import next_id

    catalog = with_table(with_table(with_keyspace()), "t_scylla_cdc_log")
    log = catalog.table("ks", "t_scylla_cdc_log")
    assert log is not None
    catalog = apply_mutations(catalog, [PutTable(replace(log, partitioner=CDC_PARTITIONER))], next_id())
    with pytest.raises(InvalidRequest, match="only its options can be altered"):
        alter_table_add(catalog, "ks", "t_scylla_cdc_log", [("x", TEXT, False)])
    with pytest.raises(InvalidRequest, match="only its options can be altered"):
        alter_table_drop(catalog, "ks", "t_scylla_cdc_log", ["v"], 1)
    assert not alter_table_options(catalog, "ks", "t_scylla_cdc_log", {"comment": "x"}).is_noop
    with pytest.raises(InvalidRequest, match="dropped with its base table"):
        drop_table(catalog, "ks", "t_scylla_cdc_log")
    outcome = drop_table(catalog, "ks", "t")
    assert [e.name for e in outcome.events] == ["t", "t_scylla_cdc_log"]
    assert not apply(catalog, outcome).keyspaces["ks"].tables
