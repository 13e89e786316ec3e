"""A failed set-up job on a cluster is reported as the executor's own Python error."""

from __future__ import annotations

from tabletdb.spark.session import executor_error

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
