"""`DataFrame.mapInArrow` without pandas.

PySpark's `mapInArrow` builds its function through `pandas_udf`, which refuses to run unless
pandas is installed, although an Arrow map never touches pandas: the Python worker runs it on
`pyarrow.RecordBatch`es only (PySpark's own Python data source writers run through exactly this
kind of function on the executors, and need no pandas). Rather than pin pandas and numpy for a
version check, the function is wrapped the way `pandas_udf` would wrap it, minus the check, and
handed to the same JVM method. Pinned PySpark (4.3) keeps this stable; the integration tests of
the file load run through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.udf import UserDefinedFunction
from pyspark.util import PythonEvalType

ArrowMap = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def map_in_arrow(frame: DataFrame, function: ArrowMap, schema: str) -> DataFrame:
    """`frame.mapInArrow(function, schema)` (the DDL `schema` of what `function` yields)."""
    udf = UserDefinedFunction(function, returnType=schema, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
    column = udf(*[frame[name] for name in frame.columns])
    return DataFrame(frame._jdf.mapInArrow(column._jc, False, None), frame.sparkSession)
