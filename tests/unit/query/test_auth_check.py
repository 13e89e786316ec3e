"""Logins (executor + cache), the per-statement permission check and service-level timeouts."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from tabletdb.auth.login import authenticate
from tabletdb.auth.model import AuthConfig
from tabletdb.auth.throttle import LoginThrottle
from tabletdb.cql.errors import BadCredentials, ReadTimeout, Unauthorized, WriteTimeout
from tabletdb.cql.parser import parse_statement
from tabletdb.protocol.handler import ClientState
from tabletdb.query import auth_check
from tabletdb.query.auth_check import AuthService, operation_kind
from tabletdb.query.auth_exec import AuthExecutor
from tests.unit.query.auth_harness import MemoryStore

ENFORCING = AuthConfig("PasswordAuthenticator", "CassandraAuthorizer")
ONE = 0x0001


NO_DELAY = LoginThrottle(base=0, ceiling=0)


def setup(
    config: AuthConfig = ENFORCING, delay_ms: int = 0, throttle: LoginThrottle = NO_DELAY
) -> tuple[MemoryStore, AuthService, AuthExecutor]:
    store = MemoryStore()
    asyncio.run(auth_check.create_default_superuser(store, lambda: store.state, "c"))
    service = AuthService(config, lambda: store.state, delay_ms, throttle=throttle)
    return store, service, AuthExecutor(config, lambda: store.state, store, store.catalog_with_system)


def as_admin(executor: AuthExecutor, *cql: str) -> None:
    for text in cql:
        asyncio.run(executor.execute(parse_statement(text), "cassandra", None))


def client(user: str | None = None) -> ClientState:
    return ClientState(1, ("127.0.0.1", 1), 0, user=user)


def counting_authenticate(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = authenticate

    def counted(state: Any, username: str, password: str, verify: Any) -> str:
        calls.append(username)
        return real(state, username, password, verify)

    monkeypatch.setattr(auth_check, "authenticate", counted)
    return calls


def test_login_verifies_once_then_uses_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_authenticate(monkeypatch)
    _, service, _ = setup()
    for _ in range(3):
        c = client()
        asyncio.run(service.login(c, "cassandra", "cassandra"))
        assert c.user == "cassandra"
    assert calls == ["cassandra"] and service.cached_logins() == 1


def test_wrong_password_is_never_cached_and_never_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_authenticate(monkeypatch)
    _, service, _ = setup()
    asyncio.run(service.login(client(), "cassandra", "cassandra"))
    for _ in range(2):
        with pytest.raises(BadCredentials, match="Username and/or password are incorrect"):
            asyncio.run(service.login(client(), "cassandra", "Cassandra"))
    with pytest.raises(BadCredentials, match="incorrect"):
        asyncio.run(service.login(client(), "ghost", "cassandra"))
    assert calls == ["cassandra", "cassandra", "cassandra", "ghost"]


def test_unknown_users_cost_one_password_hash_like_known_ones() -> None:
    """Timing parity, counted: each failed attempt hashes once, whether or not the role exists
    (and a role without a password is hashed against the dummy too)."""
    _, service, ex = setup()
    as_admin(ex, "CREATE ROLE nopass WITH LOGIN = true")
    attempts = [("cassandra", "wrong"), ("ghost", "wrong"), ("nopass", "wrong"), ("ghost", "cassandra")]
    for n, (user, password) in enumerate(attempts, start=1):
        with pytest.raises(BadCredentials, match=r"^Username and/or password are incorrect$"):
            asyncio.run(service.verify(user, password))
        assert service.password_hashes == n and service.failed_logins == n


def test_failed_logins_wait_their_delay_without_blocking_the_loop() -> None:
    throttle = LoginThrottle(base=0.05, ceiling=0.05)
    _, service, _ = setup(throttle=throttle)

    async def scenario() -> int:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        with pytest.raises(BadCredentials):
            await service.verify("ghost", "guess")
        task.cancel()
        return ticks

    assert asyncio.run(scenario()) > 1  # the loop kept running while the failure waited
    assert throttle.tracked() == 1
    asyncio.run(service.verify("cassandra", "cassandra"))
    with pytest.raises(BadCredentials):
        asyncio.run(service.verify("cassandra", "wrong"))
    asyncio.run(service.verify("cassandra", "cassandra"))  # a success forgets the name's failures
    assert throttle.tracked() == 1


def test_password_change_or_lost_login_invalidates_cached_logins() -> None:
    _, service, ex = setup()
    as_admin(ex, "CREATE ROLE u WITH LOGIN = true AND PASSWORD = 'one'")
    asyncio.run(service.login(client(), "u", "one"))
    as_admin(ex, "ALTER ROLE u WITH PASSWORD = 'two'")
    with pytest.raises(BadCredentials):
        asyncio.run(service.login(client(), "u", "one"))
    asyncio.run(service.login(client(), "u", "two"))
    as_admin(ex, "ALTER ROLE u WITH LOGIN = false")
    with pytest.raises(BadCredentials, match="not permitted to log in"):
        asyncio.run(service.login(client(), "u", "two"))


def test_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auth_check, "LOGIN_CACHE_SIZE", 2)
    _, service, ex = setup()
    as_admin(ex, *(f"CREATE ROLE u{i} WITH LOGIN = true AND PASSWORD = 'p'" for i in range(3)))
    for i in range(3):
        asyncio.run(service.login(client(), f"u{i}", "p"))
    assert service.cached_logins() == 2


def test_allow_all_authenticator_answers_ready_and_takes_no_credentials() -> None:
    _, service, _ = setup(AuthConfig())
    assert service.authenticator is None
    with pytest.raises(BadCredentials):
        asyncio.run(service.login(client(), "cassandra", "cassandra"))
    assert setup()[1].authenticator == "org.apache.cassandra.auth.PasswordAuthenticator"


def test_check_needs_the_permission_unless_anonymous_or_allow_all() -> None:
    store, service, ex = setup()
    as_admin(ex, "CREATE ROLE u WITH LOGIN = true AND PASSWORD = 'p'")
    stmt = parse_statement("SELECT * FROM system.roles")
    with pytest.raises(
        Unauthorized, match=re.escape("User u has no SELECT permission on <table system.roles>")
    ):
        service.check(client("u"), stmt, None, store.catalog)
    service.check(client("u"), parse_statement("SELECT * FROM system.local"), None, store.catalog)
    service.check(client(None), stmt, None, store.catalog)
    service.check(client("cassandra"), stmt, None, store.catalog)
    as_admin(ex, "GRANT SELECT ON system.roles TO u")
    service.check(client("u"), stmt, None, store.catalog)
    allow_all = AuthService(AuthConfig("PasswordAuthenticator"), lambda: store.state)
    allow_all.check(client("u"), parse_statement("DROP KEYSPACE x"), None, store.catalog)


def test_operation_kinds() -> None:
    kinds = {
        "SELECT * FROM k.t": "READ",
        "SELECT * FROM system.local": None,
        "SELECT * FROM system_schema.tables": None,
        "INSERT INTO k.t (a) VALUES (1)": "SIMPLE",
        "DELETE FROM k.t WHERE a = 1": "SIMPLE",
        "BEGIN BATCH INSERT INTO k.t (a) VALUES (1); APPLY BATCH": "BATCH",
        "CREATE ROLE r": None,
    }
    assert {cql: operation_kind(parse_statement(cql)) for cql in kinds} == kinds
    assert operation_kind(parse_statement("SELECT * FROM local"), "system") is None
    assert operation_kind(parse_statement("SELECT * FROM t"), "k") == "READ"


def limited_with_timeout(delay_ms: int, kind: str | None) -> Callable[[], Coroutine[Any, Any, str]]:
    """A run under a 1ms service level on a service whose test delay is `delay_ms`."""
    _, service, ex = setup(delay_ms=delay_ms)
    as_admin(
        ex,
        "CREATE ROLE u",
        "CREATE SERVICE LEVEL fast WITH TIMEOUT = 1ms",
        "ATTACH SERVICE LEVEL fast TO u",
    )

    async def body() -> str:
        return "done"

    return lambda: service.run_limited(client("u"), kind, ONE, body)


def test_timeouts_answer_read_and_write_timeouts() -> None:
    with pytest.raises(ReadTimeout) as read:
        asyncio.run(limited_with_timeout(200, "READ")())
    assert (read.value.consistency, read.value.received, read.value.block_for) == (ONE, 0, 1)
    assert not read.value.data_present
    for kind in ("SIMPLE", "BATCH"):
        with pytest.raises(WriteTimeout) as write:
            asyncio.run(limited_with_timeout(200, kind)())
        assert (write.value.received, write.value.block_for, write.value.write_type) == (0, 1, kind)


def test_unlimited_kinds_and_roles_run_normally() -> None:
    assert asyncio.run(limited_with_timeout(200, None)()) == "done"
    _, service, _ = setup(delay_ms=0)

    async def body() -> str:
        return "ok"

    assert service.timeout_ms("cassandra") is None
    assert asyncio.run(service.run_limited(client("cassandra"), "READ", ONE, body)) == "ok"
