"""The Spark session: set-up errors reported as the executor's own Python error; driver logging."""

from __future__ import annotations

from tabletdb.spark.session import LOG_CONFIG, executor_error, with_log_config

PY4J_TEXT = """An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 \
times, most recent failure: Lost task 0.3 in stage 0.0 (TID 3) (127.0.0.1 executor 1): \
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/spark/python/lib/pyspark.zip/pyspark/worker.py", line 3000, in main
    func, profiler, deserializer, serializer = read_command(pickleSer, infile)
  File "/spark/python/lib/pyspark.zip/pyspark/serializers.py", line 500, in loads
    return cloudpickle.loads(obj, encoding=encoding)
ModuleNotFoundError: No module named 'lark'

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:600)
Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2900)
Caused by: org.apache.spark.api.python.PythonException: Traceback (most recent call last):
ModuleNotFoundError: No module named 'lark'
"""


def test_the_executors_python_error_not_the_wrappers() -> None:
    assert executor_error(PY4J_TEXT, RuntimeError()) == "ModuleNotFoundError: No module named 'lark'"


def test_a_wrapper_only_failure_names_the_exception_type() -> None:
    text = "org.apache.spark.SparkException: Job aborted\nPy4JJavaError: An error occurred"
    assert executor_error(text, TimeoutError()) == "TimeoutError"


def test_the_driver_logs_through_tabletdbs_config_unless_one_is_named() -> None:
    added = with_log_config("")
    assert added == f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
    assert LOG_CONFIG.is_file() and "rootLogger.level = warn" in LOG_CONFIG.read_text()
    assert with_log_config("-Xss4m") == f"-Xss4m {added}"
    own = "-Dlog4j2.configurationFile=file:/etc/spark/log4j2.properties"
    assert with_log_config(own) == own
