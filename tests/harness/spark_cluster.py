"""A real Spark standalone cluster for tests: one master and N workers from the pyspark install.

The daemons are `bin/spark-class org.apache.spark.deploy.master.Master` / `...worker.Worker`
(the classes `sbin/start-master.sh` runs), started in the foreground as `ManagedProcess`es, so
their output lands in the harness's logs and a failing test shows it. Everything binds to
127.0.0.1 on ephemeral ports (parallel test processes never collide); the master's URL is read
from its log. The master's REST submission server (a fixed port, 6066) is switched off.

Workers run their executors with the test process's interpreter (PYSPARK_PYTHON) and with the
tabletdb tree this test imports on PYTHONPATH: a worktree whose venv has another checkout
installed editable would otherwise run that checkout's code in the executors. Each worker gets
its own temporary directory (TMPDIR and Spark's local dirs) and the driver another
(`driver_env`), so nothing can hand a file from the driver to an executor through /tmp: on one
machine a path is "shared", but only the paths a command is given (input, rejects, backup and
export directories) may be.

A Spark application on this cluster must ask for no more memory per executor than a worker
offers, or it waits forever for executors: `conf()` gives the settings `cli_args()` passes as
`--conf` (executor memory, and the driver bound to 127.0.0.1 where the executors reach it).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness.process import ManagedProcess, ProcessError

LOOPBACK = "127.0.0.1"
START_TIMEOUT = 180.0
"""A daemon is a JVM: ~5 s on a quiet box, much more with every core busy."""
STOP_TIMEOUT = 60.0
WORKER_MEMORY = "1g"
EXECUTOR_MEMORY = "512m"
DAEMON_MEMORY = "256m"
_MASTER_URL = re.compile(r"Starting Spark master at (spark://[\w.\-]+:\d+)")
_PROPERTIES = {
    # the master's REST submission server listens on the fixed port 6066 when on
    "spark.master.rest.enabled": "false",
    # each application's files under a worker's work dir are what shows it ran there; keep them
    "spark.worker.cleanup.enabled": "false",
}


class SparkClusterError(RuntimeError):
    """The cluster could not start; the message carries the daemon's output tail."""


def pyspark_home() -> Path:
    """SPARK_HOME of the pip-installed pyspark (it ships `bin/spark-class` and the jars)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def tabletdb_root() -> Path:
    """The directory holding the `tabletdb` package this process imports."""
    import tabletdb

    return Path(tabletdb.__file__).resolve().parent.parent


@dataclass
class SparkCluster:
    root: Path
    master: ManagedProcess
    master_url: str
    workers: list[ManagedProcess] = field(default_factory=list)
    worker_dirs: list[Path] = field(default_factory=list)

    def conf(self) -> dict[str, str]:
        return {
            "spark.executor.memory": EXECUTOR_MEMORY,
            "spark.driver.host": LOOPBACK,
            "spark.driver.bindAddress": LOOPBACK,
        }

    def cli_args(self) -> list[str]:
        """`--master` and `--conf` options for a tabletdb command (load, backup, restore, cdc)."""
        args = ["--master", self.master_url]
        for key, value in self.conf().items():
            args += ["--conf", f"{key}={value}"]
        return args

    def driver_env(self) -> dict[str, str]:
        """Environment for a command run as the driver: its own TMPDIR, apart from the workers'."""
        tmp = self.root / "driver-tmp"
        tmp.mkdir(exist_ok=True)
        return {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": _pythonpath(), "SPARK_LOCAL_IP": LOOPBACK}

    def applications(self) -> list[Path]:
        """Executor directories (`<work>/<app-id>/<executor-id>`) of every application so far."""
        return sorted(p for work in self.worker_dirs for p in work.glob("app-*/*") if p.is_dir())

    def executor_log_tail(self, lines: int = 40) -> str:
        """The last lines of every executor's stderr, for assertion messages."""
        out = []
        for executor in self.applications():
            stderr = executor / "stderr"
            if stderr.exists():
                text = stderr.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {executor}:\n" + "\n".join(text))
        return "\n".join(out) or "(no executor logs)"

    def stop(self) -> list[str]:
        """SIGTERM the workers (each stops its executors), then the master; problems as text."""
        problems = []
        for process in [*self.workers, self.master]:
            try:
                if process.running:
                    process.stop(STOP_TIMEOUT)
            except ProcessError as exc:
                problems.append(str(exc))
        return problems


def _pythonpath() -> str:
    existing = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (str(tabletdb_root()), existing) if p)


def _daemon_env(tmp: Path) -> dict[str, str]:
    tmp.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "SPARK_HOME": str(pyspark_home()),
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "SPARK_LOCAL_DIRS": str(tmp),
        "TMPDIR": str(tmp),
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": _pythonpath(),
    }


def _spark_class(*args: str) -> list[str]:
    return [str(pyspark_home() / "bin" / "spark-class"), *args]


def _wait(process: ManagedProcess, text: str) -> None:
    try:
        process.wait_for_output(text, START_TIMEOUT)
    except ProcessError as exc:
        raise SparkClusterError(str(exc)) from None


def start_master(root: Path, properties: Path) -> tuple[ManagedProcess, str]:
    master = ManagedProcess(
        _spark_class(
            "org.apache.spark.deploy.master.Master",
            *("--host", LOOPBACK, "--port", "0", "--webui-port", "0"),
            *("--properties-file", str(properties)),
        ),
        root / "master.log",
        name="spark-master",
        env=_daemon_env(root / "master-tmp"),
        cwd=root,
    )
    master.start()
    _wait(master, "I have been elected leader")
    found = _MASTER_URL.search(master.log_path.read_text(errors="replace"))
    if found is None:
        raise SparkClusterError(f"spark-master printed no URL:\n{master.log_tail()}")
    return master, found.group(1)


def start_worker(root: Path, properties: Path, master_url: str, index: int, cores: int) -> ManagedProcess:
    work = root / f"worker-{index}"
    work.mkdir(parents=True, exist_ok=True)
    worker = ManagedProcess(
        _spark_class(
            "org.apache.spark.deploy.worker.Worker",
            master_url,
            *("--host", LOOPBACK, "--port", "0", "--webui-port", "0"),
            *("--cores", str(cores), "--memory", WORKER_MEMORY, "--work-dir", str(work)),
            *("--properties-file", str(properties)),
        ),
        root / f"worker-{index}.log",
        name=f"spark-worker-{index}",
        env=_daemon_env(root / f"worker-{index}-tmp"),
        cwd=work,
    )
    worker.start()
    return worker


@contextmanager
def start_spark_cluster(root: Path, workers: int = 2, cores: int = 1) -> Iterator[SparkCluster]:
    """A running master with ``workers`` registered workers of ``cores`` cores; stopped on exit."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SparkClusterError("Spark needs a Java runtime (java on PATH or JAVA_HOME); none found")
    root.mkdir(parents=True, exist_ok=True)
    properties = root / "spark-daemons.conf"
    properties.write_text("".join(f"{k} {v}\n" for k, v in _PROPERTIES.items()))
    master, url = start_master(root, properties)
    cluster = SparkCluster(root, master, url)
    try:
        for index in range(workers):
            cluster.workers.append(start_worker(root, properties, url, index, cores))
            cluster.worker_dirs.append(root / f"worker-{index}")
        for worker in cluster.workers:  # started together, waited for together
            _wait(worker, "Successfully registered with master")
        yield cluster
    except BaseException:
        cluster.stop()  # the test's own error is the one to see
        raise
    problems = cluster.stop()
    if problems:
        raise SparkClusterError("Spark daemons did not stop cleanly:\n" + "\n".join(problems))
