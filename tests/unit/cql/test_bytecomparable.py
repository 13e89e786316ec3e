"""Clustering-key encoding: bytewise order == CQL clustering order; prefix slices; decode round trip."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql import types as T
from tabletdb.cql.bytecomparable import (
    CorruptClusteringKey,
    decode_clustering,
    encode_clustering,
    lower_bound,
    upper_bound,
)
from tabletdb.cql.codec import serialize
from tabletdb.cql.compare import compare

from .strategies import COMPARABLE_NATIVES, cql_types, values_of

Schema = list[tuple[T.CqlType, bool]]
Key = list[bytes | None]


@st.composite
def schemas(draw: st.DrawFn) -> Schema:
    types = draw(st.lists(cql_types(COMPARABLE_NATIVES), min_size=1, max_size=3))
    return [(t, draw(st.booleans())) for t in types]


@st.composite
def keys(draw: st.DrawFn, schema: Schema, allow_null: bool = True) -> Key:
    out: Key = []
    for t, _ in schema:
        choice = draw(st.integers(0, 9))
        if choice == 0 and allow_null:
            out.append(None)
        elif choice == 1:
            out.append(b"")
        else:
            out.append(serialize(t, draw(values_of(t))))
    return out


def _component_cmp(t: T.CqlType, a: bytes | None, b: bytes | None) -> int:
    if a is None or b is None:
        return (a is not None) - (b is not None)
    c = compare(t, a, b)
    return (c > 0) - (c < 0)


def model_cmp(schema: Schema, a: Key, b: Key) -> int:
    """Clustering order of two keys or prefixes, compared over their common length."""
    for (t, desc), x, y in zip(schema, a, b):
        c = _component_cmp(t, x, y)
        if c:
            return -c if desc else c
    return 0


def enc(schema: Schema, key: Key) -> bytes:
    return encode_clustering([(t, d, v) for (t, d), v in zip(schema, key)])


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_bytewise_order_is_clustering_order(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    a = data.draw(keys(schema))
    b = data.draw(st.one_of(keys(schema), st.just(a)))
    ea, eb = enc(schema, a), enc(schema, b)
    expected = model_cmp(schema, a, b)
    assert ((ea > eb) - (ea < eb)) == expected


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_decode_returns_equal_values(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    key = data.draw(keys(schema))
    prefix_len = data.draw(st.integers(0, len(schema)))
    encoded = enc(schema, key[:prefix_len])
    decoded = decode_clustering(schema, encoded)
    assert len(decoded) == prefix_len
    assert all(_component_cmp(t, x, y) == 0 for (t, _), x, y in zip(schema, key, decoded))
    assert enc(schema, decoded) == encoded


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_prefix_bounds_select_the_slice(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    key = data.draw(keys(schema, allow_null=False))
    other = data.draw(keys(schema, allow_null=False))
    # Mix the key's own components into the prefix so equal prefixes are common.
    mixed = [data.draw(st.sampled_from([k, o])) for k, o in zip(key, other)]
    prefix = mixed[: data.draw(st.integers(0, len(schema)))]
    inclusive = data.draw(st.booleans())
    components: list[tuple[T.CqlType, bool, bytes | None]] = [(t, d, v) for (t, d), v in zip(schema, prefix)]
    ek = enc(schema, key)
    c = model_cmp(schema, key, prefix)  # key vs prefix over the prefix's length
    lo, hi = lower_bound(components, inclusive), upper_bound(components, inclusive)
    if prefix:
        assert (lo <= ek) == (c >= 0 if inclusive else c > 0)
        assert (ek < hi) == (c <= 0 if inclusive else c < 0)
    else:
        assert lo <= ek < hi


def test_descending_column_reverses_only_itself() -> None:
    schema: Schema = [(T.INT, False), (T.TEXT, True)]

    def k(i: int, s: str) -> bytes:
        return enc(schema, [serialize(T.INT, i), serialize(T.TEXT, s)])

    assert k(1, "b") < k(1, "a") < k(2, "z") < k(2, "")


def test_values_that_compare_equal_encode_equal() -> None:
    from decimal import Decimal

    def one(t: T.CqlType, v: Any) -> bytes:
        return encode_clustering([(t, False, serialize(t, v))])

    assert one(T.DECIMAL, Decimal("1.0")) == one(T.DECIMAL, Decimal("1.000"))
    assert encode_clustering([(T.DOUBLE, False, bytes.fromhex("7ff8000000000001"))]) == one(
        T.DOUBLE, float("nan")
    )
    tup = T.TupleType((T.INT, T.INT))
    assert one(tup, (1,)) == one(tup, (1, None))


@pytest.mark.parametrize(
    "data", [b"\x41", b"\x40\x80", b"\x40\x80\x00\x00\x01\x40", b"\x40\x80\x00\x00\x00\x99"]
)
def test_corrupt_encodings_are_reported(data: bytes) -> None:
    with pytest.raises(CorruptClusteringKey):
        decode_clustering([(T.INT, False), (T.INT, False)], data)


def test_decimals_beyond_the_default_context_encode_in_order_and_decode_exactly() -> None:
    from decimal import Decimal

    from tabletdb.cql.codec import deserialize

    from .test_compare import EXTREME_DECIMALS

    encoded = {d: encode_clustering([(T.DECIMAL, False, serialize(T.DECIMAL, d))]) for d in EXTREME_DECIMALS}
    assert sorted(EXTREME_DECIMALS, key=encoded.__getitem__) == sorted(EXTREME_DECIMALS)
    for d, key in encoded.items():
        (back,) = decode_clustering([(T.DECIMAL, False)], key)
        assert back is not None
        value = deserialize(T.DECIMAL, back)
        assert isinstance(value, Decimal) and value == d
