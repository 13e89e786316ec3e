"""RPC over loopback with the cluster's handshake: handlers see the authenticated peer, raw or
forged frames from non-members are refused before a handler runs, and internode TLS works with
and without client certificates."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from pathlib import Path
from typing import Any

import pytest

from tabletdb.group0.topology import raft_id_of
from tabletdb.net.framing import encode_frame, read_frame
from tabletdb.net.handshake import ClusterAuthority, Hello, InternodeEncryption, Location, Me
from tabletdb.net.rpc import InternodeTls, Kind, PeerUnreachable, RemoteError, RpcNode
from tabletdb.net.tls import TlsFiles, client_context, server_context
from tests.harness.certs import TestCA
from tests.harness.fake_membership import View

HERE = Location("dc1", "r1")


def _node(
    view: View,
    host: uuid.UUID,
    mode: InternodeEncryption = InternodeEncryption.NONE,
    tls: InternodeTls | None = None,
) -> RpcNode:
    me = Me(raft_id_of(host), host, "c", view.members.get(host, HERE))
    authority = ClusterAuthority(me, _Own(view, host), frozenset({"join"}), mode, raft_id_of)
    return RpcNode(raft_id_of(host), authority=authority, tls=tls)


class _Own:
    """One node's view of the shared membership (each node has its own `me`)."""

    def __init__(self, view: View, me: uuid.UUID) -> None:
        self.view, self.me = view, me

    @property
    def group0_id(self) -> uuid.UUID | None:
        return self.view.group0_id

    def member(self, host_id: uuid.UUID) -> tuple[int, Location] | None:
        return self.view.member(host_id)

    def host_of(self, node_id: int) -> tuple[uuid.UUID, Location] | None:
        return self.view.host_of(node_id)

    def address_of(self, host_id: uuid.UUID) -> str | None:
        return self.view.address_of(host_id)

    def joining(self) -> bool:
        return self.me not in self.view.members

    def adopt_group0(self, group0_id: uuid.UUID) -> None:
        self.view.adopt_group0(group0_id)


