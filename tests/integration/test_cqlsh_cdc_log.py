"""cqlsh reads a CDC log table in the same session that created its base (issue 16).

scylla-driver refreshes its metadata of the table a DDL RESULT names before answering, and the
metadata of other tables only on pushed events, which it gathers for a while before refreshing;
cqlsh looks a table up in that metadata before it runs a SELECT. A log table made by the same
command as its base must therefore be in the driver's metadata when the CREATE TABLE (or the
ALTER that enables CDC) answers.
"""

from __future__ import annotations

from pathlib import Path

from tests.harness.clients import run_cqlsh
from tests.harness.node import TestNode


def test_log_readable_right_after_create_and_alter_in_one_session(node: TestNode, cqlsh_home: Path) -> None:
    script = (
        "CREATE KEYSPACE shellcdc WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1};"
        "CREATE TABLE shellcdc.t (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true};"
        "INSERT INTO shellcdc.t (k, v) VALUES (1, 10);"
        'SELECT k, v, "cdc$operation" FROM shellcdc.t_scylla_cdc_log;'
        "CREATE TABLE shellcdc.a (k int PRIMARY KEY, v int);"
        "ALTER TABLE shellcdc.a WITH cdc = {'enabled': true};"
        "INSERT INTO shellcdc.a (k, v) VALUES (2, 20);"
        'SELECT k, v, "cdc$operation" FROM shellcdc.a_scylla_cdc_log;'
    )
    result = run_cqlsh(node, script, home=cqlsh_home)
    assert "not found" not in result.stdout + result.stderr, result.stderr
    result.check()
    lines = [line.split("|") for line in result.stdout.splitlines() if line.count("|") == 2]
    rows = [[cell.strip() for cell in line] for line in lines]
    assert ["1", "10", "2"] in rows and ["2", "20", "2"] in rows, result.stdout
    log = (node.workdir.parent / f"{node.workdir.name}.log").read_text()
    assert "answered before the client fetched" not in log  # answered on the fetch, not the bound
