"""The Paxos vocabulary and acceptor rules, one case each (the simulation covers their interplay)."""

from __future__ import annotations

from pathlib import Path

from tabletdb.paxos.acceptor import EMPTY, DurableAcceptor, step
from tabletdb.paxos.messages import (
    Accept,
    Accepted,
    Ballot,
    Commit,
    Committed,
    Prepare,
    Promise,
    Proposal,
    from_plain,
    to_plain,
)
from tabletdb.paxos.proposer import Done, NeedValue, Outcome, Proposer, Send, Timing
from tabletdb.storage.paxos_state import PaxosStateStore

B1, B2, B3 = Ballot(10, 1, 1), Ballot(10, 2, 1), Ballot(11, 1, 2)


def test_ballot_bytes_sort_like_ballots_and_make_timeuuids() -> None:
    ballots = [
        Ballot(5, 9, 9),
        Ballot(6, 0, 0),
        Ballot(6, 0, 1),
        Ballot(6, 1, 0),
        Ballot(6, 2**62, 0),
        Ballot(2**52, 3, 4),
    ]
    assert sorted(ballots, key=Ballot.to_bytes) == sorted(ballots)
    assert all(Ballot.from_bytes(b.to_bytes()) == b for b in ballots)
    u = Ballot(1_700_000_000_000_000, 3, 4).to_uuid()
    assert u.version == 1 and (u.time - 0x01B21DD213814000) // 10 == 1_700_000_000_000_000


def test_messages_survive_the_wire_form() -> None:
    p = Proposal(B1, b"value")
    for msg in [
        Prepare(b"k", B1),
        Accept(b"k", p),
        Commit(b"k", p),
        Promise(b"k", B2, True, B2, p, Proposal(B3, b""), b"read", ((B1, b"d" * 16), (B3, b"e" * 16))),
        Promise(b"k", B2, False, B3, None, None),
        Accepted(b"k", B1, False, B3),
        Committed(b"k", B1),
    ]:
        assert from_plain(to_plain(msg)) == msg


def test_acceptor_promises_only_higher_ballots_and_reports_what_it_accepted() -> None:
    s = step(EMPTY, Prepare(b"k", B2))
    assert s.reply == Promise(b"k", B2, True, B2, None, None)
    assert step(s.state, Prepare(b"k", B1)).reply == Promise(b"k", B1, False, B2, None, None)
    assert not step(s.state, Accept(b"k", Proposal(B1, b"x"))).reply.ok  # type: ignore[union-attr]
    accepted = step(s.state, Accept(b"k", Proposal(B2, b"x")))
    assert accepted.reply.ok and accepted.state.accepted == Proposal(B2, b"x")  # type: ignore[union-attr]
    again = step(accepted.state, Prepare(b"k", B3)).reply
    assert isinstance(again, Promise) and again.accepted == Proposal(B2, b"x")


def test_commit_applies_even_when_older_and_clears_what_it_supersedes() -> None:
    s = step(step(EMPTY, Accept(b"k", Proposal(B2, b"x"))).state, Commit(b"k", Proposal(B2, b"x")))
    assert (
        s.apply == Proposal(B2, b"x") and s.state.accepted is None and s.state.committed == Proposal(B2, b"x")
    )
    late = step(s.state, Commit(b"k", Proposal(B1, b"old")))
    assert late.apply == Proposal(B1, b"old") and late.state == s.state


def test_acceptor_state_survives_reopening(tmp_path: Path) -> None:
    store = PaxosStateStore(tmp_path / "paxos.db")
    acceptor = DurableAcceptor(store)
    for req in [Prepare(b"k", B2), Accept(b"k", Proposal(B2, b"x")), Prepare(b"other", B1)]:
        before, s = acceptor.decide(req)
        acceptor.save(req.key, before, s)
    store.close()
    reopened = DurableAcceptor(PaxosStateStore(tmp_path / "paxos.db"))
    before, s = reopened.decide(Prepare(b"k", B1))
    assert before.promised == B2 and before.accepted == Proposal(B2, b"x")
    assert s.reply == Promise(b"k", B1, False, B2, None, None)
    assert reopened.store.forget_prefix(b"k") == 1 and reopened.store.count() == 1


def _drive(
    proposer: Proposer, acceptors: dict[int, DurableAcceptor], value: bytes | None, applied: list[bytes]
) -> Outcome:
    """Deliver everything in order, no faults; ``applied`` collects the values replicas apply."""
    now = 1000
    queue = proposer.start(now)
    while queue:
        out = queue.pop(0)
        if isinstance(out, Send):
            before, s = acceptors[out.dst].decide(out.message)
            if s.apply is not None:
                applied.append(s.apply.value)
            acceptors[out.dst].save(out.message.key, before, s)
            queue += proposer.receive(out.dst, s.reply, now)
        elif isinstance(out, NeedValue):
            queue += proposer.provide(value, now)
        elif isinstance(out, Done):
            return out.outcome
    raise AssertionError("the proposer stopped without an outcome")


