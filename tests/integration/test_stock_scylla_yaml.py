"""A stock scylla.yaml starts a node: ScyllaDB's keys that do nothing here are accepted and
listed once at start-up, the ones that act (addresses given as host names, enable_tablets,
batch_size_fail_threshold_in_kb, enable_create_table_with_compact_storage) act, and keys
ScyllaDB doesn't know still stop the node with the "did you mean" line. Through the real
driver and a real node process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cassandra import InvalidRequest

from tests.harness.addresses import NodeEndpoints
from tests.harness.clients import pinned_cluster
from tests.harness.node import NodeFactory

# The keys a stock scylla.yaml sets (ScyllaDB's conf/scylla.yaml and its documented defaults),
# with this node's addresses where an operator edits them.
STOCK = """\
num_tokens: 256
data_file_directories:
    - /var/lib/scylla/data
commitlog_directory: /var/lib/scylla/commitlog
commitlog_sync: periodic
commitlog_sync_period_in_ms: 10000
commitlog_segment_size_in_mb: 32
schema_commitlog_segment_size_in_mb: 128
seed_provider:
    - class_name: org.apache.cassandra.locator.SimpleSeedProvider
      parameters:
          - seeds: "{address}"
listen_address: {address}
native_transport_port: 9042
read_request_timeout_in_ms: 5000
write_request_timeout_in_ms: 2000
cas_contention_timeout_in_ms: 1000
endpoint_snitch: SimpleSnitch
rpc_address: {address}
rpc_port: 9160
api_port: 10000
api_address: {address}
batch_size_warn_threshold_in_kb: 5
batch_size_fail_threshold_in_kb: 50
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
commitlog_total_space_in_mb: -1
internode_compression: all
murmur3_partitioner_ignore_msb_bits: 12
strict_is_not_null_in_views: true
maintenance_socket: ignore
enable_tablets: true
api_ui_dir: /opt/scylladb/swagger-ui/dist/
api_doc_dir: /opt/scylladb/api/api-doc/
compaction_enforce_min_threshold: true
"""


def _writer(tmp_path: Path, extra: str = "") -> Any:
    def write(endpoints: NodeEndpoints) -> Path:
        path = tmp_path / f"scylla-{endpoints.address}.yaml"
        path.write_text(STOCK.format(address=endpoints.address) + extra)
        return path

    return write


def test_a_stock_scylla_yaml_starts_a_node_and_lists_what_it_ignores(
    node_factory: NodeFactory, tmp_path: Path
) -> None:
    node = node_factory.create(
        config_file=_writer(tmp_path, "enable_create_table_with_compact_storage: true\n")
    )
    node.start()
    with pinned_cluster(node) as cluster:
        s = cluster.connect()
        nts = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        s.execute(f"CREATE KEYSPACE st WITH replication = {nts}")
        assert (
            "'enabled': true" in s.execute("DESC KEYSPACE st").one().create_statement
        )  # enable_tablets acted
        s.execute("CREATE TABLE st.t (k int, c int, v text, PRIMARY KEY (k, c))")
        s.execute("CREATE TABLE st.compact (k int PRIMARY KEY, v int) WITH COMPACT STORAGE")  # the key acted
        assert "COMPACT STORAGE" in s.execute("DESC TABLE st.compact").one().create_statement
        value = "x" * 1024
        one_partition = "".join(f"INSERT INTO st.t (k, c, v) VALUES (1, {c}, '{value}');" for c in range(80))
        s.execute(f"BEGIN UNLOGGED BATCH {one_partition} APPLY BATCH")  # 80 KiB, one partition: fine
        many = "".join(f"INSERT INTO st.t (k, c, v) VALUES ({k}, 0, '{value}');" for k in range(80))
        with pytest.raises(InvalidRequest, match="Batch too large: modifying 80 partitions"):
            s.execute(f"BEGIN UNLOGGED BATCH {many} APPLY BATCH")  # over the file's 50 KiB
        assert s.execute("SELECT count(*) FROM st.t WHERE k = 5").one()[0] == 0  # nothing written
        assert s.execute("SELECT count(*) FROM st.t WHERE k = 1").one()[0] == 80
    node.stop()
    log = node.log_tail(400)
    listed = [line for line in log.splitlines() if "accepted and ignored" in line]
    assert len(listed) == 1, log
    for key in (
        "data_file_directories",
        "commitlog_directory",
        "rpc_port",
        "api_ui_dir",
        "internode_compression",
    ):
        assert key in listed[0]
    assert "partitioner" not in listed[0] and "listen_address" not in listed[0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("data_file_directorys: [/data]\n", "did you mean 'data_file_directories'?"),
        ("partitioner_x: 1\n", "unknown config key 'partitioner_x'"),
    ],
    ids=["misspelt-scylla-key", "unknown-key"],
)
def test_keys_scylladb_does_not_know_still_stop_the_node(tmp_path: Path, extra: str, message: str) -> None:
    path = tmp_path / "scylla.yaml"
    path.write_text(STOCK.format(address="127.0.0.1") + extra)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tabletdb.cli.main",
            "server",
            "--config",
            str(path),
            "--workdir",
            str(tmp_path / "w"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert message in result.stderr


def test_a_value_that_would_change_behaviour_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "scylla.yaml"
    path.write_text(
        STOCK.format(address="127.0.0.1").replace("dht.Murmur3Partitioner", "dht.RandomPartitioner")
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tabletdb.cli.main",
            "server",
            "--config",
            str(path),
            "--workdir",
            str(tmp_path / "w"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "partitioner" in result.stderr and "Murmur3 partitioner only" in result.stderr
