"""``tabletdb cluster up``: a local N-node cluster on 127.0.0.1 .. 127.0.0.N for development.

Every node gets its own loopback address, so all use Scylla's default ports (CQL 9042, REST API
10000, internode 7000). All start at once; node 1 founds the cluster and the others join through
it as soon as it answers. The command waits until every node it started serves — CQL answers on
its address and the REST API there names the host id in that node's own workdir, so another
cluster already on those addresses is never taken for this one — prints how to connect, and
stops all nodes on Ctrl-C or SIGTERM, or as soon as one of them exits (exit status 1).

The nodes are forked from this process after it imported the server once (see
`tabletdb.cli.forked`): N nodes on a small machine otherwise pay N times the same second of
Python start-up. `--spawn` starts each node as a fresh `tabletdb server` process instead.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType
from typing import Protocol

import click

from tabletdb.cli.forked import ForkedNode, preload_server
from tabletdb.node.identity import IDENTITY_FILE

CQL_PORT = 9042
API_PORT = 10000
WATCH_POLL = 0.5
"""How often a serving cluster checks that none of its nodes exited."""
READY_TIMEOUT = 180.0
READY_POLL = 0.02  # a refused connect costs microseconds; a long pause only delays the report
STOP_TIMEOUT = 30.0


DEFAULT_PREFIX = "127.0.0"


def node_address(index: int, prefix: str = DEFAULT_PREFIX) -> str:
    """<prefix>.<index> (127.0.0.<index> by default) for index 1..254."""
    if not 1 <= index <= 254:
        raise click.BadParameter(f"node index {index} is outside 1..254")
    return f"{prefix}.{index}"


def node_argv(
    index: int, workdir: Path, seed: str, log_level: str, prefix: str = DEFAULT_PREFIX
) -> list[str]:
    """The command line of node `index`, as a fresh process would run it."""
    args = node_server_args(index, workdir, seed, log_level, prefix)
    return [sys.executable, "-m", "tabletdb.cli.main", "server", *args]


def node_server_args(
    index: int, workdir: Path, seed: str, log_level: str, prefix: str = DEFAULT_PREFIX
) -> list[str]:
    """The arguments of `tabletdb server` for node `index`."""
    return [
        "--workdir",
        str(workdir / f"node{index}"),
        "--listen-address",
        node_address(index, prefix),
        "--seeds",
        seed,
        "--log-level",
        log_level,
    ]


def cql_ready(address: str, port: int = CQL_PORT) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def own_host_id(node_workdir: Path) -> str | None:
    """The host id the node started in ``node_workdir`` chose (None until it wrote it)."""
    try:
        return str(json.loads((node_workdir / IDENTITY_FILE).read_text())["host_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def serving_host_id(address: str, port: int = API_PORT) -> str | None:
    """The host id the REST API on ``address`` answers with (None: nothing answers yet)."""
    try:
        with urllib.request.urlopen(
            f"http://{address}:{port}/storage_service/hostid/local", timeout=1.0
        ) as r:
            return str(json.loads(r.read()))
    except (OSError, urllib.error.URLError, ValueError):
        return None


class NodeProcess(Protocol):
    """What the cluster needs of a node process (subprocess.Popen and ForkedNode both have it)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, signum: int) -> None: ...
    def kill(self) -> None: ...


