"""The query layer's view of the metadata store (group0 in a cluster, a local log on one node).

DDL never mutates the catalog directly: the executor hands the store a *decision* — a pure
function of the catalog — and the store runs it against the current state, commits the
mutations it yields guarded by the catalog version it was computed on, and re-runs it if a
concurrent change won (DESIGN.md decision 3). The call returns once this node has applied the
change, so the client's next statement sees it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tabletdb.schema.ddl_common import DdlOutcome
from tabletdb.schema.model import Catalog

Decision = Callable[[Catalog], DdlOutcome]


class MetadataStore(Protocol):
    @property
    def catalog(self) -> Catalog:
        """The latest catalog this node has applied."""
        ...

    async def change_schema(self, decide: Decision) -> DdlOutcome:
        """Decide on the current catalog and commit the result; the outcome that was applied."""
        ...
