"""Micro-benchmark: what checking a group0 entry before proposing it costs, per schema change.

Every entry is encoded, decoded and compared with the decided one before it is proposed
(`tabletdb.node.group0_shell.admission`). Encoding was paid before; the check adds one decode
and one comparison on the proposing node. Every node already decodes each entry once when it
applies it, so the decode figure is also what applying costs each node in decoding.

Entries are built the way a node builds them: the DDL decision, the state-id guard and, for a
tablets keyspace, the tablet map planned over 3 nodes of 2 shards at RF 3. Times are the best
of several rounds in CPU time (the box is shared), in microseconds per entry.

Reproduce: `.venv/bin/python -m bench.bench_group0_admission [--tables 100]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench.common import RESULT_PREFIX
from tabletdb.cql.types import BIGINT, INT, TEXT, CqlType, ListType, MapType, SetType, TupleType
from tabletdb.group0.cluster_state import ClusterState, SchemaEntry, apply_entry, decode_entry, encode_entry
from tabletdb.group0.state import SchemaCommand
from tabletdb.group0.state import apply as apply_group0
from tabletdb.group0.state_id import timeuuid_after
from tabletdb.group0.tablets_state import cluster_capacity, plan_tablet_changes
from tabletdb.node.group0_shell.admission import encode_checked
from tabletdb.schema.ddl_common import DdlOutcome, SchemaConfig
from tabletdb.schema.ddl_keyspace import create_keyspace
from tabletdb.schema.ddl_table import create_table
from tabletdb.tablets.count import SizingConfig

HOSTS = [(uuid.UUID(int=i + 1), "datacenter1", "rack1", 2) for i in range(3)]
COLUMNS: list[tuple[str, CqlType, bool]] = [
    ("k", INT, False),
    ("c", BIGINT, False),
    *(
        (f"v{i}", t, False)
        for i, t in enumerate([TEXT, INT, ListType(INT), MapType(TEXT, INT), SetType(TEXT)] * 2)
    ),
]
_rng = random.Random(7)


def _entry(state: ClusterState, outcome: DdlOutcome) -> SchemaEntry:
    """The entry a node proposes for `outcome`: command on the current state id, tablet maps."""
    metadata = state.metadata
    command = SchemaCommand(
        metadata.state_id, timeuuid_after(metadata.state_id, time.time_ns(), _rng), outcome.mutations
    )
    preview, _ = apply_group0(metadata, command)
    nodes = cluster_capacity(HOSTS, metadata.tablets)
    changes = plan_tablet_changes(metadata.catalog, preview.catalog, metadata.tablets, nodes, SizingConfig())
    return SchemaEntry(dataclasses.replace(command, tablet_changes=changes), outcome.events)


def _schema(keyspace: str, tablets: bool, tables: int) -> ClusterState:
    state = ClusterState()
    config = SchemaConfig(datacenters=("datacenter1",))
    replication = {"class": "NetworkTopologyStrategy", "replication_factor": 3}
    options: dict[str, Any] = {} if tablets else {"tablets": {"enabled": False}}
    outcome = create_keyspace(state.metadata.catalog, keyspace, replication, config=config, **options)
    state, _ = apply_entry(state, _entry(state, outcome))
    for i in range(tables):
        columns: list[tuple[str, CqlType, bool]] = [("k", INT, False), ("v", TEXT, False)]
        outcome = create_table(state.metadata.catalog, keyspace, f"t{i}", columns, ["k"], new_id=uuid.uuid4())
        state, _ = apply_entry(state, _entry(state, outcome))
    return state


def _best_us(work: Callable[[], object], loops: int, rounds: int = 7) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(loops):
            work()
        best = min(best, (time.process_time() - started) / loops)
    return best * 1e6


def _measure(name: str, entry: SchemaEntry, loops: int) -> dict[str, Any]:
    data = encode_entry(entry)
    encode = _best_us(lambda: encode_entry(entry), loops)
    decode = _best_us(lambda: decode_entry(data), loops)
    checked = _best_us(lambda: encode_checked(entry), loops)
    return {
        "benchmark": "group0_admission",
        "workload": name,
        "entry_bytes": len(data),
        "encode_us": round(encode, 1),
        "decode_us": round(decode, 1),
        "encode_and_check_us": round(checked, 1),
        "check_adds_us": round(checked - encode, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tables", type=int, default=100, help="tables in the keyspace before the measured DDL"
    )
    parser.add_argument("--loops", type=int, default=200)
    args = parser.parse_args()
    for tablets in (True, False):
        state = _schema("ks", tablets, args.tables)
        outcome = create_table(
            state.metadata.catalog, "ks", "big", COLUMNS, ["k"], ["c"], new_id=uuid.uuid4()
        )
        entry = _entry(state, outcome)
        kind = "tablets" if tablets else "vnodes"
        print(
            RESULT_PREFIX + json.dumps(_measure(f"CREATE TABLE, 12 columns, {kind}", entry, args.loops)),
            flush=True,
        )
    deepest: CqlType = INT
    for _ in range(128):
        deepest = TupleType((deepest,))
    state = _schema("ks", False, 0)
    outcome = create_table(
        state.metadata.catalog,
        "ks",
        "deep",
        [("k", INT, False), ("v", deepest, False)],
        ["k"],
        new_id=uuid.uuid4(),
    )
    entry = _entry(state, outcome)
    print(
        RESULT_PREFIX + json.dumps(_measure("CREATE TABLE, a tuple nested 128 deep", entry, args.loops)),
        flush=True,
    )


if __name__ == "__main__":
    main()
