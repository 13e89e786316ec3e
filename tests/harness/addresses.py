"""Loopback address and port allocation for test servers.

Every node gets its own 127.0.x.y address so all nodes can use Scylla's default CQL ports (9042,
19042; the REST API port comes from a per-worker range) and tests on different
pytest-xdist workers never collide: worker gwN owns 127.0.(N+1).0/24; a run without xdist
owns 127.0.250.0/24. Linux routes all of 127.0.0.0/8 to the loopback interface, so no set-up
is needed.
"""

from __future__ import annotations

import errno
import os
import socket
import threading
from dataclasses import dataclass

# API ports: 20000 + 250 per worker slot, staying below Linux's ephemeral range (32768+) so a
# client socket can never be holding a port a server is about to bind.
MAX_WORKERS = 48
NO_XDIST_SUBNET = 250
API_PORT_BASE = 20000
API_PORTS_PER_WORKER = 250


def worker_index(env: dict[str, str] | None = None) -> int | None:
    """The pytest-xdist worker number (gw3 -> 3), or None outside xdist."""
    name = (env if env is not None else dict(os.environ)).get("PYTEST_XDIST_WORKER", "")
    if name.startswith("gw") and name[2:].isdigit():
        return int(name[2:])
    return None


def subnet_for_worker(index: int | None) -> int:
    """Third octet of the worker's 127.0.x.0/24 block."""
    if index is None:
        return NO_XDIST_SUBNET
    if not 0 <= index < MAX_WORKERS:
        raise ValueError(f"xdist worker index {index} outside 0..{MAX_WORKERS - 1}: no address block left")
    return index + 1


def api_port_base_for_worker(index: int | None) -> int:
    slot = MAX_WORKERS if index is None else index
    return API_PORT_BASE + slot * API_PORTS_PER_WORKER


def port_is_free(address: str, port: int) -> bool:
    """True if a server could bind (address, port) now (SO_REUSEADDR, as asyncio servers use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
                return False
            raise
    return True


@dataclass(frozen=True)
class NodeEndpoints:
    """Where one test node listens."""

    address: str
    native_port: int
    api_port: int
    shard_aware_port: int | None


class AddressAllocator:
    """Hands out (address, ports) for test nodes in this worker's block, skipping busy ones.

    Addresses are not reused within a run until the block wraps (254 nodes), so a node that was
    killed and left sockets behind does not confuse the next test.
    """

    def __init__(
        self,
        subnet: int,
        api_port_base: int,
        native_port: int = 9042,
        shard_aware_port: int | None = None,
    ) -> None:
        if not 0 <= subnet <= 255:
            raise ValueError(f"subnet octet {subnet} outside 0..255")
        self.subnet = subnet
        self.api_port_base = api_port_base
        self.native_port = native_port
        self.shard_aware_port = shard_aware_port
        self._next_host = 1
        self._lock = threading.Lock()

    @classmethod
    def for_this_worker(cls) -> AddressAllocator:
        index = worker_index()
        return cls(subnet_for_worker(index), api_port_base_for_worker(index))

    def allocate(self) -> NodeEndpoints:
        with self._lock:
            for _ in range(254):
                host = self._next_host
                self._next_host = host % 254 + 1
                endpoints = NodeEndpoints(
                    address=f"127.0.{self.subnet}.{host}",
                    native_port=self.native_port,
                    api_port=self.api_port_base + host % API_PORTS_PER_WORKER,
                    shard_aware_port=self.shard_aware_port,
                )
                if self._all_free(endpoints):
                    return endpoints
        raise RuntimeError(f"no free loopback address left in 127.0.{self.subnet}.0/24")

    @staticmethod
    def _all_free(endpoints: NodeEndpoints) -> bool:
        ports = [endpoints.native_port, endpoints.api_port]
        if endpoints.shard_aware_port is not None:
            ports.append(endpoints.shard_aware_port)
        return all(port_is_free(endpoints.address, port) for port in ports)
