"""The node's authenticator and authorizer: logins, the per-statement permission check, and the
service-level timeout on reads and writes.

Everything is decided by the pure auth/qos packages against the group0 state this node has
applied; this module adds what needs the event loop: password verification runs in an executor
(it is deliberately slow) behind a small cache of verified logins, failed logins are answered
only after the throttle's delay (an asyncio sleep: the loop keeps serving), and statements run
under the session's effective service-level timeout. CQL logins and the REST API's basic auth
share `verify`, so both are checked, cached and throttled alike.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from tabletdb.auth import describe as auth_describe
from tabletdb.auth.authorization import check_permission
from tabletdb.auth.login import authenticate, stored_hash
from tabletdb.auth.model import AuthConfig
from tabletdb.auth.passwords import verify_password
from tabletdb.auth.roles import default_superuser
from tabletdb.auth.service_levels import effective_timeout_ms
from tabletdb.auth.sha512_crypt import ALPHABET, SALT_MAX
from tabletdb.auth.statement_access import required_permissions
from tabletdb.auth.throttle import LoginThrottle
from tabletdb.cql import ast
from tabletdb.cql.errors import BadCredentials, ReadTimeout, WriteTimeout
from tabletdb.group0.auth_state import AuthOutcome
from tabletdb.group0.state import Group0State
from tabletdb.query.metadata_store import MetadataStore
from tabletdb.schema.ddl_common import DdlOutcome
from tabletdb.schema.describe import DescribeRow
from tabletdb.schema.model import Catalog
from tabletdb.statements.user_functions import execute_permissions

log = logging.getLogger(__name__)

LOGIN_CACHE_SIZE = 1024
"""Verified (user, stored hash, password digest) triples kept; a password change misses."""

T = TypeVar("T")
READ, SIMPLE, BATCH = "READ", "SIMPLE", "BATCH"
LOCAL_KEYSPACES = frozenset({"system", "system_schema"})


class Client(Protocol):
    """A client connection as far as auth goes: who logged in on it. The server's connection
    state (`protocol.handler.ClientState`) is one; named here so that auth does not depend on the
    wire protocol."""

    user: str | None


def _digest(password: str) -> bytes:
    """What the login cache keeps instead of the password itself."""
    return hashlib.sha256(password.encode()).digest()


class AuthService:
    """One per node; reads auth state through `state` (the group0 state applied here)."""

    def __init__(
        self,
        config: AuthConfig,
        state: Callable[[], Group0State],
        test_statement_delay_ms: int = 0,
        throttle: LoginThrottle | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._state = state
        self._verified: OrderedDict[tuple[str, str, bytes], None] = OrderedDict()
        self._delay = test_statement_delay_ms / 1000
        self._throttle = LoginThrottle() if throttle is None else throttle
        self._clock = clock
        self.password_hashes = 0
        """Password hash computations run (one per uncached login attempt, known user or not)."""
        self.failed_logins = 0

    # -- authentication ---------------------------------------------------------------------

    @property
    def authenticator(self) -> str | None:
        """What AUTHENTICATE names; None (answer READY) unless passwords are required."""
        return self.config.authenticator if self.config.uses_passwords else None

    async def login(self, client: Client, username: str, password: str) -> None:
        """Verify SASL PLAIN credentials; on success the connection acts as `username`."""
        if not self.config.uses_passwords:
            raise BadCredentials(f"{self.config.authenticator} does not take credentials")
        client.user = await self.verify(username, password)

    async def verify(self, username: str, password: str) -> str:
        """The role `username` if the password matches and the role may log in; otherwise
        BadCredentials, answered only after the throttle's delay for that name."""
        try:
            return await self._verify(username, password)
        except BadCredentials:
            self.failed_logins += 1
            delay = self._throttle.failed(username, self._clock())
            log.debug("login failed user=%r delay_ms=%d", username, delay * 1000)
            await asyncio.sleep(delay)
            raise

    async def _verify(self, username: str, password: str) -> str:
        auth = self._state().auth
        hashed = stored_hash(auth, username)
        key = (username, hashed, _digest(password)) if hashed is not None else None
        if key is not None and key in self._verified:
            self._verified.move_to_end(key)
            if not auth.can_login(username):
                raise BadCredentials(f"{username} is not permitted to log in")
        else:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, authenticate, auth, username, password, self._hash_once)
            if key is not None:
                self._remember(key)
        self._throttle.succeeded(username)
        return username

    def _hash_once(self, password: str, salted_hash: str) -> bool:
        """`verify_password`, counted (it runs on an executor thread; an int bump is atomic
        enough for a statistic)."""
        self.password_hashes += 1
        return verify_password(password, salted_hash)

    def is_superuser(self, username: str) -> bool:
        return self._state().auth.is_superuser(username)

    def _remember(self, key: tuple[str, str, bytes]) -> None:
        self._verified[key] = None
        if len(self._verified) > LOGIN_CACHE_SIZE:
            self._verified.popitem(last=False)

    def cached_logins(self) -> int:
        return len(self._verified)

    # -- authorization ----------------------------------------------------------------------

    def check(self, client: Client, stmt: ast.Statement, keyspace: str | None, catalog: Catalog) -> None:
        """Unauthorized unless the session holds every permission `stmt` needs. Anonymous
        sessions (AllowAllAuthenticator) and AllowAllAuthorizer skip the check."""
        if not self.config.enforces_permissions or client.user is None:
            return
        auth = self._state().auth
        for permission, resource in required_permissions(stmt, catalog, keyspace):
            check_permission(auth, client.user, permission, resource)
        for permission, resource in execute_permissions(stmt, catalog, keyspace):
            check_permission(auth, client.user, permission, resource)

    def describer(self, user: str | None) -> Callable[[bool], list[DescribeRow]]:
        """Auth rows for DESCRIBE ... WITH INTERNALS as `user` may see them."""

        def rows(with_passwords: bool) -> list[DescribeRow]:
            state = self._state()
            if with_passwords:
                auth_describe.check_may_describe_passwords(state.auth, user)
            return auth_describe.describe_auth(state.auth, state.qos, with_passwords, self.config)

        return rows

    # -- service-level timeouts ---------------------------------------------------------------

    def timeout_ms(self, user: str | None) -> int | None:
        state = self._state()
        return effective_timeout_ms(state.auth, state.qos, user)

    @property
    def state(self) -> Callable[[], Group0State]:
        return self._state

    @property
    def delays_statements(self) -> bool:
        """Whether statements wait ``test_statement_delay_ms`` first (tests of timeouts)."""
        return bool(self._delay)

    def run_limited(
        self, client: Client, kind: str | None, consistency: int, run: Callable[[], Awaitable[T]]
    ) -> Awaitable[T]:
        """Run a read or write (`kind` from `operation_kind`) under the session's service-level
        timeout; other statements run as they are. On expiry the client gets ReadTimeout or
        WriteTimeout as from replicas that never answered. Without a timeout to arm this is
        ``run()`` itself, no coroutine around it."""
        if kind is None:
            return run()
        limit = self.timeout_ms(client.user)
        if limit is None and not self._delay:  # no timer to arm: skip the timeout context
            return run()
        return self._run_with_timeout(limit, kind, consistency, run)

    def run_within(
        self, limit_ms: int | None, kind: str | None, consistency: int, run: Callable[[], Awaitable[T]]
    ) -> Awaitable[T]:
        """``run_limited`` with the statement's own limit (``USING TIMEOUT``, ``USING SERVICE
        LEVEL``: `statement_timeouts`) instead of the session's; None: no limit of its own."""
        if kind is None or (limit_ms is None and not self._delay):
            return run()
        return self._run_with_timeout(limit_ms, kind, consistency, run)

    async def _run_with_timeout(
        self, limit: int | None, kind: str, consistency: int, run: Callable[[], Awaitable[T]]
    ) -> T:
        try:
            async with asyncio.timeout(None if limit is None else limit / 1000):
                if self._delay:
                    await asyncio.sleep(self._delay)
                return await run()
        except TimeoutError:
            raise timeout_error(kind, consistency, limit) from None


