"""Shared fixtures: real tabletdb nodes on private loopback addresses, and clients for them.

- `address_allocator` (session): a 127.B.0.0/16 block claimed by this test process.
- `node` (module): one running node, fresh workdir; stopped (SIGTERM) after the module.
- `node_factory` (function): start more nodes or clusters; all stopped after the test.
- `spark_cluster` (module): a Spark standalone master and two workers (tests/harness/spark_cluster.py).
- `session` (function): scylla-driver session on `node`, protocol v4.
- `cqlsh_home` (function): an empty HOME for cqlsh runs.

When a test fails, the output tail of every node it touched is attached to the report.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.harness.addresses import AddressAllocator
from tests.harness.clients import scylla_session
from tests.harness.node import NodeFactory, TestNode
from tests.harness.process import processes_to_report
from tests.harness.spark_cluster import SparkCluster, start_spark_cluster

_TEST_START = pytest.StashKey[float]()

# No timing thresholds in tests: hypothesis's default 200 ms deadline per example fails tests on a
# loaded machine (it did on test_numbers at load 30); properties are about results, not speed.
settings.register_profile("tabletdb", deadline=None)
settings.load_profile("tabletdb")


@pytest.fixture(scope="session")
def address_allocator() -> Iterator[AddressAllocator]:
    _build_parser_tables()
    allocator = AddressAllocator.for_this_process()
    yield allocator
    allocator.release()


def _build_parser_tables() -> None:
    """Build (or load) the CQL parser's cached LALR tables before any node starts.

    `make install` builds them only when pyproject.toml changes; after a merge that changed the
    grammar, every node of a cluster would otherwise build them at once, seconds of CPU each on
    a busy box, all writing the same cache file.
    """
    from tabletdb.cql.parser import parse_statement

    parse_statement("SELECT 1 FROM t")


def _finish(factory: NodeFactory) -> None:
    problems = factory.cleanup()
    if problems:
        pytest.fail("node(s) did not shut down cleanly:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def node(address_allocator: AddressAllocator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestNode]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("node"))
    try:
        yield factory.start_node()
    finally:
        _finish(factory)


@pytest.fixture
def node_factory(address_allocator: AddressAllocator, tmp_path: Path) -> Iterator[NodeFactory]:
    factory = NodeFactory(address_allocator, tmp_path)
    try:
        yield factory
    finally:
        _finish(factory)


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    """A Spark standalone cluster (a master and two one-core workers on 127.0.0.1) for the module."""
    with start_spark_cluster(tmp_path_factory.mktemp("spark")) as cluster:
        yield cluster


@pytest.fixture
def session(node: TestNode) -> Iterator[Any]:
    with scylla_session(node, protocol_version=4) as s:
        yield s


@pytest.fixture
def cqlsh_home(tmp_path: Path) -> Path:
    home = tmp_path / "cqlsh-home"
    home.mkdir()
    return home


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_TEST_START] = time.time()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.failed:
        since = item.stash.get(_TEST_START, 0.0)
        for process in processes_to_report(since):
            report.sections.append(
                (f"output of {process.name} (pid {process.pid}, {process.log_path})", process.log_tail(120))
            )
    return report
