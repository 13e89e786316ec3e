"""Bulk data through Spark: the `tabletdb` PySpark data source and the pipelines built on it.

- `datasource`: the data source (register it, or use `session.spark_session()` which does);
- `schema_map` / `values`: CQL types and values as Spark sees them;
- `ranges`: one input partition per tablet (or vnode range); `writer`: tablet-grouped writes;
- `connection`: options and per-process driver sessions; `load`: `tabletdb load`'s pipeline.

Backup and restore reuse the same two primitives: a tablet-aligned scan (`ranges.plan_scans`) and a
tablet-grouped write (`writer.write_rows`).
"""
