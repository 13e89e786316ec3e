"""Per-tablet-replica data stores on SQLite (layer 2).

Modules: ``mutation`` (the write unit), ``reconcile`` (last-write-wins order, live read results),
``sqlite_schema`` (file layout and LWW upserts), ``read_path`` (live view of a partition),
``stored_mutations`` (export by partition), ``tablet_store`` (TabletStore), ``group_commit``,
``node_commit`` (the node-wide commit log: ``commit_log`` appends, ``commit_records`` frames and
reads back, ``commit_replay`` replays at start).
"""

from tabletdb.storage.group_commit import GroupCommitter
from tabletdb.storage.mutation import (
    FULL_SLICE,
    Bound,
    Cell,
    ClusteringSlice,
    Mutation,
    RangeTombstone,
    RowMarker,
    RowWrite,
    prefix_end,
)
from tabletdb.storage.reconcile import LiveCell, LiveRow, PartitionData
from tabletdb.storage.tablet_store import ScanPage, ScanPosition, StorageError, TabletStore

__all__ = [
    "FULL_SLICE",
    "Bound",
    "Cell",
    "ClusteringSlice",
    "GroupCommitter",
    "LiveCell",
    "LiveRow",
    "Mutation",
    "PartitionData",
    "RangeTombstone",
    "RowMarker",
    "RowWrite",
    "ScanPage",
    "ScanPosition",
    "StorageError",
    "TabletStore",
    "prefix_end",
]
