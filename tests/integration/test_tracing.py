"""Query tracing through the real driver: `trace=True` sets the protocol's tracing flag, the
response carries the session id, and `get_query_trace()` (which polls system_traces.sessions
until the session has a duration, then reads its events) finds what the request did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.harness.clients import pinned_cluster, run_cqlsh, scylla_cluster
from tests.harness.node import NodeFactory, TestNode


def _sessions(session: Any) -> int:
    return len(list(session.execute("SELECT session_id FROM system_traces.sessions")))


def test_traced_statements_fill_sessions_and_events(node: TestNode) -> None:
    with scylla_cluster(node) as cluster:
        session: Any = cluster.connect()
        replication = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        session.execute(f"CREATE KEYSPACE tr WITH replication = {replication}")
        session.execute("CREATE TABLE tr.t (k int PRIMARY KEY, v int)")
        before = _sessions(session)
        session.execute("INSERT INTO tr.t (k, v) VALUES (1, 2)")  # not traced: nothing recorded
        assert _sessions(session) == before

        write = session.execute("INSERT INTO tr.t (k, v) VALUES (3, 4)", trace=True)
        write_trace = write.get_query_trace(max_wait_sec=10)
        assert write_trace.request_type == "Execute CQL3 query"
        assert write_trace.parameters["query"] == "INSERT INTO tr.t (k, v) VALUES (3, 4)"
        assert write_trace.duration.total_seconds() > 0
        activities = [e.description for e in write_trace.events]
        assert activities[0] == "Parsing a statement" and activities[-1] == "Request complete"
        assert any("mutation" in a and "tr.t" in a for a in activities), activities

        select = session.prepare("SELECT v FROM tr.t WHERE k = ?")
        read = session.execute(select, [3], trace=True)
        assert read.one().v == 4
        read_trace = read.get_query_trace(max_wait_sec=10)
        assert read_trace.request_type == "Execute CQL3 prepared query"
        activities = [e.description for e in read_trace.events]
        assert any(a.startswith("read_data: querying locally tr.t") for a in activities), activities
        assert "Done processing - preparing a result of 1 rows" in activities
        assert all(e.source is not None and e.source_elapsed is not None for e in read_trace.events)
        elapsed = [e.source_elapsed.total_seconds() for e in read_trace.events]
        assert elapsed == sorted(elapsed)

        assert _sessions(session) == before + 2
        row = session.execute(
            "SELECT coordinator, command, duration FROM system_traces.sessions WHERE session_id = %s",
            [read_trace.trace_id],
        ).one()
        assert str(row.coordinator) == node.host and row.command == "QUERY" and row.duration > 0


def test_cqlsh_tracing_on_prints_the_trace(node: TestNode, cqlsh_home: Path) -> None:
    script = (
        "CREATE KEYSPACE IF NOT EXISTS trsh WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1};"
        "CREATE TABLE IF NOT EXISTS trsh.t (k int PRIMARY KEY, v int);"
        "INSERT INTO trsh.t (k, v) VALUES (1, 2);"
        "TRACING ON;"
        "SELECT v FROM trsh.t WHERE k = 1;"
    )
    result = run_cqlsh(node, script, home=cqlsh_home)
    result.check()
    out = result.stdout
    assert "Tracing session:" in out, out + result.stderr
    assert "Execute CQL3 query" in out and "Parsing a statement" in out and "Request complete" in out


def test_a_trace_reads_the_same_from_every_node_of_a_cluster(node_factory: NodeFactory) -> None:
    """The driver polls the trace tables through its load balancing (round robin here), so the
    session and its events must be readable from any node, not only the coordinator's: each
    trace comes back whole, and each node shows the same events for it. The other replica's
    steps are in the trace, sourced at its address, as ScyllaDB records them."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    nodes = node_factory.start_cluster(2)
    with scylla_cluster(nodes) as cluster:
        session: Any = cluster.connect()
        replication = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 2}"
        session.execute(f"CREATE KEYSPACE trc WITH replication = {replication}")
        session.execute("CREATE TABLE trc.t (k int PRIMARY KEY, v int)")
        traces = []
        for k in range(4):  # at ALL: answered once the other replica's steps are in
            insert = SimpleStatement(
                f"INSERT INTO trc.t (k, v) VALUES ({k}, {k})", consistency_level=ConsistencyLevel.ALL
            )
            traces.append(session.execute(insert, trace=True).get_query_trace(max_wait_sec=10))
        read = SimpleStatement("SELECT v FROM trc.t WHERE k = 1", consistency_level=ConsistencyLevel.ALL)
        result = session.execute(read, trace=True)
        assert result.one().v == 1
        traces.append(result.get_query_trace(max_wait_sec=10))
        for trace in traces:
            activities = [e.description for e in trace.events]
            assert activities[:1] == ["Parsing a statement"] and activities[-1:] == ["Request complete"], (
                trace.coordinator,
                activities,
            )
        assert any("Sending a read of trc.t to replicas" in e.description for e in traces[-1].events)
        # Each replica's own steps, with its address as the source (RF 2: the other node).
        for trace, verb in [*((t, "data.apply") for t in traces[:-1]), (traces[-1], "data.read")]:
            coordinator = str(trace.coordinator)
            (replica,) = {n.host for n in nodes} - {coordinator}
            steps = [e.description for e in trace.events if str(e.source) == replica]
            assert steps[:1] == [f"{verb}: message received from /{coordinator}"], steps
            assert steps[-1:] == [f"{verb}: handling is done, sending a response to /{coordinator}"], steps
            assert all(str(e.source) == coordinator for e in trace.events if e.description not in steps)
        last = traces[-1].trace_id
        seen = []
        for node in nodes:
            with pinned_cluster(node) as pinned:
                rows = pinned.connect().execute(
                    "SELECT activity, source_elapsed FROM system_traces.events WHERE session_id = %s", [last]
                )
                seen.append([(r.activity, r.source_elapsed) for r in rows])
        assert seen[0] == seen[1] and seen[0], seen
