"""The resize re-evaluation's inputs from group0's catalog: each table's replication, hints and
keyspace ``initial``; a CDC log table follows its base instead of deciding its own count."""

from __future__ import annotations

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.state import Group0State
from tabletdb.group0.tablet_resize import PAUSED, ResizeInputsCache, catalog_sizing
from tabletdb.schema.model import CDC_LOG_SUFFIX
from tabletdb.tablets.count import SizingConfig
from tests.unit.schema.helpers import with_keyspace, with_table

TABLETS = {"replication": {"class": "NetworkTopologyStrategy", "dc1": 3}, "tablets": {"initial": 4}}


def test_tables_hints_initial_and_the_cdc_log_following_its_base() -> None:
    catalog = with_keyspace(None, "ks", **TABLETS)
    catalog = with_table(catalog, "plain", options={"tablets": {"max_tablet_count": 16}})
    catalog = with_table(catalog, "logged", options={"cdc": {"enabled": True}})
    catalog = with_keyspace(catalog, "vn", replication={"class": "SimpleStrategy", "replication_factor": 1})
    catalog = with_table(catalog, "t", keyspace="vn")
    tables, colocated, cdc = catalog_sizing(catalog)
    ks = catalog.keyspaces["ks"]
    plain, logged = ks.tables["plain"], ks.tables["logged"]
    log = ks.tables.get("logged" + CDC_LOG_SUFFIX)
    assert log is not None, "creating a CDC table makes its log table"
    assert set(tables) == {plain.id, logged.id}  # not the log, not the vnode keyspace's table
    assert colocated == {logged.id: (log.id,)} and cdc == {logged.id}
    assert tables[plain.id].hints.max_tablet_count == 16 and tables[plain.id].keyspace_initial == 4
    assert tables[plain.id].replication == {"dc1": 3}


def test_inputs_are_cached_on_the_catalog_and_paused_with_balancing() -> None:
    catalog = with_table(with_keyspace(None, "ks", **TABLETS), "t")
    cache = ResizeInputsCache(SizingConfig())
    state = ClusterState(Group0State(catalog=catalog))
    first = cache(state, 1)
    assert cache(state, 2).tables is first.tables and first.paused == ""
    assert cache(ClusterState(Group0State(catalog=catalog), balancing_enabled=False), 3).paused == PAUSED
