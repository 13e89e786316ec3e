"""Property: for random schemas, DESC SCHEMA WITH INTERNALS replays to an identical schema."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabletdb.cql.types import (
    NATIVE_TYPE_NAMES,
    CqlType,
    ListType,
    MapType,
    NativeType,
    SetType,
    TupleType,
    UserTypeRef,
)
from tabletdb.schema.ddl_alter_table import alter_table_add, alter_table_drop
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.ddl_types import create_type
from tabletdb.schema.describe import schema_rows
from tabletdb.schema.indexes import create_index
from tabletdb.schema.model import Catalog

from .helpers import CONFIG, apply, next_id, with_keyspace
from .replay import replay

# Identifiers that exercise quoting: upper case, reserved words, quotes, digits first.
identifiers = st.sampled_from(["a", "b_1", "Mixed", "select", "key", 'q"t', "1st", "x y", "token", "v"])
coin = st.booleans()
table_names = st.sampled_from(["a", "Mixed", "select", "key", "1st", "token", "T_2"])
key_natives = st.sampled_from([n for n in NATIVE_TYPE_NAMES if n not in ("counter", "duration")]).map(
    NativeType
)
option_maps = st.fixed_dictionaries(
    {},
    optional={
        "comment": st.text(alphabet="ab' \"", max_size=5),
        "gc_grace_seconds": st.integers(0, 10**6),
        "bloom_filter_fp_chance": st.sampled_from([0.01, 0.1, 0.5, 1]),
        "crc_check_chance": st.sampled_from([0, 0.25, 1]),
        "cdc": st.fixed_dictionaries({"enabled": st.booleans()}, optional={"ttl": st.integers(0, 100)}),
        "tablets": st.fixed_dictionaries({}, optional={"min_tablet_count": st.integers(0, 64)}),
    },
)


def value_types(udts: list[str]) -> st.SearchStrategy[CqlType]:
    leaves: st.SearchStrategy[CqlType] = key_natives
    if udts:
        leaves = leaves | st.sampled_from(udts).map(lambda n: UserTypeRef(None, n, True))
    frozen = st.one_of(
        leaves,
        st.builds(lambda t: ListType(t, True), leaves),
        st.builds(lambda t: TupleType((t, NativeType("int"))), leaves),
    )
    return st.one_of(
        frozen,
        st.builds(ListType, frozen),
        st.builds(SetType, frozen),
        st.builds(MapType, key_natives, frozen),
    )


@st.composite
def schemas(draw: st.DrawFn) -> Catalog:
    catalog = with_keyspace(None, draw(table_names))
    ks = next(iter(catalog.keyspaces))
    udts: list[str] = []
    for name in draw(st.lists(identifiers, max_size=2, unique=True)):
        fields = draw(
            st.lists(
                st.tuples(identifiers, value_types(udts).filter(lambda t: not t.is_multi_cell)),
                min_size=1,
                max_size=3,
                unique_by=lambda f: f[0],
            )
        )
        catalog = apply(catalog, create_type(catalog, ks, name, fields))
        udts.append(name)
    for table in draw(st.lists(table_names, min_size=1, max_size=2, unique=True)):
        names = draw(st.lists(identifiers, min_size=2, max_size=5, unique=True))
        n_pk = draw(st.integers(1, len(names) - 1))
        n_ck = draw(st.integers(0, len(names) - n_pk))
        pk, ck, rest = names[:n_pk], names[n_pk : n_pk + n_ck], names[n_pk + n_ck :]
        columns: list[tuple[str, CqlType, bool]] = [(n, draw(key_natives), False) for n in pk + ck]
        columns += [(n, draw(value_types(udts)), bool(ck) and draw(st.booleans())) for n in rest]
        order = [(c, draw(st.sampled_from(["ASC", "DESC"]))) for c in ck]
        table_options = draw(option_maps)
        catalog = apply(
            catalog,
            create_table(catalog, ks, table, columns, pk, ck, order, table_options, new_id=next_id()),
        )
        drop_one: bool = draw(coin)
        if rest and drop_one:
            dropped = rest[0]
            catalog = apply(
                catalog, alter_table_drop(catalog, ks, table, [dropped], draw(st.integers(0, 2**53)))
            )
            if draw(st.booleans()):
                original = next(t for n, t, _ in columns if n == dropped)
                catalog = apply(catalog, alter_table_add(catalog, ks, table, [(dropped, original, False)]))
        regular = [n for n, t, static in columns if n in rest and not static and not t.is_multi_cell]
        add_index: bool = draw(coin)
        if regular and (len(pk) > 1 or ck) and add_index:
            current = catalog.table(ks, table)
            if current is not None and current.column(regular[-1]) is not None:
                kind = "full" if current.column(regular[-1]).type.is_collection else "simple"  # type: ignore[union-attr]
                catalog = apply(catalog, create_index(catalog, ks, table, None, regular[-1], kind))
    return catalog


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(schemas())
def test_random_schemas_survive_describe_and_replay(catalog: Catalog) -> None:
    original = schema_rows(catalog, with_internals=True)
    restored = replay("".join(r.create_statement for r in original), CONFIG)
    assert schema_rows(restored, with_internals=True) == original
