"""Bulk data through Spark: the `tabletdb` PySpark data source and the pipelines built on it.

- `datasource`: the data source (register it, or use `session.spark_session()` which does);
- `schema_map` / `values`: CQL types and values as Spark sees them;
- `ranges`: one input partition per tablet (or vnode range); `writer`: tablet-grouped writes;
- `connection`: options and per-process driver sessions; `load`: `tabletdb load`'s pipeline.

Backup and restore move whole tablet files (write times, TTLs and tombstones kept) between the
nodes' REST APIs and a backup directory: `backup` / `restore` plan and verify on the driver,
`backup_tasks` is the per-file Spark task, `backup_manifest` the directory's contract,
`backup_store` the directory itself (a local path or an s3:// prefix, through pyarrow.fs).
"""
