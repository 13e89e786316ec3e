"""Building catalogs for tests by running the real decision functions and applying their outcomes."""

from __future__ import annotations

import uuid
from typing import Any

from tabletdb.cql.types import INT, TEXT, CqlType
from tabletdb.schema.ddl_common import DdlOutcome, SchemaConfig
from tabletdb.schema.ddl_keyspace import create_keyspace
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.model import Catalog
from tabletdb.schema.mutations import apply_mutations

CONFIG = SchemaConfig(datacenters=("dc1", "dc2"))
_counter = [0]


def next_id() -> uuid.UUID:
    _counter[0] += 1
    return uuid.UUID(int=_counter[0])


def apply(catalog: Catalog, outcome: DdlOutcome) -> Catalog:
    return apply_mutations(catalog, outcome.mutations, next_id())


def with_keyspace(catalog: Catalog | None = None, name: str = "ks", **kwargs: Any) -> Catalog:
    catalog = catalog or Catalog()
    replication = kwargs.pop("replication", {"class": "NetworkTopologyStrategy", "dc1": 1})
    return apply(catalog, create_keyspace(catalog, name, replication, config=CONFIG, **kwargs))


def with_table(
    catalog: Catalog,
    name: str = "t",
    columns: list[tuple[str, CqlType, bool]] | None = None,
    pk: list[str] | None = None,
    ck: list[str] | None = None,
    keyspace: str = "ks",
    **kwargs: Any,
) -> Catalog:
    columns = columns or [("pk", INT, False), ("ck", INT, False), ("v", TEXT, False)]
    pk = pk or ["pk"]
    ck = ["ck"] if ck is None else ck
    outcome = create_table(catalog, keyspace, name, columns, pk, ck, new_id=next_id(), **kwargs)
    return apply(catalog, outcome)


def representative_catalog() -> Catalog:
    """Composite keys, clustering order, statics, nested UDTs, collections, indexes, a view, quoted names."""
    from tabletdb.cql.types import BIGINT, ListType, MapType, SetType, UserTypeRef
    from tabletdb.schema.ddl_alter_table import alter_table_drop
    from tabletdb.schema.ddl_functions import create_aggregate, create_function
    from tabletdb.schema.ddl_types import create_type
    from tabletdb.schema.ddl_views import create_view
    from tabletdb.schema.indexes import create_index

    rep = {"class": "NetworkTopologyStrategy", "dc1": 3, "dc2": ["r1", "r2"]}
    catalog = with_keyspace(replication=rep, tablets={"initial": 4})
    catalog = with_keyspace(catalog, "vn", replication={"class": "SimpleStrategy", "replication_factor": 1})
    catalog = apply(catalog, create_type(catalog, "ks", "addr", [("street", TEXT), ("zip", INT)]))
    person_fields = [
        ("name", TEXT),
        ("Home", UserTypeRef(None, "addr", True)),
        ("tags", SetType(TEXT, frozen=True)),
    ]
    catalog = apply(catalog, create_type(catalog, "ks", "person", person_fields))
    columns = [
        ("p1", INT, False),
        ("P2", TEXT, False),
        ("c1", INT, False),
        ("c2", TEXT, False),
        ("s", INT, True),
        ("m", MapType(TEXT, INT), False),
        ("who", UserTypeRef(None, "person"), False),
        ("l", ListType(ListType(INT, frozen=True)), False),
        ("old", BIGINT, False),
    ]
    catalog = apply(
        catalog,
        create_table(
            catalog,
            "ks",
            "Events",
            columns,
            ["p1", "P2"],
            ["c1", "c2"],
            [("c1", "DESC"), ("c2", "ASC")],
            {"comment": "it's", "tablets": {"min_tablet_count": 8}},
            new_id=uuid.UUID("5a1c0c10-0000-1000-8000-000000000001"),
        ),
    )
    catalog = apply(catalog, alter_table_drop(catalog, "ks", "Events", ["old"], 1_700_000_000_123_456))
    catalog = apply(catalog, create_index(catalog, "ks", "Events", "m_keys", "m", "keys"))
    catalog = apply(catalog, create_index(catalog, "ks", "Events", None, "s"))
    catalog = with_table(catalog, "base")
    catalog = apply(
        catalog,
        create_view(
            catalog,
            "ks",
            "by_v",
            "base",
            ["v"],
            ["v"],
            ["pk", "ck"],
            where_clause="v IS NOT NULL AND pk IS NOT NULL AND ck IS NOT NULL",
            not_null=["v", "pk", "ck"],
            new_id=uuid.UUID("5a1c0c10-0000-1000-8000-000000000002"),
        ),
    )
    catalog = apply(
        catalog,
        create_function(
            catalog, "ks", "acc", ["s", "x"], [BIGINT, INT], BIGINT, "lua", "return s + x", False
        ),
    )
    catalog = apply(catalog, create_aggregate(catalog, "ks", "total", [INT], "acc", BIGINT, None, "0"))
    return catalog
