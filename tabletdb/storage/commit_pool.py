"""Worker threads that commit tablet stores off the event loop, so many fsyncs overlap.

A synced SQLite commit spends most of its time waiting for the disk with the GIL released. Run
on the event loop, the commits of one tick would be paid one after another while no request is
served; run here, the commits of different tablet files wait for the disk together and the loop
keeps working. The pool is process-wide (threads are started on first use and are daemons);
finished jobs are handed back to their event loop in batches, one loop wake-up for however many
commits completed meanwhile, because each wake-up costs about as much as a small commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

DEFAULT_WORKERS = 16
"""Enough for the stores one tick typically touches (tens of tablets) to sync at once."""

Work = Callable[[], Any]
Done = Callable[[Any, BaseException | None], None]
"""Called on the event loop with the work's result, or None and what it raised."""


class _Completions:
    """Results waiting to be handed to one event loop; at most one wake-up scheduled at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)
        self._lock = threading.Lock()
        self._items: list[tuple[Done, Any, BaseException | None]] = []
        self._wake_pending = False

    def report(self, done: Done, result: Any, error: BaseException | None) -> None:
        """Worker side: queue the outcome and wake the loop unless a wake-up is already on its way."""
        with self._lock:
            self._items.append((done, result, error))
            if self._wake_pending:
                return
            self._wake_pending = True
        loop = self._loop()
        if loop is None:
            return
        # RuntimeError: the loop closed while the work ran, so nobody is waiting any more
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            items, self._items = self._items, []
            self._wake_pending = False
        for done, result, error in items:
            done(result, error)


class CommitPool:
    """A fixed set of worker threads running store commits for any number of event loops."""

    def __init__(self, workers: int = DEFAULT_WORKERS) -> None:
        if workers < 1:
            raise ValueError(f"a commit pool needs at least one worker, got {workers}")
        self.workers = workers
        self._jobs: queue.SimpleQueue[tuple[Work, Done, _Completions]] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._start_lock = threading.Lock()
        self._completions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Completions] = (
            weakref.WeakKeyDictionary()
        )

    def submit(self, work: Work, done: Done) -> None:
        """Run ``work`` on a worker thread, then ``done`` on the calling (running) event loop."""
        loop = asyncio.get_running_loop()
        completions = self._completions.get(loop)
        if completions is None:
            completions = self._completions[loop] = _Completions(loop)
        if len(self._threads) < self.workers:
            self._start_workers()
        self._jobs.put((work, done, completions))

    def _start_workers(self) -> None:
        with self._start_lock:
            while len(self._threads) < self.workers:
                name = f"tabletdb-commit-{len(self._threads)}"
                thread = threading.Thread(target=_worker, args=(self._jobs,), name=name, daemon=True)
                thread.start()
                self._threads.append(thread)


def _worker(jobs: queue.SimpleQueue[tuple[Work, Done, _Completions]]) -> None:
    while True:
        work, done, completions = jobs.get()
        try:
            result, error = work(), None
        except BaseException as exc:  # handed to the waiting writer, never kills the worker
            result, error = None, exc
        completions.report(done, result, error)
        del work, done, completions, result, error


_default: CommitPool | None = None
_default_lock = threading.Lock()


def default_pool() -> CommitPool:
    """The process-wide pool that group committers use unless given one."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = CommitPool()
    return _default
