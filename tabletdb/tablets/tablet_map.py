"""The immutable tablet map of one table: token boundaries, replicas and migration state.

It is a value: every change (split, merge, a migration step) returns a new map, which is what
group0 commands carry and what readers can hold without locks. Lookup by token is on the request
path, so maps whose boundaries are the standard power-of-two split use a shift instead of a
binary search.
"""

from __future__ import annotations

import uuid
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import NamedTuple

from tabletdb.dht.tablet_ids import is_power_of_two, tablet_last_tokens
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, TokenRange, bias, unbias
from tabletdb.tablets.count import ResizeState


class TabletReplica(NamedTuple):
    """One replica of a tablet: the node's host id and the shard on it."""

    host: uuid.UUID
    shard: int


class TransitionStage(Enum):
    """Migration stages as ScyllaDB names them in ``system.tablets.stage``."""

    ALLOW_WRITE_BOTH_READ_OLD = "allow_write_both_read_old"
    WRITE_BOTH_READ_OLD = "write_both_read_old"
    STREAMING = "streaming"
    WRITE_BOTH_READ_NEW = "write_both_read_new"
    USE_NEW = "use_new"
    CLEANUP = "cleanup"
    END_MIGRATION = "end_migration"


class TransitionKind(Enum):
    """Why a tablet is in transition (``system.tablets.transition``)."""

    MIGRATION = "migration"
    INTRANODE_MIGRATION = "intranode_migration"
    REBUILD = "rebuild"


@dataclass(frozen=True, slots=True)
class TabletInfo:
    """One tablet: its last token, its replicas, and (while moving) the target replica set."""

    last_token: int
    replicas: tuple[TabletReplica, ...]
    new_replicas: tuple[TabletReplica, ...] | None = None
    stage: TransitionStage | None = None
    transition: TransitionKind | None = None

    @property
    def in_transition(self) -> bool:
        return self.stage is not None

    def replica_hosts(self) -> tuple[uuid.UUID, ...]:
        return tuple(r.host for r in self.replicas)


