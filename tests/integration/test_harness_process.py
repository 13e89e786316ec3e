"""Process control on small `python -c` programs: stop, kill, restart, output capture, reporting."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.addresses import AddressAllocator
from tests.harness.node import NodeFactory, server_argv
from tests.harness.process import (
    ManagedProcess,
    ProcessError,
    environ_with,
    processes_to_report,
    wait_for_exit,
)

# Prints a line per start, exits 0 on SIGTERM (a graceful server), else sleeps forever.
GRACEFUL = """
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: (print("stopping", file=sys.stderr, flush=True), sys.exit(0)))
print("started", file=sys.stderr, flush=True)
while True:
    time.sleep(1)
"""

STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ignoring SIGTERM", flush=True)
while True:
    time.sleep(1)
"""


def sleeper(tmp_path: Path, program: str = GRACEFUL) -> ManagedProcess:
    """Run from a file, so the harness's start marker (which echoes argv) holds no output text."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "sleeper.py"
    script.write_text(program)
    return ManagedProcess([sys.executable, str(script)], tmp_path / "out.log", name="sleeper")


def test_stop_sends_sigterm_and_reports_the_exit_code(tmp_path: Path) -> None:
    process = sleeper(tmp_path)
    process.start()
    process.wait_for_output("started")
    assert process.running and process.pid is not None
    assert process.stop() == 0
    assert not process.running
    assert "stopping" in process.log_tail()
    assert "exited with 0" in process.log_tail()


def test_kill_is_sigkill(tmp_path: Path) -> None:
    process = sleeper(tmp_path)
    process.start()
    process.wait_for_output("started")
    assert process.kill() == -signal.SIGKILL
    assert "stopping" not in process.log_tail()


def test_restart_appends_to_the_same_log(tmp_path: Path) -> None:
    process = sleeper(tmp_path)
    process.start()
    process.wait_for_output("started")
    first_pid = process.pid
    process.restart()
    process.wait_for_output("started", count=2)
    assert process.pid != first_pid and process.starts == 2
    log = process.log_tail(1000)
    assert "start #1" in log and "start #2" in log and "stopping" in log
    process.kill()
    assert process.exit_codes == [0, -signal.SIGKILL]


def test_wait_for_output_ignores_the_harness_markers_and_fails_on_exit(tmp_path: Path) -> None:
    script = tmp_path / "quick.py"
    script.write_text("print('done')\n")
    process = ManagedProcess([sys.executable, str(script), "marker-text"], tmp_path / "q.log", name="quick")
    process.start()
    process.wait_for_output("done")
    with pytest.raises(ProcessError, match="exited before printing 'marker-text'"):
        process.wait_for_output("marker-text")  # only in the harness's start line, never printed


def test_start_twice_is_an_error(tmp_path: Path) -> None:
    process = sleeper(tmp_path)
    process.start()
    try:
        with pytest.raises(ProcessError, match="already running"):
            process.start()
    finally:
        process.kill()


def test_process_ignoring_sigterm_is_killed_and_reported(tmp_path: Path) -> None:
    process = sleeper(tmp_path, STUBBORN)
    process.start()
    process.wait_for_output("ignoring SIGTERM")
    with pytest.raises(ProcessError, match="ignored SIGTERM") as info:
        process.stop(timeout=0.5)
    assert "ignoring SIGTERM" in str(info.value)  # the output tail is in the message
    assert not process.running


def test_failure_report_lists_running_and_recently_stopped(tmp_path: Path) -> None:
    before = time.time()
    running = sleeper(tmp_path / "a")
    stopped = sleeper(tmp_path / "b")
    never = ManagedProcess([sys.executable, "-c", "pass"], tmp_path / "c.log")
    running.start()
    stopped.start()
    stopped.kill()
    try:
        reported = processes_to_report(before)
        assert running in reported and stopped in reported and never not in reported
        assert stopped not in processes_to_report(time.time() + 1)
    finally:
        running.kill()


def test_server_argv_uses_scylla_flag_names(tmp_path: Path, address_allocator: AddressAllocator) -> None:
    endpoints = address_allocator.allocate()
    argv = server_argv(endpoints, tmp_path, seeds=["127.0.0.1"], smp=1, options={"num_tokens": 16})
    assert argv[:4] == [sys.executable, "-m", "tabletdb.cli.main", "server"]
    joined = " ".join(argv)
    assert f"--listen-address {endpoints.address}" in joined
    assert f"--api-port {endpoints.api_port}" in joined
    assert "--seeds 127.0.0.1" in joined and "--smp 1" in joined and "-o num_tokens=16" in joined


def test_node_with_bad_config_exits_2_and_says_why(node_factory: NodeFactory) -> None:
    """Runs the real `tabletdb server` command line; needs no server implementation."""
    node = node_factory.create(options={"smp": 0})
    node.start(wait=False)
    assert wait_for_exit(node.process, timeout=120) == 2
    assert "config error: config key 'smp'" in node.log_tail()


def test_wait_ready_reports_an_early_exit_with_its_output(node_factory: NodeFactory) -> None:
    node = node_factory.create(options={"no_such_key": 1})
    with pytest.raises(ProcessError, match="did not become CQL-ready") as info:
        node.start()
    assert "unknown config key 'no_such_key'" in str(info.value)


INNER_TEST = r"""
import sys
import time
from pathlib import Path
from tests.harness.process import ManagedProcess

def test_fails_while_a_server_runs(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        "import sys, time\n"
        "print('hello-from-the-server', file=sys.stderr, flush=True)\n"
        "time.sleep(60)\n"
    )
    process = ManagedProcess([sys.executable, str(script)], tmp_path / "out.log", name="inner-server")
    process.start()
    try:
        while "hello-from-the-server" not in process.log_tail():
            time.sleep(0.01)
        assert False, "deliberate failure"
    finally:
        process.kill()
"""


def test_failure_report_carries_the_server_output(tmp_path: Path) -> None:
    """Run a failing test in a child pytest that loads our conftest hooks; its report must show
    the output of the process the test had running."""
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_runtest_makereport, pytest_runtest_setup  # noqa: F401\n"
    )
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    repo_root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=repo_root,
        env=environ_with(PYTHONPATH=str(repo_root)),
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "output of inner-server" in done.stdout
    assert "hello-from-the-server" in done.stdout
