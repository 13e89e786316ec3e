"""Per-tablet-replica data stores on SQLite (layer 2).

Modules: ``mutation`` (the write unit), ``reconcile`` (last-write-wins order, live read results),
``sqlite_schema`` (file layout and LWW upserts), ``read_path`` (live view of a partition),
``stored_mutations`` (export by partition), ``tablet_store`` (TabletStore), ``group_commit``.
"""
