"""What the REST admin API's endpoints act on: this node's identity, state and services.

A module of its own because both the API's core routes (`node.admin.rest_api`) and the backup
and restore routes (`node.admin.rest_snapshots`) take it, and rest_api registers those routes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.net.faults import FaultInjector
from tabletdb.node.admin.metrics import NodeMetrics
from tabletdb.node.compaction_manager import CompactionManager
from tabletdb.node.group0_shell.service import Group0Service
from tabletdb.node.operator_view import NodeOps
from tabletdb.protocol.server import CqlServer
from tabletdb.query.auth_check import AuthService
from tabletdb.replica.storage_service import StorageService


@dataclass(frozen=True)
class ApiContext:
    host_id: uuid.UUID
    address: str
    state: Callable[[], ClusterState]
    group0: Group0Service | None
    """None in maintenance mode: there is no Raft to ask."""
    metrics: NodeMetrics | None = None
    storage: StorageService | None = None
    snapshots_dir: Path | None = None
    """Backup and restore endpoints (node.admin.rest_snapshots) act on these."""
    faults: FaultInjector | None = None
    """TEST ONLY: set when `test_fault_injection_api` is on; `node.admin.rest_faults` drives it."""
    auth: AuthService | None = None
    """Checks every request's credentials when its authenticator takes passwords
    (node.admin.rest_auth); None or AllowAllAuthenticator: the API is open."""
    max_future_timestamp_us: int | None = None
    """Uploaded tablet images may hold no timestamp beyond now + this (restrict_future_timestamp);
    None: not restricted."""
    ops: NodeOps | None = None
    """Liveness, load and uptime of the running node, for nodetool's routes (node.admin.rest_ring)."""
    compaction: CompactionManager | None = None
    """Compaction and flush of this node's files (node.admin.rest_compaction)."""
    cql: CqlServer | None = None
    """The CQL server, started and stopped by nodetool enable/disablebinary (node.admin.rest_switches)."""
