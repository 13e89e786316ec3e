"""Protocol fuzzing against a real node (issue 18): mutated frames in every connection state.

Each case opens a raw connection to a node with PasswordAuthenticator, takes it to a state (fresh;
after STARTUP, with or without lz4/snappy; after a successful login, with or without
compression), sends mutated frames (`tests.harness.cql_frames`), then an OPTIONS "sentinel" if
the framing is still intact, half-closes and reads to the end. The server must answer with
proper responses (never a ServerError: all input here is malformed or ordinary) or close the
connection, within a liveness bound. Afterwards the node is alive, printed no traceback, its
resident memory and open sockets are back within a bound, and a fresh driver session works.

Short run: a few hundred hypothesis examples in `make test` (derandomized; each example's frames
come from a `random.Random` hypothesis seeds, as a Random it drives itself picks mostly zeros, i.e.
STARTUP frames, and shrinking a frame's bytes would say little more); `make soak` streams a million frames
from a seeded generator (no shrinking, but a failure prints the seed of its connection);
FUZZ_SEED and FUZZ_FRAMES in the environment change its seed and frame count.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import socket
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from cassandra.auth import PlainTextAuthProvider
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness import cql_frames as cf
from tests.harness.clients import scylla_session
from tests.harness.node import NodeFactory, TestNode

MODES = ("fresh", "startup", "startup-lz4", "startup-snappy", "authed", "authed-lz4", "authed-snappy")
WEIGHTED_MODES = (*MODES, "authed", "authed-lz4", "authed-snappy")
"""Logged-in connections twice as often: only they reach the statement layer."""
CASE_TIMEOUT = 60.0
"""How long the node may take to answer or close one case (liveness, not speed)."""
RSS_GROWTH_BOUND = 64 * 1024 * 1024
SOCKET_SLACK = 4
"""Sockets the node may hold beyond its count before fuzzing (a driver connection closing)."""
SETTLE_SECONDS = 30.0
FUZZ_EXAMPLES = 300
SOAK_FRAMES = 1_000_000
AUTH = {"authenticator": "PasswordAuthenticator"}


@dataclass
class Tally:
    cases: int = 0
    frames: int = 0
    answers: int = 0
    errors: dict[int, int] = field(default_factory=dict)
    closed_early: int = 0
    """Cases where the node closed the connection before the sentinel was answered."""
    messages: Counter[str] = field(default_factory=Counter)
    """Error messages (without their details) by count: shows which layers the frames reached."""

    def __str__(self) -> str:
        common = ", ".join(f"{n} x {m!r}" for m, n in self.messages.most_common(12))
        return (
            f"{self.cases} cases, {self.frames} frames, {self.answers} answers, errors by code "
            f"{ {hex(k): v for k, v in sorted(self.errors.items())} }, closed early {self.closed_early}; "
            f"most common: {common}"
        )


@dataclass
class Baseline:
    rss: int
    sockets: int
    tracebacks: int


@pytest.fixture(scope="module")
def fuzz_node(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestNode]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("fuzz"))
    try:
        yield factory.start_node(options=AUTH)
    finally:
        assert not factory.cleanup()


@pytest.fixture(scope="module")
def prepared(fuzz_node: TestNode) -> cf.Prepared:
    """Statements the node has prepared, so fuzzed EXECUTEs reach value decoding."""
    return _prepare(fuzz_node)


def _prepare(node: TestNode) -> cf.Prepared:
    with _session(node) as s:
        for ddl in cf.SCHEMA:
            s.execute(ddl)
        return [(bytes(s.prepare(text).query_id), text.count("?")) for text in cf.prepared_statements()]


def _session(node: TestNode) -> Any:
    auth = PlainTextAuthProvider(username="cassandra", password="cassandra")
    return scylla_session(node, auth_provider=auth)


def _proc(node: TestNode) -> Baseline:
    pid = node.process.pid
    assert pid is not None and node.running, f"{node!r} is not running:\n{node.log_tail()}"
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
    tracebacks = node.process.log_path.read_text(errors="replace").count("Traceback")
    return Baseline(rss, _sockets(pid), tracebacks)


def _sockets(pid: int) -> int:
    """Open sockets of the process: what a leaked connection holds (store files open lazily)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return count


