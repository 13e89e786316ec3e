"""CQL fuzz: generated and mutated statements through the real driver against a real node.

Every statement gets a result or a proper CQL error (SyntaxException, InvalidRequest,
ConfigurationException, ...): never ServerError, never a reply the driver cannot decode, never
a hang; and the node keeps serving. A short run is part of `make test`, a long one of `make soak`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import (
    AlreadyExists,
    FunctionFailure,
    InvalidRequest,
    ReadFailure,
    ReadTimeout,
    Unauthorized,
    Unavailable,
    WriteFailure,
    WriteTimeout,
)
from cassandra.protocol import ConfigurationException, SyntaxException
from hypothesis import HealthCheck, given, note, settings

from tests.harness.addresses import AddressAllocator
from tests.harness.clients import scylla_cluster
from tests.harness.node import UDF_OPTIONS, NodeFactory, TestNode
from tests.integration.cql_fuzz import SCHEMA, statements

CQL_ERRORS = (
    SyntaxException,
    InvalidRequest,
    ConfigurationException,
    AlreadyExists,
    Unauthorized,
    FunctionFailure,
    Unavailable,
    ReadTimeout,
    WriteTimeout,
    ReadFailure,
    WriteFailure,
)
"""The answers a statement may get besides a result: the CQL errors a client acts on. ServerError,
a driver decoding failure or a timeout of the client's own wait are not among them."""


@pytest.fixture(scope="module")
def node(address_allocator: AddressAllocator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestNode]:
    """This module's node takes user-defined functions (ScyllaDB's two switches), so calls of
    them are fuzzed wherever the grammar puts a function."""
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("fuzz"))
    try:
        yield factory.start_node(options=UDF_OPTIONS)
    finally:
        problems = factory.cleanup()
        assert not problems, problems


@pytest.fixture(scope="module")
def fuzz_session(node: TestNode) -> Iterator[Any]:
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # the driver decodes varints and decimals through str(int)
    with scylla_cluster(node) as cluster:
        session = cluster.connect()
        for statement in SCHEMA:
            session.execute(statement)
        yield session
    sys.set_int_max_str_digits(before)


def _check(session: Any, statement: str) -> None:
    note(statement)
    with contextlib.suppress(CQL_ERRORS):
        session.execute(statement, timeout=60)


def _serving(session: Any) -> bool:
    return session.execute("SELECT key FROM system.local").one().key == "local"


_COMMON = settings(
    deadline=None,
    print_blob=True,
    derandomize=False,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@settings(_COMMON, max_examples=80)
@given(statement=statements())
def test_no_statement_gets_a_server_error(fuzz_session: Any, statement: str) -> None:
    _check(fuzz_session, statement)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@settings(_COMMON, max_examples=3000)
@given(statement=statements())
def test_no_statement_gets_a_server_error_long(fuzz_session: Any, statement: str) -> None:
    _check(fuzz_session, statement)


def test_node_serves_after_the_fuzz(fuzz_session: Any, node: TestNode) -> None:
    assert _serving(fuzz_session)
    assert "internal error" not in node.log_tail(2000)
