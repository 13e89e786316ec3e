"""The file load's columnwise core: Arrow batches in, sorted tablet files out (`spark.file_load`).

A Spark task gets its share of the input as Arrow record batches. Each batch is fitted to the
table column by column (`columns`: Arrow compute for the values a fast path is sure of, the
row-at-a-time rules of `spark.coerce` for every other value, so rejects keep their reasons),
keyed and routed to tablets (`keys`), turned into the store's SQL parameters (`cells`), kept
per tablet (`buffers`) and written as one sorted tablet file per tablet (`tablet_file`). The
Spark task itself is `task`; `arrow_map` runs it over a DataFrame without pandas.
"""
