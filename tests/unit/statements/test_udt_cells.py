"""A non-frozen UDT's fields from its cells (``statements.udt_cells``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql import codec
from tabletdb.cql.types import INT, TEXT, UserType
from tabletdb.statements.udt_cells import (
    WHOLE_VALUE_PATH,
    field_index,
    field_path,
    join_fields,
    live_fields,
    split_value,
)

UT = UserType("ks", "ut", ("a", "b", "c"), (INT, TEXT, INT))


def _i(n: int) -> bytes:
    return codec.serialize(INT, n)


def test_paths_are_smallint_indexes() -> None:
    assert field_path(0) == b"\x00\x00" and field_path(3) == b"\x00\x03"
    assert [field_index(field_path(i)) for i in range(300)] == list(range(300))
    assert sorted(field_path(i) for i in (10, 2, 256)) == [field_path(i) for i in (2, 10, 256)]


def test_no_live_field_is_null() -> None:
    assert live_fields(UT, []) is None


def test_fields_assemble_in_index_order() -> None:
    fields = live_fields(UT, [(field_path(2), _i(3), 5), (field_path(0), _i(1), 5)])
    assert fields == [_i(1), None, _i(3)]
    assert codec.deserialize(UT, join_fields(fields)) == (1, None, 3)


def test_a_whole_value_cell_gives_fields_a_newer_field_cell_overrides() -> None:
    whole = codec.serialize(UT, (1, "x", None))
    older, newer = (field_path(0), _i(9), 10), (field_path(0), _i(7), 30)
    assert live_fields(UT, [(WHOLE_VALUE_PATH, whole, 20), older]) == [
        _i(1),
        codec.serialize(TEXT, "x"),
        None,
    ]
    assert live_fields(UT, [(WHOLE_VALUE_PATH, whole, 20), newer])[0] == _i(7)  # type: ignore[index]


def test_a_short_value_from_before_a_field_was_added_pads_with_nulls() -> None:
    short = UserType("ks", "ut", ("a",), (INT,))
    assert split_value(UT, codec.serialize(short, (4,))) == [_i(4), None, None]


@given(
    st.tuples(
        st.none() | st.integers(-5, 5),
        st.none() | st.text(max_size=3),
        st.none() | st.integers(-(2**31), 2**31 - 1),
    )
)
def test_split_and_join_round_trip(value: tuple[int | None, str | None, int | None]) -> None:
    data = codec.serialize(UT, value)
    assert codec.deserialize(UT, join_fields(split_value(UT, data))) == value