def _read_until(
    sock: socket.socket, reader: cf.AnswerReader, deadline: float, stop: Any
) -> tuple[list[cf.Answer], bool]:
    """Answers until `stop(answers)` holds or the node closes (second value: closed)."""
    answers: list[cf.Answer] = []
    while not stop(answers):
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = sock.recv(65536)
        except TimeoutError:
            raise AssertionError(f"the node neither answered nor closed within {CASE_TIMEOUT:.0f}s") from None
        except ConnectionResetError:
            return answers, True
        if not data:
            return answers, True
        answers += reader.feed(data)
    return answers, False


def _state(mode: str) -> str:
    return mode.split("-")[0]


def _open(node: TestNode, mode: str) -> tuple[socket.socket, cf.AnswerReader]:
    """A connection in `mode`'s state; the handshake itself must succeed."""
    sock = socket.create_connection((node.host, node.port), timeout=CASE_TIMEOUT)
    reader = cf.AnswerReader()
    if mode == "fresh":
        return sock, reader
    compression = mode.split("-")[1] if "-" in mode else None
    deadline = time.monotonic() + CASE_TIMEOUT
    sock.sendall(cf.frame(cf.STARTUP, cf.startup_body(compression)))
    reader.compression = compression
    answers, _ = _read_until(sock, reader, deadline, lambda a: bool(a))
    assert [a.opcode for a in answers] == [cf.AUTHENTICATE], f"STARTUP answered {answers}"
    if mode.startswith("authed"):
        sock.sendall(cf.frame(cf.AUTH_RESPONSE, cf._bytes(cf.CREDENTIALS_TEXT)))
        answers, _ = _read_until(sock, reader, deadline, lambda a: bool(a))
        assert [a.opcode for a in answers] == [cf.AUTH_SUCCESS], f"login answered {answers}"
    return sock, reader


def run_case(node: TestNode, mode: str, frames: list[cf.Fuzzed], tally: Tally) -> None:
    """Send `frames` in `mode`; every answer must be a proper response, and the case must end."""
    sock, reader = _open(node, mode)
    deadline = time.monotonic() + CASE_TIMEOUT
    framed = all(f.framed for f in frames)
    payload = b"".join(f.data for f in frames) + (cf.sentinel() if framed else b"")
    answers: list[cf.Answer] = []
    with sock:
        try:
            sock.sendall(payload)
            if framed:
                got, closed = _read_until(
                    sock, reader, deadline, lambda a: any(x.stream == cf.SENTINEL_STREAM for x in a)
                )
                answers += got
                tally.closed_early += closed
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the node closed first: allowed
        got, _ = _read_until(sock, reader, deadline, lambda a: False)
        answers += got
    tally.cases += 1
    tally.frames += len(frames)
    tally.answers += len(answers)
    for answer in answers:
        error = answer.error()
        if error is not None:
            tally.errors[error[0]] = tally.errors.get(error[0], 0) + 1
            tally.messages[re.sub(r"[0-9]+|'.*'|\".*\"", "#", error[1])[:60]] += 1
            assert error[0] != cf.SERVER_ERROR, (
                f"ServerError {error[1]!r} in mode {mode} for frames {[f.data for f in frames]!r}"
            )


