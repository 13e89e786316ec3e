"""The fills of new views and indexes this node is running now, for the system tables that show
build progress (``system.views_builds_in_progress``, ``built_views``, ``"IndexInfo"``).

A fill runs on the coordinator of its CREATE statement, which answers only once the fill is
done (``views.build``, ``views.index_writes``); this records which are under way and, for a view,
the token of the last base row it has read. In memory only: a fill does not outlive its process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

INDEX_VIEW_SUFFIX = "_index"
"""ScyllaDB's name for the view backing an index: ``<index name>_index``."""


@dataclass
class BuildProgress:
    running: dict[tuple[str, str], int | None] = field(default_factory=dict)
    """(keyspace, view name) -> token of the last base row read (None before the first)."""

    @contextmanager
    def tracking(self, keyspace: str, view: str) -> Iterator[None]:
        """While the fill of ``keyspace.view`` runs (an index's: ``<index>_index``)."""
        key = (keyspace, view)
        self.running[key] = None
        try:
            yield
        finally:
            self.running.pop(key, None)

    def advance(self, keyspace: str, view: str, token: int) -> None:
        if (keyspace, view) in self.running:
            self.running[(keyspace, view)] = token

    def in_progress(self, keyspace: str, view: str) -> bool:
        return (keyspace, view) in self.running
