"""Run a tabletdb server under cProfile: ``python -m bench.profiled OUT -- <tabletdb args>``.

The profile covers the event-loop thread (cProfile sees only the thread that enabled it), which is
where per-request CPU goes; it counts that thread's CPU time, so time lost to other processes on
a busy machine does not show. SIGUSR1 writes what was gathered so far to ``OUT.<n>`` (n = 1, 2, ...)
and starts afresh, so one server run yields one profile per workload; the rest is written to
``OUT`` when the server exits after SIGTERM. Used by ``bench_data_path --profile``.
"""

from __future__ import annotations

import cProfile
import signal
import sys
import time
from types import FrameType

from tabletdb.cli.main import main as tabletdb_main


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[2] != "--":
        raise SystemExit("usage: python -m bench.profiled OUT -- <tabletdb arguments>")
    out, argv = sys.argv[1], sys.argv[3:]
    profiler = cProfile.Profile(time.thread_time)  # CPU of the loop thread, not time preempted
    dumps = 0

    def dump(_signum: int, _frame: FrameType | None) -> None:
        nonlocal dumps
        dumps += 1
        profiler.dump_stats(f"{out}.{dumps}")  # disables the profiler
        profiler.clear()
        profiler.enable()

    signal.signal(signal.SIGUSR1, dump)
    profiler.enable()
    try:
        tabletdb_main(argv)
    except SystemExit:
        pass
    finally:
        profiler.disable()
        profiler.dump_stats(out)


if __name__ == "__main__":
    main()
