"""Frames and RPC over loopback: verbs, errors, timeouts, reconnects, fault injection."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql.tracing import TraceSession, activate, current, trace
from tabletdb.net.framing import LENGTH, MAX_FRAME, FrameDecoder, FrameError, encode_frame
from tabletdb.net.rpc import InjectedFailure, PeerUnreachable, RemoteError, RpcNode, RpcTimeout

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.binary() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=10,
)


@given(st.lists(values, max_size=5), st.integers(1, 7))
def test_decoder_reassembles_frames_split_anywhere(objs: list[Any], chunk: int) -> None:
    data = b"".join(encode_frame(o) for o in objs)
    decoder = FrameDecoder()
    out: list[Any] = []
    for i in range(0, len(data), chunk):
        out += decoder.feed(data[i : i + chunk])
    assert out == objs and decoder.pending == 0


def test_decoder_rejects_oversized_and_garbage_frames() -> None:
    with pytest.raises(FrameError, match="exceeds"):
        FrameDecoder().feed(LENGTH.pack(MAX_FRAME + 1))
    with pytest.raises(FrameError, match="not valid msgpack"):
        FrameDecoder().feed(LENGTH.pack(1) + b"\xc1")


async def _pair() -> tuple[RpcNode, RpcNode]:
    a, b = RpcNode(1), RpcNode(2)
    await a.start()
    await b.start()
    a.add_peer(2, "127.0.0.1", b.port)
    b.add_peer(1, "127.0.0.1", a.port)
    return a, b


def test_request_response_one_way_and_remote_errors() -> None:
    async def main() -> None:
        a, b = await _pair()
        got: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()

        async def echo(src: int, payload: Any) -> Any:
            return {"from": src, "echo": payload}

        async def note(src: int, payload: Any) -> None:
            await got.put((src, payload))

        async def broken(src: int, payload: Any) -> None:
            raise ValueError("bad input 42")

        b.register("echo", echo)
        b.register("note", note)
        b.register("broken", broken)
        results = await asyncio.gather(*(a.call(2, "echo", [i, b"x"]) for i in range(20)))
        assert results == [{"from": 1, "echo": [i, b"x"]} for i in range(20)]
        assert await a.send(2, "note", "hi")
        assert await got.get() == (1, "hi")
        with pytest.raises(RemoteError, match="ValueError: bad input 42"):
            await a.call(2, "broken")
        with pytest.raises(RemoteError, match="unknown verb"):
            await a.call(2, "nope")
        with pytest.raises(ValueError, match="already"):
            b.register("echo", echo)
        await a.stop()
        await b.stop()

    asyncio.run(main())


def test_timeout_drop_and_heal() -> None:
    async def main() -> None:
        a, b = await _pair()

        async def echo(src: int, payload: Any) -> Any:
            return payload

        b.register("echo", echo)
        a.faults.block(2)
        with pytest.raises(RpcTimeout, match="echo to node 2"):
            await a.call(2, "echo", 1, timeout=0.2)
        assert a.faults.dropped == 1
        a.faults.heal(2)
        b.faults.block(1)  # asymmetric: requests arrive, responses are lost
        with pytest.raises(RpcTimeout):
            await a.call(2, "echo", 1, timeout=0.2)
        b.faults.heal()
        a.faults.delay(2, 0.01)
        assert await a.call(2, "echo", 7) == 7
        a.faults.heal()
        a.faults.drop(2, 1.0)
        assert await a.send(2, "echo", 1)  # handed over, then dropped by the fault
        with pytest.raises(ValueError):
            a.faults.drop(2, 1.5)
        await a.stop()
        await b.stop()

    asyncio.run(main())


def test_a_failed_verb_fails_at_once_and_only_that_verb_until_healed() -> None:
    async def main() -> None:
        a, b = await _pair()
        calls: list[str] = []

        async def handler(src: int, payload: Any) -> Any:
            calls.append(payload)
            return payload

        b.register("copy", handler)
        b.register("other", handler)
        a.faults.fail(2, "copy")
        with pytest.raises(InjectedFailure, match="copy to node 2: failed by test fault injection"):
            await a.call(2, "copy", "held", timeout=30)  # at once: no wait for the timeout
        assert await a.call(2, "other", "flows") == "flows"
        assert calls == ["flows"] and a.faults.failed == 1 and a.faults.dropped == 0
        with pytest.raises(ValueError, match="verb"):
            a.faults.fail(2, "")
        a.faults.heal()
        assert await a.call(2, "copy", "healed") == "healed"
        await a.stop()
        await b.stop()

    asyncio.run(main())


def test_reconnects_after_the_peer_restarts() -> None:
    async def main() -> None:
        a, b = await _pair()

        async def echo(src: int, payload: Any) -> Any:
            return payload

        b.register("echo", echo)
        assert await a.call(2, "echo", 1) == 1
        port = b.port
        await b.stop()
        with pytest.raises((PeerUnreachable, RpcTimeout)):
            for _ in range(50):  # the first write may still land in the dead socket's buffer
                await a.call(2, "echo", 2, timeout=0.5)
        b2 = RpcNode(2, port=port)
        b2.register("echo", echo)
        await b2.start()
        assert await a.call(2, "echo", 3) == 3
        with pytest.raises(PeerUnreachable, match="no known address"):
            await a.call(9, "echo", 1)
        await a.stop()
        await b2.stop()

    asyncio.run(main())


def test_a_traced_call_brings_back_the_replicas_steps_and_an_untraced_one_nothing() -> None:
    """The handler runs inside a trace of its own (its `trace(...)` calls land there); the reply
    carries those events to the caller's session, sourced at the replica's address."""

    async def main() -> None:
        a, b = await _pair()
        seen: list[TraceSession | None] = []

        async def read(src: int, payload: Any) -> Any:
            seen.append(current())
            trace("Querying %d rows", 3)
            return payload

        async def broken(src: int, payload: Any) -> None:
            raise ValueError("bad input")

        b.register("data.read", read)
        b.register("broken", broken)
        assert await a.call(2, "data.read", "untraced") == "untraced"
        assert seen == [None]

        session = TraceSession("Execute CQL3 query", {}, "127.0.0.9", "127.0.0.1")
        activate(session)
        trace("Sending a read")
        assert await a.call(2, "data.read", "traced") == "traced"
        with pytest.raises(RemoteError, match="bad input"):
            await a.call(2, "broken")
        assert seen[1] is not None and seen[1] is not session
        assert [(e.activity, e.source) for e in session.events] == [
            ("Sending a read", None),
            ("data.read: message received from /127.0.0.1", "127.0.0.1"),
            ("Querying 3 rows", "127.0.0.1"),
            ("data.read: handling is done, sending a response to /127.0.0.1", "127.0.0.1"),
            ("broken: message received from /127.0.0.1", "127.0.0.1"),
            ("broken: handling is done, sending a response to /127.0.0.1", "127.0.0.1"),
        ]
        await a.stop()
        await b.stop()

    asyncio.run(main())