async def _raw_request(port: int, frames: list[list[Any]]) -> list[Any]:
    """Send `frames` on a fresh plaintext connection; every frame answered until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for frame in frames:
        writer.write(encode_frame(frame))
    await writer.drain()
    answers: list[Any] = []
    try:
        async with asyncio.timeout(5):
            while len(answers) < len(frames):
                answers.append(await read_frame(reader))
    except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
        pass
    writer.close()
    return answers


def test_handlers_see_the_authenticated_peer_and_non_members_only_join() -> None:
    async def main() -> None:
        a_host, b_host, stranger = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        view = View({a_host: HERE, b_host: HERE}, group0=uuid.uuid4())
        a, b = _node(view, a_host), _node(view, b_host)
        calls: list[tuple[int, Any]] = []

        async def truncate(src: int, payload: Any) -> Any:
            calls.append((src, payload))
            return src

        async def join(src: int, payload: Any) -> Any:
            return "welcome"

        b.register("data.truncate", truncate)
        b.register("join", join)
        await a.start()
        await b.start()
        a.add_peer(b.node_id, "127.0.0.1", b.port)
        assert await a.call(b.node_id, "data.truncate", "t") == a.node_id

        # The issue's attack: one raw msgpack frame with a member's id as src, no handshake.
        answers = await _raw_request(b.port, [[Kind.REQUEST, 1, "data.truncate", a.node_id, "t"]])
        assert answers[0][0] == Kind.ERROR and "HELLO" in answers[0][4]
        # With a stranger's handshake, then a frame claiming to come from member a.
        hello = Hello(raft_id_of(stranger), stranger, "c", None, HERE, b_host).to_plain()
        answers = await _raw_request(
            b.port,
            [
                [Kind.HELLO, 0, "", 0, hello],
                [Kind.REQUEST, 7, "data.truncate", a.node_id, "t"],
                [Kind.REQUEST, 8, "join", 0, None],
            ],
        )
        assert answers[0][0] == Kind.HELLO
        assert (
            answers[1][0] == Kind.ERROR and "not a member" in answers[1][4] and str(stranger) in answers[1][4]
        )
        assert answers[2][:2] == [Kind.RESPONSE, 8] and answers[2][4] == "welcome"
        # Another cluster's node does not get past the handshake.
        other = Hello(raft_id_of(stranger), stranger, "other", None, HERE, None).to_plain()
        answers = await _raw_request(b.port, [[Kind.HELLO, 0, "", 0, other]])
        assert answers[0][0] == Kind.ERROR and "cluster 'other'" in answers[0][4]
        assert calls == [(a.node_id, "t")]

        del view.members[a_host]  # a left: its open connection is refused from the next message
        with pytest.raises(RemoteError, match="not a member"):
            await a.call(b.node_id, "data.truncate", "t")
        assert calls == [(a.node_id, "t")]
        await a.stop()
        await b.stop()

    asyncio.run(main())


def test_a_node_refuses_to_talk_to_a_host_it_did_not_expect() -> None:
    async def main() -> None:
        a_host, b_host, c_host = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        view = View({a_host: HERE, b_host: HERE, c_host: HERE})
        a, c = _node(view, a_host), _node(view, c_host)
        await a.start()
        await c.start()
        a.add_peer(raft_id_of(b_host), "127.0.0.1", c.port)  # b's address now answers as c
        with pytest.raises(PeerUnreachable, match="stale"):
            await a.call(raft_id_of(b_host), "x", None)
        await a.stop()
        await c.stop()

    asyncio.run(main())


def _tls(ca: TestCA, name: str, require_client_auth: bool, plaintext_too: bool) -> InternodeTls:
    pair = ca.issue(name)
    files = TlsFiles(
        "server_encryption_options", pair.certificate, pair.keyfile, ca.certificate, require_client_auth
    )
    return InternodeTls(server_context(files), client_context(files), 0, plaintext_too)


def test_internode_tls_all_with_client_auth(tmp_path: Path) -> None:
    ca = TestCA(tmp_path / "ca")

    async def main() -> None:
        a_host, b_host = uuid.uuid4(), uuid.uuid4()
        view = View({a_host: HERE, b_host: HERE})
        mode = InternodeEncryption.ALL
        a = _node(view, a_host, mode, _tls(ca, "a", True, False))
        b = _node(view, b_host, mode, _tls(ca, "b", True, False))

        async def echo(src: int, payload: Any) -> Any:
            return [src, payload]

        b.register("echo", echo)
        await a.start()
        await b.start()
        assert b.tls_port is not None and a.tls_port is not None
        a.tls = InternodeTls(a.tls.server, a.tls.client, b.tls_port, False)  # type: ignore[union-attr]
        a.tls_port = b.tls_port  # one machine: a dials b's TLS port (a cluster shares one)
        a.add_peer(b.node_id, "127.0.0.1", 1)  # the plaintext port is never used under `all`
        assert await a.call(b.node_id, "echo", "hi") == [a.node_id, "hi"]
        # Without a client certificate the TLS handshake itself fails.
        anonymous = ca.client_context()
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
            reader, writer = await asyncio.open_connection("127.0.0.1", b.tls_port, ssl=anonymous)
            hello = Hello(a.node_id, a_host, "c", None, HERE, None).to_plain()
            writer.write(encode_frame([Kind.HELLO, 0, "", 0, hello]))
            await writer.drain()
            await read_frame(reader)
        # A certificate from another CA is refused too.
        other = TestCA(tmp_path / "other", "other-ca")
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", b.tls_port, ssl=ca.client_context(other.issue("x"))
            )
            writer.write(encode_frame([Kind.HELLO, 0, "", 0, hello]))
            await writer.drain()
            await read_frame(reader)
        await a.stop()
        await b.stop()

    asyncio.run(main())


def test_internode_tls_dc_refuses_plaintext_across_dcs(tmp_path: Path) -> None:
    ca = TestCA(tmp_path / "ca")

    async def main() -> None:
        a_host, b_host = uuid.uuid4(), uuid.uuid4()
        view = View({a_host: Location("dc2", "r1"), b_host: HERE})
        b = _node(view, b_host, InternodeEncryption.DC, _tls(ca, "b", False, True))
        await b.start()
        # a (dc2) talks plaintext to b's plaintext port, as a misconfigured node would.
        hello = Hello(raft_id_of(a_host), a_host, "c", None, Location("dc1", "r1"), b_host).to_plain()
        answers = await _raw_request(b.port, [[Kind.HELLO, 0, "", 0, hello]])
        assert answers[0][0] == Kind.ERROR and "without TLS" in answers[0][4]
        await b.stop()

    asyncio.run(main())


def test_a_stream_frame_only_opens_a_dedicated_connection_and_is_checked_like_a_request() -> None:
    async def main() -> None:
        a_host, b_host, stranger = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        view = View({a_host: HERE, b_host: HERE})
        b = _node(view, b_host)
        handed: list[Any] = []

        async def take(src: int, payload: Any, reader: Any, writer: Any) -> None:
            handed.append((src, payload))
            writer.write(b"raw bytes")
            await writer.drain()

        b.register_stream("bulk", take)
        await b.start()
        member = Hello(raft_id_of(a_host), a_host, "c", None, HERE, b_host).to_plain()
        hello = [Kind.HELLO, 0, "", 0, member]
        reader, writer = await asyncio.open_connection("127.0.0.1", b.port)
        writer.write(encode_frame(hello) + encode_frame([Kind.STREAM, 0, "bulk", 0, "p"]))
        assert (await read_frame(reader))[0] == Kind.HELLO
        assert await reader.read() == b"raw bytes"  # the handler owned the connection
        assert handed == [(raft_id_of(a_host), "p")]
        writer.close()
        # a STREAM frame after a request is a protocol error: the connection is closed
        ask = [Kind.REQUEST, 1, "nothing", 0, None]
        answers = await _raw_request(b.port, [hello, ask, [Kind.STREAM, 0, "bulk", 0, "q"]])
        assert answers[0][0] == Kind.HELLO and Kind.RESPONSE not in [f[0] for f in answers]
        assert len(handed) == 1
        # a non-member is refused before the handler runs, as for a request
        intruder = Hello(raft_id_of(stranger), stranger, "c", None, HERE, b_host).to_plain()
        answers = await _raw_request(
            b.port, [[Kind.HELLO, 0, "", 0, intruder], [Kind.STREAM, 0, "bulk", 0, "r"]]
        )
        assert answers[1][0] == Kind.ERROR and "not a member" in answers[1][4] and len(handed) == 1
        await b.stop()

    asyncio.run(main())