def test_a_later_proposer_repairs_an_accepted_but_uncommitted_value(tmp_path: Path) -> None:
    acceptors = {n: DurableAcceptor(PaxosStateStore(tmp_path / f"{n}.db")) for n in range(3)}
    for n in (0, 1):  # a proposer got "x" accepted on a quorum, then died before committing
        for req in [Prepare(b"k", B1), Accept(b"k", Proposal(B1, b"x"))]:
            before, s = acceptors[n].decide(req)
            acceptors[n].save(b"k", before, s)
    proposer = Proposer(b"k", (0, 1, 2), 2, 7, 1, Timing(deadline=10**9), seed=0)
    applied: list[bytes] = []
    assert _drive(proposer, acceptors, b"y", applied) is Outcome.APPLIED
    assert applied[:2] == [b"x", b"x"] and applied[-2:] == [b"y", b"y"]
    committed = [a.decide(Prepare(b"k", Ballot(10**6, 0, 0)))[0].committed for a in acceptors.values()]
    assert [c.value for c in committed if c is not None] == [b"y", b"y", b"y"]


def test_saves_of_one_tick_share_a_transaction(tmp_path: Path) -> None:
    import asyncio

    from tabletdb.storage.paxos_state import PaxosRecord, PaxosStateCommitter

    store = PaxosStateStore(tmp_path / "paxos.db")
    committer = PaxosStateCommitter(store)

    async def go() -> None:
        records = [PaxosRecord(Ballot(i, 0, 0).to_bytes()) for i in range(1, 11)]
        await asyncio.gather(*(committer.save(bytes([i]), r) for i, r in enumerate(records)))
        await committer.save(b"\x00", PaxosRecord(Ballot(99, 0, 0).to_bytes()))

    asyncio.run(go())
    assert committer.flushes == 2 and store.count() == 10
    found = store.load(b"\x00")
    assert found is not None and found.promised == Ballot(99, 0, 0).to_bytes()


def test_reads_reconcile_last_write_wins_and_leave_the_scratch_store_empty() -> None:
    from tabletdb.paxos.rounds import Reconciler, decode_mutations, encode_mutations
    from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite

    def partition(ts: int, value: bytes) -> bytes:
        row = RowWrite(b"", marker=RowMarker(ts), cells=(Cell("v", value, ts),))
        return encode_mutations([Mutation(b"pk", 42, rows=(row,))])

    newer, older = partition(20, b"new"), partition(10, b"old")
    assert decode_mutations(newer) == [
        Mutation(b"pk", 42, rows=(RowWrite(b"", marker=RowMarker(20), cells=(Cell("v", b"new", 20),)),))
    ]
    reconciler = Reconciler()
    with reconciler.reconciled([None, None]) as store:
        assert store is None
    with reconciler.reconciled([older, None, newer]) as store:
        assert store is not None
        data = store.read_partition(b"pk", now=0)
        assert data is not None and data.rows[0].cells_of("v")[0].value == b"new"
    with reconciler.reconciled([older]) as store:
        assert store is not None
        data = store.read_partition(b"pk", now=0)
        assert data is not None and data.rows[0].cells_of("v")[0].value == b"old"


def test_a_commit_waits_for_the_clients_level_beyond_a_quorum() -> None:
    """A counter at ALL: chosen on a quorum, answered only once every replica has the commit."""
    proposer = Proposer(
        b"k", (0, 1, 2), 2, 7, 1, Timing(deadline=10**9), seed=0, commit_enough=lambda acked: len(acked) == 3
    )
    prepares = proposer.start(now=1)
    ballot = prepares[0].message.ballot  # type: ignore[union-attr]
    outputs = [
        o for n in (0, 1) for o in proposer.receive(n, Promise(b"k", ballot, True, None, None, None), now=2)
    ]
    assert outputs and isinstance(outputs[-1], NeedValue)
    accepts = proposer.provide(b"v", now=3)
    assert {o.dst for o in accepts if isinstance(o, Send)} == {0, 1, 2}
    commits = [o for n in (0, 1) for o in proposer.receive(n, Accepted(b"k", ballot, True, None), now=4)]
    assert {o.dst for o in commits if isinstance(o, Send) and isinstance(o.message, Commit)} == {0, 1, 2}
    assert proposer.receive(0, Committed(b"k", ballot), now=5) == []
    assert proposer.receive(1, Committed(b"k", ballot), now=5) == []  # a quorum, not yet ALL
    assert proposer.tick(now=5 + Timing(deadline=10**9).round_timeout) == [
        Send(2, Commit(b"k", Proposal(ballot, b"v")))
    ]  # resent to the one still missing
    assert proposer.receive(2, Committed(b"k", ballot), now=6) == [Done(Outcome.APPLIED, 0)]


def test_a_re_proposal_of_the_last_committed_value_is_not_repaired_again() -> None:
    """Two proposers repairing each other's re-proposals of one value would never stop (seen with
    counters from three coordinators): a value equal to the latest commit counts as committed."""
    proposer = Proposer(b"k", (0, 1, 2), 2, 7, 1, Timing(deadline=10**9), seed=0)
    ballot = proposer.start(now=100)[0].message.ballot  # type: ignore[union-attr]
    committed, repaired = Proposal(Ballot(10, 1, 1), b"v"), Proposal(Ballot(20, 2, 1), b"v")
    outputs = [
        o
        for n in (0, 1)
        for o in proposer.receive(n, Promise(b"k", ballot, True, None, repaired, committed), now=101)
    ]
    assert len(outputs) == 1 and isinstance(outputs[0], NeedValue)
