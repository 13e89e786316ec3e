"""Answers a client can check against ScyllaDB's, through the real driver and one real node:
every restriction counts, nulls select nothing, keys match however a client orders a set, decimals
and varints keep every digit, a full page carries a paging state, and bad values get the CQL
error ScyllaDB gives (never ServerError, never our parse tree)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.protocol import ConfigurationException, SyntaxException
from cassandra.query import SimpleStatement

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode

PI_50 = Decimal("3.14159265358979323846264338327950288419716939937510")


@pytest.fixture(scope="module")
def session(node: TestNode) -> Iterator[Any]:
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute(
            "CREATE KEYSPACE rc WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        s.execute("CREATE TABLE rc.t (a int, b int, c int, v int, PRIMARY KEY (a, b, c))")
        for b in range(5):
            for c in range(3):
                s.execute("INSERT INTO rc.t (a, b, c, v) VALUES (1, %s, %s, %s)", (b, c, b * 10 + c))
        s.execute("INSERT INTO rc.t (a, b, c) VALUES (2, 0, 0)")  # v is null
        yield s


def _bc(session: Any, where: str) -> list[tuple[int, int]]:
    return [(r.b, r.c) for r in session.execute(f"SELECT b, c FROM rc.t WHERE {where}")]


def test_two_equalities_on_a_column_select_only_rows_meeting_both(session: Any) -> None:
    assert _bc(session, "a = 1 AND b = 4 AND b = 3") == []
    assert _bc(session, "a = 1 AND b = 3 AND b = 3 AND c = 1") == [(3, 1)]
    assert _bc(session, "a = 1 AND b IN (1, 2) AND b = 2 AND c = 0") == [(2, 0)]
    assert _bc(session, "a = 1 AND a = 2") == []
    assert _bc(session, "a IN (1, 2) AND a = 2") == [(0, 0)]
    # a write names its rows once: a second equality there is still refused
    with pytest.raises(InvalidRequest, match="more than one relation if it includes an Equal"):
        session.execute("UPDATE rc.t SET v = 0 WHERE a = 1 AND b = 1 AND b = 2 AND c = 0")


def test_every_slice_on_the_same_columns_restricts(session: Any) -> None:
    assert _bc(session, "a = 1 AND (b) < (1) AND (b, c) < (0, 2)") == [(0, 0), (0, 1)]
    assert _bc(session, "a = 1 AND (b, c) > (1, 1) AND (b) < (2) AND (b) > (0)") == [(1, 2)]
    assert _bc(session, "a = 1 AND b > 1 AND b > 3") == [(4, 0), (4, 1), (4, 2)]
    assert _bc(session, "a = 1 AND b < 3 AND b <= 0 AND b >= 0") == [(0, 0), (0, 1), (0, 2)]
    assert _bc(session, "a = 1 AND b = 2 AND c > 0 AND c < 2") == [(2, 1)]
    assert _bc(session, "a = 1 AND b > 3 AND b < 2") == []


def test_comparisons_with_null_select_nothing(session: Any) -> None:
    for op in ("=", "!=", "<", "<=", ">", ">="):
        assert _bc(session, f"v {op} NULL ALLOW FILTERING") == [], op
    assert _bc(session, "a = 2 AND v IN (NULL) ALLOW FILTERING") == []
    assert _bc(session, "a = 1 AND v IN (NULL, 41) ALLOW FILTERING") == [(4, 1)]


def test_if_condition_on_null_still_holds_of_a_missing_value(session: Any) -> None:
    session.execute("CREATE TABLE rc.lwt (k int PRIMARY KEY, v int)")
    session.execute("INSERT INTO rc.lwt (k) VALUES (1)")
    assert session.execute("UPDATE rc.lwt SET v = 5 WHERE k = 1 IF v = NULL").one()[0] is True
    assert session.execute("UPDATE rc.lwt SET v = 6 WHERE k = 1 IF v = NULL").one()[0] is False
    with pytest.raises(InvalidRequest, match="Invalid comparison with null"):
        session.execute("UPDATE rc.lwt SET v = 6 WHERE k = 1 IF v > NULL")


def test_view_is_not_null_on_a_regular_column_drops_rows_where_it_is_null(session: Any) -> None:
    session.execute("CREATE TABLE rc.base (k int PRIMARY KEY, xyz int, w int)")
    session.execute(
        "CREATE MATERIALIZED VIEW rc.by_w AS SELECT * FROM rc.base "
        "WHERE w IS NOT NULL AND k IS NOT NULL AND xyz IS NOT NULL PRIMARY KEY (w, k)"
    )
    session.execute("INSERT INTO rc.base (k, xyz, w) VALUES (1, 10, 100)")
    session.execute("INSERT INTO rc.base (k, w) VALUES (2, 100)")
    assert sorted(r.k for r in session.execute("SELECT k FROM rc.by_w WHERE w = 100")) == [1]
    session.execute("DELETE xyz FROM rc.base WHERE k = 1")
    assert list(session.execute("SELECT k FROM rc.by_w WHERE w = 100")) == []


def test_frozen_set_key_bound_in_any_order_finds_the_row(session: Any) -> None:
    session.execute(
        "CREATE TABLE rc.fs (k frozen<set<int>>, c frozen<map<text, int>>, v int, PRIMARY KEY (k, c))"
    )
    insert = session.prepare("INSERT INTO rc.fs (k, c, v) VALUES (?, ?, ?)")
    select = session.prepare("SELECT v FROM rc.fs WHERE k = ? AND c = ?")
    # the driver serializes a list bound to a set in the order given (and keeps repeats)
    session.execute(insert, ([3, 1, 2, 1], {"z": 1, "a": 2}, 7))
    assert [r.v for r in session.execute(select, ([1, 2, 3], {"a": 2, "z": 1}))] == [7]
    assert [r.v for r in session.execute(select, ([2, 3, 1], {"z": 1, "a": 2}))] == [7]
    assert [r.v for r in session.execute("SELECT v FROM rc.fs WHERE k = {1, 2, 3}")] == [7]
    assert [tuple(r.k) for r in session.execute("SELECT k FROM rc.fs")] == [(1, 2, 3)]


def test_decimal_and_varint_round_trip_every_digit(session: Any) -> None:
    session.execute("CREATE TABLE rc.num (k int, c decimal, d decimal, n varint, PRIMARY KEY (k, c))")
    big = 7**400
    tiny = Decimal("-1.000000000000000000000000000000000000000000000000000000000000001E-300")
    session.execute(f"INSERT INTO rc.num (k, c, d, n) VALUES (1, {PI_50}, {PI_50}, {big})")
    prepared = session.prepare("INSERT INTO rc.num (k, c, d, n) VALUES (?, ?, ?, ?)")
    session.execute(prepared, (2, tiny, tiny, -big))
    row = session.execute("SELECT c, d, n FROM rc.num WHERE k = 1").one()
    assert str(row.d) == str(PI_50) and row.c == PI_50 and row.n == big
    row = session.execute("SELECT c, d, n FROM rc.num WHERE k = 2").one()
    assert str(row.d) == str(tiny) and row.c == tiny and row.n == -big
    assert session.execute(f"SELECT d FROM rc.num WHERE k = 1 AND c = {PI_50}").one().d == PI_50
    huge = "1e1000000000"
    session.execute(f"INSERT INTO rc.num (k, c, d) VALUES (3, {huge}, {huge})")
    row = session.execute("SELECT c, d FROM rc.num WHERE k = 3").one()
    assert row.c == Decimal(huge) and row.d == Decimal(huge)


def test_decimal_sum_and_average_are_exact(session: Any) -> None:
    session.execute("CREATE TABLE rc.agg (k int, c int, d decimal, b bigint, PRIMARY KEY (k, c))")
    session.execute(f"INSERT INTO rc.agg (k, c, d, b) VALUES (1, 1, {PI_50}, 4611686018427387905)")
    session.execute("INSERT INTO rc.agg (k, c, d, b) VALUES (1, 2, 1.5, 4611686018427387907)")
    session.execute("INSERT INTO rc.agg (k, c, d, b) VALUES (1, 3, -2, -1)")
    row = session.execute("SELECT sum(d), avg(d), avg(b) FROM rc.agg WHERE k = 1").one()
    assert str(row[0]) == "2.64159265358979323846264338327950288419716939937510"
    assert (
        str(row[1]) == "0.88053088452993107948754779442650096139905646645837"
    )  # half-even at the sum's scale
    assert row[2] == (4611686018427387905 + 4611686018427387907 - 1) // 3


def test_a_full_last_page_carries_a_paging_state_then_an_empty_page_ends(session: Any) -> None:
    statement = SimpleStatement("SELECT b, c FROM rc.t WHERE a = 1 AND b < 2", fetch_size=3)
    pages = []
    state = None
    while True:
        result = session.execute(statement, paging_state=state)
        pages.append(list(result.current_rows))
        state = result.paging_state
        if state is None:
            break
    assert [len(p) for p in pages] == [3, 3, 0]
    assert [(r.b, r.c) for p in pages for r in p] == [(b, c) for b in range(2) for c in range(3)]
    limited = SimpleStatement("SELECT b FROM rc.t WHERE a = 1 LIMIT 3", fetch_size=3)
    assert session.execute(limited).paging_state is None  # the LIMIT, not the page, ended it
    one_row = SimpleStatement("SELECT v FROM rc.t WHERE a = 1 AND b = 0 AND c = 0", fetch_size=1)
    assert session.execute(one_row).paging_state is None  # a full primary key is never paged


def test_speculative_retry_that_is_not_a_number_is_a_configuration_error(session: Any) -> None:
    for value in ("nanms", "infms", "-infms", "NaNPERCENTILE", "xms"):
        with pytest.raises(ConfigurationException, match="speculative_retry"):
            session.execute(f"ALTER TABLE rc.t WITH speculative_retry = '{value}'")


def test_generator_functions_are_type_checked_against_their_receiver(session: Any) -> None:
    session.execute("CREATE TABLE rc.gen (k int PRIMARY KEY, n bigint, u uuid, t timeuuid, b blob)")
    for term in ("now()", "uuid()", "currentDate()"):
        with pytest.raises(InvalidRequest, match=r"Type error: cannot assign result of function system\."):
            session.execute(f"SELECT * FROM rc.gen WHERE n < {term} ALLOW FILTERING")
        with pytest.raises(InvalidRequest, match="Type error"):
            session.execute(f"INSERT INTO rc.gen (k, n) VALUES (1, {term})")
    # a timestamp is a bigint of milliseconds; a uuid takes a timeuuid; a blob takes anything
    session.execute("INSERT INTO rc.gen (k, n, u, t, b) VALUES (1, currentTimestamp(), now(), now(), now())")
    row = session.execute("SELECT n, u, t, b FROM rc.gen WHERE k = 1").one()
    assert row.n > 1_600_000_000_000 and row.u.version == 1 and row.t.version == 1 and len(row.b) == 16
    with pytest.raises(InvalidRequest, match="1 required but 0 provided"):
        session.execute("INSERT INTO rc.gen (k, n) VALUES (2, toUnixTimestamp())")
    with pytest.raises(InvalidRequest, match="Unknown function nosuch"):
        session.execute("INSERT INTO rc.gen (k, n) VALUES (2, nosuch())")


def test_errors_show_cql_not_the_parse_tree(session: Any) -> None:
    session.execute("CREATE TABLE rc.sel (k int PRIMARY KEY, l list<int>)")
    for selector, shown in (("l[(1, 2)]", "l[(1, 2)]"), ("foo(k, 'it''s')", "foo(k, 'it''s')")):
        with pytest.raises(InvalidRequest) as info:
            session.execute(f"SELECT {selector} FROM rc.sel")
        assert shown in str(info.value)
        assert "Literal(" not in str(info.value) and "ColumnRef(" not in str(info.value)


def test_deep_nesting_is_a_cql_error_and_the_node_serves_on(session: Any) -> None:
    deep = "(" * 400 + "1" + ")" * 400
    with pytest.raises(SyntaxException):
        session.execute(f"SELECT * FROM rc.t WHERE a = {deep}")
    nested_type = "frozen<list<" * 200 + "int" + ">>" * 200
    with pytest.raises(InvalidRequest, match="nested too deeply"):
        session.execute(f"CREATE TABLE rc.deep (k int PRIMARY KEY, v {nested_type})")
    assert session.execute("SELECT count(*) FROM rc.t").one()[0] == 16


@pytest.fixture
def unlimited_int_digits() -> Iterator[None]:
    """The driver decodes a decimal through str(int), which this process refuses past 4300 digits."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    yield
    sys.set_int_max_str_digits(before)


