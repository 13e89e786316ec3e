"""catalog_events: what a snapshot install must announce to drivers."""

from __future__ import annotations

import uuid

from tabletdb.cql.types import INT, TEXT
from tabletdb.schema.catalog_diff import catalog_events
from tabletdb.schema.ddl_common import Change, DdlOutcome, SchemaChangeEvent, SchemaConfig, Target
from tabletdb.schema.ddl_functions import create_function
from tabletdb.schema.ddl_keyspace import create_keyspace, drop_keyspace
from tabletdb.schema.ddl_table import create_table, drop_table
from tabletdb.schema.ddl_types import create_type
from tabletdb.schema.model import Catalog
from tabletdb.schema.mutations import apply_mutations

CONFIG = SchemaConfig(datacenters=("dc1",))
NTS = {"class": "NetworkTopologyStrategy", "dc1": 1}


def _apply(catalog: Catalog, outcome: DdlOutcome) -> Catalog:
    return apply_mutations(catalog, outcome.mutations, uuid.uuid1())


def _through(catalog: Catalog, *steps: object) -> tuple[Catalog, list[SchemaChangeEvent]]:
    events: list[SchemaChangeEvent] = []
    for step in steps:
        outcome = step(catalog)  # type: ignore[operator]
        events += outcome.events
        catalog = _apply(catalog, outcome)
    return catalog, events


def test_diff_of_a_sequence_reports_what_the_commands_announced() -> None:
    start, _ = _through(
        Catalog(),
        lambda c: create_keyspace(c, "ks", NTS, config=CONFIG),
        lambda c: create_table(c, "ks", "old", [("k", INT, False)], ["k"], new_id=uuid.uuid1()),
    )
    end, announced = _through(
        start,
        lambda c: create_keyspace(c, "other", NTS, config=CONFIG),
        lambda c: create_type(c, "ks", "u", [("a", INT)]),
        lambda c: create_table(
            c, "ks", "new", [("k", INT, False), ("v", TEXT, False)], ["k"], new_id=uuid.uuid1()
        ),
        lambda c: drop_table(c, "ks", "old"),
        lambda c: create_function(c, "ks", "f", ["x"], [INT], INT, "lua", "return x", True),
    )
    assert set(catalog_events(start, end)) == set(announced)


def test_dropped_keyspace_is_one_event_and_unchanged_catalog_none() -> None:
    start, _ = _through(
        Catalog(),
        lambda c: create_keyspace(c, "ks", NTS, config=CONFIG),
        lambda c: create_table(c, "ks", "t", [("k", INT, False)], ["k"], new_id=uuid.uuid1()),
    )
    end = _apply(start, drop_keyspace(start, "ks"))
    assert catalog_events(start, end) == (SchemaChangeEvent(Change.DROPPED, Target.KEYSPACE, "ks"),)
    assert catalog_events(end, end) == ()
