"""Control of one real OS process: start, SIGTERM stop, SIGKILL, restart, captured output.

Output (stdout and stderr) goes to a log file that survives restarts (each start appends a
marker line), so a failing test can show what the server said across its whole life. Every
process is recorded in a registry that the pytest failure hook reads.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1
# Resolved once in the parent: after fork the child must not dlopen (the loader lock may be held
# by another thread of the parent at fork time).
try:
    _PRCTL: ctypes._NamedFuncPointer | None = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _PRCTL = None


def _die_with_parent() -> None:
    """Runs in the child: let the kernel SIGKILL it if the test process dies first.

    Without this a crashed pytest worker leaves servers holding addresses for the next run.
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL))


class ProcessError(RuntimeError):
    """A process did not start or stop as asked; the message carries its output tail."""


class ManagedProcess:
    """One restartable process whose output is captured in `log_path`.

    Start processes from the test's main thread: the kernel's parent-death signal fires when the
    *thread* that started the child exits, so a node started from a short-lived worker thread
    would be killed with it.
    """

    def __init__(
        self,
        argv: Sequence[str],
        log_path: Path,
        name: str | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self.name = name or Path(self.argv[0]).name
        self.env = env
        self.cwd = cwd
        self.starts = 0
        self.last_activity = 0.0
        self.exit_codes: list[int] = []
        self._popen: subprocess.Popen[bytes] | None = None
        REGISTRY.append(self)

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen is not None else None

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    def start(self) -> None:
        if self.running:
            raise ProcessError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"=== harness: start #{self.starts}: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=self.env,
                cwd=self.cwd,
                preexec_fn=_die_with_parent,
            )
        self.last_activity = time.time()

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait; a process that ignores it is killed and reported as an error."""
        return self._signal_and_wait(signal.SIGTERM, timeout, escalate=True)

    def kill(self, timeout: float = 30.0) -> int:
        """SIGKILL (a crash, as far as the process can tell) and reap it."""
        return self._signal_and_wait(signal.SIGKILL, timeout, escalate=False)

    def restart(self, timeout: float = 60.0) -> None:
        if self.running:
            self.stop(timeout)
        self.start()

    def wait(self, timeout: float) -> int:
        if self._popen is None:
            raise ProcessError(f"{self.name} was never started")
        code = self._popen.wait(timeout)
        return code

    def _signal_and_wait(self, sig: signal.Signals, timeout: float, escalate: bool) -> int:
        popen = self._popen
        if popen is None:
            raise ProcessError(f"{self.name} was never started")
        self.last_activity = time.time()
        if popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                popen.send_signal(sig)
            try:
                popen.wait(timeout)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
                if escalate:
                    self._record(popen)
                    raise ProcessError(
                        f"{self.name} (pid {popen.pid}) ignored {sig.name} for {timeout:.0f}s and was killed;"
                        f" output tail:\n{self.log_tail()}"
                    ) from None
        return self._record(popen)

    def _record(self, popen: subprocess.Popen[bytes]) -> int:
        code = popen.returncode
        self.exit_codes.append(code)
        with self.log_path.open("ab") as log:
            log.write(f"=== harness: pid {popen.pid} exited with {code}\n".encode())
        return code

    def log_tail(self, lines: int = 80) -> str:
        try:
            data = self.log_path.read_bytes()
        except FileNotFoundError:
            return "(no output file)"
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    def wait_for_output(self, text: str, timeout: float = 60.0, count: int = 1) -> None:
        """Block until `text` appears `count` times in the output (since the first start).

        For events a test can only observe in the log; fails early if the process exits.
        """
        deadline = time.monotonic() + timeout
        while True:
            running = self.running  # read first: output read after an exit is complete
            if self._output().count(text) >= count:
                return
            if not running:
                raise ProcessError(f"{self.name} exited before printing {text!r}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise ProcessError(
                    f"{self.name} did not print {text!r} within {timeout:.0f}s:\n{self.log_tail()}"
                )
            time.sleep(0.02)

    def _output(self) -> str:
        """Everything the process printed, without the harness's own marker lines."""
        try:
            text = self.log_path.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""
        return "\n".join(line for line in text.splitlines() if not line.startswith("=== harness:"))

    def cleanup(self) -> None:
        """Kill if still running; used by fixture finalizers, never raises for a dead process."""
        if self.running:
            self.kill()


REGISTRY: list[ManagedProcess] = []


def processes_to_report(since: float) -> list[ManagedProcess]:
    """Processes worth showing for a failure: still running, or started/stopped since `since`."""
    return [p for p in REGISTRY if p.starts and (p.running or p.last_activity >= since)]


def wait_for_exit(process: ManagedProcess, timeout: float) -> int:
    """Wait for a process that is expected to exit on its own (e.g. a config error)."""
    try:
        code = process.wait(timeout)
    except subprocess.TimeoutExpired:
        raise ProcessError(
            f"{process.name} still running after {timeout:.0f}s:\n{process.log_tail()}"
        ) from None
    return code


def environ_with(**updates: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(updates)
    return env
