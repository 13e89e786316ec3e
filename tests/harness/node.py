"""Real tabletdb server processes for integration tests.

A TestNode is `python -m tabletdb.cli.main server ...` on its own loopback address, with its own
workdir and an output log. "Started" means CQL-ready (see probe.py), so tests never race the
server's start-up. Restart keeps the workdir: that is how durability is tested.
"""

from __future__ import annotations

import ssl
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.harness.addresses import AddressAllocator, NodeEndpoints
from tests.harness.probe import ProbeError, wait_cql_ready, wait_tcp_listening
from tests.harness.process import ManagedProcess, ProcessError, environ_with

START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0


def server_argv(
    endpoints: NodeEndpoints,
    workdir: Path,
    seeds: Sequence[str] = (),
    smp: int | None = None,
    options: Mapping[str, object] | None = None,
    log_level: str = "INFO",
    config_file: Path | None = None,
) -> list[str]:
    """The command line of one node; `options` become `-o key=value` for any config key;
    `config_file`: a scylla.yaml read first (the flags above override it)."""
    argv = [
        sys.executable,
        "-m",
        "tabletdb.cli.main",
        "server",
        "--workdir",
        str(workdir),
        "--listen-address",
        endpoints.address,
        "--native-transport-port",
        str(endpoints.native_port),
        "--api-port",
        str(endpoints.api_port),
        "--log-level",
        log_level,
    ]
    if endpoints.shard_aware_port is not None:
        argv += ["--native-shard-aware-transport-port", str(endpoints.shard_aware_port)]
    if seeds:
        argv += ["--seeds", ",".join(seeds)]
    if smp is not None:
        argv += ["--smp", str(smp)]
    for key, value in (options or {}).items():
        argv += ["-o", f"{key}={value}"]
    if config_file is not None:
        argv += ["--config", str(config_file)]
    return argv


UDF_OPTIONS: Mapping[str, object] = {"enable_user_defined_functions": "true", "experimental_features": "udf"}
"""What a node needs to take CREATE FUNCTION / AGGREGATE (ScyllaDB's two switches; off by default)."""


class TestNode:
    """One tabletdb node process; `host`/`port` are what drivers and cqlsh connect to."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(
        self,
        endpoints: NodeEndpoints,
        workdir: Path,
        seeds: Sequence[str] = (),
        smp: int | None = None,
        options: Mapping[str, object] | None = None,
        cql_ssl: ssl.SSLContext | None = None,
        log_level: str = "INFO",
        config_file: Path | None = None,
    ) -> None:
        """`cql_ssl`: the client context readiness is probed with (the node serves CQL over TLS)."""
        self.endpoints = endpoints
        self.cql_ssl = cql_ssl
        self.workdir = workdir
        self.seeds = list(seeds)
        argv = server_argv(endpoints, workdir, seeds, smp, options, log_level, config_file)
        log = workdir.parent / f"{workdir.name}.log"
        repo_root = Path(__file__).resolve().parents[2]
        self.process = ManagedProcess(
            argv,
            log,
            name=f"tabletdb@{endpoints.address}",
            env=environ_with(PYTHONUNBUFFERED="1"),
            cwd=repo_root,
        )
        self.supported: dict[str, list[str]] = {}

    @property
    def host(self) -> str:
        return self.endpoints.address

    @property
    def port(self) -> int:
        return self.endpoints.native_port

    @property
    def running(self) -> bool:
        return self.process.running

    @property
    def api_url(self) -> str:
        """Base URL of the node's REST admin API."""
        return f"http://{self.endpoints.address}:{self.endpoints.api_port}"

    @property
    def config_path(self) -> Path:
        """The effective config the node wrote at start (`<workdir>/node.yaml`)."""
        return self.workdir / "node.yaml"

    def start(self, wait: bool = True, timeout: float = START_TIMEOUT) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process.start()
        if wait:
            self.wait_ready(timeout)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """CQL answers OPTIONS and the REST API accepts connections (it starts right after CQL)."""
        try:
            self.supported = wait_cql_ready(
                self.host, self.port, timeout, alive=lambda: self.process.running, ssl_context=self.cql_ssl
            )
            wait_tcp_listening(
                self.host, self.endpoints.api_port, timeout, alive=lambda: self.process.running
            )
        except (ProbeError, TimeoutError) as exc:
            raise ProcessError(
                f"{self.process.name} did not become CQL-ready: {exc}\n"
                f"exit code: {self.process.returncode}; output tail:\n{self.process.log_tail()}"
            ) from None

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        return self.process.stop(timeout)

    def kill(self) -> int:
        return self.process.kill()

    def restart(self, wait: bool = True) -> None:
        """Graceful stop (if running) and start on the same workdir and address."""
        if self.running:
            self.stop()
        self.start(wait=wait)

    def log_tail(self, lines: int = 80) -> str:
        return self.process.log_tail(lines)

    def __repr__(self) -> str:
        state = f"pid {self.process.pid}" if self.running else "stopped"
        return f"TestNode({self.host}:{self.port}, {state}, workdir={self.workdir})"


class NodeFactory:
    """Creates nodes on fresh addresses under one base directory and cleans them all up."""

    def __init__(self, allocator: AddressAllocator, base_dir: Path) -> None:
        self.allocator = allocator
        self.base_dir = base_dir
        self.nodes: list[TestNode] = []

    def create(
        self,
        seeds: Sequence[str] = (),
        smp: int | None = None,
        options: Mapping[str, object] | None = None,
        cql_ssl: ssl.SSLContext | None = None,
        log_level: str = "INFO",
        config_file: Callable[[NodeEndpoints], Path] | None = None,
    ) -> TestNode:
        """`config_file`: writes the node's scylla.yaml once its addresses are known."""
        endpoints = self.allocator.allocate()
        workdir = self.base_dir / f"node-{endpoints.address}"
        path = None if config_file is None else config_file(endpoints)
        node = TestNode(endpoints, workdir, seeds, smp, options, cql_ssl, log_level, path)
        self.nodes.append(node)
        return node

    def start_node(
        self,
        seeds: Sequence[str] = (),
        smp: int | None = None,
        options: Mapping[str, object] | None = None,
    ) -> TestNode:
        node = self.create(seeds, smp, options)
        node.start()
        return node

    def start_cluster(
        self,
        size: int,
        smp: int | None = None,
        options: Mapping[str, object] | None = None,
        racks: Sequence[str] | None = None,
    ) -> list[TestNode]:
        """The first node seeds a new cluster; the others join one at a time, like Scylla's rule.

        ``racks``: each node's rack, in order (a tablets keyspace with views must have RF = racks)."""
        if size < 1:
            raise ValueError(f"cluster size must be >= 1, got {size}")
        if racks is not None and len(racks) != size:
            raise ValueError(f"{size} nodes need {size} racks, got {list(racks)}")

        def node_options(i: int) -> Mapping[str, object] | None:
            return options if racks is None else {**(options or {}), "rack": racks[i]}

        first = self.create(smp=smp, options=node_options(0))
        first.start()
        nodes = [first]
        for i in range(1, size):
            node = self.create(seeds=[first.host], smp=smp, options=node_options(i))
            node.start()
            nodes.append(node)
        return nodes

    def cleanup(self) -> list[str]:
        """Stop every node still running; returns problems (unclean exits) instead of raising."""
        problems: list[str] = []
        for node in self.nodes:
            if not node.running:
                continue
            try:
                code = node.stop()
            except ProcessError as exc:
                problems.append(str(exc))
                continue
            if code != 0:
                problems.append(f"{node!r} exited with {code} on SIGTERM:\n{node.log_tail(40)}")
        return problems
