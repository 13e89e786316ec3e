"""Lightweight transactions through a real driver, which sends a default timestamp with every request."""

from __future__ import annotations

from typing import Any

import pytest
from cassandra import InvalidRequest


def test_conditional_statements_ignore_the_protocol_timestamp(session: Any) -> None:
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS lwt WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
    )
    session.execute("CREATE TABLE IF NOT EXISTS lwt.t (k int PRIMARY KEY, v text)")
    insert = session.prepare("INSERT INTO lwt.t (k, v) VALUES (?, ?) IF NOT EXISTS")
    assert session.execute(insert, (1, "a")).one().applied is True
    lost = session.execute(insert, (1, "b")).one()
    assert (lost.applied, lost.v) == (False, "a")
    update = session.prepare("UPDATE lwt.t SET v = ? WHERE k = ? IF v = ?")
    assert session.execute(update, ("c", 1, "a")).one().applied is True
    assert session.execute("SELECT v FROM lwt.t WHERE k = 1").one().v == "c"
    with pytest.raises(InvalidRequest, match="custom timestamp"):
        session.execute("UPDATE lwt.t USING TIMESTAMP 5 SET v = 'x' WHERE k = 1 IF v = 'c'")