@pytest.mark.usefixtures("unlimited_int_digits")
def test_numbers_past_python_digit_limit_round_trip_as_literals_json_and_values(session: Any) -> None:
    session.execute("CREATE TABLE rc.wide (k int PRIMARY KEY, n varint, d decimal, t timestamp)")
    digits = "7" * 6000
    session.execute(f"INSERT INTO rc.wide (k, n, d) VALUES (1, -{digits}, {digits}.5)")
    session.execute(f'INSERT INTO rc.wide JSON \'{{"k": 2, "n": {digits}, "d": {PI_50}}}\'')
    rows = {r.k: r for r in session.execute("SELECT k, n, d FROM rc.wide")}
    assert rows[1].n == -int(Decimal(digits)) and str(rows[1].d) == digits + ".5"
    assert rows[2].n == int(Decimal(digits)) and str(rows[2].d) == str(PI_50)  # JSON keeps every digit
    text = session.execute("SELECT JSON n FROM rc.wide WHERE k = 2").one()[0]
    assert text == '{"n": ' + digits + "}"
    with pytest.raises(InvalidRequest, match=r"\(6000 digits\) does not fit in 64 bits"):
        session.execute(f"INSERT INTO rc.wide (k, t) VALUES (3, '{digits}')")
    session.execute("INSERT INTO rc.wide (k, d) VALUES (4, 1e1000000000)")
    session.execute("INSERT INTO rc.wide (k, d) VALUES (5, 1e-1000000000)")
    with pytest.raises(InvalidRequest, match="exact sum of these decimals needs"):
        session.execute("SELECT sum(d) FROM rc.wide")
