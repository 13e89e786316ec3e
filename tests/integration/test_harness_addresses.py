"""Address allocation: claimed per-process blocks, uniqueness, skipping addresses in use."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.addresses import (
    AddressAllocator,
    api_port_base_for_block,
    claim_block,
    port_is_free,
    worker_index,
)


@pytest.mark.parametrize(
    ("env", "expected"),
    [({"PYTEST_XDIST_WORKER": "gw0"}, 0), ({"PYTEST_XDIST_WORKER": "gw13"}, 13), ({}, None)],
)
def test_worker_index(env: dict[str, str], expected: int | None) -> None:
    assert worker_index(env) == expected


def test_claims_are_exclusive_and_released(tmp_path: Path) -> None:
    first, handle = claim_block(tmp_path, preferred=7)
    second, other = claim_block(tmp_path, preferred=7)
    assert (first, second) == (7, 8)
    handle.close()
    third, last = claim_block(tmp_path, preferred=7)
    assert third == 7
    other.close()
    last.close()


def test_claim_held_by_another_process_is_skipped(tmp_path: Path) -> None:
    """flock is per open file description, so another process's claim is seen as taken."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from tests.harness.addresses import claim_block; "
            "block, h = claim_block(Path(sys.argv[1]), preferred=30); print(block, flush=True); "
            "sys.stdin.read()",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "30"
        block, handle = claim_block(tmp_path, preferred=30)
        assert block == 31
        handle.close()
    finally:
        holder.kill()
        holder.wait()
    block, handle = claim_block(tmp_path, preferred=30)  # the dead holder's claim is gone
    assert block == 30
    handle.close()


def test_api_port_ranges_stay_below_the_ephemeral_range() -> None:
    bases = [api_port_base_for_block(b) for b in range(256)]
    assert min(bases) >= 20000 and max(bases) + 250 <= 32768


@pytest.fixture
def own_block() -> Iterator[int]:
    """A block claimed like a test process claims one, so no other run uses it meanwhile."""
    block, handle = claim_block()
    yield block
    handle.close()


def test_allocations_are_unique_and_in_the_block(own_block: int) -> None:
    allocator = AddressAllocator(block=own_block, api_port_base=api_port_base_for_block(own_block))
    endpoints = [allocator.allocate() for _ in range(300)]
    assert len({e.address for e in endpoints}) == 300
    assert all(e.address.startswith(f"127.{own_block}.") for e in endpoints)
    assert endpoints[254].address == f"127.{own_block}.2.1"  # the fourth octet wraps into the third
    assert all(e.native_port == 9042 for e in endpoints)


def test_busy_address_is_skipped(own_block: int) -> None:
    allocator = AddressAllocator(block=own_block, api_port_base=api_port_base_for_block(own_block))
    with socket.socket() as busy:
        busy.bind((f"127.{own_block}.1.1", 9042))
        busy.listen()
        assert not port_is_free(f"127.{own_block}.1.1", 9042)
        assert allocator.allocate().address == f"127.{own_block}.1.2"
    assert port_is_free(f"127.{own_block}.1.1", 9042)
