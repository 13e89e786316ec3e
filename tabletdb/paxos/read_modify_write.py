"""Read-modify-write of one partition at RF>1, made atomic by a Paxos round.

Counter updates and the statements that read before they write (list element set/delete by
index, list removal by value, UDT field set/delete) compute their mutations from the current
value. Across replicas that value must be the partition's *latest* state and nobody may write
between the read and the write, whatever each coordinator believes about who is up. A Paxos
round gives both: when the proposer asks for a value, the promise quorum agrees on the latest
commit and every earlier commit reached a member of it (each commit's proposer saw a quorum
holding its predecessor, and any two quorums meet), so the reconciled reads hold every update
ever committed for the partition; and a value is chosen only if a quorum accepted it before
promising any higher ballot, so two coordinators can never both have values chosen that were
built on the same read.

``build`` is called with the reconciled partition's cells and the ballot's microseconds,
possibly once per round (a lost round reads again). It must be pure: its result is the Paxos
value every replica applies unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tabletdb.coordinator.consistency import NAMES, QUORUM, SERIAL, ResponseTracker, check_available
from tabletdb.coordinator.context import Replicas
from tabletdb.cql.errors import Unavailable, WriteTimeout
from tabletdb.paxos.messages import Ballot
from tabletdb.paxos.rounds import PaxosRounds, Reconciler, cells_in, encode_mutations
from tabletdb.schema.model import TableDef
from tabletdb.statements.modifications import CurrentCells
from tabletdb.storage.mutation import Mutation

Build = Callable[[CurrentCells, int], Sequence[Mutation]]
"""(current cells of the partition, ballot microseconds) -> the mutations to propose."""

_RECONCILER = Reconciler()


def propose_from_reads(build: Build, now: int) -> Callable[[Ballot, Sequence[bytes | None]], bytes]:
    """The ``on_read`` of a read-modify-write: reconcile the promises' reads, build, encode."""

    def on_read(ballot: Ballot, reads: Sequence[bytes | None]) -> bytes:
        with _RECONCILER.reconciled(reads) as merged:
            mutations = build(cells_in(merged, now), ballot.micros)
        return encode_mutations(mutations)

    return on_read


async def read_modify_write(
    paxos: PaxosRounds,
    replicas: Replicas,
    table: TableDef,
    mutation_key: tuple[bytes, int],
    build: Build,
    cl: int,
    write_type: str,
    now: int,
) -> None:
    """Run ``build`` on the partition's latest state and commit its result at ``cl`` (and a quorum).

    Unavailable (at ``cl``, or QUORUM when ``cl`` asks for less: Paxos needs a majority) before
    anything is sent; WriteTimeout with ``write_type`` when the round runs out of time (the update
    may or may not have been applied, as for any timed-out write): for counters after the
    counter write timeout, as before Paxos; otherwise after the CAS contention + write timeouts.
    """
    key, token = mutation_key
    placed = replicas.placement.replicas(table, token)
    check_available(cl, placed, replicas.local_dc, replicas.is_up, write=True)
    check_available(QUORUM, placed, replicas.local_dc, replicas.is_up, write=True)
    try:
        on_read = propose_from_reads(build, now)
        budget = replicas.timeouts.counter_write if write_type == "COUNTER" else None
        await paxos.transact(table, token, key, on_read, SERIAL, commit=cl, budget=budget)
    except WriteTimeout as exc:
        block_for = max(ResponseTracker(cl, placed, replicas.local_dc, write=True).block_for, exc.block_for)
        raise WriteTimeout(
            f"{write_type.lower()} update of {table.keyspace}.{table.name} at {NAMES.get(cl, cl)}: {exc}",
            cl,
            exc.received,
            block_for,
            write_type,
        ) from None
    except Unavailable as exc:  # the failure detector changed its mind between the checks
        raise Unavailable(str(exc), QUORUM, exc.required, exc.alive) from None
