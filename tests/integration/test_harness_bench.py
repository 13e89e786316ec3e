"""The load generator end to end against the floor server: two worker processes, CPU sampled."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.common import LoadSpec, run_load
from tests.harness.addresses import AddressAllocator
from tests.harness.probe import wait_cql_ready
from tests.harness.process import ManagedProcess

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_run_load_against_the_floor(address_allocator: AddressAllocator, tmp_path: Path) -> None:
    endpoints = address_allocator.allocate()
    argv = [sys.executable, "-m", "bench.floor_server", "--host", endpoints.address, "--port", "9042"]
    argv += ["--bind-types", "int,blob"]
    server = ManagedProcess(argv, tmp_path / "floor.log", name="floor-server", cwd=REPO_ROOT)
    server.start()
    try:
        wait_cql_ready(endpoints.address, 9042, timeout=120, alive=lambda: server.running)
        assert server.pid is not None
        spec = LoadSpec(
            endpoints.address,
            9042,
            "INSERT INTO floor.t (k, v) VALUES (?, ?)",
            values=("int_seq", "blob64"),  # a blob bound to an int marker would fail client-side
            concurrency=4,
            processes=2,
            warmup_s=0.2,
            duration_s=1.0,
        )
        result = run_load(spec, server_pid=server.pid)
    finally:
        server.stop()
    assert result.errors == 0, result.first_error
    assert result.ops > 0 and result.ops_per_s == result.ops / 1.0
    assert result.p50_ms <= result.p99_ms <= result.max_ms
    assert result.server_cpu_s is not None and result.server_cpu_s >= 0
    assert result.server_rss_mb is not None and result.server_rss_mb > 1
