"""Loopback address and port allocation for test servers.

Every node gets its own loopback address, so all nodes can use Scylla's default CQL ports (9042,
19042) and only the REST API port comes from a range. Linux routes all of 127.0.0.0/8 to the
loopback interface, so no set-up is needed.

Each test process (each pytest-xdist worker, or a run without xdist) claims a whole block
127.B.0.0/16, B in 1..254, by holding an exclusive flock on a lock file for its lifetime. The
kernel releases the lock when the process dies, so a crashed run frees its block. A fixed
per-worker block (gw0 -> one block, gw1 -> another) would not be enough on a shared machine: two
concurrent runs would both use gw0's block and connect to each other's nodes. 127.0.x.y (B = 0)
is left for people and benchmarks (bench/ uses 127.0.99.x).
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

LOCK_DIR = Path(tempfile.gettempdir()) / "tabletdb-test-addresses"
FIRST_BLOCK, LAST_BLOCK = 1, 254
# REST API ports: 20000 + 250 per block slot (48 slots), staying below Linux's ephemeral range
# (32768+), so a client socket can never be holding a port that a server is about to bind.
API_PORT_BASE = 20000
API_PORTS_PER_SLOT = 250
API_SLOTS = 48
HOSTS_PER_OCTET = 254


def worker_index(env: dict[str, str] | None = None) -> int | None:
    """The pytest-xdist worker number (gw3 -> 3), or None outside xdist."""
    name = (env if env is not None else dict(os.environ)).get("PYTEST_XDIST_WORKER", "")
    if name.startswith("gw") and name[2:].isdigit():
        return int(name[2:])
    return None


def api_port_base_for_block(block: int) -> int:
    return API_PORT_BASE + (block % API_SLOTS) * API_PORTS_PER_SLOT


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


def claim_block(lock_dir: Path = LOCK_DIR, preferred: int | None = None) -> tuple[int, BinaryIO]:
    """Claim a free 127.B.0.0/16 block; keep the returned file open to keep the claim."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    span = LAST_BLOCK - FIRST_BLOCK + 1
    start = (preferred if preferred is not None else FIRST_BLOCK) - FIRST_BLOCK
    for offset in range(span):
        block = FIRST_BLOCK + (start + offset) % span
        handle = (lock_dir / f"block-{block}.lock").open("ab")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return block, handle
    raise RuntimeError(f"all loopback blocks 127.{FIRST_BLOCK}..{LAST_BLOCK}.0.0/16 are claimed ({lock_dir})")


@dataclass(frozen=True)
class NodeEndpoints:
    """Where one test node listens."""

    address: str
    native_port: int
    api_port: int
    shard_aware_port: int | None


class AddressAllocator:
    """Hands out (address, ports) for test nodes in one 127.B.0.0/16 block, skipping busy ones.

    Addresses are not reused within a run until the block wraps (64,516 nodes), so a node that
    was killed and left sockets behind does not confuse the next test.
    """

    def __init__(
        self,
        block: int,
        api_port_base: int,
        native_port: int = 9042,
        shard_aware_port: int | None = None,
        claim: BinaryIO | None = None,
    ) -> None:
        if not 0 <= block <= 255:
            raise ValueError(f"block octet {block} outside 0..255")
        self.block = block
        self.api_port_base = api_port_base
        self.native_port = native_port
        self.shard_aware_port = shard_aware_port
        self._claim = claim  # the open lock file: the block stays ours while it is open
        self._next = 0
        self._lock = threading.Lock()

    @classmethod
    def for_this_process(cls) -> AddressAllocator:
        """Claim a block for this test process (xdist workers start their search at their index)."""
        index = worker_index()
        block, handle = claim_block(preferred=None if index is None else FIRST_BLOCK + index)
        return cls(block, api_port_base_for_block(block), claim=handle)

    def release(self) -> None:
        if self._claim is not None:
            self._claim.close()
            self._claim = None

    def allocate(self) -> NodeEndpoints:
        with self._lock:
            for _ in range(HOSTS_PER_OCTET * HOSTS_PER_OCTET):
                n = self._next
                self._next = (n + 1) % (HOSTS_PER_OCTET * HOSTS_PER_OCTET)
                third, fourth = 1 + n // HOSTS_PER_OCTET, 1 + n % HOSTS_PER_OCTET
                endpoints = NodeEndpoints(
                    address=f"127.{self.block}.{third}.{fourth}",
                    native_port=self.native_port,
                    api_port=self.api_port_base + n % API_PORTS_PER_SLOT,
                    shard_aware_port=self.shard_aware_port,
                )
                if self._all_free(endpoints):
                    return endpoints
        raise RuntimeError(f"no free loopback address left in 127.{self.block}.0.0/16")

    @staticmethod
    def _all_free(endpoints: NodeEndpoints) -> bool:
        ports = [endpoints.native_port, endpoints.api_port]
        if endpoints.shard_aware_port is not None:
            ports.append(endpoints.shard_aware_port)
        return all(port_is_free(endpoints.address, port) for port in ports)
