"""ALTER KEYSPACE of a tablets keyspace's replication on a node: queue the topology request and
answer when it ended (``topology.rf_change`` does the work on the coordinator).

The statement answers only once the keyspace really has the new RF: the request's last group0
command writes the new definition, and this node has applied it when ``wait_request`` returns.
Until then DESCRIBE and ``system_schema.keyspaces`` show the old replication, as in ScyllaDB. A
request refused at admission (another RF change of the keyspace queued or running) or one that
failed (a node it needed stayed down and it rolled back, no node left to take a replica, the
keyspace dropped meanwhile) is an InvalidRequest naming the reason; the catalog then keeps the
old replication. A client that gives up waiting leaves the request running: the change still
happens, and DESCRIBE shows when it did.
"""

from __future__ import annotations

import logging
import uuid
from typing import Protocol

from tabletdb.cql.errors import InvalidRequest
from tabletdb.schema.ddl_keyspace import RfChangeOutcome
from tabletdb.topology.requests import RequestRefused
from tabletdb.topology.rf_request import KeyspaceRfChange
from tabletdb.topology.state import Request, RequestResult
from tabletdb.topology.states import RequestKind

log = logging.getLogger(__name__)


class _Requests(Protocol):
    """What of ``Group0Service`` this needs."""

    @property
    def host_id(self) -> uuid.UUID: ...

    def alive_nodes(self) -> frozenset[uuid.UUID]: ...

    async def queue_request(self, request: Request, alive: frozenset[uuid.UUID]) -> None: ...

    async def wait_request(self, request_id: uuid.UUID) -> RequestResult: ...


async def change_replication(group0: _Requests, outcome: RfChangeOutcome) -> None:
    """Queue the RF change ``outcome`` decided and wait until it ended; InvalidRequest if it was
    refused or failed."""
    if outcome.before is None or outcome.after is None:
        raise ValueError("an RF change outcome names the keyspace definition before and after")
    change = KeyspaceRfChange(outcome.before, outcome.after)
    request = Request(uuid.uuid1(), RequestKind.KEYSPACE_RF_CHANGE, group0.host_id, rf_change=change)
    try:
        await group0.queue_request(request, group0.alive_nodes())
    except RequestRefused as refused:
        raise InvalidRequest(str(refused)) from None
    log.info("keyspace RF change queued request_id=%s change=%s", request.request_id, change.describe())
    result = await group0.wait_request(request.request_id)
    if result.error:
        raise InvalidRequest(
            f"ALTER KEYSPACE {change.keyspace} failed and its replication is unchanged: {result.error}"
        )
    log.info("keyspace RF change done request_id=%s change=%s", request.request_id, change.describe())
