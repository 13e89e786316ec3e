"""built_views / views_builds_in_progress / "IndexInfo" / view_build_status from the catalog, the
statuses recorded in group0 and the fills under way."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from tabletdb.group0.view_builds import STARTED, SUCCESS, ViewBuildCommand, apply_view_build
from tabletdb.schema.model import Catalog
from tabletdb.systables.view_builds import (
    builds_in_progress_rows,
    built_views_rows,
    index_info_rows,
    view_build_status_rows,
)
from tabletdb.views.build_progress import BuildProgress
from tests.unit.schema.helpers import representative_catalog


@pytest.fixture
def catalog() -> Catalog:
    return representative_catalog()


def test_everything_is_built_when_no_fill_runs(catalog: Catalog) -> None:
    indexes = sorted(catalog.keyspaces["ks"].indexes)
    assert "m_keys" in indexes
    assert built_views_rows(catalog, (), {}) == [
        {"keyspace_name": "ks", "view_name": v} for v in sorted(["by_v", *(i + "_index" for i in indexes)])
    ]
    assert index_info_rows(catalog, (), {}) == [{"table_name": "ks", "index_name": i} for i in indexes]
    assert builds_in_progress_rows(catalog, (), {}) == []


def test_a_running_fill_moves_its_view_to_in_progress_until_it_ends(catalog: Catalog) -> None:
    progress = BuildProgress()
    with progress.tracking("ks", "m_keys_index"):
        progress.advance("ks", "m_keys_index", 42)
        running = dict(progress.running)
        assert builds_in_progress_rows(catalog, (), running) == [
            {
                "keyspace_name": "ks",
                "view_name": "m_keys_index",
                "last_token": "42",
                "generation_number": None,
            }
        ]
        assert "m_keys" not in {r["index_name"] for r in index_info_rows(catalog, (), running)}
        assert "m_keys_index" not in {r["view_name"] for r in built_views_rows(catalog, (), running)}
    with pytest.raises(RuntimeError), progress.tracking("ks", "by_v"):
        raise RuntimeError("fill failed")
    assert progress.running == {}


HOSTS = (uuid.UUID(int=2), uuid.UUID(int=1))


def _view_id(catalog: Catalog, name: str) -> uuid.UUID:
    return catalog.keyspaces["ks"].views[name].table.id


def test_a_recorded_start_is_in_progress_on_every_node_until_success(catalog: Catalog) -> None:
    """A status in group0 decides for nodes that run no fill themselves (or after a restart)."""
    view = _view_id(catalog, "by_v")
    started = apply_view_build((), ViewBuildCommand(uuid.uuid1(), view, STARTED), catalog, HOSTS)
    assert [r["view_name"] for r in builds_in_progress_rows(catalog, started, {})] == ["by_v"]
    assert "by_v" not in {r["view_name"] for r in built_views_rows(catalog, started, {})}
    status = [r for r in view_build_status_rows(catalog, started, HOSTS) if r["view_name"] == "by_v"]
    assert [(r["host_id"], r["status"]) for r in status] == [
        (uuid.UUID(int=1), STARTED),
        (uuid.UUID(int=2), STARTED),
    ]
    done = apply_view_build(started, ViewBuildCommand(uuid.uuid1(), view, SUCCESS), catalog, HOSTS)
    assert builds_in_progress_rows(catalog, done, {}) == []
    assert "by_v" in {r["view_name"] for r in built_views_rows(catalog, done, {})}
    assert {r["status"] for r in view_build_status_rows(catalog, done, HOSTS)} == {SUCCESS}


def test_a_status_covers_the_hosts_it_was_recorded_for(catalog: Catalog) -> None:
    view = _view_id(catalog, "by_v")
    done = apply_view_build((), ViewBuildCommand(uuid.uuid1(), view, SUCCESS), catalog, HOSTS[:1])
    rows = view_build_status_rows(catalog, done, HOSTS)
    assert [r["host_id"] for r in rows if r["view_name"] == "by_v"] == [uuid.UUID(int=2)]
    # views with nothing recorded (needing no fill, or older than statuses) are built everywhere
    others = [r for r in rows if r["view_name"] != "by_v"]
    assert others and {r["status"] for r in others} == {SUCCESS}
    assert len(others) == 2 * len({r["view_name"] for r in others})


def test_statuses_of_dropped_views_go_and_unknown_views_are_not_recorded(catalog: Catalog) -> None:
    view = _view_id(catalog, "by_v")
    stale = uuid.uuid4()
    builds = apply_view_build((), ViewBuildCommand(uuid.uuid1(), stale, STARTED), catalog, HOSTS)
    assert builds == ()
    builds = apply_view_build(builds, ViewBuildCommand(uuid.uuid1(), view, STARTED), catalog, HOSTS)
    assert [r.view_id for r in builds] == [view]
    ks = catalog.keyspaces["ks"]
    dropped = replace(ks, views=ks.views.remove("by_v"))
    without_view = Catalog(catalog.keyspaces.set("ks", dropped), catalog.version, catalog.ids)
    assert apply_view_build(builds, ViewBuildCommand(uuid.uuid1(), stale, SUCCESS), without_view, HOSTS) == ()


def test_a_bad_status_is_refused() -> None:
    with pytest.raises(ValueError, match="STARTED"):
        ViewBuildCommand(uuid.uuid1(), uuid.uuid4(), "DONE")
