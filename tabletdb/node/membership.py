"""How a node takes part in the cluster: as a group0 member, or not at all (maintenance mode).

The two modes differ in a few pieces: the metadata store (group0, or the node's own log read
once), whether replicas are reachable from and reach other nodes (internode RPC, the failure
detector), whether conditional statements run Paxos, what ``system.local``/``system.peers`` show
of Raft and peer versions, and what starting and stopping take. Each mode builds its own
pieces once, so the node's wiring (``runner``) never asks which mode it is in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Coroutine
from typing import Any, Protocol

from tabletdb.coordinator.context import Replicas, Timeouts
from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.tablet_planning import TabletPlanner
from tabletdb.group0.tablet_resize import ResizeInputsCache
from tabletdb.group0.topology import NodeRecord, raft_id_of
from tabletdb.net.failure_detector import FailureDetector, Members, Transition
from tabletdb.node.config import NodeConfig
from tabletdb.node.encryption import internode_tls
from tabletdb.node.group0_shell.cdc_generations import keep_cdc_generation
from tabletdb.node.group0_shell.cdc_log_maps import LogMapAdoption
from tabletdb.node.group0_shell.maintenance_store import MaintenanceStore
from tabletdb.node.group0_shell.raft import ApplyFailed, Halter
from tabletdb.node.group0_shell.service import Group0Service, SchemaListener
from tabletdb.node.group0_shell.topology_task import TopologyIo, TopologyTask
from tabletdb.node.range_streaming import RangeStreaming
from tabletdb.node.replica_service import ViewMaintenance, build_replicas, register_replica_verbs
from tabletdb.node.tablet_load import TabletLoadStats
from tabletdb.node.tablet_resize import TabletResize
from tabletdb.node.tablet_streaming import TabletStreaming
from tabletdb.paxos.service import PaxosService, PaxosTimeouts
from tabletdb.query.auth_check import create_default_superuser
from tabletdb.query.metadata_store import MetadataStore
from tabletdb.replica.leftover_files import sweep_leftovers
from tabletdb.replica.storage_service import StorageService
from tabletdb.schema.model import TableDef
from tabletdb.systables.node_info import RaftInfo
from tabletdb.systables.version_reads import Settle
from tabletdb.tablets.load_stats import TabletSizes
from tabletdb.topology import coordinator as co
from tabletdb.topology.states import NodeState

log = logging.getLogger(__name__)

GROUP0_DIR = ("raft", "group0-cluster")
"""Where group0's log and snapshots live in the node's workdir (both modes read them)."""


class NodeMetadata(MetadataStore, Protocol):
    """The metadata store as the node uses it, whichever mode built it."""

    @property
    def state(self) -> ClusterState: ...

    def add_listener(self, listener: SchemaListener) -> None: ...

    def close(self) -> None: ...


class Membership(Protocol):
    """What differs between the modes: the runner builds one from the config and takes each
    piece from it once, while it wires the node."""

    @property
    def metadata(self) -> NodeMetadata: ...

    @property
    def group0(self) -> Group0Service | None:
        """What the REST API's Raft endpoints ask (None: they answer that group0 is not running)."""
        ...

    @property
    def settle_versions(self) -> Settle | None:
        """How a read of schema versions waits for live peers (None: there are none to wait for)."""
        ...

    def replicas(
        self, placement: ReplicaPlacement, storage: StorageService, views: ViewMaintenance, timeouts: Timeouts
    ) -> Replicas:
        """This node's replicas and how the coordinator reaches the others'."""
        ...

    def paxos(self, replicas: Replicas) -> PaxosService | None:
        """What conditional statements run Paxos with (None: under a local lock)."""
        ...

    def raft_info(self) -> RaftInfo | None: ...

    def is_alive(self, host_id: uuid.UUID) -> bool:
        """Whether another member answers, as the failure detector sees it."""
        ...

    def versions_key(self) -> object:
        """Changes whenever what ``peer_schema_version`` answers may have changed."""
        ...

    def peer_schema_version(self, raft_id: int, local: uuid.UUID) -> uuid.UUID | None:
        """The schema version ``system.peers`` shows for a member (``local``: this node's)."""
        ...

    async def start(self, stop: asyncio.Event) -> bool:
        """Take part in the cluster; False if ``stop`` was set first."""
        ...

    async def stop(self) -> None: ...


