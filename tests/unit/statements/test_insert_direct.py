"""The direct INSERT build (every value bound and stored as sent) gives exactly the mutations,
or the same refusal, as the plan's general loop: random bound bytes, nulls, unsets, bad
encodings, oversized keys and TTLs."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.types import BIGINT, BLOB, DOUBLE, INT, TEXT, UUID
from tabletdb.cql.values import UNSET
from tabletdb.schema.model import ClusteringOrder, ColumnDef, ColumnKind, TableDef
from tabletdb.statements.cells import WriteTime
from tabletdb.statements.insert_plan import insert_plan, planned_insert
from tabletdb.statements.terms import Bindings


def _table(composite: bool) -> TableDef:
    cols = [
        ColumnDef("k", INT, ColumnKind.PARTITION_KEY, 0),
        ColumnDef("c", BIGINT, ColumnKind.CLUSTERING, 0, ClusteringOrder.ASC),
        ColumnDef("v", TEXT, ColumnKind.REGULAR, -1),
        ColumnDef("u", UUID, ColumnKind.REGULAR, -1),
        ColumnDef("b", BLOB, ColumnKind.REGULAR, -1),
        ColumnDef("d", DOUBLE, ColumnKind.REGULAR, -1),
    ]
    if composite:
        cols.insert(1, ColumnDef("j", TEXT, ColumnKind.PARTITION_KEY, 1))
    return TableDef("ks", "t", uuid.UUID(int=1), tuple(cols))


_VALID = {
    "k": st.binary(min_size=4, max_size=4),
    "c": st.binary(min_size=8, max_size=8),
    "j": st.text(max_size=4).map(str.encode),
    "v": st.text(max_size=4).map(str.encode),
    "u": st.binary(min_size=16, max_size=16),
    "b": st.binary(max_size=6),
}
_ODD = st.one_of(
    st.none(),
    st.just(UNSET),
    st.binary(max_size=9),  # often a wrong length for int, bigint, uuid; not always UTF-8
    st.just(b"x" * 70_000),  # over the key component limit
)


def _value(column: str) -> st.SearchStrategy[Any]:
    return st.one_of(_VALID[column], _VALID[column], _VALID[column], _ODD)


@settings(max_examples=300, deadline=None)
@given(
    composite=st.booleans(),
    order=st.permutations(["k", "c", "v", "u", "b"]),
    data=st.data(),
    ttl=st.sampled_from([0, 0, 60]),
)
def test_direct_insert_equals_the_general_loop(
    composite: bool, order: list[str], data: st.DataObject, ttl: int
) -> None:
    table = _table(composite)
    columns = [*order, "j"] if composite else order
    values = [data.draw(_value(c), label=c) for c in columns]
    stmt = parse_statement(
        f"INSERT INTO ks.t ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    )
    assert isinstance(stmt, ast.InsertStatement)
    plan = insert_plan(stmt, table)
    assert plan.direct is not None
    general = dataclasses.replace(plan, direct=None)
    bindings = Bindings(values)
    when = WriteTime(1_000, ttl, 1_700_000_000)
    outcomes: list[tuple[str, object]] = []
    for p in (plan, general):
        try:
            outcomes.append(("ok", planned_insert(p, table, bindings, when)))
        except InvalidRequest as exc:
            outcomes.append(("error", str(exc)))
    assert outcomes[0] == outcomes[1]
    _seen.add(outcomes[0][0])


_seen: set[str] = set()


def test_both_outcomes_were_exercised() -> None:
    """Run after the property: it must have compared successful builds and refusals alike."""
    test_direct_insert_equals_the_general_loop()
    assert _seen == {"ok", "error"}


def test_what_is_left_to_the_general_loop() -> None:
    table = _table(False)
    for text in (
        "INSERT INTO ks.t (k, c, d) VALUES (?, ?, ?)",  # double is not stored as sent
        "INSERT INTO ks.t (k, c, v) VALUES (?, ?, 'x')",  # a literal
        "INSERT INTO ks.t (k, v) VALUES (?, ?)",  # a clustering column missing: refused by the loop
    ):
        stmt = parse_statement(text)
        assert isinstance(stmt, ast.InsertStatement)
        assert insert_plan(stmt, table).direct is None, text
