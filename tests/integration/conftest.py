"""Fixtures the integration tests that run Spark share.

One local Spark session serves every module that asks for ``spark`` (a SparkContext takes seconds
to start, and ``getOrCreate`` would hand a second module the first one's session anyway, whatever
master it asked for): two cores, and four shuffle partitions rather than Spark's 200 for data this
small. It stops when the test session ends.

``db``: a CQL session on the module's node, after the module's ``SCHEMA`` and its ``fill``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.harness.clients import scylla_session
from tests.harness.node import TestNode


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    from tabletdb.spark.session import spark_session

    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def db(request: pytest.FixtureRequest, node: TestNode) -> Iterator[Any]:
    """A session on the module's ``node`` after the module's ``SCHEMA`` statements ran, and then
    its ``fill(session)`` (rows the module's tests read), if it has one."""
    statements = getattr(request.module, "SCHEMA", None)
    if statements is None:
        raise pytest.UsageError(f"{request.module.__name__} asks for `db` but defines no SCHEMA to create")
    fill: Callable[[Any], None] | None = getattr(request.module, "fill", None)
    with scylla_session(node) as session:
        for statement in statements:
            session.execute(statement)
        if fill is not None:
            fill(session)
        yield session
