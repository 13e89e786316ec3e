"""A SparkSession with the `tabletdb` data source registered, for the CLI, tests and benchmarks.

Spark starts its Python workers with `python3` from PATH unless told otherwise; they must run the
interpreter that has tabletdb and the driver installed (the venv's), so PYSPARK_PYTHON is pinned
to this interpreter before the JVM starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from tabletdb.spark.datasource import TabletdbDataSource

DEFAULT_MASTER = "local[*]"
_QUIET_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # the data source's reader takes Spark's key and clustering filters (spark.pushdown); Spark
    # refuses such a reader unless this is on
    "spark.sql.python.filterPushdown.enabled": "true",
}


def parse_conf(pairs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`--conf k=v` pairs as a dict; a pair without '=' is an error naming it."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf expects KEY=VALUE, got {pair!r}")
        conf[key.strip()] = value
    return conf


def spark_session(
    master: str = DEFAULT_MASTER, conf: Mapping[str, str] | None = None, app_name: str = "tabletdb"
) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**_QUIET_DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(TabletdbDataSource)
    return spark
