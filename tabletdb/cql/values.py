"""A bound value as a client sends it: bytes, null, or unset.

Unset (a `[value]` of length -2 in protocol v4+) means "leave this column alone"; statements
decide what it does, so the marker is a CQL value here rather than a wire detail.
"""

from __future__ import annotations


class Unset:
    """A bound variable the client chose not to set."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset()

Value = bytes | None | Unset
"""A bound value as received: bytes, null, or unset."""
