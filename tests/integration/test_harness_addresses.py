"""Address allocation: per-worker blocks, uniqueness, and skipping addresses that are in use."""

from __future__ import annotations

import socket

import pytest

from tests.harness.addresses import (
    NO_XDIST_SUBNET,
    AddressAllocator,
    api_port_base_for_worker,
    port_is_free,
    subnet_for_worker,
    worker_index,
)


@pytest.mark.parametrize(
    ("env", "expected"),
    [({"PYTEST_XDIST_WORKER": "gw0"}, 0), ({"PYTEST_XDIST_WORKER": "gw13"}, 13), ({}, None)],
)
def test_worker_index(env: dict[str, str], expected: int | None) -> None:
    assert worker_index(env) == expected


def test_workers_get_disjoint_blocks_and_port_ranges() -> None:
    assert subnet_for_worker(0) == 1 and subnet_for_worker(1) == 2
    assert subnet_for_worker(None) == NO_XDIST_SUBNET
    bases = {api_port_base_for_worker(i) for i in [None, *range(8)]}
    assert len(bases) == 9
    with pytest.raises(ValueError, match="worker index"):
        subnet_for_worker(48)


def test_allocations_are_unique_and_in_the_block() -> None:
    allocator = AddressAllocator(subnet=231, api_port_base=41000)
    endpoints = [allocator.allocate() for _ in range(20)]
    assert len({e.address for e in endpoints}) == 20
    assert all(e.address.startswith("127.0.231.") for e in endpoints)
    assert all(e.native_port == 9042 for e in endpoints)
    assert len({e.api_port for e in endpoints}) == 20


def test_busy_address_is_skipped() -> None:
    allocator = AddressAllocator(subnet=232, api_port_base=42000)
    with socket.socket() as busy:
        busy.bind(("127.0.232.1", 9042))
        busy.listen()
        assert not port_is_free("127.0.232.1", 9042)
        assert allocator.allocate().address == "127.0.232.2"
    assert port_is_free("127.0.232.1", 9042)
