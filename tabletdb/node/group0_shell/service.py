"""group0 on a node: the Raft-replicated metadata store, cluster formation and joining.

DDL (`change_schema`): read barrier, decide on the now-current catalog, propose a command that
names the state id it was decided on, wait until *this* node applied it. If another change won
the race the command applies as a no-op everywhere and the decision is re-run on the newer
state, a bounded number of times (DESIGN.md decision 3).

Formation: a node whose seeds are only itself (or none) founds a cluster: its fresh log is
bootstrapped with itself as the only voter and it registers itself in the topology. Any other
node with a fresh log asks a seed to join; the seed forwards to the leader, which checks the
cluster name and the enabled features, records the node in the topology (so every member learns
its address, and its `join` request is queued) and then adds it as a Raft learner. Its start
returns once the topology coordinator made it normal and a voter (``joining``). A restarted
node just replays its log (or snapshot) and catches up from the leader.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tabletdb.group0.balancing import BalancingCommand
from tabletdb.group0.cluster_state import (
    Applied,
    BatchEntry,
    ClusterState,
    GroupEntry,
    SchemaEntry,
    TopologyEntry,
    apply_entry,
    decode_entry,
    decode_snapshot,
    encode_snapshot,
)
from tabletdb.group0.rack_shape import join_rack_error, rack_check
from tabletdb.group0.tablet_planning import TabletPlanner
from tabletdb.group0.topology import (
    JoinCommand,
    JoinRefused,
    NodeRecord,
    check_join,
    decided_tokens,
    raft_id_of,
    record_from_plain,
    record_to_plain,
)
from tabletdb.group0.view_builds import ViewBuildCommand
from tabletdb.net.handshake import ClusterAuthority, InternodeEncryption, Location, Me
from tabletdb.net.rpc import InternodeTls, RemoteError, Retry, RpcError, RpcNode
from tabletdb.node.group0_shell.admission import encode_checked
from tabletdb.node.group0_shell.batch import DdlBatcher
from tabletdb.node.group0_shell.guard import DdlTurns
from tabletdb.node.group0_shell.joining import add_to_group, reconcile_voters, wait_joined
from tabletdb.node.group0_shell.member_checks import (
    MEMBER_STATE_VERB,
    check_replacement,
    removed_by_peers,
    serve_member_state,
)
from tabletdb.node.group0_shell.peer_view import TopologyView
from tabletdb.node.group0_shell.raft import ApplyFailed, Halter, RaftDriver
from tabletdb.node.group0_shell.rf_changes import change_replication
from tabletdb.node.group0_shell.topology_rpc import TopologyBarrier
from tabletdb.node.group0_shell.versions import PeerVersions
from tabletdb.query.metadata_store import Decision
from tabletdb.raft.errors import NotLeaderError
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import ConfState, Entry, Snapshot
from tabletdb.schema.catalog_diff import catalog_events
from tabletdb.schema.ddl_common import DdlOutcome, SchemaChangeEvent
from tabletdb.schema.ddl_keyspace import RfChangeOutcome
from tabletdb.schema.model import Catalog
from tabletdb.systables.node_info import RaftInfo, RaftMember
from tabletdb.topology.commands import TopologyCommand
from tabletdb.topology.features import BATCH_FEATURE, VIEW_BUILD_STATUS_FEATURE
from tabletdb.topology.requests import enqueue
from tabletdb.topology.state import Request, RequestResult
from tabletdb.topology.states import NodeState

log = logging.getLogger(__name__)

JOIN_VERB = "g0.join"
COMMAND_TIMEOUT = 30.0
JOIN_TIMEOUT = 120.0
JOIN_RETRY_PAUSE = 0.1
"""Seeds that are still starting refuse connections at once; asking again costs little."""
RESTART_BARRIER_TIMEOUT = 15.0
AGREEMENT_WAIT = 1.0
"""How long a DDL waits for live peers to report that they applied it before answering."""
SETTLE_WAIT = 0.5
"""How long a read of schema versions (system.local, system.peers) waits for live peers to
catch up with this node's version before it shows them as they are."""

