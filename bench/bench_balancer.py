"""Benchmark: the pure tablet balancer on 100 nodes x 8 shards x 100,000 tablet replicas.

Two inputs, both one DC of three racks with RF=3 (one replica per rack), 33,334 tablets over
four tables:

* ``add-node``: 99 nodes evenly loaded and a 100th node, empty, joins (into rack r0). Tablets
  weigh the same and each has one replica per rack, which never leaves its rack (racks kept),
  so the least number of moves is exact per rack: every node above ``ceil(mean)`` of its rack
  must give its surplus away and every node below ``floor(mean)`` must receive its deficit, one
  replica per move. The planner's count (moves between shards included) is printed beside the
  sum of those bounds (goal <= 1.05x).
* ``sizes``: the same layout with tablet sizes drawn from 1..100 MiB (seeded), so byte balance
  is what the planner works for; printed with the spread of node bytes before and after.

Plan time is the wall and CPU time of one ``plan_migrations`` call asked for every move it can
make (goal < 2 s); the same-run baseline is the time to build the input maps. Run on a quiet box:
figures measured under load are noise.

Reproduce: ``.venv/bin/python -m bench.bench_balancer [--nodes 100] [--shards 8] [--replicas 100000]``.
"""

from __future__ import annotations

import argparse
import math
import random
import time
import uuid
from collections.abc import Mapping

from tabletdb.tablets.allocation import NodeCapacity
from tabletdb.tablets.balancer import BalancerInput, TabletKey, plan_migrations
from tabletdb.tablets.migration import Migration
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica

RACKS = 3
TABLES = 4


def build(
    nodes: int, shards: int, replicas: int
) -> tuple[list[NodeCapacity], dict[uuid.UUID, TabletMap], uuid.UUID]:
    """``nodes - 1`` evenly loaded nodes in three racks, plus one empty node (the joiner)."""
    old = nodes - 1
    per_rack = [[h for h in range(old) if h % RACKS == r] for r in range(RACKS)]
    caps = [NodeCapacity(uuid.UUID(int=h + 1), "dc1", f"r{h % RACKS}", shards) for h in range(nodes)]
    tablets = math.ceil(replicas / RACKS)
    per_table = math.ceil(tablets / TABLES)
    maps: dict[uuid.UUID, TabletMap] = {}
    t = 0
    for table in range(TABLES):
        table_id = uuid.UUID(int=10_000 + table)
        rows: list[list[TabletReplica]] = []
        for _ in range(per_table):
            row = []
            for r in range(RACKS):
                members = per_rack[r]
                h = members[t % len(members)]
                row.append(TabletReplica(caps[h].host_id, (t // len(members)) % shards))
            rows.append(row)
            t += 1
        maps[table_id] = TabletMap.even(table_id, rows)
    return caps, maps, caps[-1].host_id


def node_loads(
    maps: Mapping[uuid.UUID, TabletMap], sizes: Mapping[TabletKey, int], moves: list[Migration]
) -> dict[uuid.UUID, int]:
    loads: dict[uuid.UUID, int] = {}
    for table_id, tm in maps.items():
        for i, tablet in enumerate(tm):
            for r in tablet.replicas:
                loads[r.host] = loads.get(r.host, 0) + sizes.get((table_id, i), 1)
    for m in moves:
        size = sizes.get((m.table_id, m.tablet_id), 1)
        loads[m.source.host] -= size
        loads[m.target.host] = loads.get(m.target.host, 0) + size
    return loads


def lower_bound(counts: Mapping[uuid.UUID, int], hosts: list[uuid.UUID]) -> int:
    """Least moves of equal-sized replicas that leave every node within floor/ceil of the mean."""
    total = sum(counts.values())
    low, high = total // len(hosts), math.ceil(total / len(hosts))
    surplus = sum(max(0, counts.get(h, 0) - high) for h in hosts)
    deficit = sum(max(0, low - counts.get(h, 0)) for h in hosts)
    return max(surplus, deficit)


def rack_lower_bound(counts: Mapping[uuid.UUID, int], caps: list[NodeCapacity]) -> int:
    racks: dict[str, list[uuid.UUID]] = {}
    for c in caps:
        racks.setdefault(c.rack, []).append(c.host_id)
    return sum(lower_bound({h: counts.get(h, 0) for h in hosts}, hosts) for hosts in racks.values())


def spread(loads: Mapping[uuid.UUID, int], caps: list[NodeCapacity]) -> float:
    """The largest distance of a node's load from the mean of its rack, as a share of that mean."""
    worst = 0.0
    for rack in {c.rack for c in caps}:
        values = [loads.get(c.host_id, 0) for c in caps if c.rack == rack]
        mean = sum(values) / len(values)
        worst = max(worst, max(abs(v - mean) for v in values) / mean)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--replicas", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    started = time.perf_counter()
    caps, maps, joiner = build(args.nodes, args.shards, args.replicas)
    build_s = time.perf_counter() - started
    total = sum(tm.tablet_count * RACKS for tm in maps.values())
    print(f"input: {args.nodes} nodes x {args.shards} shards, {total} tablet replicas; build {build_s:.3f} s")

    counts = node_loads(maps, {}, [])
    started, cpu = time.perf_counter(), time.process_time()
    moves = plan_migrations(BalancerInput(caps, maps), max_migrations=total)
    plan_s, plan_cpu = time.perf_counter() - started, time.process_time() - cpu
    bound = rack_lower_bound(counts, caps)
    inter = sum(1 for m in moves if m.source.host != m.target.host)
    after = node_loads(maps, {}, moves)
    print(
        f"add-node: plan {plan_s:.3f} s wall, {plan_cpu:.3f} s CPU (goal < 2 s), "
        f"{len(moves)} moves ({inter} between nodes), "
        f"lower bound {bound}, ratio {len(moves) / bound:.3f} (goal <= 1.05); "
        f"joiner holds {after.get(joiner, 0)}, spread from the rack mean after {spread(after, caps):.3%}"
    )

    rng = random.Random(args.seed)
    sizes = {(t, i): rng.randint(1, 100) << 20 for t, tm in maps.items() for i in range(tm.tablet_count)}
    before = node_loads(maps, sizes, [])
    started, cpu = time.perf_counter(), time.process_time()
    moves = plan_migrations(BalancerInput(caps, maps, tablet_sizes=sizes), max_migrations=total)
    plan_s, plan_cpu = time.perf_counter() - started, time.process_time() - cpu
    after = node_loads(maps, sizes, moves)
    print(
        f"sizes: plan {plan_s:.3f} s wall, {plan_cpu:.3f} s CPU (goal < 2 s), {len(moves)} moves; "
        f"bytes spread from the rack mean before {spread(before, caps):.3%}, after {spread(after, caps):.3%}"
    )


if __name__ == "__main__":
    main()
