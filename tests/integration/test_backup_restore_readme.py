"""Backup and restore of a cluster started exactly as the README says, with relative paths.

`make run` starts `tabletdb cluster up --nodes 3 --workdir work/cluster`: the workdir is relative
to where the user stands, and so are the `--to`/`--from` directories they type. Every snapshot
used to fail there (a relative path has no file URI) and the user saw `HTTP 500 ... Server got
itself in trouble`. Here the whole user path runs from a scratch directory: cluster up, rows in,
backup, the keyspace dropped, restore; then the rows and DESCRIBE must be the same, and a rerun
of a restore whose verification was cut short counts only the token ranges it had not verified.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness.addresses import AddressAllocator, port_is_free
from tests.harness.clients import scylla_session

pytest.importorskip("tabletdb.coordinator.writes", reason="needs the replicated data path")

REPO = Path(__file__).resolve().parents[2]
ROWS = 300


@dataclass(frozen=True)
class _Contact:
    host: str
    port: int = 9042


def _tabletdb(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout, not an installed copy
    argv = [sys.executable, "-m", "tabletdb.cli.main", *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture
def readme_cluster(address_allocator: AddressAllocator, tmp_path: Path) -> Iterator[list[str]]:
    """`tabletdb cluster up --nodes 3 --workdir work/cluster` run from ``tmp_path``."""
    prefix = f"127.{address_allocator.block}.247"  # far beyond what the allocator hands out
    hosts = [f"{prefix}.{i}" for i in (1, 2, 3)]
    if not all(port_is_free(h, p) for h in hosts for p in (9042, 7000, 10000)):
        pytest.skip(f"addresses under {prefix} are busy")
    argv = [sys.executable, "-m", "tabletdb.cli.main", "cluster", "up", "--nodes", "3"]
    argv += ["--workdir", "work/cluster", "--address-prefix", prefix]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    try:
        output = []
        for line in proc.stdout:
            output.append(line)
            if re.search(r"serving CQL after", line):
                break
        else:
            pytest.fail(f"cluster up exited with {proc.wait()}: {''.join(output)}")
        yield hosts
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)


def _state(host: str) -> tuple[list[str], list[Any]]:
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    with scylla_session(_Contact(host)) as s:
        desc = [r.create_statement for r in s.execute("DESC KEYSPACE shop")]
        read = SimpleStatement("SELECT * FROM shop.orders", consistency_level=ConsistencyLevel.ALL)
        return desc, sorted(tuple(r) for r in s.execute(read))


@pytest.mark.timeout(900)  # three Spark sessions (backup, restore, rerun) and a 3-node cluster
def test_backup_and_restore_with_relative_paths(readme_cluster: list[str], tmp_path: Path) -> None:
    host = readme_cluster[0]
    with scylla_session(_Contact(host)) as s:
        s.execute(
            "CREATE KEYSPACE shop WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
        )
        s.execute(
            "CREATE TABLE shop.orders (id int, line int, item text, price decimal, PRIMARY KEY (id, line))"
        )
        insert = s.prepare("INSERT INTO shop.orders (id, line, item, price) VALUES (?, ?, ?, ?)")
        for n in range(ROWS):
            s.execute(insert, (n // 3, n % 3, f"item\n{n}" if n % 7 == 0 else f"item {n}", n * 1.5))
    before = _state(host)
    assert len(before[1]) == ROWS

    backup = _tabletdb(tmp_path, "backup", "--hosts", host, "--to", "backups/b1")
    assert backup.returncode == 0, backup.stderr[-3000:]
    assert f"{ROWS} rows" in backup.stdout and str(tmp_path / "backups/b1") in backup.stdout
    assert "━" not in backup.stderr  # not a terminal: no progress bars
    assert not (tmp_path / "work/cluster/node1/snapshots").exists() or not any(
        (tmp_path / "work/cluster/node1/snapshots").iterdir()
    )

    with scylla_session(_Contact(host)) as s:
        s.execute("DROP KEYSPACE shop", timeout=120)
    restore = _tabletdb(tmp_path, "restore", "--hosts", host, "--from", "backups/b1")
    assert restore.returncode == 0, restore.stderr[-3000:]
    assert f"{ROWS} rows" in restore.stdout
    assert _state(host) == before

    # A rerun after a restore cut short while verifying counts only what it had not verified.
    progress = tmp_path / "backups/b1/restore-progress.jsonl"
    lines = progress.read_text().splitlines()
    verified = [line for line in lines if '"verified"' in line]
    assert len(verified) >= 2
    kept = lines[: lines.index(verified[len(verified) // 2])]
    progress.write_text("".join(line + "\n" for line in kept))
    again = _tabletdb(tmp_path, "restore", "--hosts", host, "--from", "backups/b1")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "(resumed)" in again.stdout and f"{ROWS} rows" in again.stdout
    keys = [
        json.loads(line)["verified"] for line in progress.read_text().splitlines() if '"verified"' in line
    ]
    assert sorted(keys) == sorted(json.loads(line)["verified"] for line in verified)  # each counted once
