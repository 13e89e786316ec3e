"""CDC streams of a tablet table: one stream per tablet (spec/cdc.md, "Tablet tables").

A stream's token is its tablet's last token (range index 0), so the log partition of a write
falls in the log table's tablet with the same range, which group0 places on the base tablet's
replicas. The random bits come from the table id and the tablet count, so every node derives the
same ids from the tablet map it already has, and a split or merge (a new count) gives new ids.
"""

from __future__ import annotations

import bisect
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from tabletdb.cdc.stream_id import make_stream_id


def _random_bits(table_id: uuid.UUID, tablet_count: int) -> int:
    digest = hashlib.blake2b(table_id.bytes + tablet_count.to_bytes(8, "big"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> (64 - 38)


@dataclass(frozen=True)
class TabletStreams:
    """The current stream set of one table; ``last_tokens`` are its tablets' last tokens."""

    table_id: uuid.UUID
    last_tokens: tuple[int, ...]
    _bits: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.last_tokens:
            raise ValueError(f"table {self.table_id} has no tablets, so no CDC streams")
        object.__setattr__(self, "_bits", _random_bits(self.table_id, len(self.last_tokens)))

    @property
    def streams(self) -> tuple[bytes, ...]:
        return tuple(make_stream_id(token, 0, self._bits) for token in self.last_tokens)

    def stream_for(self, token: int) -> bytes:
        """The first stream whose token is >= ``token`` (tablets end at the ring's last token)."""
        index = bisect.bisect_left(self.last_tokens, token)
        if index == len(self.last_tokens):
            raise ValueError(f"token {token} is past the last tablet of table {self.table_id}")
        return make_stream_id(self.last_tokens[index], 0, self._bits)


def tablet_streams(table_id: uuid.UUID, last_tokens: Sequence[int]) -> TabletStreams:
    return TabletStreams(table_id, tuple(last_tokens))
