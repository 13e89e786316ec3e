"""The permission matrix: each statement kind, run by a role that lacks the permission, is
Unauthorized; after the grant it runs. One server and one logged-in role serve every case;
each case uses its own objects and revokes its grant afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from cassandra import InvalidRequest, Unauthorized
from cassandra.auth import PlainTextAuthProvider

from tests.harness.clients import scylla_cluster
from tests.harness.node import UDF_OPTIONS, NodeFactory

AUTH_OPTIONS = {"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer", **UDF_OPTIONS}
NTS = "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"
USER = "matrix_user"
SUPERUSER = "SUPERUSER"
"""As a grant: make the user a superuser (what service levels and passwords need)."""


@dataclass(frozen=True)
class Case:
    name: str
    statement: str
    grant: str  # "<permission> ON <resource>", or SUPERUSER
    setup: tuple[str, ...] = ()
    drops: str | None = None
    """The resource (as LIST PERMISSIONS shows it) the statement drops, with its grants."""


def ks(n: str, *more: str) -> tuple[str, ...]:
    """A keyspace `n` with table t (k int PRIMARY KEY, v int), plus more statements."""
    return (
        f"CREATE KEYSPACE {n} WITH replication = {NTS} AND tablets = {{'enabled': false}}",
        f"CREATE TABLE {n}.t (k int PRIMARY KEY, v int)",
        *more,
    )


FN = "(x int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua AS 'return x'"


def acc(keyspace: str) -> str:
    """A state function `acc(int, int)` in `keyspace` (sums)."""
    return (
        f"CREATE FUNCTION {keyspace}.acc(s int, v int) RETURNS NULL ON NULL INPUT RETURNS int "
        "LANGUAGE lua AS 'return s + v'"
    )


CASES = [
    Case("select", "SELECT * FROM p1.t", "SELECT ON p1.t", ks("p1")),
    Case("insert", "INSERT INTO p2.t (k, v) VALUES (1, 1)", "MODIFY ON p2.t", ks("p2")),
    Case("update", "UPDATE p3.t SET v = 2 WHERE k = 1", "MODIFY ON KEYSPACE p3", ks("p3")),
    Case("delete", "DELETE FROM p4.t WHERE k = 1", "MODIFY ON ALL KEYSPACES", ks("p4")),
    Case(
        "batch",
        "BEGIN BATCH INSERT INTO p5.t (k, v) VALUES (1, 1); DELETE FROM p5.t WHERE k = 2; APPLY BATCH",
        "MODIFY ON p5.t",
        ks("p5"),
    ),
    Case("truncate", "TRUNCATE p6.t", "MODIFY ON p6.t", ks("p6")),
    Case("create keyspace", f"CREATE KEYSPACE p8 WITH replication = {NTS}", "CREATE ON ALL KEYSPACES"),
    Case(
        "alter keyspace",
        f"ALTER KEYSPACE p9 WITH replication = {NTS} AND durable_writes = false",
        "ALTER ON KEYSPACE p9",
        ks("p9"),
    ),
    Case("drop keyspace", "DROP KEYSPACE p10", "DROP ON KEYSPACE p10", ks("p10"), "<keyspace p10>"),
    Case("create table", "CREATE TABLE p11.t2 (k int PRIMARY KEY)", "CREATE ON KEYSPACE p11", ks("p11")),
    Case("alter table", "ALTER TABLE p12.t ADD w int", "ALTER ON p12.t", ks("p12")),
    Case("drop table", "DROP TABLE p13.t", "DROP ON p13.t", ks("p13"), "<table p13.t>"),
    Case("create type", "CREATE TYPE p14.ty (a int)", "CREATE ON KEYSPACE p14", ks("p14")),
    Case(
        "alter type",
        "ALTER TYPE p15.ty ADD b int",
        "ALTER ON KEYSPACE p15",
        ks("p15", "CREATE TYPE p15.ty (a int)"),
    ),
    Case("drop type", "DROP TYPE p16.ty", "DROP ON KEYSPACE p16", ks("p16", "CREATE TYPE p16.ty (a int)")),
    Case("create index", "CREATE INDEX p17_v ON p17.t (v)", "ALTER ON p17.t", ks("p17")),
    Case(
        "drop index", "DROP INDEX p18.p18_v", "ALTER ON p18.t", ks("p18", "CREATE INDEX p18_v ON p18.t (v)")
    ),
    Case(
        "create view",
        "CREATE MATERIALIZED VIEW p19.mv AS SELECT k, v FROM p19.t WHERE k IS NOT NULL AND v IS NOT NULL "
        "PRIMARY KEY (v, k)",
        "ALTER ON p19.t",
        ks("p19"),
    ),
    Case(
        "drop view",
        "DROP MATERIALIZED VIEW p20.mv",
        "ALTER ON p20.t",
        ks(
            "p20",
            "CREATE MATERIALIZED VIEW p20.mv AS SELECT k, v FROM p20.t WHERE k IS NOT NULL AND v IS NOT NULL "
            "PRIMARY KEY (v, k)",
        ),
    ),
    Case(
        "create function", f"CREATE FUNCTION p21.f{FN}", "CREATE ON ALL FUNCTIONS IN KEYSPACE p21", ks("p21")
    ),
    Case(
        "drop function",
        "DROP FUNCTION p22.f(int)",
        "DROP ON FUNCTION p22.f(int)",
        ks("p22", f"CREATE FUNCTION p22.f{FN}"),
        "<function p22.f(int)>",
    ),
    Case(
        "call function",
        "SELECT p33.f(v) FROM p33.t",
        "EXECUTE ON FUNCTION p33.f(int)",
        ks("p33", f"CREATE FUNCTION p33.f{FN}", f"GRANT SELECT ON p33.t TO {USER}"),
    ),
    Case(
        "call aggregate",
        "SELECT total(v) FROM p34.t",
        "EXECUTE ON ALL FUNCTIONS IN KEYSPACE p34",
        ks(
            "p34",
            acc("p34"),
            "CREATE AGGREGATE p34.total(int) SFUNC acc STYPE int",
            f"GRANT SELECT ON p34.t TO {USER}",
        ),
    ),
    Case(
        "call function in VALUES",
        "INSERT INTO p43.t (k, v) VALUES (1, p43.f(2))",
        "EXECUTE ON FUNCTION p43.f(int)",
        ks("p43", f"CREATE FUNCTION p43.f{FN}", f"GRANT MODIFY ON p43.t TO {USER}"),
    ),
    Case(
        "call function in WHERE",
        "SELECT v FROM p44.t WHERE k = f(1)",
        "EXECUTE ON FUNCTION p44.f(int)",
        ks("p44", f"CREATE FUNCTION p44.f{FN}", f"GRANT SELECT ON p44.t TO {USER}"),
    ),
    Case(
        "call function in SET and IF",
        "UPDATE p45.t SET v = f(3) WHERE k = 1 IF v = f(2)",
        "EXECUTE ON ALL FUNCTIONS IN KEYSPACE p45",
        ks(
            "p45",
            f"CREATE FUNCTION p45.f{FN}",
            f"GRANT MODIFY ON p45.t TO {USER}",
            f"GRANT SELECT ON p45.t TO {USER}",
        ),
    ),
    Case(
        "call function in a batch",
        "BEGIN BATCH INSERT INTO p46.t (k, v) VALUES (f(1), 1) APPLY BATCH",
        "EXECUTE ON FUNCTION p46.f(int)",
        ks("p46", f"CREATE FUNCTION p46.f{FN}", f"GRANT MODIFY ON p46.t TO {USER}"),
    ),
    Case(
        "replace function",
        f"CREATE OR REPLACE FUNCTION p35.f{FN}",
        "ALTER ON FUNCTION p35.f(int)",
        ks("p35", f"CREATE FUNCTION p35.f{FN}", f"GRANT CREATE ON ALL FUNCTIONS IN KEYSPACE p35 TO {USER}"),
    ),
    Case(
        "create aggregate",
        "CREATE AGGREGATE p36.total(int) SFUNC acc STYPE int INITCOND 0",
        "EXECUTE ON FUNCTION p36.acc(int, int)",
        ks("p36", acc("p36"), f"GRANT CREATE ON ALL FUNCTIONS IN KEYSPACE p36 TO {USER}"),
    ),
    Case(
        "drop function of a collection",
        "DROP FUNCTION p37.fl(int, list<int>)",
        "DROP ON FUNCTION p37.fl(int, list<int>)",
        ks(
            "p37",
            "CREATE FUNCTION p37.fl(i int, l list<int>) CALLED ON NULL INPUT RETURNS int "
            "LANGUAGE lua AS 'return i'",
        ),
        "<function p37.fl(int, list<int>)>",
    ),
    Case("create role", "CREATE ROLE p23", "CREATE ON ALL ROLES"),
    Case("alter role", "ALTER ROLE p24 WITH LOGIN = true", "ALTER ON ROLE p24", ("CREATE ROLE p24",)),
    Case("drop role", "DROP ROLE p25", "DROP ON ROLE p25", ("CREATE ROLE p25",), "<role p25>"),
    Case(
        "grant role", "GRANT p26a TO p26b", "AUTHORIZE ON ROLE p26a", ("CREATE ROLE p26a", "CREATE ROLE p26b")
    ),
    Case("grant permission", "GRANT SELECT ON p27.t TO p27", "ALL ON p27.t", (*ks("p27"), "CREATE ROLE p27")),
    Case(
        "revoke permission",
        "REVOKE SELECT ON p28.t FROM p28",
        "ALL ON p28.t",
        (*ks("p28"), "CREATE ROLE p28", "GRANT SELECT ON p28.t TO p28"),
    ),
    Case("read auth table", "SELECT * FROM system.roles", "SELECT ON system.roles"),
    Case(
        "read CDC descriptions",
        "SELECT * FROM system_distributed.cdc_generation_timestamps",
        "SELECT ON KEYSPACE system_distributed",
    ),
    Case("list everyone's permissions", "LIST ALL PERMISSIONS", SUPERUSER),
    Case("create service level", "CREATE SERVICE LEVEL p31", SUPERUSER),
    Case(
        "attach service level",
        "ATTACH SERVICE LEVEL p32 TO p32r",
        SUPERUSER,
        ("CREATE SERVICE LEVEL p32", "CREATE ROLE p32r"),
    ),
    Case("describe with passwords", "DESC SCHEMA WITH INTERNALS AND PASSWORDS", SUPERUSER),
]


@pytest.fixture(scope="module")
def sessions(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("matrix"))
    try:
        node = factory.start_node(options=AUTH_OPTIONS)
        admin_auth = PlainTextAuthProvider("cassandra", "cassandra")
        with scylla_cluster(node, auth_provider=admin_auth) as admin_cluster:
            admin = admin_cluster.connect()
            admin.execute(f"CREATE ROLE {USER} WITH LOGIN = true AND PASSWORD = 'u'")
            user_auth = PlainTextAuthProvider(USER, "u")
            with scylla_cluster(node, auth_provider=user_auth) as user_cluster:
                yield admin, user_cluster.connect()
    finally:
        assert not factory.cleanup()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_statement_needs_its_permission(sessions: tuple[Any, Any], case: Case) -> None:
    admin, user = sessions
    for statement in case.setup:
        admin.execute(statement)
    with pytest.raises(Unauthorized):
        user.execute(case.statement)
    grant(admin, case.grant, "GRANT", "TO")
    if case.drops is not None:  # dropping the resource takes its grants with it
        user.execute(case.statement)
        held = {r.resource for r in admin.execute(f"LIST ALL PERMISSIONS OF {USER} NORECURSIVE")}
        assert case.drops not in held
        return
    try:
        user.execute(case.statement)
    finally:
        grant(admin, case.grant, "REVOKE", "FROM")


def test_a_prepared_point_read_checks_the_permission_each_time(sessions: tuple[Any, Any]) -> None:
    """Prepared reads by key are answered at once from the node's store (no task), after the
    same check as any EXECUTE, against the grants as they are at that moment."""
    admin, user = sessions
    for statement in ks("p40"):
        admin.execute(statement)
    admin.execute("INSERT INTO p40.t (k, v) VALUES (1, 10)")
    select = user.prepare("SELECT v FROM p40.t WHERE k = ?")
    with pytest.raises(Unauthorized):
        user.execute(select, (1,))
    grant(admin, "SELECT ON p40.t", "GRANT", "TO")
    assert [r.v for r in user.execute(select, (1,))] == [10]
    assert [r.v for r in user.execute(select, (1,))] == [10]  # the table now resolved: read at once
    grant(admin, "SELECT ON p40.t", "REVOKE", "FROM")
    with pytest.raises(Unauthorized):
        user.execute(select, (1,))


def grant(admin: Any, what: str, verb: str, preposition: str) -> None:
    if what == SUPERUSER:
        admin.execute(f"ALTER ROLE {USER} WITH SUPERUSER = {str(verb == 'GRANT').lower()}")
    else:
        admin.execute(f"{verb} {what} {preposition} {USER}")


def test_allow_all_authorizer_checks_nothing(node_factory: NodeFactory) -> None:
    node = node_factory.start_node(options={"authenticator": "PasswordAuthenticator"})
    with scylla_cluster(node, auth_provider=PlainTextAuthProvider("cassandra", "cassandra")) as cluster:
        cluster.connect().execute("CREATE ROLE free WITH LOGIN = true AND PASSWORD = 'f'")
    with scylla_cluster(node, auth_provider=PlainTextAuthProvider("free", "f")) as cluster:
        s = cluster.connect()
        s.execute(f"CREATE KEYSPACE anything WITH replication = {NTS}")
        s.execute("CREATE TABLE anything.t (k int PRIMARY KEY)")
        s.execute("SELECT * FROM system.roles")


def test_creators_get_their_functions_and_views_and_types_stay_as_declared(sessions: tuple[Any, Any]) -> None:
    """ScyllaDB's UDF and permission rules together: the creator of a function (and of a view)
    is granted it; a function declared on `list<int>` is named, listed and described so."""
    admin, user = sessions
    for statement in ks("p42"):
        admin.execute(statement)
    grant(admin, "CREATE ON ALL FUNCTIONS IN KEYSPACE p42", "GRANT", "TO")
    grant(admin, "ALTER ON p42.t", "GRANT", "TO")
    user.execute(
        "CREATE FUNCTION p42.f1(i int, l list<int>) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
        "AS 'return i + #l'"
    )
    user.execute(
        "CREATE MATERIALIZED VIEW p42.mv AS SELECT k, v FROM p42.t WHERE k IS NOT NULL AND v IS NOT NULL "
        "PRIMARY KEY (v, k)"
    )
    held = {(r.resource, r.permission) for r in admin.execute(f"LIST ALL PERMISSIONS OF {USER} NORECURSIVE")}
    function = "<function p42.f1(int, list<int>)>"
    assert {p for r, p in held if r == function} == {"ALTER", "AUTHORIZE", "DROP", "EXECUTE"}
    assert {p for r, p in held if r == "<table p42.mv>"} >= {"SELECT", "ALTER", "DROP"}
    admin.execute("REVOKE EXECUTE ON FUNCTION p42.f1(int, list<int>) FROM " + USER)
    held = {(r.resource, r.permission) for r in admin.execute(f"LIST ALL PERMISSIONS OF {USER} NORECURSIVE")}
    assert (function, "EXECUTE") not in held
    described = "".join(r.create_statement for r in admin.execute("DESCRIBE FUNCTION p42.f1"))
    assert "p42.f1(i int, l list<int>)" in described
    assert "frozen" not in described


def test_function_resources_take_only_the_permissions_scylladb_applies_to_them(
    sessions: tuple[Any, Any],
) -> None:
    """CREATE is granted on all functions or a keyspace's functions, never on one function (it
    does not exist yet); a function takes ALTER, DROP, AUTHORIZE, EXECUTE. Grants on functions
    or keyspaces that do not exist are refused. CREATE OR REPLACE needs CREATE and ALTER."""
    admin, user = sessions
    for statement in ks("p47", f"CREATE FUNCTION p47.f{FN}"):
        admin.execute(statement)
    with pytest.raises(InvalidRequest, match="does not support the requested permissions: CREATE"):
        admin.execute(f"GRANT CREATE ON FUNCTION p47.f(int) TO {USER}")
    for permission in ("ALTER", "DROP", "AUTHORIZE", "EXECUTE"):
        admin.execute(f"GRANT {permission} ON FUNCTION p47.f(int) TO {USER}")
    for resource in ("ALL FUNCTIONS IN KEYSPACE p47", "ALL FUNCTIONS"):
        for permission in ("CREATE", "ALTER", "DROP", "AUTHORIZE", "EXECUTE"):
            admin.execute(f"GRANT {permission} ON {resource} TO {USER}")
            admin.execute(f"REVOKE {permission} ON {resource} FROM {USER}")
    for permission in ("SELECT", "MODIFY", "DESCRIBE"):
        with pytest.raises(InvalidRequest, match="support the requested permissions"):
            admin.execute(f"GRANT {permission} ON FUNCTION p47.f(int) TO {USER}")
    with pytest.raises(InvalidRequest, match="doesn't exist"):
        admin.execute(f"GRANT EXECUTE ON FUNCTION p47.nope(int) TO {USER}")
    with pytest.raises(InvalidRequest, match="doesn't exist"):
        admin.execute(f"GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE p47_nope TO {USER}")
    held = {(r.resource, r.permission) for r in admin.execute(f"LIST ALL PERMISSIONS OF {USER} NORECURSIVE")}
    assert {p for r, p in held if r == "<function p47.f(int)>"} == {"ALTER", "DROP", "AUTHORIZE", "EXECUTE"}

    replace = f"CREATE OR REPLACE FUNCTION p47.f{FN}"
    with pytest.raises(Unauthorized, match="CREATE"):  # ALTER on the function is not enough
        user.execute(replace)
    admin.execute(f"GRANT CREATE ON ALL FUNCTIONS IN KEYSPACE p47 TO {USER}")
    admin.execute(f"REVOKE ALTER ON FUNCTION p47.f(int) FROM {USER}")
    with pytest.raises(Unauthorized, match="ALTER"):  # nor CREATE alone
        user.execute(replace)
    admin.execute(f"GRANT ALTER ON FUNCTION p47.f(int) TO {USER}")
    user.execute(replace)
