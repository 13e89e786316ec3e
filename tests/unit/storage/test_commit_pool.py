"""CommitPool: work runs on worker threads and its outcome comes back on the submitting loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tabletdb.storage.commit_pool import CommitPool


def run_jobs(pool: CommitPool, jobs: list[Any]) -> list[tuple[Any, BaseException | None, bool]]:
    async def main() -> list[tuple[Any, BaseException | None, bool]]:
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()
        futures = [loop.create_future() for _ in jobs]
        for job, future in zip(jobs, futures):

            def done(result: Any, error: BaseException | None, future: asyncio.Future[Any] = future) -> None:
                future.set_result((result, error, threading.get_ident() == loop_thread))

            pool.submit(job, done)
        return list(await asyncio.gather(*futures))

    return asyncio.run(main())


def test_results_come_back_on_the_loop_thread() -> None:
    pool = CommitPool(workers=3)
    outcomes = run_jobs(pool, [lambda i=i: (i, threading.current_thread().name) for i in range(50)])
    assert [result[0] for result, _, _ in outcomes] == list(range(50))
    assert all(on_loop for _, _, on_loop in outcomes)
    assert all(name.startswith("tabletdb-commit-") for (_, name), _, _ in outcomes)


def test_an_exception_is_reported_and_the_worker_survives() -> None:
    def fail() -> None:
        raise OSError("disk full")

    pool = CommitPool(workers=1)
    outcomes = run_jobs(pool, [fail, lambda: "after"])
    assert outcomes[0][0] is None and isinstance(outcomes[0][1], OSError)
    assert outcomes[1][:2] == ("after", None)


def test_a_pool_serves_successive_event_loops() -> None:
    pool = CommitPool(workers=2)
    assert run_jobs(pool, [lambda: 1])[0][0] == 1
    assert run_jobs(pool, [lambda: 2])[0][0] == 2


def test_a_pool_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        CommitPool(workers=0)
