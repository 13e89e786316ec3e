"""A SparkSession with the `tabletdb` data source registered, for the CLI, tests and benchmarks.

Spark starts its Python workers with `python3` from PATH unless told otherwise; they must run the
interpreter that has tabletdb and the driver installed (the venv's), so PYSPARK_PYTHON is pinned
to this interpreter before the JVM starts, unless PYSPARK_PYTHON or `spark.pyspark.python` says
otherwise.

The driver JVM logs through tabletdb's `log4j2.properties` (Spark's warnings and errors, none of
its start-up notices) unless `spark.driver.extraJavaOptions` names a configuration already; a
local master binds to 127.0.0.1 (SPARK_LOCAL_IP, unless set), as everything it talks to is on
this machine, rather than warning that the host name resolves to a loopback address.

On a cluster (any master but `local...`) the session first runs one small job: executors that
cannot start, or whose Python cannot import tabletdb and its dependencies, fail it at once with
one line saying what every worker needs, rather than the first real task failing four times
inside a JVM stack trace. An application that gets no executor at all (no worker with enough
free memory or cores) waits forever in Spark; after `EXECUTOR_WAIT_WARNING` seconds a warning
says what to check.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from tabletdb.spark.datasource import TabletdbDataSource

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
EXECUTOR_WAIT_WARNING = 60.0
EXECUTOR_PYTHON = "spark.pyspark.python"
"""Spark's setting for the executors' Python; spark-submit turns it into PYSPARK_PYTHON, which
PySpark reads when the driver starts, so a session built from Python honours it only if this
module does the same."""
_WRAPPERS = ("Py4JJavaError", "SparkException", "PythonException")
_PYTHON_ERROR = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$", re.MULTILINE)
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
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
    settings = {**_QUIET_DEFAULTS, **(conf or {})}
    settings[DRIVER_JAVA_OPTIONS] = with_log_config(settings.get(DRIVER_JAVA_OPTIONS, ""))
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if settings.get(EXECUTOR_PYTHON):  # PySpark reads only the environment once the driver runs
        os.environ["PYSPARK_PYTHON"] = settings[EXECUTOR_PYTHON]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(TabletdbDataSource)
    if not master.startswith("local"):
        try:
            check_executors(spark)
        except ExecutorSetupError:
            spark.stop()
            raise
    return spark


def with_log_config(java_options: str) -> str:
    """The driver's Java options with tabletdb's log configuration added, unless they name one."""
    if "log4j2.configurationFile" in java_options or "log4j.configuration" in java_options:
        return java_options
    return f"{java_options} -Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}".strip()


def executor_error(text: str, exc: BaseException) -> str:
    """The executor's own Python error in a failed job's text (`ModuleNotFoundError: ...`), not
    the JVM's and Py4J's wrappers around it; the exception's type when there is none."""
    found = _PYTHON_ERROR.findall(text)
    return next((f"{name}: {msg}" for name, msg in found if name not in _WRAPPERS), type(exc).__name__)


class ExecutorSetupError(RuntimeError):
    """Spark's executors cannot run tabletdb's tasks; the message says what the workers need."""


def _executor_facts(_: int) -> str:
    """Runs on an executor: unpickling it imports this module (tabletdb, pyspark, the data source
    and its dependencies); the driver every task uses is imported besides."""
    import cassandra  # noqa: F401  (scylla-driver)

    import tabletdb  # noqa: F401

    return sys.executable


def check_executors(spark: SparkSession) -> None:
    """One task per core of the cluster importing what tabletdb's tasks import (module docstring)."""
    context = spark.sparkContext
    tasks = max(1, int(context.defaultParallelism))
    done = threading.Event()
    python = context.pythonExec

    def warn() -> None:
        if not done.wait(EXECUTOR_WAIT_WARNING):
            memory = context.getConf().get("spark.executor.memory", "1g")
            log.warning(
                "no Spark executor has run a task after %.0f s: check that the master %s has workers "
                "registered, with free cores and at least spark.executor.memory (%s) free; still waiting",
                EXECUTOR_WAIT_WARNING,
                context.master,
                memory,
            )

    threading.Thread(target=warn, name="executor-wait", daemon=True).start()
    try:
        context.parallelize(range(tasks), tasks).map(_executor_facts).collect()
    except Exception as exc:  # Py4JJavaError: the executor's Python traceback inside the JVM's
        raise ExecutorSetupError(
            f"Spark executors cannot run tabletdb's tasks ({executor_error(str(exc), exc)}): every "
            f"worker needs Python at {python} (PYSPARK_PYTHON, or --conf spark.pyspark.python=...) "
            "with tabletdb and its dependencies installed, as the driver's environment has them"
        ) from None
    finally:
        done.set()
