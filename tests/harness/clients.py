"""Real clients against a test node: scylla-driver in-process, cqlsh and Apache's driver as subprocesses.

Apache cassandra-driver and cqlsh install the same Python packages as scylla-driver and
scylla-cqlsh, so they run from the separate `.venv-cassandra` (built by `make install`); snippets
for it execute in a subprocess and hand results back as JSON. cqlsh always runs with HOME set to
an empty temporary directory so a developer's ~/.cassandra/cqlshrc cannot change what a test sees.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

REPO_ROOT = Path(__file__).resolve().parents[2]
CASSANDRA_VENV = REPO_ROOT / ".venv-cassandra"
RESULT_MARKER = "@@HARNESS-RESULT@@ "
CLIENT_WAIT = 60.0
"""Seconds the driver waits for a request, a connection or schema agreement. Its defaults (10 s,
5 s, 2 s, 10 s) are exceeded on a loaded two-core box; then a DDL returns before every node has
the schema (the driver only logs that) and the next statement, sent round-robin, fails."""
PATIENT_DRIVER: dict[str, float] = {
    "connect_timeout": CLIENT_WAIT,
    "control_connection_timeout": CLIENT_WAIT,
    "max_schema_agreement_wait": CLIENT_WAIT,
}
"""Cluster(...) keyword arguments for tests that build their own driver Cluster."""


class Endpoint(Protocol):
    """Anything with a CQL address: a TestNode, or the benchmark floor server."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


class ClientError(RuntimeError):
    """A client subprocess failed; the message carries its output."""


@contextlib.contextmanager
def scylla_cluster(
    endpoints: Endpoint | Sequence[Endpoint], protocol_version: int | None = 4, **kwargs: Any
) -> Iterator[Any]:
    """A connected-on-demand scylla-driver Cluster; shut down on exit.

    `protocol_version=None` lets the driver negotiate (it starts at v5 and must downgrade to v4),
    which is how most applications connect.
    """
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import RoundRobinPolicy

    nodes = [endpoints] if not isinstance(endpoints, Sequence) else list(endpoints)
    ports = {node.port for node in nodes}
    if len(ports) != 1:
        raise ValueError(f"the driver uses one port for all contact points; got {sorted(ports)}")
    options: dict[str, Any] = {
        "contact_points": [node.host for node in nodes],
        "port": ports.pop(),
        "execution_profiles": {
            EXEC_PROFILE_DEFAULT: ExecutionProfile(
                load_balancing_policy=RoundRobinPolicy(), request_timeout=CLIENT_WAIT
            )
        },
        **PATIENT_DRIVER,
        **kwargs,
    }
    if protocol_version is not None:
        options["protocol_version"] = protocol_version
    cluster = Cluster(**options)
    try:
        yield cluster
    finally:
        cluster.shutdown()


@contextlib.contextmanager
def pinned_cluster(
    node: Endpoint,
    protocol_version: int | None = 4,
    never_retry: bool = False,
    request_timeout: float = CLIENT_WAIT,
    **kwargs: Any,
) -> Iterator[Any]:
    """A scylla-driver Cluster whose requests all go to `node`, never to the peers it discovers.

    For tests about what one particular node has applied: round-robin would send some statements
    (a catch-up barrier, the read that checks it) to another node. `never_retry`: the driver
    answers every error as it came (workloads that count acknowledged writes must see each one).
    """
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
    from cassandra.policies import FallthroughRetryPolicy, RetryPolicy, WhiteListRoundRobinPolicy

    policy = WhiteListRoundRobinPolicy([node.host])
    retry = FallthroughRetryPolicy() if never_retry else RetryPolicy()
    profile = ExecutionProfile(
        load_balancing_policy=policy, retry_policy=retry, request_timeout=request_timeout
    )
    with scylla_cluster(
        node, protocol_version, execution_profiles={EXEC_PROFILE_DEFAULT: profile}, **kwargs
    ) as cluster:
        yield cluster


@contextlib.contextmanager
def scylla_session(
    endpoints: Endpoint | Sequence[Endpoint],
    protocol_version: int | None = 4,
    keyspace: str | None = None,
    **kwargs: Any,
) -> Iterator[Any]:
    """A scylla-driver Session (cassandra.cluster.Session); the cluster is shut down on exit."""
    with scylla_cluster(endpoints, protocol_version, **kwargs) as cluster:
        yield cluster.connect(keyspace) if keyspace else cluster.connect()


@dataclass(frozen=True)
class CqlshResult:
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> CqlshResult:
        if self.returncode != 0:
            raise ClientError(
                f"cqlsh exited with {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"
            )
        return self