SchemaListener = Callable[[tuple[SchemaChangeEvent, ...]], None]
MemberListener = Callable[[NodeRecord], None]


def founds_cluster(address: str, seeds: tuple[str, ...]) -> bool:
    """Whether a node with a fresh log founds the cluster instead of joining one.

    Seeds that are only this node (or none) found. When every node lists the same seeds, the
    lowest seed address founds and the others join it, so a shared seed list cannot leave
    every seed waiting for another to start the cluster.
    """
    if all(seed == address for seed in seeds):
        return True
    return address in seeds and address == min(seeds, key=lambda s: ipaddress.ip_address(s).packed)


def left_message(host_id: uuid.UUID) -> str:
    return (
        f"node {host_id} left the cluster (decommissioned or removed) and cannot rejoin it; "
        "wipe its data directory to start it as a new node with a new host id"
    )


class Group0Service:
    def __init__(
        self,
        directory: Path,
        record: NodeRecord,
        cluster_name: str,
        seeds: tuple[str, ...],
        tablet_planner: TabletPlanner | None = None,
        on_halt: Halter | None = None,
        encryption: InternodeEncryption = InternodeEncryption.NONE,
        tls: InternodeTls | None = None,
        replaces: uuid.UUID | None = None,
    ) -> None:
        """`on_halt` is called once if a committed entry cannot be applied here: the node must
        stop (see raft.py). Internode connections are admitted by group0 membership
        (`net.handshake`); only JOIN_VERB and MEMBER_STATE_VERB are served to non-members.
        `replaces`: the dead node this fresh node replaces (replace_node_first_boot)."""
        directory.mkdir(parents=True, exist_ok=True)
        self.record = record
        self.cluster_name = cluster_name
        self.rf_rack_valid_keyspaces = False
        """ScyllaDB's config key: topology requests that would make any tablets keyspace
        RF-rack-invalid are refused (set by the node's wiring; views/indexes need it always)."""
        self.seeds = seeds
        self.store = DurableLog.open(str(directory))
        self.founder = founds_cluster(record.address, seeds)
        self.replaces = replaces
        self.caught_up = True
        """False when a restart's read barrier timed out: the node serves what its log replayed."""
        self.on_tokens: Callable[[tuple[int, ...]], None] | None = None
        """Persists tokens this node adopted from its group0 record (set by the node's wiring)."""
        self.is_alive: Callable[[uuid.UUID], bool] = lambda host: host == record.host_id
        """Whether a node answers (the failure detector's view, set by the node's membership)."""
        if self.store.last_index() == 0 and self.store.snapshot_meta.index == 0 and self.founder:
            self.store.bootstrap(ConfState(voters=frozenset({record.raft_id})))
        self._state = self._restored_snapshot()
        me = Me(record.raft_id, record.host_id, cluster_name, Location(record.datacenter, record.rack))
        view = TopologyView(lambda: self._state.topology, record.host_id)
        door = frozenset({JOIN_VERB, MEMBER_STATE_VERB})
        authority = ClusterAuthority(me, view, door, encryption, raft_id_of)
        self.rpc = RpcNode(record.raft_id, record.address, record.storage_port, authority=authority, tls=tls)
        self.driver = RaftDriver(
            record.raft_id,
            self.rpc,
            self.store,
            self._apply,
            self._install,
            self._snapshot_capture,
            on_halt=on_halt,
        )
        self.barrier = TopologyBarrier(self.rpc, self.driver, lambda: self._state.topology_state.version)
        """The topology coordinator's barrier (served here, asked by the coordinator)."""
        self.barrier.register()
        self._waiting: dict[uuid.UUID, asyncio.Future[Applied]] = {}
        self._schema_listeners: list[SchemaListener] = []
        self._member_listeners: list[MemberListener] = []
        self._join_lock = asyncio.Lock()
        self.turns = DdlTurns(self.driver, self.rpc)
        self._state_index = self.store.snapshot_meta.index
        """Raft index of the entry that made the current schema version (for peer versions)."""
        self.versions = PeerVersions(
            self.rpc, lambda: (self._state.state_id, self.driver.raft.applied), self._peer_ids
        )
        self._ddl = DdlBatcher(
            lambda: self._state,
            self.turns,
            self.driver.wait_applied,
            self._submit_schema,
            tablet_planner,
            lambda: len(self.driver.conf_state.voters) // 2 + 1,
        )
        self._learn_peers()

    def _restored_snapshot(self) -> ClusterState:
        """The state in the log's snapshot; one that cannot be decoded stops the node as an
        entry that cannot be applied does (the error names its index and term)."""
        snapshot = self.store.snapshot()
        try:
            return decode_snapshot(snapshot.data)
        except Exception as exc:
            meta = snapshot.meta
            log.error("group0 snapshot index=%d term=%d cannot be decoded: %r", meta.index, meta.term, exc)
            raise ApplyFailed(meta.index, meta.term, exc) from exc

    # --- MetadataStore ---------------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        return self._state.metadata.catalog

    @property
    def state(self) -> ClusterState:
        return self._state

    @property
    def host_id(self) -> uuid.UUID:
        return self.record.host_id

    def add_listener(self, listener: SchemaListener) -> None:
        self._schema_listeners.append(listener)

    def add_member_listener(self, listener: MemberListener) -> None:
        self._member_listeners.append(listener)

    async def change_schema(self, decide: Decision) -> DdlOutcome:
        """Decide on the latest state and commit; the outcome once this node applied it.

        Changes waiting on this node share one cluster-wide DDL turn and one Raft entry
        (`node.group0_shell.batch`); a change that lost a race is re-decided on the newer state.
        """
        outcome = await self._ddl.change(decide, COMMAND_TIMEOUT)
        if isinstance(outcome, RfChangeOutcome):
            await change_replication(self, outcome)
        if not outcome.is_noop:
            await self.versions.wait_reported(self._state_index, AGREEMENT_WAIT)
        return outcome

    async def settle_versions(self) -> None:
        """Return once every live peer reported this node's current schema version (bounded by
        SETTLE_WAIT): reads of `system.local`/`system.peers` schema versions wait for this, so
        a driver's agreement check sees a settled moment rather than an apply in flight."""
        await self.versions.settle(lambda: self._state_index, SETTLE_WAIT)

    async def set_balancing(self, enabled: bool) -> None:
        """Set group0's tablet-balancing flag; returns once this node applied it."""
        async with asyncio.timeout(COMMAND_TIMEOUT):
            await self._submit(BalancingCommand(uuid.uuid4(), enabled))

    async def record_view_build(self, view_id: uuid.UUID, status: str) -> None:
        """Record a view's build status in group0 (``group0.view_builds``); returns once this
        node applied it. Skipped while a member cannot read such entries (an older build)."""
        if VIEW_BUILD_STATUS_FEATURE not in self._state.topology.enabled_features:
            return
        async with asyncio.timeout(COMMAND_TIMEOUT):
            await self._submit(ViewBuildCommand(uuid.uuid1(), view_id, status))

    # --- topology ---------------------------------------------------------------------------------

    async def submit_topology(self, command: TopologyCommand) -> bool:
        """Propose a topology command; True if it took effect (False: its state id went stale)."""
        async with asyncio.timeout(COMMAND_TIMEOUT):
            (applied,) = await self._submit(TopologyEntry(command))
        return applied.took_effect

    async def queue_request(self, request: Request, alive: frozenset[uuid.UUID]) -> None:
        """Queue a topology request (``topology.requests.enqueue``), deciding again while other
        commands move the state on; raises ``RequestRefused`` with the reason it may not be queued."""
        while not await self.submit_topology(
            enqueue(
                self._state.topology_state,
                request,
                alive,
                uuid.uuid1(),
                rack_check(self._state, self.rf_rack_valid_keyspaces),
            )
        ):
            await asyncio.sleep(0.05)

    def alive_nodes(self) -> frozenset[uuid.UUID]:
        """The nodes of the topology state this node sees alive (admission's observation)."""
        return frozenset(h for h in self._state.topology_state.nodes if self.is_alive(h))

    async def wait_until_replaced(self) -> None:
        """Return once this node is no longer waiting to take a dead node's place (a replacing
        node serves only once its replicas are in place); JoinRefused if the replace failed."""
        me = self.record.host_id
        while True:
            topology_state = self._state.topology_state
            node = topology_state.nodes.get(me)
            if node is None or node.state not in (NodeState.NONE, NodeState.REPLACING, NodeState.LEFT):
                return
            if node.state is NodeState.LEFT:
                errors = [r.error for r in topology_state.results if r.request.host_id == me and r.error]
                raise JoinRefused(errors[-1] if errors else left_message(me))
            await self.driver.changed()

    async def wait_request(self, request_id: uuid.UUID) -> RequestResult:
        """How the request ended, once this node applied its end."""
        while True:
            for result in self._state.topology_state.results:
                if result.request.request_id == request_id:
                    return result
            await self.driver.changed()

    async def reconcile_voters(self) -> None:
        """On the leader: one step of bringing the Raft configuration in line with the topology
        (drop nodes that left, promote normal learners to voters; ``joining``)."""
        reconcile_voters(self._state, self.driver, self.record.raft_id)

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the internode port, run Raft, and make sure this node is a member.

        Raises JoinRefused if the cluster will not have this node.
        """
        await self.rpc.start()
        self.rpc.register(JOIN_VERB, self._on_join)
        serve_member_state(self.rpc, lambda: self._state)
        self.turns.register()
        self.versions.register()
        await self.driver.start()  # replays the local log: a node that left knows it did
        if self._state.topology_state.state_of(self.record.host_id) is NodeState.LEFT:
            raise JoinRefused(left_message(self.record.host_id))
        self.versions.start()
        if self.driver.conf_state.voters == frozenset({self.record.raft_id}):
            self.driver.campaign()  # a lone voter need not wait out an election timeout
        recorded = self._state.topology.members.get(self.record.host_id)
        if recorded is not None:
            self._adopt_recorded_tokens()  # a token difference is no record to refresh
            await self._check_not_removed()
            if recorded != self.record:  # e.g. restarted with a new address: the leader records it
                log.info("group0 record of this node changed old_address=%s; recording it", recorded.address)
                if self.driver.conf_state.voters == frozenset({self.record.raft_id}):
                    await self._register_self()  # a lone node is its own leader
                else:
                    await self._join_via_seeds(self._member_addresses())
            else:
                await self._catch_up()
        elif self.record.raft_id in self.driver.conf_state.voters:
            await self._register_self()
        else:
            await self._join_via_seeds()
        self._adopt_recorded_tokens()
        await wait_joined(lambda: self._state, self.driver, self.record.host_id)
        log.info("group0 member host_id=%s raft_id=%d", self.record.host_id, self.record.raft_id)

    def _adopt_recorded_tokens(self) -> None:
        """Take the tokens group0 recorded for this node as its own (``decided_tokens``: a
        replacing node's are the replaced node's) and have them persisted (``on_tokens``) before
        the node serves, so a restart keeps them."""
        recorded = self._state.topology.members.get(self.record.host_id)
        if recorded is None or recorded.tokens == self.record.tokens:
            return
        log.info(
            "vnode tokens of this node are the ones group0 recorded count=%d replaces=%s",
            len(recorded.tokens),
            self.replaces,
        )
        self.record = dataclasses.replace(self.record, tokens=recorded.tokens)
        if self.on_tokens is not None:
            self.on_tokens(recorded.tokens)

    async def stop(self) -> None:
        await self._ddl.stop()
        await self.versions.stop()
        await self.driver.stop()
        await self.rpc.stop()

    def close(self) -> None:
        self.store.sync()

    def status(self) -> dict[str, Any]:
        status = self.driver.status()
        leader = self._state.topology.by_raft_id(status["leader"] or 0)
        status["leader_host_id"] = str(leader.host_id) if leader else None
        status["group0_id"] = str(self.group0_id) if self.group0_id else None
        return status

    def raft_info(self) -> RaftInfo | None:
        """This node's Raft view for system.raft_state (None until the group has a member)."""
        topology = self._state.topology
        if topology.group0_id is None:
            return None
        status = self.driver.status()
        by_raft_id = {r.raft_id: r.host_id for r in topology.members.values()}
        voters = set(status["voters"])
        members = tuple(
            RaftMember(by_raft_id[rid], rid in voters)
            for rid in sorted(voters | set(status["learners"]))
            if rid in by_raft_id
        )
        return RaftInfo(
            group_id=topology.group0_id,
            server_id=self.record.host_id,
            role=status["role"],
            term=status["term"],
            commit_index=status["commit_index"],
            leader=by_raft_id.get(status["leader"] or 0),
            members=members,
        )

    @property
    def group0_id(self) -> uuid.UUID | None:
        return self._state.topology.group0_id

    # --- membership ------------------------------------------------------------------------------

    def _member_addresses(self) -> list[tuple[str, int]]:
        """Where to ask for a record refresh: the other members as this node's log knows them,
        then the seeds (a member that moved may have been its own seed)."""
        me = self.record.host_id
        members = [(r.address, r.storage_port) for h, r in self._state.topology.members.items() if h != me]
        return members + [(s, self.record.storage_port) for s in self.seeds if s != self.record.address]

    async def _check_not_removed(self) -> None:
        """Refuse to start if the members this node knows say it left (removed while it was down:
        its own log cannot know; see member_checks)."""
        me = self.record.host_id
        peers = [r.raft_id for h, r in self._state.topology.members.items() if h != me]
        if peers and await removed_by_peers(self.rpc, me, peers):
            raise JoinRefused(left_message(me))

    async def _catch_up(self) -> None:
        try:
            async with asyncio.timeout(RESTART_BARRIER_TIMEOUT):
                await self.driver.read_barrier()
        except TimeoutError:
            self.caught_up = False
            log.warning("group0: no quorum after restart; serving the state replayed from the local log")

    async def _register_self(self) -> None:
        async with asyncio.timeout(JOIN_TIMEOUT):
            await self.driver.read_barrier()
            check_join(self._state.topology, self.cluster_name, self.record)
            (applied,) = await self._submit(JoinCommand(uuid.uuid1(), self.cluster_name, self.record))
        if not applied.took_effect:
            raise JoinRefused(f"node {self.record.host_id}: refused when its registration was applied")

    async def _join_via_seeds(self, contacts: list[tuple[str, int]] | None = None) -> None:
        """Ask `contacts` (default: the seeds, on our own port as in Scylla) to have the leader
        admit this node, or refresh its record."""
        if contacts is None:
            contacts = [(s, self.record.storage_port) for s in self.seeds if s != self.record.address]
        seeds = [address for address, _ in contacts]
        for i, (seed, port) in enumerate(contacts):
            self.rpc.add_peer(-(i + 1), seed, port)
        payload: dict[str, Any] = {"cluster_name": self.cluster_name, "record": record_to_plain(self.record)}
        if self.replaces is not None:
            payload["replace"] = self.replaces.bytes
        deadline = time.monotonic() + JOIN_TIMEOUT
        attempt = 0
        while True:
            peer = -(attempt % len(seeds) + 1)
            attempt += 1
            try:
                reply = await self.rpc.call(peer, JOIN_VERB, payload, timeout=JOIN_TIMEOUT)
                # Our log is empty until the leader's first snapshot arrives: learn the members'
                # addresses from the reply so our answers reach the leader before that.
                for raft_id, address, *port in reply["members"]:  # no port: a seed of an older build
                    self.driver.add_peer(raft_id, address, port[0] if port else self.record.storage_port)
                break
            except RemoteError as exc:
                if "JoinRefused" in str(exc):
                    raise JoinRefused(str(exc).split("JoinRefused: ", 1)[-1]) from None
                last_error: Exception = exc
            except RpcError as exc:
                last_error = exc
            if time.monotonic() > deadline:
                raise JoinRefused(f"could not join through seeds {', '.join(seeds)}: {last_error}")
            log.debug("group0 join attempt failed (%s); retrying", last_error)
            await asyncio.sleep(JOIN_RETRY_PAUSE)
        async with asyncio.timeout(JOIN_TIMEOUT):
            await self.driver.read_barrier()

    async def _on_join(self, src: int, payload: Any) -> dict[str, Any]:
        record = record_from_plain(payload["record"])
        if src != record.raft_id and self._state.topology.by_raft_id(src) is None:
            raise JoinRefused(f"node {src} asked to admit {record.host_id}, which is not itself")
        if not self.driver.is_leader:
            leader = self.driver.raft.leader
            if leader is None:
                raise Retry("no group0 leader known yet; retry")
            try:
                reply: dict[str, Any] = await self.rpc.call(leader, JOIN_VERB, payload, timeout=JOIN_TIMEOUT)
            except RemoteError as exc:
                if "JoinRefused" in str(exc):
                    raise JoinRefused(str(exc).split("JoinRefused: ", 1)[-1]) from None
                raise Retry(f"the group0 leader could not admit the node yet: {exc}") from None
            except RpcError as exc:
                raise Retry(f"the group0 leader did not answer: {exc}") from None
            return reply
        replace_raw = payload.get("replace")
        async with self._join_lock:
            await self.driver.read_barrier()
            if self._state.topology_state.state_of(record.host_id) is NodeState.LEFT:
                raise JoinRefused(left_message(record.host_id))
            known = self._state.topology.members.get(record.host_id)
            replaces = uuid.UUID(bytes=replace_raw) if replace_raw and known is None else None
            if replaces is not None:
                check_replacement(self._state, record.host_id, replaces, self.is_alive)
            if known is not None and known.address != record.address and self.is_alive(record.host_id):
                raise Retry(  # not JoinRefused: the joiner asks again once it is seen down
                    f"node {record.host_id} asks to move from {known.address} to {record.address} but "
                    f"still answers at {known.address}; retry once it is down there"
                )
            record = decided_tokens(self._state.topology, record, replaces)
            check_join(self._state.topology, payload["cluster_name"], record, replaces)
            if known is None:  # a new node: its join's (or replace's) admission
                broken = join_rack_error(self._state, record, self.rf_rack_valid_keyspaces)
                if broken is not None:
                    raise JoinRefused(broken)
            if known != record:
                command = JoinCommand(uuid.uuid1(), payload["cluster_name"], record, replaces)  # a request id
                (applied,) = await self._submit(command)
                if not applied.took_effect:
                    raise JoinRefused(f"node {record.host_id}: refused when its join was applied")
            # Voter at once only if it is normal already (the founder, a known member asking
            # again); a new node is a learner until its join request made it normal.
            normal = self._state.topology_state.state_of(record.host_id) is NodeState.NORMAL
            await add_to_group(self.driver, record.raft_id, normal, COMMAND_TIMEOUT)
        log.info("group0 admitted host_id=%s address=%s", record.host_id, record.address)
        members = [[r.raft_id, r.address, r.storage_port] for r in self._state.topology.members.values()]
        return {"leader": self.record.raft_id, "members": members}

    # --- proposing and applying ------------------------------------------------------------------

    async def _submit_schema(self, entries: Sequence[SchemaEntry]) -> list[Applied]:
        """One Raft entry for all of `entries` once every member can read batches; before
        that, one entry each (all proposed at once, so they still share the leader's round).
        Raises Unreplicable, proposing none of them, if one would not decode on every node."""
        if len(entries) == 1 or BATCH_FEATURE in self._state.topology.enabled_features:
            return await self._submit(entries[0] if len(entries) == 1 else BatchEntry(tuple(entries)))
        checked = [(e, encode_checked(e)) for e in entries]
        return [a for e, data in checked for a in await self._propose(e, data)]

    async def _submit(self, entry: GroupEntry) -> list[Applied]:
        """Propose `entry` once it passed its round trip (`admission`); see `_propose`."""
        return await self._propose(entry, encode_checked(entry))

    async def _propose(self, entry: GroupEntry, data: bytes) -> list[Applied]:
        """Propose `entry` (encoded as `data`) until this node applied it; its commands'
        outcomes. Proposals may repeat (apply is idempotent for joins and a no-op for a schema
        command whose state moved on)."""
        ids = [e.command_id for e in entry.entries] if isinstance(entry, BatchEntry) else [entry.command_id]
        loop = asyncio.get_running_loop()
        futures = [self._waiting.setdefault(cid, loop.create_future()) for cid in ids]
        try:
            while True:
                try:
                    self.driver.propose(data)
                except NotLeaderError:
                    await asyncio.sleep(0.05)
                    continue
                try:
                    return list(await asyncio.wait_for(asyncio.shield(asyncio.gather(*futures)), timeout=2.0))
                except TimeoutError:
                    log.info("group0 command %s not applied yet; proposing again", ids[0])
        finally:
            for cid in ids:
                self._waiting.pop(cid, None)

    def _apply(self, entries: list[Entry]) -> None:
        """Apply committed entries in order; raises ApplyFailed naming the first one that could
        not be decoded or applied (the driver then halts and the node stops: skipping it would
        leave this node's state apart from the others')."""
        for entry in entries:
            try:
                self._apply_one(entry)
            except Exception as exc:
                raise ApplyFailed(entry.index, entry.term, exc) from exc

    def _apply_one(self, entry: Entry) -> None:
        decoded = decode_entry(entry.data)
        before = self._state.state_id
        self._state, outcomes = apply_entry(self._state, decoded)
        if isinstance(decoded, JoinCommand):
            self._learn_peers()  # a member's record may have moved to a new address
        if self._state.state_id != before:
            self._state_index = entry.index
            self.versions.changed()
        for applied in outcomes:
            self._announce(applied)

    def _announce(self, applied: Applied) -> None:
        """Wake the command's proposer (if it is ours) and tell listeners what changed."""
        fut = self._waiting.get(applied.command_id)
        if fut is not None and not fut.done():
            fut.set_result(applied)
        if applied.events:
            for listener in self._schema_listeners:
                listener(applied.events)
        if applied.joined is not None:
            self._learn_peers()
            for member_listener in self._member_listeners:
                member_listener(applied.joined)

    def _install(self, snapshot: Snapshot) -> None:
        before = self._state.metadata.catalog
        self._state = decode_snapshot(snapshot.data)
        self._state_index = snapshot.meta.index
        self.versions.changed()
        self._learn_peers()
        # The commands the snapshot stands for never pass through _apply here: announce what
        # changed, or drivers connected to this node keep stale metadata.
        events = catalog_events(before, self._state.metadata.catalog)
        if events:
            for listener in self._schema_listeners:
                listener(events)
        log.info("group0 snapshot installed from the leader index=%d", snapshot.meta.index)

    def _snapshot_capture(self) -> Callable[[], bytes]:
        state = self._state  # immutable: encoding it later, in another thread, is safe
        return lambda: encode_snapshot(state)

    def peer_schema_version(self, raft_id: int) -> uuid.UUID | None:
        """The schema version `system.peers` shows for a member (None until it reported one)."""
        return self.versions.version_of(raft_id, self._state.state_id, self._state_index)

    def _peer_ids(self) -> list[int]:
        return [m.raft_id for m in self._state.topology.members.values() if m.raft_id != self.record.raft_id]

    def _learn_peers(self) -> None:
        for member in self._state.topology.members.values():
            self.driver.add_peer(member.raft_id, member.address, member.storage_port)
