"""One tabletdb server process: wiring and lifecycle.

Start-up order matters for kill -9 safety: the node identity (host id, tokens) and the metadata
log are durable before the CQL port opens, so a client never sees a node that could forget
what it acknowledged. Shutdown on SIGTERM/SIGINT stops accepting, lets in-flight requests
finish, then syncs and closes the metadata log.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import ipaddress
import logging
import signal
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import replace
from importlib import metadata as importlib_metadata
from typing import TYPE_CHECKING

from tabletdb.auth.model import AuthConfig
from tabletdb.coordinator.executor import ServerClock
from tabletdb.coordinator.replica_repair import ReplicaRepair
from tabletdb.cql.parser import load_in_background as parser_load_in_background
from tabletdb.cql.tracing import TraceStore
from tabletdb.group0.rack_shape import token_owners_shape
from tabletdb.group0.tablet_planning import TabletPlanner
from tabletdb.group0.topology import JoinRefused, NodeRecord
from tabletdb.net.faults import FaultInjector
from tabletdb.net.tls import TlsSetupError
from tabletdb.node.compaction_manager import CompactionManager
from tabletdb.node.config import NodeConfig
from tabletdb.node.encryption import client_tls
from tabletdb.node.gc_tuning import MetadataFreezer, tune_for_serving
from tabletdb.node.group0_shell.raft import ApplyFailed
from tabletdb.node.identity import NodeIdentity, load_or_create_identity, with_tokens
from tabletdb.node.live_config import LiveConfig, apply_timeouts
from tabletdb.node.local_tables import NodeLocalTables
from tabletdb.node.membership import ClusterMember, MaintenanceNode, Membership
from tabletdb.node.operator_view import LoadReport, NodeOps
from tabletdb.node.port_check import PortsBusy, check_ports
from tabletdb.node.replica_service import ViewMaintenance, build_data_plane, cluster_placement, timeouts_of
from tabletdb.node.tablet_load import TabletLoadStats
from tabletdb.node.topology_events import TopologyEvents, in_ring
from tabletdb.node.trace_sharing import TraceSharing
from tabletdb.protocol.responses import SchemaChangeEvent as SchemaChangeEventFrame
from tabletdb.protocol.responses import StatusChangeEvent, TopologyChangeEvent
from tabletdb.protocol.server import CqlServer
from tabletdb.query.auth_check import AuthService
from tabletdb.query.data_path import catalog_views
from tabletdb.query.processor import QueryProcessor
from tabletdb.query.route_check import RouteCheck
from tabletdb.raft.storage_records import CorruptLogError
from tabletdb.replica.derived_locks import DerivedLocks
from tabletdb.replica.storage_service import StorageService
from tabletdb.schema.ddl_common import SchemaChangeEvent, SchemaConfig
from tabletdb.storage.commit_records import CommitLogCorrupt
from tabletdb.storage.corruption import CorruptFile
from tabletdb.storage.images.image_validation import FUTURE_TIMESTAMP_LIMIT_US
from tabletdb.systables.node_info import NodeInfo, PeerInfo
from tabletdb.systables.topology import ClusterTopology
from tabletdb.tablets.count import SizingConfig
from tabletdb.topology.features import supported_features
from tabletdb.udf import lua as udf_lua

if TYPE_CHECKING:
    from tabletdb.node.admin.metrics import NodeMetrics
    from tabletdb.node.admin.prometheus import PrometheusServer
    from tabletdb.node.admin.rest_api import RestApi

log = logging.getLogger(__name__)

EXIT_GROUP0_HALTED = 3
"""Exit status of a node that stopped because group0 could not apply a committed entry."""


def product_version() -> str:
    try:
        return importlib_metadata.version("tabletdb")
    except importlib_metadata.PackageNotFoundError:
        return "0.0.0"


class Node:
    """The running parts of one node, built from its configuration."""

    def __init__(self, config: NodeConfig, sources: Mapping[str, str] | None = None) -> None:
        """``sources``: where each key given came from (``config.config_sources``)."""
        self.config = config
        started = time.time()
        self.exit_code = 0
        """What the process exits with once `run` returns."""
        self._stop: asyncio.Event | None = None
        workdir = config.workdir
        workdir.mkdir(parents=True, exist_ok=True)
        # The CQL parser loads in a thread while the node opens its stores and starts group0;
        # `run` waits for it before listening: drivers give their first system queries only a
        # couple of seconds, and an uncached LALR build takes longer than that.
        self._parser_loading = parser_load_in_background()
        self.identity: NodeIdentity = load_or_create_identity(workdir, config.num_tokens)
        self.features = supported_features()
        self.membership: Membership
        if config.maintenance_mode:
            self.membership = MaintenanceNode(config)
        else:
            self.membership = ClusterMember(
                config,
                self._record(),
                self._tablet_planner(),
                self._peer_records,
                self._announce_status,
                on_halt=self._halt,
            )
            self.membership.group0.on_tokens = self._adopt_tokens
        self.metadata = self.membership.metadata
        self._base_info = self._node_info()
        self._info_cache: tuple[object, NodeInfo] | None = None
        self.storage = StorageService(
            workdir / "data",
            self.identity.host_id,
            config.smp,
            config.murmur3_partitioner_ignore_msb_bits,
            lambda: self.metadata.state.metadata.tablets,
            commitlog_sync_period_s=(
                config.commitlog_sync_period_in_ms / 1000 if config.commitlog_sync == "periodic" else None
            ),
            commitlog_skip_corrupt_records=config.commitlog_skip_corrupt_records,
        )
        self.storage.follow_schema(self.metadata.catalog)
        views = ViewMaintenance(catalog_views(lambda: self.metadata.catalog), ServerClock(), DerivedLocks())
        placement = cluster_placement(self.identity.host_id, config.dc, lambda: self.metadata.state)
        self.replicas = self.membership.replicas(placement, self.storage, views, timeouts_of(config))
        max_frame = config.native_transport_max_frame_size_in_mb * 1024 * 1024
        paxos = self.membership.paxos(self.replicas)
        plane = build_data_plane(self.storage, self.replicas, views, paxos)
        plane.data.batch_size_fail_threshold_in_kb = config.batch_size_fail_threshold_in_kb
        group0 = self.membership.group0
        recorder = group0.record_view_build if group0 is not None else None
        self.settings = LiveConfig(config, sources or {}, lambda c: apply_timeouts(c, self.replicas, paxos))
        self.routes = RouteCheck(
            self.identity.host_id,
            config.smp,
            config.murmur3_partitioner_ignore_msb_bits,
            self.storage.tablet_maps,
            lambda table, token: [r.host_id for r in placement.replicas(table, token)],
        )
        self.auth = AuthService(
            AuthConfig(config.authenticator, config.authorizer),
            lambda: self.metadata.state.metadata,
            config.test_statement_delay_ms,
        )
        udf_lua.configure(
            udf_lua.Limits(
                config.user_defined_function_time_limit_ms,
                config.user_defined_function_allocation_limit_bytes,
            )
        )
        traces = TraceStore()  # traced requests: the CQL server records, system_traces shows
        self.processor = QueryProcessor(
            lambda: self.info,
            self.metadata,
            SchemaConfig(
                tablets_mode_for_new_keyspaces=config.tablets_mode_for_new_keyspaces,
                datacenters=(config.dc,),
                enforce_rack_list=config.enforce_rack_list,
                rf_rack_valid_keyspaces=config.rf_rack_valid_keyspaces,
                user_defined_functions=config.user_defined_functions,
                enable_create_table_with_compact_storage=config.enable_create_table_with_compact_storage,
            ),
            lambda: self.server.clients,
            shard_aware_port=config.native_shard_aware_transport_port,
            data=plane.data,
            auth=self.auth,
            routes=self.routes,
            settle_versions=self.membership.settle_versions,
            backfill=replace(plane.backfill, recorder=recorder),
            cluster=lambda: token_owners_shape(self.metadata.state),
            local=NodeLocalTables(
                self.settings,
                lambda: self.server,
                workdir / "data",
                workdir / "snapshots",
                lambda: self.metadata.catalog,
                started,
                membership_running=not config.maintenance_mode,
            ),
            traces=traces,
        )
        cql_tls = client_tls(config)
        self.server = CqlServer(
            self.processor,
            self._rpc_address(),
            config.native_transport_port,
            shard_aware_port=config.native_shard_aware_transport_port,
            nr_shards=config.smp,
            max_frame_size=max_frame,
            max_in_flight_bytes=_positive_or_none(config.native_transport_max_concurrent_requests_in_bytes),
            max_connections=_positive_or_none(config.native_transport_max_concurrent_connections),
            idle_timeout=(
                config.native_transport_idle_timeout_in_ms / 1000
                if config.native_transport_idle_timeout_in_ms
                else None
            ),
            tls=cql_tls,
            tls_port=(
                config.native_transport_port_ssl
                if cql_tls is not None and config.native_transport_port_ssl != config.native_transport_port
                else None
            ),
            traces=traces,
        )
        self.metadata.add_listener(self._announce_schema_changes)
        self.rest_api: RestApi | None = None
        self.prometheus: PrometheusServer | None = None
        self.ops = self._operator_view()
        group0 = self.membership.group0
        TraceSharing(  # traces readable from any node: drivers poll system_traces anywhere
            self.identity.host_id,
            traces,
            group0.rpc if group0 is not None else None,
            lambda: self.metadata.state.topology.members.values(),
            self.ops.alive,
        ).register()
        self.tablet_load = self._tablet_load()
        if isinstance(self.membership, ClusterMember):
            self.membership.tablet_load = self.tablet_load  # the resize re-evaluation polls sizes
        self.metadata.add_listener(lambda _events: self.storage.follow_schema(self.metadata.catalog))
        self.compaction = CompactionManager(self.storage, lambda: self.metadata.catalog)

    def _operator_view(self) -> NodeOps:
        """Liveness, load and uptime for nodetool's REST routes; peers ask this node's load."""
        me, membership = self.identity.host_id, self.membership
        group0 = membership.group0

        def alive(host_id: uuid.UUID) -> bool:
            return host_id == me or membership.is_alive(host_id)

        loads = LoadReport(
            me,
            self.config.workdir / "data",
            group0.rpc if group0 is not None else None,
            lambda: self.metadata.state.topology.members.values(),
            alive,
        )
        loads.register()
        return NodeOps(
            me, alive, loads, time.time(), lambda: self.server.serving, group0_running=group0 is not None
        )

    def _tablet_load(self) -> TabletLoadStats:
        """This node's tablet replica sizes, answering the topology coordinator's poll."""
        group0 = self.membership.group0
        stats = TabletLoadStats(
            self.identity.host_id,
            self.storage,
            lambda table_id: self.metadata.catalog.by_id(table_id),
            group0.rpc if group0 is not None else None,
            lambda: self.metadata.state.topology.members.values(),
            self.ops.alive,
        )
        stats.register()
        if isinstance(self.membership, ClusterMember):
            self.membership.tablet_load = stats  # the topology coordinator's balancer weighs by it
        return stats

    def _tablet_planner(self) -> TabletPlanner:
        """The tablet placement policy with this node's sizing settings (and itself as the cluster
        until its join is recorded)."""
        c = self.config
        sizing = SizingConfig(
            c.target_tablet_size_in_bytes, c.tablets_initial_scale_factor, float(c.tablets_per_shard_goal)
        )
        return TabletPlanner(sizing, (self.identity.host_id, c.dc, c.rack, c.smp))

    def _halt(self, failure: ApplyFailed) -> None:
        """group0 could not apply a committed entry (it logged which): stop, exiting non-zero."""
        self.exit_code = EXIT_GROUP0_HALTED
        if self._stop is not None:
            self._stop.set()

    def _adopt_tokens(self, tokens: tuple[int, ...]) -> None:
        """The tokens group0 recorded for this node (a replacing node's: the replaced node's)
        become its own: written to its identity file and shown in ``system.local``."""
        self.identity = with_tokens(self.config.workdir, self.identity, tokens)
        self._base_info = replace(self._base_info, tokens=self.identity.tokens)
        self._info_cache = None

    def _rpc_address(self) -> str:
        return self.config.rpc_address or self.config.listen_address

    def _record(self) -> NodeRecord:
        """This node as group0's topology records it."""
        c = self.config
        return NodeRecord(
            host_id=self.identity.host_id,
            address=c.broadcast_address or c.listen_address,
            rpc_address=self._rpc_address(),
            datacenter=c.dc,
            rack=c.rack,
            tokens=self.identity.tokens,
            supported_features=self.features,
            shard_count=c.smp,
            storage_port=c.storage_port,
        )

    @property
    def info(self) -> NodeInfo:
        """This node, its peers and its Raft view from group0 (rebuilt only when they change)."""
        state = self.metadata.state
        raft = self.membership.raft_info()
        versions = self.membership.versions_key()
        key = (
            state.topology,
            state.state_id,
            state.topology_state.state_id,
            state.balancing_enabled,
            raft,
            versions,
        )
        if self._info_cache is not None and self._info_cache[0] == key:
            return self._info_cache[1]
        me = self.identity.host_id
        peers = tuple(
            PeerInfo(
                address=ipaddress.ip_address(r.address),
                host_id=r.host_id,
                data_center=r.datacenter,
                rack=r.rack,
                rpc_address=ipaddress.ip_address(r.rpc_address),
                tokens=r.tokens,
                schema_version=self.membership.peer_schema_version(r.raft_id, state.state_id),
                supported_features=",".join(sorted(r.supported_features)),
            )
            for r in state.topology.members.values()
            if r.host_id != me and in_ring(state, r.host_id)
        )
        cluster = ClusterTopology(
            state.topology_state,
            state.topology.members,
            state.topology.enabled_features,
            state.balancing_enabled,
        )
        info = replace(self._base_info, peers=peers, raft=raft, topology=cluster)
        self._info_cache = (key, info)
        return info

    def _node_info(self) -> NodeInfo:
        c = self.config
        listen = ipaddress.ip_address(c.listen_address)
        rpc = ipaddress.ip_address(self._rpc_address())
        broadcast = ipaddress.ip_address(c.broadcast_address or c.listen_address)
        return NodeInfo(
            host_id=self.identity.host_id,
            cluster_name=c.cluster_name,
            data_center=c.dc,
            rack=c.rack,
            listen_address=listen,
            rpc_address=rpc,
            broadcast_address=broadcast,
            native_port=c.native_transport_port,
            tokens=self.identity.tokens,
            smp=c.smp,
            ignore_msb=c.murmur3_partitioner_ignore_msb_bits,
            product_version=product_version(),
            supported_features=tuple(sorted(self.features)),
        )

    def _announce_schema_changes(self, events: tuple[SchemaChangeEvent, ...]) -> None:
        for e in events:
            arg_types = list(e.arg_types) if e.target.value in ("FUNCTION", "AGGREGATE") else None
            frame = SchemaChangeEventFrame(
                e.change.value, e.target.value, e.keyspace, e.name or None, arg_types
            )
            self.server.broadcast(frame)

    def _peer_records(self) -> list[NodeRecord]:
        me = self.identity.host_id
        return [r for r in self.metadata.state.topology.members.values() if r.host_id != me]

    def _announce_status(self, record: NodeRecord, up: bool) -> None:
        self.server.broadcast(StatusChangeEvent("UP" if up else "DOWN", record.rpc_address))

    async def _topology_events(self, stop: asyncio.Event) -> None:
        """NEW_NODE / REMOVED_NODE to registered clients as group0's ring changes."""
        group0 = self.membership.group0
        if group0 is None:
            return  # maintenance mode: the ring never changes
        events = TopologyEvents(
            self.identity.host_id,
            lambda: self.metadata.state,
            group0.driver.changed,
            lambda change, address: self.server.broadcast(TopologyChangeEvent(change, address)),
        )
        await events.run(stop)

    async def _start_rest_api(self) -> None:
        """Start the admin API once CQL is served.

        Its web framework (aiohttp) is a quarter of the server's import time and CQL does not
        need it, so it is imported in a worker thread while the event loop already answers CQL.
        """
        module = await asyncio.to_thread(importlib.import_module, "tabletdb.node.admin.rest_api")
        metrics = self._node_metrics()
        ctx = module.ApiContext(
            self.identity.host_id,
            self._record().address,
            lambda: self.metadata.state,
            self.membership.group0,
            metrics=metrics,
            storage=self.storage,
            snapshots_dir=self.config.workdir / "snapshots",
            faults=self._test_faults(),
            auth=self.auth,
            ops=self.ops,
            compaction=self.compaction,
            cql=self.server,
            max_future_timestamp_us=FUTURE_TIMESTAMP_LIMIT_US
            if self.config.restrict_future_timestamp
            else None,
        )
        api: RestApi = module.RestApi(
            ctx, self.config.api_address or self.config.listen_address, self.config.api_port
        )
        await api.start()
        self.rest_api = api
        if self.config.prometheus_port:
            prometheus = await asyncio.to_thread(importlib.import_module, "tabletdb.node.admin.prometheus")
            server: PrometheusServer = prometheus.PrometheusServer(
                metrics, self.config.prometheus_address, self.config.prometheus_port
            )
            await server.start()
            self.prometheus = server

    def _test_faults(self) -> FaultInjector | None:
        """The internode fault injector, exposed over REST only with `test_fault_injection_api`."""
        group0 = self.membership.group0
        if not self.config.test_fault_injection_api or group0 is None:
            return None
        return group0.rpc.faults

    def _node_metrics(self) -> NodeMetrics:
        """The metrics registry; prometheus_client came in with the REST API module, off the loop."""
        from tabletdb.node.admin.metrics import NodeMetrics

        return NodeMetrics(
            lambda: self.server.request_counts,
            self.routes.counters,
            self.storage.commit_counters,
            self.auth,
            transport=lambda: self.server,
            statements=lambda: self.processor.stats,
        )

    async def run(self, stop: asyncio.Event) -> None:
        self._stop = stop
        started = time.monotonic()
        if not await self.membership.start(stop):
            return
        await asyncio.to_thread(self._parser_loading.join)
        await self.server.start()
        tune_for_serving()  # start-up's objects are built: keep the collector off them from now on
        freezer = MetadataFreezer()  # and off the metadata that schema changes add later
        self.metadata.add_listener(lambda _events: freezer.changed())
        log.info(
            "node serving CQL address=%s port=%d tls=%s host_id=%s startup_ms=%.0f",
            self._rpc_address(),
            self.server.port,
            _tls_summary(self.server.tls is not None, self.server.tls_port),
            self.identity.host_id,
            (time.monotonic() - started) * 1000,
        )
        _print_how_to_connect(self._rpc_address(), self.server.port)
        rest = asyncio.create_task(self._start_rest_api())
        rest.add_done_callback(lambda task: _stop_on_failure(task, stop, "the REST API could not start"))
        repair = ReplicaRepair(
            self.replicas, self.storage, lambda table_id: self.metadata.catalog.by_id(table_id)
        )
        repairing = asyncio.create_task(repair.run(stop))
        repairing.add_done_callback(lambda task: _stop_on_failure(task, stop, "replica repair failed"))
        events = asyncio.create_task(self._topology_events(stop))
        events.add_done_callback(lambda task: _stop_on_failure(task, stop, "topology events failed"))
        compacting = asyncio.create_task(self.compaction.run(stop))
        try:
            await stop.wait()
        finally:
            rest.cancel()
            repairing.cancel()
            events.cancel()
            compacting.cancel()
            await asyncio.gather(rest, repairing, events, compacting, return_exceptions=True)
            await self.server.stop()
            if self.rest_api is not None:
                await self.rest_api.stop()
            if self.prometheus is not None:
                await self.prometheus.stop()
            self.storage.close()
            await self.membership.stop()
            self.metadata.close()
            log.info("node stopped")