def scylla_cqlsh_path() -> Path:
    return Path(sys.executable).parent / "cqlsh"


def apache_cqlsh_path() -> Path:
    return _cassandra_venv_bin("cqlsh")


def _cassandra_venv_bin(name: str) -> Path:
    path = CASSANDRA_VENV / "bin" / name
    if not path.exists():
        raise ClientError(f"{path} is missing: build the Apache client venv with `make install`")
    return path


def clean_client_env(home: Path) -> dict[str, str]:
    """The environment for client subprocesses: empty HOME, no inherited cqlsh/venv settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CQLSH", "PYTHON", "VIRTUAL_ENV"))}
    env["HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_cqlsh(
    endpoint: Endpoint,
    command: str,
    apache: bool = False,
    args: Sequence[str] = (),
    timeout: float = 120.0,
    home: Path | None = None,
) -> CqlshResult:
    """Run `cqlsh host port -e command` (scylla-cqlsh, or Apache cqlsh with apache=True).

    scylla-cqlsh spends about 5 s at exit joining scylla-driver's libev thread (its atexit
    cleanup), whatever the server does; batch statements into one call where a test allows.
    """
    binary = apache_cqlsh_path() if apache else scylla_cqlsh_path()
    with contextlib.ExitStack() as stack:
        if home is None:
            home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cqlsh-home-")))
        argv = [str(binary), endpoint.host, str(endpoint.port), *args, "-e", command]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout, env=clean_client_env(home), cwd=home
            )
        except subprocess.TimeoutExpired as exc:
            raise ClientError(
                f"cqlsh {command!r} did not finish in {timeout:.0f}s; output: {exc.stdout!r}"
            ) from None
    return CqlshResult(done.returncode, done.stdout, done.stderr)


_PRELUDE = """
import json, sys
from cassandra.cluster import Cluster

HOST, PORT, PROTOCOL, WAIT = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])

def rows(result):
    return [dict(row._asdict()) if hasattr(row, "_asdict") else list(row) for row in result]

def connect(**kwargs):
    if PROTOCOL != "auto":
        kwargs.setdefault("protocol_version", int(PROTOCOL))
    for option in ("connect_timeout", "control_connection_timeout", "max_schema_agreement_wait"):
        kwargs.setdefault(option, WAIT)
    cluster = Cluster([HOST], port=PORT, **kwargs)
    session = cluster.connect()
    session.default_timeout = WAIT
    return cluster, session

result = None
"""

_EPILOGUE = """
print({marker!r} + json.dumps(result, default=str), flush=True)
"""


def run_cassandra_driver(
    endpoint: Endpoint, code: str, protocol_version: int | None = 4, timeout: float = 120.0
) -> Any:
    """Run `code` under Apache cassandra-driver 3.30.1 (in .venv-cassandra) and return its `result`.

    The snippet gets `HOST`, `PORT`, `connect(**cluster_kwargs) -> (cluster, session)` and
    `rows(result_set) -> list[dict]`, and must assign a JSON-serialisable value to `result`
    (non-JSON values are turned into strings).
    """
    script = _PRELUDE + textwrap.dedent(code) + _EPILOGUE.format(marker=RESULT_MARKER)
    python = _cassandra_venv_bin("python")
    version = "auto" if protocol_version is None else str(protocol_version)
    with tempfile.TemporaryDirectory(prefix="cassandra-snippet-") as home:
        argv = [str(python), "-c", script, endpoint.host, str(endpoint.port), version, str(CLIENT_WAIT)]
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=clean_client_env(Path(home)),
                cwd=home,
            )
        except subprocess.TimeoutExpired as exc:
            raise ClientError(
                f"cassandra-driver snippet ran over {timeout:.0f}s; output: {exc.stdout!r}"
            ) from None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_MARKER) and done.returncode == 0:
            return json.loads(line[len(RESULT_MARKER) :])
    raise ClientError(
        f"cassandra-driver snippet failed (exit {done.returncode})\n"
        f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    )


def cassandra_driver_query(
    endpoint: Endpoint, statements: Sequence[str], protocol_version: int | None = 4
) -> list[list[dict[str, Any]]]:
    """Execute statements in order with Apache cassandra-driver; rows of each, as dicts."""
    code = f"""
cluster, session = connect()
result = [rows(session.execute(statement)) for statement in {list(statements)!r}]
cluster.shutdown()
"""
    value: list[list[dict[str, Any]]] = run_cassandra_driver(endpoint, code, protocol_version)
    return value
