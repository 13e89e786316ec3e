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