class LocalCluster:
    """The node processes of one `cluster up`; each logs to <workdir>/node<i>.log."""

    def __init__(
        self, nodes: int, workdir: Path, log_level: str, prefix: str = DEFAULT_PREFIX, fork: bool = True
    ) -> None:
        self.nodes = nodes
        self.prefix = prefix
        self.workdir = workdir
        self.log_level = log_level
        self.fork = fork
        self.processes: list[NodeProcess] = []

    def start_node(self, index: int) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log_path = self.workdir / f"node{index}.log"
        seed = node_address(1, self.prefix)
        if self.fork:
            args = node_server_args(index, self.workdir, seed, self.log_level, self.prefix)
            self.processes.append(ForkedNode(args, log_path))
            return
        with log_path.open("ab") as log:
            argv = node_argv(index, self.workdir, seed, self.log_level, self.prefix)
            self.processes.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

    def wait_ready(self, indexes: range, stop: threading.Event) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        pending = set(indexes)
        while pending and not stop.is_set():
            for index in sorted(pending):
                process = self.processes[index - 1]
                if process.poll() is not None:
                    raise click.ClickException(
                        f"node {index} exited with {process.returncode}; see {self.workdir}/node{index}.log"
                    )
                if self.serves(index):
                    pending.discard(index)
            if pending and time.monotonic() > deadline:
                raise click.ClickException(
                    f"nodes {sorted(pending)} did not serve CQL in {READY_TIMEOUT:.0f}s"
                )
            stop.wait(READY_POLL)

    def serves(self, index: int) -> bool:
        """Node ``index`` — the process this command started, not whatever else listens on its
        address — serves CQL and its REST API."""
        address = node_address(index, self.prefix)
        if not cql_ready(address):
            return False
        expected = own_host_id(self.workdir / f"node{index}")
        return expected is not None and serving_host_id(address) == expected

    def first_exited(self) -> tuple[int, int] | None:
        """(index, exit status) of a node that is no longer running, if any."""
        for index, process in enumerate(self.processes, start=1):
            code = process.poll()
            if code is not None:
                return index, code
        return None

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except (subprocess.TimeoutExpired, TimeoutError):
                process.kill()
                process.wait()


@click.group("cluster")
def cluster_group() -> None:
    """Run a local multi-node cluster for development."""


@cluster_group.command("up")
@click.option("--nodes", "-n", type=click.IntRange(1, 254), default=3, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False), default="work/cluster", show_default=True)
@click.option("--log-level", default="WARNING", show_default=True, help="Log level of every node.")
@click.option(
    "--address-prefix", default=DEFAULT_PREFIX, show_default=True, help="Node i listens on PREFIX.i."
)
@click.option(
    "--spawn",
    is_flag=True,
    help="Start every node as a fresh process instead of forking it from an already loaded server.",
)
def up(nodes: int, workdir: str, log_level: str, address_prefix: str, spawn: bool) -> None:
    """Start NODES nodes on 127.0.0.1..127.0.0.NODES and keep them running until Ctrl-C."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    fork = not spawn and hasattr(os, "fork")
    root = Path(workdir).expanduser().resolve()  # nodes and their logs never depend on a cwd
    cluster = LocalCluster(nodes, root, log_level, address_prefix, fork=fork)
    started = time.monotonic()
    # All at once: a joiner keeps asking its seed until the founder answers, and a restarted
    # cluster needs a majority back anyway.
    try:
        if fork:
            preload_server()
        for index in range(1, nodes + 1):
            cluster.start_node(index)
        cluster.wait_ready(range(1, nodes + 1), stop)
        if not stop.is_set():
            _print_ready(nodes, time.monotonic() - started, root, address_prefix)
        while not stop.wait(WATCH_POLL):
            exited = cluster.first_exited()
            if exited is not None:
                index, code = exited
                raise click.ClickException(
                    f"node {index} exited with {code} (see {root}/node{index}.log); stopping the cluster"
                )
    finally:
        click.echo("stopping the cluster ...", err=True)
        cluster.stop()


def _print_ready(nodes: int, seconds: float, workdir: Path, prefix: str) -> None:
    addresses = [node_address(i, prefix) for i in range(1, nodes + 1)]
    click.echo(
        f"tabletdb cluster of {nodes} node(s) serving CQL after {seconds:.1f}s: {', '.join(addresses)}"
    )
    click.echo(f"  connect: .venv/bin/cqlsh {addresses[0]} {CQL_PORT}")
    click.echo(f"  driver:  Cluster({addresses!r}, port={CQL_PORT})")
    click.echo(f"  status:  tabletdb status --host {addresses[0]}")
    click.echo(f"  nodetool: tabletdb nodetool -h {addresses[0]} status")
    click.echo(f"  logs:    {workdir}/node<i>.log; Ctrl-C stops all nodes", nl=True)
    sys.stdout.flush()
