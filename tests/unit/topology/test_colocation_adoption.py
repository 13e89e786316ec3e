"""A CDC log map made before maps named their base (planned apart, replicas anywhere) is brought
onto its base: the leader's adoption moves (``colocation.adoption_move``), run as ordinary MOVE
requests by the real coordinator step function, end with the log's tablets equal to the base's
(``adoptable``), after which naming the base changes no replica."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.tablets.colocation import adoptable, adoption_move, follow_map, separated
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica, TransitionStage
from tabletdb.topology.requests import enqueue
from tabletdb.topology.state import Request, TabletMove
from tabletdb.topology.states import RequestKind
from tests.unit.topology.driver import TABLE, cluster, host, new_id

LOG = uuid.UUID(int=0xAC)


def _placed_apart(base: TabletMap, nodes: int, rnd: random.Random) -> TabletMap:
    """The base's tablets with other replicas: what an independently planned log map holds."""
    tablets = []
    for t in base.tablets:
        hosts = rnd.sample([host(i) for i in range(nodes)], len(t.replicas))
        tablets.append(replace(t, replicas=tuple(TabletReplica(h, rnd.randrange(2)) for h in hosts)))
    return replace(base, table_id=LOG, tablets=tuple(tablets), base_table=None)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(3, 5), st.sampled_from([2, 4, 8]))
def test_adoption_moves_bring_the_log_onto_its_base(seed: int, nodes: int, tablets: int) -> None:
    c = cluster(nodes=nodes, tablets=tablets)
    c.tablets[LOG] = _placed_apart(c.tablets[TABLE], nodes, random.Random(seed))
    moves = 0
    while not adoptable(c.tablets[TABLE], c.tablets[LOG]):
        move = adoption_move(c.tablets[TABLE], c.tablets[LOG])
        assert move is not None, "equal counts and nothing migrating: there is always a next move"
        request = Request(
            new_id(),
            RequestKind.MOVE,
            move.target.host,
            move=TabletMove(LOG, move.last_token, move.source, move.target),
        )
        assert c.apply(enqueue(c.topology, request, frozenset(c.alive), new_id()))
        c.run()
        assert not c.topology.results[-1].error, c.topology.results[-1].error
        moves += 1
        assert moves <= tablets * 3, "each move fixes one replica for good"
    c.tablets[LOG] = follow_map(c.tablets[TABLE], LOG)
    assert separated(c.tablets) == []


def test_no_move_while_a_tablet_migrates_or_when_counts_differ() -> None:
    c = cluster(nodes=4, tablets=4)
    base = c.tablets[TABLE]
    apart = _placed_apart(base, 4, random.Random(1))
    assert adoption_move(base, apart) is not None
    moving = replace(
        apart.tablets[0], new_replicas=apart.tablets[0].replicas, stage=TransitionStage.STREAMING
    )
    busy = replace(apart, tablets=(moving, *apart.tablets[1:]))
    assert adoption_move(base, busy) is None
    fewer = TabletMap.even(LOG, [t.replicas for t in apart.tablets[:2]])
    assert adoption_move(base, fewer) is None and not adoptable(base, fewer)
    assert not adoptable(base, apart) and adoptable(base, replace(base, table_id=LOG))
    reordered = [tuple(reversed(t.replicas)) for t in base.tablets]
    assert adoptable(base, TabletMap.even(LOG, reordered))  # the same replicas in another order
    assert not adoptable(base, follow_map(base, LOG))  # already named: nothing to adopt
