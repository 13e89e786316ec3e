"""Types nested too deeply never reach the catalog, however they are built (one statement, a chain
of user types, ALTER TYPE adding depth underneath), and the schema codec bounds its recursion in
both directions while round-tripping everything up to the limit."""

from __future__ import annotations

import msgpack
import pytest

from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.nesting import MAX_TYPE_NESTING, type_nesting
from tabletdb.cql.types import INT, CqlType, ListType, TupleType, UserTypeRef
from tabletdb.schema import serialize
from tabletdb.schema.ddl_alter_table import alter_table_add
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.ddl_types import alter_type_add, create_type
from tabletdb.schema.model import Catalog

from .helpers import apply, next_id, with_keyspace, with_table


def _tuples(levels: int) -> CqlType:
    t: CqlType = INT
    for _ in range(levels):
        t = TupleType((INT, t))
    return t


def _frozen_lists(levels: int, inner: CqlType = INT) -> CqlType:
    for _ in range(levels):
        inner = ListType(inner, frozen=True)
    return inner


def _chain(levels: int) -> Catalog:
    """User types u1..u<levels>, each holding the one before it (u1 holds an int): u<n> nests n deep."""
    catalog = apply(with_keyspace(), create_type(with_keyspace(), "ks", "u1", [("a", INT)]))
    for i in range(2, levels + 1):
        catalog = apply(
            catalog, create_type(catalog, "ks", f"u{i}", [("a", UserTypeRef(None, f"u{i - 1}", True))])
        )
    return catalog


def test_a_column_type_may_nest_to_the_limit() -> None:
    columns = [("k", INT, False), ("v", _tuples(MAX_TYPE_NESTING), False)]
    catalog = with_table(with_keyspace(), columns=columns, pk=["k"], ck=[])
    column = catalog.keyspaces["ks"].tables["t"].column("v")
    assert column is not None and type_nesting(column.type) == MAX_TYPE_NESTING


@pytest.mark.parametrize("levels", [MAX_TYPE_NESTING + 1, 10_000])
def test_a_column_type_nested_deeper_is_refused_without_recursing(levels: int) -> None:
    columns = [("k", INT, False), ("v", _frozen_lists(levels), False)]
    with pytest.raises(InvalidRequest, match="nested too deeply"):
        create_table(with_keyspace(), "ks", "t", columns, ["k"], new_id=next_id())


def test_a_chain_of_user_types_stops_at_the_limit() -> None:
    catalog = _chain(MAX_TYPE_NESTING)
    deepest = UserTypeRef(None, f"u{MAX_TYPE_NESTING}", True)
    with pytest.raises(InvalidRequest, match=rf"Type ks\.u{MAX_TYPE_NESTING + 1} is nested too deeply"):
        create_type(catalog, "ks", f"u{MAX_TYPE_NESTING + 1}", [("a", deepest)])
    catalog = with_table(catalog, columns=[("k", INT, False), ("v", deepest, False)], pk=["k"], ck=[])
    with pytest.raises(InvalidRequest, match="nested too deeply"):  # a user type inside a list: one more
        alter_table_add(catalog, "ks", "t", [("w", ListType(deepest, frozen=True), False)])


def test_alter_type_cannot_make_the_types_and_columns_using_it_too_deep() -> None:
    catalog = _chain(2)  # u2 holds u1
    catalog = with_table(
        catalog, columns=[("k", INT, False), ("v", UserTypeRef(None, "u2", True), False)], pk=["k"], ck=[]
    )
    fits = _frozen_lists(MAX_TYPE_NESTING - 3)  # u1 then nests 126 deep, u2 127 and the column 127
    catalog = apply(catalog, alter_type_add(catalog, "ks", "u1", "b", fits))
    with pytest.raises(InvalidRequest, match="nested too deeply"):
        alter_type_add(catalog, "ks", "u1", "c", _frozen_lists(MAX_TYPE_NESTING - 1))


def test_the_codec_round_trips_a_catalog_at_the_limit() -> None:
    catalog = _chain(MAX_TYPE_NESTING)
    columns = [
        ("k", INT, False),
        ("v", UserTypeRef(None, f"u{MAX_TYPE_NESTING}", True), False),
        ("w", _tuples(MAX_TYPE_NESTING), False),
    ]
    catalog = with_table(catalog, columns=columns, pk=["k"], ck=[])
    data = msgpack.packb(serialize.catalog_to_plain(catalog), use_bin_type=True)
    assert serialize.catalog_from_plain(msgpack.unpackb(data, raw=False)) == catalog


def test_the_codec_refuses_to_encode_what_it_could_not_decode() -> None:
    with pytest.raises(serialize.PlainNestingError):
        serialize.type_to_plain(_frozen_lists(serialize.MAX_PLAIN_DEPTH + 1))
    with pytest.raises(serialize.PlainNestingError):
        serialize.type_to_plain(_tuples(50_000))


def test_the_codec_refuses_plain_data_nested_too_deeply_without_recursing() -> None:
    plain: object = {"@n": "int"}
    for _ in range(100_000):
        plain = {"@": "ListType", "element": plain, "frozen": True}
    with pytest.raises(serialize.PlainNestingError):
        serialize.type_from_plain(plain)
    listed: object = []
    for _ in range(100_000):
        listed = [listed]
    with pytest.raises(serialize.PlainNestingError):
        serialize.mutations_from_plain(listed)
