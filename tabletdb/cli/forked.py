"""Node processes forked from a parent that already imported the server (for `cluster up`).

Starting a node is mostly Python work that is the same for every node: importing the server's
modules (~0.6 s of CPU) and loading the CQL parser tables (~0.3 s). `cluster up` pays it once in
its own process, then forks one child per node; each child runs exactly what
`tabletdb server ARGS` runs (the same click command, the same config handling), so a node
behaves the same as one started on its own. The children share the loaded code copy-on-write.

Forking is safe here because the parent is single-threaded when it forks (the parser load
thread has finished) and has not created an event loop; the `random` module reseeds itself in
each child, and every other random source of a node is created after the fork.
"""

from __future__ import annotations

import importlib
import os
import select
import signal
import sys
import traceback
from pathlib import Path
from typing import NoReturn

# What `tabletdb server` imports before it serves; loaded once in the parent.
_PRELOAD = ("tabletdb.node.runner",)


def preload_server() -> None:
    """Import the server and load the CQL parser in this process, for children to inherit."""
    for module in _PRELOAD:
        importlib.import_module(module)
    from tabletdb.cql.parser import load_in_background

    load_in_background().join()


class ForkedNode:
    """A child process running `tabletdb server <args>`; a subset of subprocess.Popen's API."""

    def __init__(self, server_args: list[str], log_path: Path) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run_child(server_args, log_path)  # never returns
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = os.pidfd_open(pid)

    def poll(self) -> int | None:
        if self.returncode is None:
            waited, status = os.waitpid(self.pid, os.WNOHANG)
            if waited == self.pid:
                self._reaped(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit without polling (the pidfd becomes readable when the child exits)."""
        if self.returncode is None:
            readable, _, _ = select.select([self._pidfd], [], [], timeout)
            if not readable:
                raise TimeoutError(f"node process {self.pid} still running after {timeout}s")
            _, status = os.waitpid(self.pid, 0)
            self._reaped(status)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _reaped(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)
        os.close(self._pidfd)


def _run_child(server_args: list[str], log_path: Path) -> NoReturn:
    """In the child: log to `log_path`, run the server command, and exit with its code."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        from tabletdb.cli.main import main

        main(["server", *server_args])
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("message"), as the interpreter would report it
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
