"""built_views / views_builds_in_progress / "IndexInfo" from the catalog and the fills under way."""

from __future__ import annotations

import pytest

from tabletdb.schema.model import Catalog
from tabletdb.systables.view_builds import builds_in_progress_rows, built_views_rows, index_info_rows
from tabletdb.views.build_progress import BuildProgress
from tests.unit.schema.helpers import representative_catalog


@pytest.fixture
def catalog() -> Catalog:
    return representative_catalog()


def test_everything_is_built_when_no_fill_runs(catalog: Catalog) -> None:
    indexes = sorted(catalog.keyspaces["ks"].indexes)
    assert "m_keys" in indexes
    assert built_views_rows(catalog, {}) == [
        {"keyspace_name": "ks", "view_name": v} for v in sorted(["by_v", *(i + "_index" for i in indexes)])
    ]
    assert index_info_rows(catalog, {}) == [{"table_name": "ks", "index_name": i} for i in indexes]
    assert builds_in_progress_rows(catalog, {}) == []


def test_a_running_fill_moves_its_view_to_in_progress_until_it_ends(catalog: Catalog) -> None:
    progress = BuildProgress()
    with progress.tracking("ks", "m_keys_index"):
        progress.advance("ks", "m_keys_index", 42)
        running = dict(progress.running)
        assert builds_in_progress_rows(catalog, running) == [
            {
                "keyspace_name": "ks",
                "view_name": "m_keys_index",
                "last_token": "42",
                "generation_number": None,
            }
        ]
        assert "m_keys" not in {r["index_name"] for r in index_info_rows(catalog, running)}
        assert "m_keys_index" not in {r["view_name"] for r in built_views_rows(catalog, running)}
    with pytest.raises(RuntimeError), progress.tracking("ks", "by_v"):
        raise RuntimeError("fill failed")
    assert progress.running == {}
