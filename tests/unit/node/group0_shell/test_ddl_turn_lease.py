"""The DDL turn's lease (``group0_shell.guard``): a live holder's renewals keep its turn past the
lease, up to the cap; a holder that stops renewing loses it; a stale token renews nothing.

The lease timers are read, not waited out: each check compares the deadline a renewal set with
the loop's clock, so the test does not depend on how busy the machine is."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from tabletdb.node.group0_shell import guard
from tabletdb.node.group0_shell.guard import DdlTurns


class _Rpc:
    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}
        self.sent: list[tuple[int, str, Any]] = []

    def register(self, verb: str, handler: Any) -> None:
        self.handlers[verb] = handler

    async def send(self, peer: int, verb: str, payload: Any = None) -> bool:
        self.sent.append((peer, verb, payload))
        return True


def _leader() -> Any:
    async def read_barrier() -> None:
        return None

    return SimpleNamespace(
        is_leader=True, raft=SimpleNamespace(leader=1, commit_index=7), read_barrier=read_barrier
    )


def _deadline(turns: DdlTurns) -> float:
    assert turns._lease is not None
    return turns._lease.when()


def test_renewals_extend_the_lease_up_to_the_cap_and_only_for_the_holder() -> None:
    async def main() -> None:
        rpc = _Rpc()
        turns = DdlTurns(_leader(), rpc)  # type: ignore[arg-type]
        turns.register()
        assert set(rpc.handlers) == {guard.ACQUIRE_VERB, guard.RELEASE_VERB, guard.RENEW_VERB}
        token, leader, index = await turns.acquire()
        assert leader is None and index == 7
        loop = asyncio.get_running_loop()
        first = _deadline(turns)
        await asyncio.sleep(0.01)
        await rpc.handlers[guard.RENEW_VERB](2, token)  # a follower holder's renewal, over RPC
        assert _deadline(turns) > first
        assert abs(_deadline(turns) - (loop.time() + guard.LEASE_SECONDS)) < guard.LEASE_SECONDS / 2
        before = _deadline(turns)
        turns._renew(b"not-the-holder")
        assert _deadline(turns) == before
        # past the cap a renewal lets the lease end at once, and the next waiter gets the turn
        turns._granted_at = loop.time() - guard.MAX_HOLD_SECONDS
        waiter = asyncio.ensure_future(turns.acquire())
        turns._renew(token)
        assert _deadline(turns) <= loop.time()
        second, _, _ = await asyncio.wait_for(waiter, 30)
        assert second != token and turns._holder == second
        await turns.release(second, None)
        assert turns._holder is None and not turns._lock.locked()

    asyncio.run(main())


def test_keep_renews_through_the_leader_until_cancelled() -> None:
    async def main() -> None:
        rpc = _Rpc()
        turns = DdlTurns(_leader(), rpc)  # type: ignore[arg-type]
        renewals = asyncio.Event()
        original = rpc.send

        async def send(peer: int, verb: str, payload: Any = None) -> bool:
            renewals.set()
            return await original(peer, verb, payload)

        rpc.send = send  # type: ignore[method-assign]
        keeping = asyncio.ensure_future(turns.keep(b"tok", 3))
        await asyncio.wait_for(renewals.wait(), 30)
        keeping.cancel()
        assert rpc.sent[0] == (3, guard.RENEW_VERB, b"tok")

    asyncio.run(main())