class ClusterMember:
    """A member of a cluster: group0 over Raft, internode RPC, the failure detector, Paxos."""

    def __init__(
        self,
        config: NodeConfig,
        record: NodeRecord,
        planner: TabletPlanner,
        peers: Members,
        on_status: Transition,
        on_halt: Halter | None = None,
    ) -> None:
        """`on_halt` is called once if group0 cannot apply a committed entry on this node."""
        self._config = config
        self.halted = False
        self._on_halt = on_halt
        encryption, tls = internode_tls(config)
        self.group0 = Group0Service(
            config.workdir.joinpath(*GROUP0_DIR),
            record,
            config.cluster_name,
            config.seeds,
            tablet_planner=planner,
            on_halt=self._halt,
            encryption=encryption,
            tls=tls,
            replaces=uuid.UUID(config.replace_node_first_boot) if config.replace_node_first_boot else None,
        )
        self.group0.rf_rack_valid_keyspaces = config.rf_rack_valid_keyspaces
        self.metadata: NodeMetadata = self.group0
        self.settle_versions: Settle | None = self.group0.settle_versions
        self._failure_detector = FailureDetector(self.group0.rpc, peers, on_status)
        self._failure_detector.register()
        me, detector = record.host_id, self._failure_detector
        self.group0.is_alive = lambda h: (
            h == me or (h in self.group0.state.topology.members and detector.is_up(raft_id_of(h)))
        )
        self._paxos: PaxosService | None = None
        self._topology_task: asyncio.Task[None] | None = None
        self._sweep_task: asyncio.Task[None] | None = None
        self._sizing = planner.sizing
        self.tablet_load: TabletLoadStats | None = None
        """Set by the runner before ``start``: the coordinator polls tablet sizes through it."""

    def _halt(self, failure: ApplyFailed) -> None:
        self.halted = True
        if self._on_halt is not None:
            self._on_halt(failure)

    def replicas(
        self, placement: ReplicaPlacement, storage: StorageService, views: ViewMaintenance, timeouts: Timeouts
    ) -> Replicas:
        """Reached over internode RPC, up as the failure detector says; serves the replica verbs."""
        rpc = self.group0.rpc
        replicas = build_replicas(placement, storage, views, rpc, self._failure_detector.is_up, timeouts)
        register_replica_verbs(
            rpc,
            replicas.local,
            lambda table_id: self.group0.catalog.by_id(table_id),
            lambda: self.group0.state.topology_state.fence_version,
        )
        self.streaming = TabletStreaming(
            rpc,
            storage,
            lambda table_id: self.group0.catalog.by_id(table_id),
            lambda: self.group0.state.topology_state.version,
            lambda: self.group0.state.topology_state.fence_version,
        )
        """Tablet copy/stream/cleanup verbs, what the topology coordinator moves replicas with."""
        self.streaming.register()
        self.resizing = TabletResize(
            rpc,
            storage,
            lambda table_id: self.group0.catalog.by_id(table_id),
            lambda: self.group0.barrier.ask(raft_id_of(self.group0.record.host_id)),
        )
        """The resize copy verb and the sweep of unused tablet file generations."""
        self.resizing.register()
        me = raft_id_of(self.group0.record.host_id)
        self.ranges = RangeStreaming(
            rpc,
            replicas.local,
            storage,
            lambda table_id: self.group0.catalog.by_id(table_id),
            lambda: self.group0.state,
            lambda: self.group0.barrier.ask(me),
        )
        """Vnode range stream/cleanup verbs, what the topology coordinator moves vnode data with."""
        self.ranges.register()
        return replicas

    def paxos(self, replicas: Replicas) -> PaxosService:
        """Paxos across replicas; learnt commits applied through the local replica (views included)."""
        c, group0 = self._config, self.group0
        paxos = PaxosService(
            group0.rpc,
            str(c.workdir / "paxos" / "paxos.db"),
            lambda table_id: group0.catalog.by_id(table_id),
            replicas,
            replicas.local.apply,
            PaxosTimeouts(c.cas_contention_timeout_in_ms / 1000, c.write_request_timeout_in_ms / 1000),
        )
        paxos.register()
        paxos.follow_schema(group0.catalog)
        group0.add_listener(lambda _events: paxos.follow_schema(group0.catalog))
        self._paxos = paxos
        return paxos

    def raft_info(self) -> RaftInfo | None:
        return self.group0.raft_info()

    def is_alive(self, host_id: uuid.UUID) -> bool:
        return self._failure_detector.is_up(raft_id_of(host_id))

    def versions_key(self) -> object:
        return self.group0.versions.view_key()

    def peer_schema_version(self, raft_id: int, local: uuid.UUID) -> uuid.UUID | None:
        """What the peer last told us it applied (group0_versions)."""
        return self.group0.peer_schema_version(raft_id)

    async def start(self, stop: asyncio.Event) -> bool:
        """Join (or rejoin) through group0, then watch peers; the founder creates the default
        superuser. Raises JoinRefused if the cluster will not have this node."""
        group0 = self.group0
        if not await _unless_stopped(group0.start(), stop):
            await group0.stop()
            if self.halted:
                log.warning("node stopped: group0 could not apply a committed entry (the ERROR above)")
            else:
                log.info("node stopped while joining the cluster")
            return False
        if group0.caught_up:  # files left by a migration, rollback or resize it died in
            sweep_leftovers(self.resizing.storage, self._tablet_tables())
        else:
            log.warning("start-up sweep of leftover tablet files skipped: group0 did not catch up")
        self._failure_detector.start()
        self._topology_task = asyncio.create_task(self._topology(stop))
        self._sweep_task = asyncio.create_task(self.resizing.sweep_forever(self._tablet_tables, stop))
        if group0.replaces is not None:
            log.info("replacing node %s: serving once its replicas are in place", group0.replaces)
            if not await _unless_stopped(group0.wait_until_replaced(), stop):
                return False
        if group0.founder:
            await create_default_superuser(group0, lambda: group0.state.metadata, self._config.cluster_name)
        return True

    async def _topology(self, stop: asyncio.Event) -> None:
        """Run the topology coordinator while this node leads group0, and stop the node once
        group0 says it left the cluster (its data moved away, it is no longer a replica)."""
        group0, me = self.group0, self.group0.record.host_id
        task = TopologyTask(self._topology_io())
        runner = asyncio.create_task(task.run(stop))
        try:
            while not stop.is_set():
                if group0.state.topology_state.state_of(me) is NodeState.LEFT:
                    log.info("this node left the cluster (decommissioned or removed); stopping")
                    stop.set()
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)
        finally:
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner

    def _tablet_tables(self) -> list[TableDef]:
        catalog = self.group0.catalog
        found = (catalog.by_id(t) for t in self.group0.state.metadata.tablets)
        return [t for t in found if t is not None]

    def _topology_io(self) -> TopologyIo:
        group0, streaming = self.group0, self.streaming
        log_maps = LogMapAdoption(group0.record.host_id)

        async def stream(t: co.StreamTask) -> object:
            _, table_id, tablet_id = t.key
            if [s.host for s in t.sources] == [t.target.host]:  # between two shards of one node
                node, shard = raft_id_of(t.target.host), t.sources[0].shard
                return await streaming.shard_move(node, table_id, tablet_id, shard, t.target.shard)
            sources = [raft_id_of(s.host) for s in t.sources]
            return await streaming.stream(raft_id_of(t.target.host), table_id, tablet_id, sources)

        async def cleanup(t: co.CleanupTask) -> object:
            _, table_id, tablet_id = t.key
            return await streaming.cleanup(raft_id_of(t.replica.host), table_id, tablet_id, t.replica.shard)

        async def tidy() -> None:
            await group0.reconcile_voters()  # normal learners vote, nodes that left are dropped
            await keep_cdc_generation(group0)  # a ring that changed gets its CDC generation
            await log_maps.step(group0)  # CDC log maps made before they named their base

        return TopologyIo(
            is_leader=lambda: group0.driver.is_leader,
            state=lambda: group0.state,
            alive=group0.is_alive,
            barrier=lambda h: group0.barrier.ask(raft_id_of(h)),
            stream=stream,
            cleanup=cleanup,
            submit=group0.submit_topology,
            tidy=tidy,
            stream_ranges=self.ranges.stream,
            cleanup_ranges=self.ranges.cleanup,
            resize=lambda t: self.resizing.resize(raft_id_of(t.key[0]), t),
            resize_inputs=ResizeInputsCache(self._sizing),
            sizes=self._tablet_sizes if self.tablet_load is not None else None,
            tablet_sizes=self._tablet_sizes,
            changed=group0.driver.changed,
        )

    async def _tablet_sizes(self) -> TabletSizes:
        """Every tablet's bytes from the members' load statistics, for the balancer and resize;
        a tablet no member reported is left out (the balancer weighs it as the mean)."""
        if self.tablet_load is None:
            return {}
        sizes, _missing = await self.tablet_load.cluster()
        return sizes

    async def stop(self) -> None:
        for task in (self._topology_task, self._sweep_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._paxos is not None:
            self._paxos.close()
        await self._failure_detector.stop()
        await self.group0.stop()


class MaintenanceNode:
    """A node that does not contact the cluster: its last group0 state, read from its own log;
    no internode port, no Paxos (conditional statements run under local locks)."""

    group0: Group0Service | None = None
    settle_versions: Settle | None = None

    def __init__(self, config: NodeConfig) -> None:
        self.metadata: NodeMetadata = MaintenanceStore(config.workdir.joinpath(*GROUP0_DIR))

    def replicas(
        self, placement: ReplicaPlacement, storage: StorageService, views: ViewMaintenance, timeouts: Timeouts
    ) -> Replicas:
        """Only this node's own: no transport to the others, no verbs served to them."""
        return build_replicas(placement, storage, views, None, None, timeouts)

    def paxos(self, replicas: Replicas) -> None:
        return None

    def raft_info(self) -> RaftInfo | None:
        return None

    def is_alive(self, host_id: uuid.UUID) -> bool:
        return False  # it does not contact the cluster, so it knows no other node to be up

    def versions_key(self) -> object:
        return None

    def peer_schema_version(self, raft_id: int, local: uuid.UUID) -> uuid.UUID | None:
        """No peers to ask: its own log's version."""
        return local

    async def start(self, stop: asyncio.Event) -> bool:
        log.warning("node in maintenance mode: not joining the cluster; schema changes refused")
        return True

    async def stop(self) -> None:
        """Nothing runs that needs stopping."""


async def _unless_stopped(work: Coroutine[Any, Any, None], stop: asyncio.Event) -> bool:
    """Run `work` unless `stop` is set first (a SIGTERM while joining, or group0 halting on
    an entry it replays); True if it completed. Once stopping, an error `work` ended with
    because of what stopped the node is only logged."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if task.done() and not stop.is_set():
        task.result()
        return True
    if task.done():
        if not task.cancelled() and task.exception() is not None:
            log.warning("start-up ended by the stop: %r", task.exception())
        return False
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False