@dataclass(frozen=True)
class TabletMap:
    """All tablets of one table, in token order; tablet i covers (last[i-1], last[i]]."""

    table_id: uuid.UUID
    tablets: tuple[TabletInfo, ...]
    resize: ResizeState = ResizeState.NONE
    resize_seq_number: int = 0
    base_table: uuid.UUID | None = None
    """The table this one is co-located with (``tablets.colocation``): its map is always a copy
    of that table's, and its tablets move only with them. None for a table planned on its own."""
    _shift: int | None = field(init=False, repr=False, compare=False)
    _last_tokens: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.tablets:
            raise ValueError(f"tablet map of table {self.table_id} has no tablets")
        lasts = tuple(t.last_token for t in self.tablets)
        for i in range(1, len(lasts)):
            if lasts[i - 1] >= lasts[i]:
                raise ValueError(
                    f"tablet map of table {self.table_id}: last tokens must increase, "
                    f"tablet {i - 1} ends at {lasts[i - 1]} and tablet {i} at {lasts[i]}"
                )
        if lasts[-1] != MAX_TOKEN:
            raise ValueError(
                f"tablet map of table {self.table_id} must end at {MAX_TOKEN}, ends at {lasts[-1]}"
            )
        count = len(lasts)
        shift = None
        if is_power_of_two(count) and list(lasts) == tablet_last_tokens(count):
            shift = 64 - (count.bit_length() - 1)
        object.__setattr__(self, "_shift", shift)
        object.__setattr__(self, "_last_tokens", lasts)

    @classmethod
    def even(cls, table_id: uuid.UUID, replicas: Sequence[Sequence[TabletReplica]]) -> TabletMap:
        """A new map with ``len(replicas)`` evenly split tablets (the standard boundaries)."""
        lasts = tablet_last_tokens(len(replicas))
        return cls(table_id, tuple(TabletInfo(last, tuple(r)) for last, r in zip(lasts, replicas)))

    @property
    def tablet_count(self) -> int:
        return len(self.tablets)

    @property
    def last_tokens(self) -> tuple[int, ...]:
        return self._last_tokens

    def __iter__(self) -> Iterator[TabletInfo]:
        return iter(self.tablets)

    def tablet_id_of(self, token: int) -> int:
        """The id of the tablet owning ``token`` (O(1) for standard power-of-two maps)."""
        if self._shift is not None:
            return 0 if self._shift == 64 else unbias(token) >> self._shift
        return bisect_left(self._last_tokens, token)

    def tablet_for(self, token: int) -> TabletInfo:
        return self.tablets[self.tablet_id_of(token)]

    def range_of(self, tablet_id: int) -> TokenRange:
        """The ``(previous last token, last token]`` range of a tablet (tablet 0 from MIN_TOKEN)."""
        self._check_id(tablet_id)
        start = MIN_TOKEN if tablet_id == 0 else self._last_tokens[tablet_id - 1]
        return TokenRange(start, self._last_tokens[tablet_id])

    def with_tablet(self, tablet_id: int, info: TabletInfo) -> TabletMap:
        """A copy with one tablet replaced; its last token must not change."""
        self._check_id(tablet_id)
        if info.last_token != self._last_tokens[tablet_id]:
            raise ValueError(
                f"tablet {tablet_id} of table {self.table_id} ends at {self._last_tokens[tablet_id]}; "
                f"a replacement ending at {info.last_token} would move the boundary"
            )
        tablets = list(self.tablets)
        tablets[tablet_id] = info
        return replace(self, tablets=tuple(tablets))

    def split(self) -> TabletMap:
        """Every tablet i becomes 2i and 2i+1, halves of its range, on the same replicas."""
        self._require_no_transitions("split")
        tablets: list[TabletInfo] = []
        previous_end = -1  # unbiased end of the previous tablet; tablet 0 starts at unbiased 0
        for tablet in self.tablets:
            end = unbias(tablet.last_token)
            if end - previous_end < 2:
                raise ValueError(
                    f"tablet ending at {tablet.last_token} of table {self.table_id} is too small to split"
                )
            middle = previous_end + (end - previous_end) // 2
            tablets.append(TabletInfo(bias(middle), tablet.replicas))
            tablets.append(TabletInfo(tablet.last_token, tablet.replicas))
            previous_end = end
        return replace(
            self,
            tablets=tuple(tablets),
            resize=ResizeState.NONE,
            resize_seq_number=self.resize_seq_number + 1,
        )

    def merge(self) -> TabletMap:
        """Tablets 2i and 2i+1 become tablet i; siblings must already share their replicas."""
        self._require_no_transitions("merge")
        if self.tablet_count % 2:
            raise ValueError(
                f"table {self.table_id} has {self.tablet_count} tablets; only an even count can merge"
            )
        tablets: list[TabletInfo] = []
        for i in range(0, self.tablet_count, 2):
            left, right = self.tablets[i], self.tablets[i + 1]
            if set(left.replicas) != set(right.replicas):
                raise ValueError(
                    f"table {self.table_id}: sibling tablets {i} and {i + 1} are not co-located "
                    f"({list(left.replicas)} vs {list(right.replicas)}); co-locate them before merging"
                )
            tablets.append(TabletInfo(right.last_token, left.replicas))
        return replace(
            self,
            tablets=tuple(tablets),
            resize=ResizeState.NONE,
            resize_seq_number=self.resize_seq_number + 1,
        )

    def replica_load(self) -> dict[TabletReplica, int]:
        """How many tablets of this table each (host, shard) holds, counting pending new replicas."""
        load: dict[TabletReplica, int] = {}
        for tablet in self.tablets:
            for replica in set(tablet.replicas) | set(tablet.new_replicas or ()):
                load[replica] = load.get(replica, 0) + 1
        return load

    def _require_no_transitions(self, action: str) -> None:
        moving = [i for i, t in enumerate(self.tablets) if t.in_transition]
        if moving:
            raise ValueError(
                f"cannot {action} the tablets of table {self.table_id} "
                f"while tablets {moving[:10]} are in transition"
            )

    def _check_id(self, tablet_id: int) -> None:
        if not 0 <= tablet_id < self.tablet_count:
            raise ValueError(
                f"tablet id {tablet_id} is out of range for table {self.table_id} "
                f"with {self.tablet_count} tablets"
            )


class TabletMapLookup:
    """A table's tablet map in the current maps, looked up once per maps object.

    Every write, placement and routing check asks for it: a ``FrozenMap.get`` per request cost
    more than the rest of those paths. The cache is dropped whenever the maps object changes
    (maps are immutable values), and keyed by ``UUID.int`` because ``uuid.UUID.__hash__`` is
    Python code while an int hashes in C and is equal exactly when the UUIDs are.
    """

    def __init__(self, maps: Callable[[], Mapping[uuid.UUID, TabletMap]]) -> None:
        self._maps = maps
        self._seen: Mapping[uuid.UUID, TabletMap] | None = None
        self._by_table: dict[int, TabletMap | None] = {}

    def __call__(self, table_id: uuid.UUID) -> TabletMap | None:
        maps = self._maps()
        if maps is not self._seen:
            self._seen = maps
            self._by_table = {}
        key = table_id.int
        try:
            return self._by_table[key]
        except KeyError:
            found = self._by_table[key] = maps.get(table_id)
            return found
