"""A small result set (column names with CQL types, then rows of Python values).

LIST statements of roles, permissions and service levels answer with these; the query
processor turns one into a RESULT Rows message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tabletdb.cql.types import CqlType


@dataclass(frozen=True)
class Listing:
    columns: tuple[tuple[str, CqlType], ...]
    rows: tuple[tuple[Any, ...], ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    def as_dicts(self) -> list[dict[str, Any]]:
        names = self.column_names
        return [dict(zip(names, row, strict=True)) for row in self.rows]
