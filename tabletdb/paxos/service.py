"""The asyncio shell around the pure Paxos core: RPC verbs for the acceptor, a driver for the proposer.

Acceptor side (every node): the verbs ``paxos.prepare``, ``paxos.accept`` and ``paxos.commit``
carry a table id, a token and the message. A request for one partition is handled under that
partition's lock in the order decide -> apply a commit to the base table (``apply``: the
replica's normal local apply path, views and indexes included) -> persist the acceptor state
(fsynced) -> attach the partition's data to a promise -> reply, so nothing a reply announces
can be lost to a kill -9.

Proposer side (the coordinator; implements ``query.lwt.PaxosRounds``): the replicas of the
partition come from the data path's placement (``Replicas``, the same answer writes and reads
use; LOCAL_SERIAL keeps those of this node's datacenter). It checks that a quorum of them is
alive (Unavailable otherwise), then feeds the `Proposer` replies and clock ticks and sends what
it asks for. Requests to this node itself skip the network; replicas the failure detector
reports down are not sent to (the proposer is told they were not delivered). Time running out
surfaces as WriteTimeout with write type CAS.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from tabletdb.coordinator.consistency import ResponseTracker
from tabletdb.coordinator.context import Replicas
from tabletdb.coordinator.placement import Replica, ReplicaSet, expected_per_dc
from tabletdb.cql.consistency import LOCAL_SERIAL, SERIAL
from tabletdb.cql.errors import InvalidRequest, Unavailable, WriteTimeout
from tabletdb.net.rpc import Handler, RpcError
from tabletdb.paxos.acceptor import DurableAcceptor
from tabletdb.paxos.lwt import Write
from tabletdb.paxos.messages import (
    Accept,
    Commit,
    Prepare,
    Promise,
    Reply,
    Request,
    from_plain,
    to_plain,
)
from tabletdb.paxos.proposer import Done, NeedValue, Outcome, Output, Proposer, Send, Timing
from tabletdb.paxos.rounds import OnRead, decode_mutations, encode_mutations
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import Catalog, TableDef
from tabletdb.storage.paxos_state import PaxosStateCommitter, PaxosStateStore

log = logging.getLogger(__name__)

VERBS = {Prepare: "paxos.prepare", Accept: "paxos.accept", Commit: "paxos.commit"}


class Rpc(Protocol):
    """What the service needs of ``net.rpc.RpcNode`` (tests pass an in-process network)."""

    node_id: int

    def register(self, verb: str, handler: Handler) -> None: ...

    async def call(self, peer: int, verb: str, payload: Any = None, timeout: float = 5.0) -> Any: ...


@dataclass(frozen=True)
class PaxosTimeouts:
    """Seconds. The transaction's budget is contention plus one write (Cassandra's two settings)."""

    cas_contention: float = 1.0
    write: float = 2.0


class PaxosService:
    def __init__(
        self,
        rpc: Rpc,
        state_path: str,
        tables: Callable[[uuid.UUID], TableDef | None],
        replicas: Replicas,
        apply: Write,
        timeouts: PaxosTimeouts = PaxosTimeouts(),
    ) -> None:
        self._rpc = rpc
        self._acceptor = DurableAcceptor(PaxosStateStore(state_path))
        self._saves = PaxosStateCommitter(self._acceptor.store)
        self._tables = tables
        self._replicas = replicas
        self._apply = apply
        self._timeouts = timeouts
        self._locks: dict[bytes, tuple[asyncio.Lock, list[int]]] = {}
        """Per partition key: the lock and how many requests hold or wait for it."""
        self._seq = itertools.count(1)
        self._known_tables: FrozenMap[uuid.UUID, tuple[str, str]] | None = None
        self.contentions = 0
        """Rounds lost to competing proposers since start (observability)."""

    def set_timeouts(self, timeouts: PaxosTimeouts) -> None:
        """New timeouts (an operator's live config update) for the transactions that start next."""
        self._timeouts = timeouts

    def register(self) -> None:
        for verb in VERBS.values():
            self._rpc.register(verb, self._on_request)

    def close(self) -> None:
        self._acceptor.store.close()

    def follow_schema(self, catalog: Catalog) -> None:
        """Forget the Paxos state of tables seen to disappear (DROP), as the data stores do.

        catalog.ids shares structure with the previous catalog's map, so the difference costs
        what the change touched: a set of every table id per schema change made a CREATE TABLE
        at 5,000 tables cost 6x one at 10 (profiled: 45 % of a node's CPU during a fill).
        """
        if self._known_tables is not None:
            for table_id in self._known_tables.keys_missing_from(catalog.ids):
                removed = self._acceptor.store.forget_prefix(table_id.bytes)
                log.info("paxos state of dropped table %s removed rows=%d", table_id, removed)
        self._known_tables = catalog.ids

    # --- acceptor ------------------------------------------------------------------------------

    async def _on_request(self, src: int, payload: Any) -> Any:
        table_id, token, plain = payload
        table = self._tables(uuid.UUID(bytes=bytes(table_id)))
        if table is None:
            raise InvalidRequest(f"unknown table id {uuid.UUID(bytes=bytes(table_id))} in a Paxos request")
        message = from_plain(plain)
        if not isinstance(message, Prepare | Accept | Commit):
            raise InvalidRequest(f"{type(message).__name__} is not a Paxos request")
        return to_plain(await self.handle(table, int(token), message))

    async def handle(self, table: TableDef, token: int, request: Request) -> Reply:
        lock, users = self._locks.setdefault(request.key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                before, step = self._acceptor.decide(request)
                if step.apply is not None:
                    await self._apply(table, decode_mutations(step.apply.value))
                record = self._acceptor.changed(before, step)
                if record is not None:
                    await self._saves.save(request.key, record)
                reply = step.reply
                if isinstance(reply, Promise) and reply.ok:
                    reply = replace(reply, read=self._partition(table, token, request.key[16:]))
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[request.key]
        return reply

    def _partition(self, table: TableDef, token: int, partition_key: bytes) -> bytes | None:
        """This replica's whole partition, every cell version and tombstone (reconciled by the proposer)."""
        found = self._replicas.local.partition_mutations(table, partition_key, token)
        return encode_mutations(found) if found else None

    # --- proposer ------------------------------------------------------------------------------

    async def transact(
        self,
        table: TableDef,
        token: int,
        partition_key: bytes,
        on_read: OnRead,
        serial: int = SERIAL,
        commit: int | None = None,
        budget: float | None = None,
    ) -> bool:
        every = self._replicas.placement.replicas(table, token)
        placed = every
        if serial == LOCAL_SERIAL:
            placed = tuple(r for r in placed if r.dc == self._replicas.local_dc)
        replicas = tuple(r.raft_id for r in placed)
        level = "LOCAL_SERIAL" if serial == LOCAL_SERIAL else "SERIAL"
        expected = expected_per_dc(every)  # the keyspace's RF where the tablet is short of it
        size = expected.get(self._replicas.local_dc, 0) if serial == LOCAL_SERIAL else sum(expected.values())
        quorum = max(len(replicas), size) // 2 + 1
        if len(self._replicas.placement.write_sets(table, token)) > 1:
            # Paxos runs on one replica set; while a migration (or a vnode range changing owners)
            # writes to two, a commit on the old set could miss the new one after streaming, and
            # accepted proposals do not move with the data. Refused (retryable) until the move
            # switched to the new set.
            moving = "tablet" if self._replicas.placement.tablet_map(table.id) is not None else "token range"
            raise Unavailable(
                f"Cannot achieve consistency level {level}: the {moving} of {table.keyspace}.{table.name} "
                f"holding token {token} is moving to new replicas; lightweight transactions and "
                "counter updates on it wait until the move switches over, retry",
                serial,
                quorum,
                0,
            )
        alive = [r for r in placed if self._replicas.is_up(r)]
        if len(alive) < quorum or not replicas:
            raise Unavailable(
                f"Cannot achieve consistency level {level}: {quorum} replicas needed, {len(alive)} alive",
                serial,
                quorum,
                len(alive),
            )
        t = self._timeouts
        start = _now_us()
        total = t.cas_contention + t.write if budget is None else budget
        timing = Timing(deadline=start + int(total * 1e6), round_timeout=int(min(t.write, total) * 1e6))
        seq = next(self._seq) & 0xFFFFFFFF
        key = table.id.bytes + partition_key
        enough = None if commit is None else self._commit_level(commit, every, {r.raft_id: r for r in placed})
        proposer = Proposer(
            key, replicas, quorum, self._rpc.node_id, seq, timing, seed=start ^ seq, commit_enough=enough
        )
        run = _Round(self, table, token, proposer, on_read, {r.raft_id: r for r in placed})
        outcome = await run.drive()
        self.contentions += run.contentions
        if outcome is Outcome.APPLIED:
            return True
        if outcome is Outcome.NOT_APPLIED:
            return False
        what = "may or may not have been applied" if outcome is Outcome.UNKNOWN else "was not applied"
        raise WriteTimeout(
            f"Paxos on {table.keyspace}.{table.name} timed out ({run.contentions} contended rounds); "
            f"the write {what}",
            serial,
            0,
            quorum,
            "CAS",
        )

    def _commit_level(
        self, cl: int, every: ReplicaSet, by_id: dict[int, Replica]
    ) -> Callable[[frozenset[int]], bool]:
        """Whether the replicas that acknowledged our commit meet ``cl`` (counted over all the token's
        replicas, as a plain write at ``cl`` would be)."""
        local_dc = self._replicas.local_dc

        def enough(acked: frozenset[int]) -> bool:
            tracker = ResponseTracker(cl, every, local_dc, write=True)
            for r in acked:
                tracker.ack(by_id[r])
            return tracker.satisfied

        return enough


class _Round:
    """One transaction's event loop: replies and deadlines in, the proposer's requests out."""

    def __init__(
        self,
        service: PaxosService,
        table: TableDef,
        token: int,
        proposer: Proposer,
        on_read: OnRead,
        replicas: dict[int, Replica],
    ) -> None:
        self.s, self.table, self.token, self.proposer, self.on_read = service, table, token, proposer, on_read
        self.replicas = replicas
        self.inbox: asyncio.Queue[tuple[int, Reply | _Failed]] = asyncio.Queue()
        self.tasks: set[asyncio.Task[None]] = set()
        self.contentions = 0

    async def drive(self) -> Outcome:
        try:
            done = self._handle(self.proposer.start(_now_us()))
            while done is None:
                wake = self.proposer.next_wakeup
                timeout = None if wake is None else max(0.0, (wake - _now_us()) / 1e6)
                try:
                    src, reply = await asyncio.wait_for(self.inbox.get(), timeout)
                    if isinstance(reply, _Failed):
                        done = self._handle(self.proposer.undelivered(src, reply.request, _now_us()))
                    else:
                        done = self._handle(self.proposer.receive(src, reply, _now_us()))
                except TimeoutError:
                    done = self._handle(self.proposer.tick(_now_us()))
            self.contentions = done.contentions
            return done.outcome
        finally:
            for task in self.tasks:
                task.cancel()

    def _handle(self, outputs: Sequence[Output]) -> Done | None:
        pending = list(outputs)
        while pending:
            out = pending.pop(0)
            if isinstance(out, Done):
                return out
            if isinstance(out, NeedValue):
                pending += self.proposer.provide(self.on_read(out.ballot, out.reads), _now_us())
            elif not self.s._replicas.is_up(self.replicas[out.dst]):
                pending += self.proposer.undelivered(out.dst, out.message, _now_us())
            else:
                self._send(out)
        return None

    def _send(self, out: Send) -> None:
        async def call() -> None:
            s = self.s
            try:
                if out.dst == s._rpc.node_id:
                    reply = await s.handle(self.table, self.token, out.message)
                else:
                    payload = [self.table.id.bytes, self.token, to_plain(out.message)]
                    verb = VERBS[type(out.message)]
                    raw = await s._rpc.call(out.dst, verb, payload, timeout=s._timeouts.write)
                    reply = from_plain(raw)  # type: ignore[assignment]
            except (RpcError, OSError, ValueError) as exc:
                log.debug("paxos %s to node %s failed: %s", type(out.message).__name__, out.dst, exc)
                if isinstance(out.message, Prepare) or _never_delivered(exc):
                    self.inbox.put_nowait((out.dst, _Failed(out.message)))
                return
            except Exception:  # a local failure (storage) counts as no answer, like a remote one
                log.exception("paxos %s on this node failed", type(out.message).__name__)
                return
            self.inbox.put_nowait((out.dst, reply))

        if isinstance(out.message, Commit):
            # The outcome needs only a quorum of acks; the other replicas must still learn it.
            self.s._replicas.spawn(call())
            return
        task = asyncio.ensure_future(call())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


@dataclass(frozen=True)
class _Failed:
    """A request whose call failed so that the proposer may count it as not delivered.

    Without this, a replica killed before the failure detector noticed stays silent to the
    proposer until the round timeout, and one refusal from a competing proposer then stalls the
    round (no quorum can be refused, none can be reached) for that long. A prepare that failed in
    any way may be counted as refused (its only effect is a retry with a higher ballot); an accept
    only when the connection was refused, i.e. it certainly was not delivered (else it may have
    been accepted, and treating it as rejected could lose track of our value).
    """

    request: Request


def _never_delivered(exc: BaseException) -> bool:
    """The connection was refused: the request never reached the peer."""
    return isinstance(exc, ConnectionRefusedError) or isinstance(exc.__cause__, ConnectionRefusedError)


def _now_us() -> int:
    return time.time_ns() // 1000
