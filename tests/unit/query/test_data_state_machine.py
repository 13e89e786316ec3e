"""Random writes, deletes of every kind, TTLs and set updates against the pure model (data_model).

Timestamps are explicit and unique (random order, never ties); the clock only moves when the
test says so, so TTL expiry is exact and the test has no timing thresholds.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.unit.query.data_harness import DataNode
from tests.unit.query.data_model import Model

SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
"""Memory-backed files where available: every write fsyncs, and the machine runs many examples."""

keys = st.integers(0, 3)
values = st.one_of(st.none(), st.integers(-5, 5))
timestamps = st.integers(1, 40)
ttls = st.sampled_from([0, 0, 1, 3, 10])
elements = st.lists(st.integers(0, 4), max_size=3)


def _set(items: list[int]) -> str:
    return "{" + ", ".join(str(i) for i in items) + "}"


class DataPathMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(dir=SCRATCH))
        self.node = DataNode(self.dir)
        self.model = Model()
        self.unique = itertools.count()

    def run(self, cql: str) -> None:
        self.node.drive(self.node.run(cql))

    def ts(self, base: int) -> int:
        """Unique timestamps in random order: the drawn base dominates, the counter breaks ties."""
        return base * 1000 + next(self.unique)

    @property
    def now(self) -> int:
        return int(self.node.clock.now)

    @initialize()
    def create(self) -> None:
        self.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        self.run("CREATE TABLE ks.t (p int, c int, v int, st set<int>, PRIMARY KEY (p, c))")

    @rule(p=keys, c=keys, v=values, base=timestamps, ttl=ttls)
    def insert(self, p: int, c: int, v: int | None, base: int, ttl: int) -> None:
        ts = self.ts(base)
        value = "null" if v is None else str(v)
        self.run(f"INSERT INTO ks.t (p, c, v) VALUES ({p}, {c}, {value}) USING TIMESTAMP {ts} AND TTL {ttl}")
        self.model.insert(p, c, v, ts, ttl, self.now)

    @rule(p=keys, c=keys, v=values, base=timestamps, ttl=ttls)
    def update(self, p: int, c: int, v: int | None, base: int, ttl: int) -> None:
        ts = self.ts(base)
        value = "null" if v is None else str(v)
        self.run(f"UPDATE ks.t USING TIMESTAMP {ts} AND TTL {ttl} SET v = {value} WHERE p = {p} AND c = {c}")
        self.model.update_v(p, c, v, ts, ttl, self.now)

    @rule(p=keys, c=keys, items=elements, base=timestamps, ttl=ttls, op=st.sampled_from(["+", "-", "="]))
    def update_set(self, p: int, c: int, items: list[int], base: int, ttl: int, op: str) -> None:
        ts = self.ts(base)
        where = f"WHERE p = {p} AND c = {c}"
        if op == "+":
            self.run(f"UPDATE ks.t USING TIMESTAMP {ts} AND TTL {ttl} SET st = st + {_set(items)} {where}")
            self.model.add_elements(p, c, items, ts, ttl, self.now)
        elif op == "-":
            self.run(f"UPDATE ks.t USING TIMESTAMP {ts} SET st = st - {_set(items)} {where}")
            self.model.remove_elements(p, c, items, ts)
        else:
            self.run(f"UPDATE ks.t USING TIMESTAMP {ts} AND TTL {ttl} SET st = {_set(items)} {where}")
            self.model.set_elements(p, c, items, ts, ttl, self.now)

    @rule(p=keys, c=keys, base=timestamps, what=st.sampled_from(["cell", "row", "range", "partition"]))
    def delete(self, p: int, c: int, base: int, what: str) -> None:
        ts = self.ts(base)
        if what == "cell":
            self.run(f"DELETE v FROM ks.t USING TIMESTAMP {ts} WHERE p = {p} AND c = {c}")
            self.model.delete_v(p, c, ts)
        elif what == "row":
            self.run(f"DELETE FROM ks.t USING TIMESTAMP {ts} WHERE p = {p} AND c = {c}")
            self.model.delete_row(p, c, ts)
        elif what == "range":
            self.run(f"DELETE FROM ks.t USING TIMESTAMP {ts} WHERE p = {p} AND c >= {c}")
            self.model.delete_from(p, c, ts)
        else:
            self.run(f"DELETE FROM ks.t USING TIMESTAMP {ts} WHERE p = {p}")
            self.model.delete_partition(p, ts)

    @rule(seconds=st.integers(1, 5))
    def advance_clock(self, seconds: int) -> None:
        self.node.clock.now += seconds

    @invariant()
    def reads_match_the_model(self) -> None:
        if not hasattr(self, "node") or not self.node.metadata.catalog.table("ks", "t"):
            return
        got = self.node.drive(self.node.rows("SELECT p, c, v, st FROM ks.t", page_size=3))
        assert sorted(got) == self.model.rows(self.now)

    def teardown(self) -> None:
        self.node.close()
        shutil.rmtree(self.dir, ignore_errors=True)


DataPathMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
TestDataPath = DataPathMachine.TestCase
