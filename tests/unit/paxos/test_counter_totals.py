"""``add_deltas``: the pure step a counter's Paxos round proposes (and the local path writes)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import BIGINT
from tabletdb.paxos.counters import add_deltas
from tabletdb.statements.modifications import CurrentCells
from tabletdb.storage.mutation import Cell, Mutation, RowWrite
from tabletdb.storage.reconcile import LiveCell

KEY, TOKEN = b"k", 42


def big(n: int) -> bytes:
    return codec.serialize(BIGINT, n)


def delta(*cells: tuple[str, int], ts: int = 5, static: bool = False) -> Mutation:
    row = RowWrite(b"" if static else b"c", static=static, cells=tuple(Cell(c, big(n), ts) for c, n in cells))
    return Mutation(KEY, TOKEN, rows=(row,))


def stored(totals: dict[tuple[bool, str], tuple[int, int]]) -> CurrentCells:
    """CurrentCells over {(static, column): (value, timestamp)}; checks what it is asked."""

    def current(key: bytes, token: int, ck: bytes, static: bool, column: str) -> Sequence[LiveCell]:
        assert (key, token, ck) == (KEY, TOKEN, b"" if static else b"c")
        found = totals.get((static, column))
        return () if found is None else (LiveCell(column, b"", big(found[0]), found[1], None),)

    return current


def cells(m: Mutation) -> dict[str, tuple[int, int]]:
    return {c.column: (int(codec.deserialize(BIGINT, c.value)), c.timestamp) for c in m.rows[0].cells}


def test_a_delta_is_added_to_the_current_total_and_stamped_with_the_ballot() -> None:
    out = add_deltas(delta(("n", 3), ("m", -2)), stored({(False, "n"): (10, 100)}), 1_000)
    assert cells(out) == {"n": (13, 1_000), "m": (-2, 1_000)}


def test_a_total_never_goes_back_in_time_behind_the_one_it_was_computed_from() -> None:
    """Ballot microseconds can equal an earlier total's (another node, same microsecond)."""
    out = add_deltas(delta(("n", -1)), stored({(False, "n"): (10, 1_000)}), 1_000)
    assert cells(out) == {"n": (9, 1_001)}


def test_static_counters_read_the_static_row() -> None:
    out = add_deltas(delta(("s", 4), static=True), stored({(True, "s"): (1, 7)}), 50)
    assert cells(out) == {"s": (5, 50)}


def test_deletions_pass_unchanged() -> None:
    tombstone = Mutation(KEY, TOKEN, rows=(RowWrite(b"c", cells=(Cell("n", None, 9),)),))
    assert add_deltas(tombstone, stored({(False, "n"): (10, 1)}), 1_000) == tombstone


@pytest.mark.parametrize(("base", "step"), [((1 << 63) - 1, 1), (-(1 << 63), -1)])
def test_overflow_is_refused(base: int, step: int) -> None:
    with pytest.raises(InvalidRequest, match="would overflow"):
        add_deltas(delta(("n", step)), stored({(False, "n"): (base, 1)}), 2)


def test_the_round_adds_to_the_newest_total_among_the_promises_reads() -> None:
    """``propose_from_reads`` as a counter's on_read: replicas' reads reconciled last-write-wins
    (one replica missed the latest total, one has nothing), the delta added to the newest."""
    from tabletdb.paxos.messages import Ballot
    from tabletdb.paxos.read_modify_write import propose_from_reads
    from tabletdb.paxos.rounds import decode_mutations, encode_mutations

    def read(total: int, ts: int) -> bytes:
        return encode_mutations(
            [Mutation(KEY, TOKEN, rows=(RowWrite(b"c", cells=(Cell("n", big(total), ts),)),))]
        )

    on_read = propose_from_reads(
        lambda current, micros: [add_deltas(delta(("n", 3)), current, micros)], now=0
    )
    proposed = decode_mutations(on_read(Ballot(150, 1, 1), [read(5, 100), read(7, 200), None]))
    assert [cells(m) for m in proposed] == [{"n": (10, 201)}]
    fresh = decode_mutations(on_read(Ballot(300, 1, 1), [None, None]))
    assert [cells(m) for m in fresh] == [{"n": (3, 300)}]