def _print_how_to_connect(address: str, port: int) -> None:
    """One human-readable line on stdout (logs go to stderr): what `make run` shows."""
    print(
        f"tabletdb is serving CQL on {address}:{port} — connect with `.venv/bin/cqlsh {address} {port}` "
        f"or `Cluster(['{address}'], port={port})`; Ctrl-C stops it.",
        flush=True,
    )


def _tls_summary(enabled: bool, tls_port: int | None) -> str:
    if not enabled:
        return "off"
    return "all-ports" if tls_port is None else f"port-{tls_port}"


def _stop_on_failure(task: asyncio.Task[None], stop: asyncio.Event, what: str) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("%s, stopping the node: %r", what, task.exception())
        stop.set()


def run_server(config: NodeConfig, sources: Mapping[str, str] | None = None) -> int:
    """Run one node until SIGTERM/SIGINT; the process exit code."""
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is a pinned dependency
        pass
    return asyncio.run(_main(config, sources))


async def _main(config: NodeConfig, sources: Mapping[str, str] | None = None) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        check_ports(config)  # before anything is asked of the cluster: no member that never serves
    except PortsBusy as exc:
        print(f"tabletdb: cannot start: {exc}", file=sys.stderr, flush=True)
        return 1
    try:
        node = Node(config, sources)
    except (
        CommitLogCorrupt,
        CorruptLogError,
        CorruptFile,
        TlsSetupError,
    ) as exc:  # damaged state, bad certificate: one line, no traceback
        print(f"tabletdb: cannot start: {exc}", file=sys.stderr, flush=True)
        return 1
    except ApplyFailed:  # group0's snapshot cannot be decoded (logged with its index and term)
        return EXIT_GROUP0_HALTED
    try:
        await node.run(stop)
    except JoinRefused as exc:
        log.error("node refused by the cluster: %s", exc)
        print(f"tabletdb: cannot join the cluster: {exc}", file=sys.stderr, flush=True)
        return 1
    return node.exit_code


def _positive_or_none(value: int) -> int | None:
    """A limit setting's value, or None for its "no value" spellings (-1, 0): the default."""
    return value if value > 0 else None
