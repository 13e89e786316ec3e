"""`tabletdb cluster up`: three forked nodes form one cluster, serve CQL, and stop on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness.addresses import AddressAllocator, port_is_free
from tests.harness.clients import scylla_session

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class _Contact:
    host: str
    port: int = 9042


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


@pytest.mark.parametrize("spawn", [False, True], ids=["fork", "spawn"])
def test_cluster_up_serves_cql_on_every_node_and_stops(
    address_allocator: AddressAllocator, tmp_path: Path, spawn: bool
) -> None:
    # Third octet 250 + spawn: far beyond what the allocator hands out in a run.
    prefix = f"127.{address_allocator.block}.{250 + int(spawn)}"
    hosts = [f"{prefix}.{i}" for i in (1, 2, 3)]
    if not all(port_is_free(host, port) for host in hosts for port in (9042, 7000, 10000)):
        pytest.skip(f"addresses under {prefix} are busy")
    argv = [sys.executable, "-m", "tabletdb.cli.main", "cluster", "up", "--nodes", "3"]
    argv += ["--workdir", str(tmp_path), "--address-prefix", prefix] + (["--spawn"] if spawn else [])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    assert proc.stdout is not None
    try:
        output = []
        for line in proc.stdout:
            output.append(line)
            if re.search(r"serving CQL after", line):
                break
        else:
            logs = {p.name: p.read_text()[-2000:] for p in tmp_path.glob("node*.log")}
            pytest.fail(f"cluster up exited with {proc.wait()}: {''.join(output)}\n{logs}")
        nodes = _children(proc.pid)
        assert len(nodes) == 3
        with scylla_session(_Contact(hosts[1])) as session:
            assert sorted(host.address for host in session.cluster.metadata.all_hosts()) == hosts
            session.execute(
                "CREATE KEYSPACE up WITH replication = "
                "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
            )
            session.execute("CREATE TABLE up.t (k int PRIMARY KEY, v text)")
            session.execute("INSERT INTO up.t (k, v) VALUES (1, 'one')")
            from cassandra import ConsistencyLevel
            from cassandra.query import SimpleStatement

            read = SimpleStatement("SELECT v FROM up.t WHERE k = 1", consistency_level=ConsistencyLevel.ALL)
            assert [row.v for row in session.execute(read)] == ["one"]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    assert code == 0
    assert not any(_alive(pid) for pid in nodes)
    for index in (1, 2, 3):
        assert "serving CQL" in (tmp_path / f"node{index}.log").read_text()


def _start_up(prefix: str, nodes: int, workdir: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "tabletdb.cli.main", "cluster", "up", "--nodes", str(nodes)]
    argv += ["--workdir", str(workdir), "--address-prefix", prefix]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)


def test_cluster_up_never_takes_another_listener_for_its_node(
    address_allocator: AddressAllocator, tmp_path: Path
) -> None:
    """Something else on node 2's CQL port: node 2 refuses to start, and `cluster up` says so
    (before, it probed the port, found the stranger answering and reported "serving")."""
    prefix = f"127.{address_allocator.block}.252"
    hosts = [f"{prefix}.{i}" for i in (1, 2)]
    if not all(port_is_free(host, port) for host in hosts for port in (9042, 7000, 10000)):
        pytest.skip(f"addresses under {prefix} are busy")
    with socket.socket() as stranger:
        stranger.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        stranger.bind((hosts[1], 9042))
        stranger.listen()
        proc = _start_up(prefix, 2, tmp_path)
        output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, output
    assert "serving CQL after" not in output
    assert "node 2 exited with 1" in output, output
    assert "cannot listen on CQL (native_transport_port)" in (tmp_path / "node2.log").read_text()


def test_cluster_up_stops_when_one_of_its_nodes_dies(
    address_allocator: AddressAllocator, tmp_path: Path
) -> None:
    prefix = f"127.{address_allocator.block}.253"
    hosts = [f"{prefix}.{i}" for i in (1, 2)]
    if not all(port_is_free(host, port) for host in hosts for port in (9042, 7000, 10000)):
        pytest.skip(f"addresses under {prefix} are busy")
    proc = _start_up(prefix, 2, tmp_path)
    assert proc.stdout is not None
    try:
        output = []
        for line in proc.stdout:
            output.append(line)
            if "serving CQL after" in line:
                break
        else:
            pytest.fail(f"cluster up exited with {proc.wait()}: {''.join(output)}")
        nodes = _children(proc.pid)
        os.kill(nodes[1], signal.SIGKILL)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, rest
    assert re.search(rf"node [12] exited with -{int(signal.SIGKILL)} .*; stopping the cluster", rest), rest
    assert not any(_alive(pid) for pid in nodes)
