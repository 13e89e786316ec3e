"""Keys of ScyllaDB's scylla.yaml that tabletdb does not implement, and what it does with them.

A stock scylla.yaml must start a node (issue 17): its keys are ScyllaDB's, and most of them name
things that do not exist here — sstable directories, caches, thread pools, Thrift, compaction
throughput. Those are *ignored*: accepted, left out of the effective config, and listed once at
start-up (``cli.main``) so an operator sees that they had no effect. Keys whose value changes
what a client could observe are not ignored: each is *checked* against what tabletdb does, and
any other value is refused with the reason (a misconfigured node must not start). Keys ScyllaDB
does not know at all stay refused with the "did you mean" line (``config._unknown_key``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

IGNORED_KEYS: frozenset[str] = frozenset(
    {
        # where ScyllaDB keeps its files: tabletdb keeps everything under `workdir`
        "data_file_directories",
        "commitlog_directory",
        "schema_commitlog_directory",
        "hints_directory",
        "view_hints_directory",
        "saved_caches_directory",
        # commit log segments and space (tabletdb's commit log is one file, trimmed as it goes)
        "commitlog_segment_size_in_mb",
        "schema_commitlog_segment_size_in_mb",
        "commitlog_total_space_in_mb",
        "commitlog_sync_batch_window_in_ms",
        # Thrift, removed from ScyllaDB too
        "rpc_port",
        "start_rpc",
        "rpc_keepalive",
        "rpc_server_type",
        "rpc_min_threads",
        "rpc_max_threads",
        "rpc_send_buff_size_in_bytes",
        "rpc_recv_buff_size_in_bytes",
        "thrift_framed_transport_size_in_mb",
        # network tuning and failure detection
        "internode_compression",
        "internode_send_buff_size_in_bytes",
        "internode_recv_buff_size_in_bytes",
        "inter_dc_tcp_nodelay",
        "phi_convict_threshold",
        "stream_throughput_outbound_megabits_per_sec",
        "inter_dc_stream_throughput_outbound_megabits_per_sec",
        "streaming_socket_timeout_in_ms",
        "dynamic_snitch_update_interval_in_ms",
        "dynamic_snitch_reset_interval_in_ms",
        "dynamic_snitch_badness_threshold",
        "native_transport_max_threads",
        # the REST API's Swagger UI files
        "api_ui_dir",
        "api_doc_dir",
        # sstables, compaction and caches (tablet files are SQLite databases)
        "compaction_enforce_min_threshold",
        "concurrent_compactors",
        "compaction_throughput_mb_per_sec",
        "compaction_large_partition_warning_threshold_mb",
        "sstable_preemptive_open_interval_in_mb",
        "column_index_size_in_kb",
        "key_cache_size_in_mb",
        "key_cache_save_period",
        "key_cache_keys_to_save",
        "row_cache_size_in_mb",
        "row_cache_save_period",
        "row_cache_keys_to_save",
        "counter_cache_size_in_mb",
        "counter_cache_save_period",
        "counter_cache_keys_to_save",
        "memory_allocator",
        "file_cache_size_in_mb",
        "index_summary_capacity_in_mb",
        "index_summary_resize_interval_in_minutes",
        "trickle_fsync",
        "trickle_fsync_interval_in_kb",
        "concurrent_reads",
        "concurrent_writes",
        "concurrent_counter_writes",
        # warnings only (nothing is refused by them)
        "batch_size_warn_threshold_in_kb",
        # the environment checks and idle-time work of seastar
        "developer_mode",
        "defragment_memory_on_idle",
        "request_scheduler",
        "request_scheduler_options",
        "request_scheduler_id",
        "cross_node_timeout",
    }
)


@dataclass(frozen=True)
class Checked:
    """A key whose only accepted values are those that describe what tabletdb does."""

    allowed: tuple[Any, ...]
    why: str


def _is(*values: Any) -> tuple[Any, ...]:
    return values


CHECKED_KEYS: Mapping[str, Checked] = {
    "partitioner": Checked(
        _is("org.apache.cassandra.dht.Murmur3Partitioner", "Murmur3Partitioner"),
        "tabletdb places data with the Murmur3 partitioner only",
    ),
    "maintenance_socket": Checked(_is("ignore"), "tabletdb opens no maintenance socket"),
    "strict_is_not_null_in_views": Checked(
        _is(True, "true"), "views always require IS NOT NULL on their primary key columns here"
    ),
    "auto_snapshot": Checked(_is(False, "false"), "tabletdb takes no snapshot before TRUNCATE or DROP"),
    "incremental_backups": Checked(_is(False, "false"), "tabletdb keeps no incremental backups"),
}


def check(key: str, value: Any) -> str | None:
    """None if ``value`` is accepted for the checked ``key``, else why it is not."""
    rule = CHECKED_KEYS[key]
    if value in rule.allowed or (isinstance(value, str) and value.strip() in rule.allowed):
        return None
    accepted = " or ".join(repr(v) for v in rule.allowed if not isinstance(v, bool))
    return f"{accepted} ({rule.why})"