async def create_default_superuser(
    store: MetadataStore, state: Callable[[], Group0State], cluster_name: str
) -> None:
    """cassandra/cassandra, once per cluster: the founding node proposes it at start while no
    role exists (a no-op otherwise, decided on the state current at commit).

    The salt is derived from the cluster name rather than drawn at random, so two clusters of
    the same name hold the same default hash and a DESCRIBE ... AND PASSWORDS backup (which
    prints the default superuser as CREATE ROLE IF NOT EXISTS) restores to identical output.
    The password is the public default, so a predictable salt gives nothing away."""
    digest = hashlib.sha256(cluster_name.encode()).digest()
    salt = "".join(ALPHABET[b % len(ALPHABET)] for b in digest[:SALT_MAX])

    def decide(catalog: Catalog) -> DdlOutcome:
        return AuthOutcome(auth_mutations=default_superuser(state().auth, salt))

    await store.change_schema(decide)


def operation_kind(stmt: ast.Statement, keyspace: str | None = None) -> str | None:
    """READ, SIMPLE (a write), BATCH, or None for statements no service level limits
    (`keyspace`: the session's, for unqualified table names).

    Reads of `system`/`system_schema` are rendered from this node's memory with no replica to
    wait for, so they are not limited (drivers read them while setting up a connection)."""
    if isinstance(stmt, ast.SelectStatement):
        return None if (stmt.table.keyspace or keyspace) in LOCAL_KEYSPACES else READ
    if isinstance(stmt, ast.BatchStatement):
        return BATCH
    if isinstance(stmt, ast.InsertStatement | ast.UpdateStatement | ast.DeleteStatement):
        return SIMPLE
    return None


def timeout_error(kind: str, consistency: int, limit_ms: int | None) -> ReadTimeout | WriteTimeout:
    what = f"service level timeout of {limit_ms}ms expired"
    if kind == READ:
        return ReadTimeout(f"Operation timed out for read: {what}", consistency, 0, 1, False)
    return WriteTimeout(f"Operation timed out for write: {what}", consistency, 0, 1, kind)


__all__ = ["AuthService", "create_default_superuser", "operation_kind", "timeout_error"]