def check_after(node: TestNode, before: Baseline, tally: Tally) -> None:
    """The node lives, printed no traceback, gave memory and descriptors back, serves a driver."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while (after := _proc(node)).sockets > before.sockets + SOCKET_SLACK and time.monotonic() < deadline:
        time.sleep(0.2)
    context = f"before {before}, after {after}, {tally}"
    assert after.tracebacks == before.tracebacks, f"the node printed a traceback:\n{node.log_tail(60)}"
    assert after.sockets <= before.sockets + SOCKET_SLACK, f"sockets leaked: {context}"
    assert after.rss <= before.rss + RSS_GROWTH_BOUND, f"resident memory grew: {context}"
    with _session(node) as s:
        assert s.execute("SELECT key FROM system.local").one().key == "local"


def test_fuzzed_frames_get_proper_answers(fuzz_node: TestNode, prepared: cf.Prepared) -> None:
    tally = Tally()
    before = _proc(fuzz_node)

    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        rng=st.randoms(use_true_random=True), mode=st.sampled_from(WEIGHTED_MODES), count=st.integers(1, 6)
    )
    def case(rng: random.Random, mode: str, count: int) -> None:
        compression = mode.split("-")[1] if "-" in mode else None
        frames = [cf.fuzzed_frame(rng, prepared, compression, _state(mode)) for _ in range(count)]
        run_case(fuzz_node, mode, frames, tally)

    case()
    print(tally)
    assert tally.errors and tally.answers > tally.cases, f"the fuzzer never reached the server: {tally}"
    check_after(fuzz_node, before, tally)


def test_extreme_decimal_and_varint_keys_keep_their_exact_values(fuzz_node: TestNode) -> None:
    """Found while fuzzing: decimal keys were compared in the default decimal context, so keys
    with more than 28 digits collided (the second overwrote the first) and one beyond 1E+999999
    failed with a ServerError (Overflow); integers past int-to-str's 4300 digits failed too."""
    from decimal import Decimal

    decimals = [
        Decimal("1234567890123456789012345678901"),
        Decimal("1234567890123456789012345678902"),
        Decimal("1E-2000000"),
        Decimal("2E-2000000"),
        Decimal("1E+2000000"),
        Decimal((1, (9,) * 4000, 7)),  # the driver cannot serialize 4300 digits or more
    ]
    varints = [10**5000, 10**5000 + 1, -(10**5000)]
    with _session(fuzz_node) as s:
        s.execute(cf.SCHEMA[0])  # the keyspace
        s.execute("CREATE TABLE IF NOT EXISTS fuzz.dk (k int, d decimal, v varint, PRIMARY KEY (k, d, v))")
        insert = s.prepare("INSERT INTO fuzz.dk (k, d, v) VALUES (0, ?, ?)")
        for i, d in enumerate(decimals):
            s.execute(insert, (d, varints[i % len(varints)]))
        rows = list(s.execute("SELECT d, v FROM fuzz.dk WHERE k = 0"))
        assert [r.d for r in rows] == sorted(decimals)
        assert {r.v for r in rows} == set(varints)
        assert len(list(s.execute("SELECT d FROM fuzz.dk WHERE k = 0 AND d > 0"))) == 5
        # int <-> str past 4300 digits: a varint literal and SELECT JSON of one were ServerErrors
        s.execute(f"INSERT INTO fuzz.dk (k, d, v) VALUES (1, 0, {'9' * 5000})")
        assert s.execute("SELECT v FROM fuzz.dk WHERE k = 1").one().v == 10**5000 - 1
        json_rows = [r[0] for r in s.execute("SELECT JSON v FROM fuzz.dk WHERE k = 1")]
        assert json_rows == ['{"v": ' + "9" * 5000 + "}"]


def stream_frames(node: TestNode, prepared: cf.Prepared, total: int, seed: int) -> Tally:
    """Up to 200 frames per connection until `total` are sent; stops a batch at its first unframed one."""
    tally = Tally()
    master = random.Random(seed)
    while tally.frames < total:
        case_seed = master.getrandbits(32)
        rng = random.Random(case_seed)
        mode = rng.choice(WEIGHTED_MODES)
        compression = mode.split("-")[1] if "-" in mode else None
        frames: list[cf.Fuzzed] = []
        for _ in range(rng.randrange(1, 200)):
            frames.append(cf.fuzzed_frame(rng, prepared, compression, _state(mode)))
            if not frames[-1].framed:
                break
        try:
            run_case(node, mode, frames, tally)
        except AssertionError as exc:
            raise AssertionError(f"case seed {case_seed} (mode {mode}): {exc}") from None
    return tally


def test_streamed_frames_smoke(fuzz_node: TestNode, prepared: cf.Prepared) -> None:
    """The soak's frame stream, briefly, so `make test` keeps its code path working."""
    before = _proc(fuzz_node)
    tally = stream_frames(fuzz_node, prepared, total=2_000, seed=18)
    check_after(fuzz_node, before, tally)


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_a_million_streamed_frames(node_factory: NodeFactory) -> None:
    node = node_factory.start_node(options=AUTH)
    ids = _prepare(node)
    before = _proc(node)
    total = int(os.environ.get("FUZZ_FRAMES", SOAK_FRAMES))
    tally = stream_frames(node, ids, total=total, seed=int(os.environ.get("FUZZ_SEED", "1")))
    print(tally)
    check_after(node, before, tally)
