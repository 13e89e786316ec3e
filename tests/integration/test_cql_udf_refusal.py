"""User-defined functions as ScyllaDB ships them: off unless enable_user_defined_functions and
experimental_features: [udf] are both set. Off, CREATE/DROP FUNCTION and AGGREGATE get
ScyllaDB's InvalidRequest and DESCRIBE (driver and cqlsh) still works; on, they are stored and
described, and called (tests/integration/test_cql_udf_lua.py covers the calls)."""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest

from tests.harness.clients import run_cqlsh, scylla_cluster
from tests.harness.node import UDF_OPTIONS, NodeFactory, TestNode

DISABLED = (
    "User defined functions are disabled. Set enable_user_defined_functions and "
    "experimental_features:udf to enable them"
)
FUNCTION = (
    "CREATE FUNCTION uf.plus(a int, b int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return a + b'"
)
AGGREGATE = "CREATE AGGREGATE uf.total(int) SFUNC plus STYPE int INITCOND 0"


@pytest.mark.parametrize(
    "statement",
    [FUNCTION, AGGREGATE, "DROP FUNCTION IF EXISTS uf.plus", "DROP AGGREGATE IF EXISTS uf.total"],
)
def test_function_statements_are_refused_with_scylladb_message(node: TestNode, statement: str) -> None:
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE IF NOT EXISTS uf")
        with pytest.raises(InvalidRequest) as refused:
            s.execute(statement)
        assert f'message="{DISABLED}"' in str(refused.value)
        assert list(s.execute("DESCRIBE FUNCTIONS")) == []


def test_describe_still_works_in_cqlsh_with_functions_off(node: TestNode) -> None:
    result = run_cqlsh(node, "DESCRIBE FUNCTIONS; DESCRIBE KEYSPACE uf; " + FUNCTION + ";")
    assert "CREATE KEYSPACE uf" in result.stdout
    assert DISABLED in result.stderr


def test_with_both_switches_functions_are_stored_described_and_called(
    node_factory: NodeFactory,
) -> None:
    node = node_factory.start_node(options=UDF_OPTIONS)
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE uf")
        s.execute(FUNCTION)
        s.execute(AGGREGATE)
        described = "".join(r.create_statement for r in s.execute("DESCRIBE FUNCTION uf.plus"))
        assert described.startswith("CREATE FUNCTION uf.plus(a int, b int)")
        s.execute("CREATE TABLE uf.t (k int PRIMARY KEY, v int)")
        s.execute("INSERT INTO uf.t (k, v) VALUES (1, 2)")
        assert s.execute("SELECT uf.plus(k, v) FROM uf.t").one()[0] == 3
        assert s.execute("SELECT uf.total(v) FROM uf.t").one()[0] == 2
        s.execute("DROP AGGREGATE uf.total")
        s.execute("DROP FUNCTION uf.plus")
