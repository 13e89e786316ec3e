"""The interface between the protocol shell and the query layer.

The query layer implements `Handler`; the server calls it with a `ClientState` that describes
the connection (what system.clients shows) and that the handler may annotate. Handler methods
answer with `tabletdb.cql.results` values, which the connection encodes, or raise
`tabletdb.cql.errors.CqlError` subclasses to answer with an ERROR frame.

Only the handler itself and its route check name `ClientState`; the other modules that read a
connection (auth checks, system tables) declare the few fields they use as a typing Protocol
(e.g. `systables.tables.ClientInfo`), which this class satisfies, so they need no wire import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from tabletdb.cql.results import PreparedResult, Result
from tabletdb.protocol.requests import Batch, QueryParameters


@dataclass(slots=True)
class ClientState:
    """One client connection as the query layer sees it."""

    connection_id: int
    peer: tuple[str, int]
    shard: int
    # The listener port the client connected to (main or shard-aware port).
    local_port: int = 0
    protocol_version: int = 4
    startup_options: dict[str, str] = field(default_factory=dict)
    extensions: frozenset[str] = frozenset()
    keyspace: str | None = None
    user: str | None = None
    ready: bool = False
    # The TLS session of an encrypted connection (system.clients): protocol as ScyllaDB names
    # it ("TLS1.3") and the negotiated cipher suite; None on a plain connection.
    ssl_protocol: str | None = None
    ssl_cipher_suite: str | None = None
    registered: frozenset[str] = frozenset()
    """The event types this connection REGISTERed for (a driver's control connection)."""
    # Free for the handler (e.g. its session object, per-connection prepared cache).
    slot: Any = None
    # The query layer's schema-version read awaiting its pair (query.version_reads).
    version_read: Any = None

    @property
    def driver_name(self) -> str | None:
        return self.startup_options.get("DRIVER_NAME")

    @property
    def driver_version(self) -> str | None:
        return self.startup_options.get("DRIVER_VERSION")


class Handler(Protocol):
    """What the server needs from the query layer."""

    @property
    def authenticator(self) -> str | None:
        """Authenticator class to send in AUTHENTICATE, or None to answer STARTUP with READY."""
        ...

    def supported(self, client: ClientState) -> dict[str, list[str]]:
        """The SUPPORTED multimap for this connection (see extensions.build_supported)."""
        ...

    async def authenticate(self, client: ClientState, username: str, password: str) -> None:
        """Check PLAIN credentials; raise BadCredentials on failure."""
        ...

    async def query(self, client: ClientState, query: str, params: QueryParameters) -> Result: ...

    async def prepare(self, client: ClientState, query: str) -> PreparedResult: ...

    async def execute(
        self, client: ClientState, query_id: bytes, result_metadata_id: bytes | None, params: QueryParameters
    ) -> Result: ...

    def execute_now(
        self, client: ClientState, query_id: bytes, result_metadata_id: bytes | None, params: QueryParameters
    ) -> Result | None:
        """The answer to an EXECUTE that needs no waiting, computed at once (no task is made for
        it), or None: the server runs ``execute``. What it raises is answered as from
        ``execute``, so it must raise only what ``execute`` would."""
        ...

    async def batch(self, client: ClientState, batch: Batch) -> Result: ...

    def connection_opened(self, client: ClientState) -> None:
        """Called once the TCP connection is accepted (before any request)."""
        ...

    def connection_closed(self, client: ClientState) -> None: ...


def tls_protocol_name(version: str | None) -> str | None:
    """OpenSSL's protocol name ("TLSv1.3") as ScyllaDB's system.clients shows it ("TLS1.3")."""
    if version is None:
        return None
    return version.replace("TLSv", "TLS", 1)
