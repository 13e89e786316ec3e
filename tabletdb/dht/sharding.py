"""Which shard of a node owns a token (ScyllaDB's "biased-token-round-robin" sharding).

Vnode tables and CDC generations place data on shards with this function, and shard-aware
drivers compute it themselves from the ``nshards`` and ``ignore_msb`` they learn in SUPPORTED, so
it has to be bit-exact. The ring is cut into ``2^ignore_msb`` rounds; inside every round the shards
own consecutive runs in order 0..nshards-1. Ignoring the top bits spreads each shard's data over
the whole ring instead of one contiguous slice.
"""

from __future__ import annotations

from functools import lru_cache

from tabletdb.dht.token import MAX_TOKEN, bias, unbias

_M64 = (1 << 64) - 1


def _check_params(nshards: int, ignore_msb: int) -> None:
    if nshards < 1:
        raise ValueError(f"shard count must be at least 1, got {nshards}")
    if not 0 <= ignore_msb < 64:
        raise ValueError(f"ignore_msb must be in [0, 63], got {ignore_msb}")


def shard_of(token: int, nshards: int, ignore_msb: int) -> int:
    """The shard (0-based) that owns ``token`` on a node with ``nshards`` shards."""
    return (((unbias(token) << ignore_msb) & _M64) * nshards) >> 64


@lru_cache(maxsize=256)
def shard_starts(nshards: int, ignore_msb: int) -> tuple[int, ...]:
    """For each shard, the unsigned offset inside a round where its run of tokens begins.

    Offsets are in [0, 2^(64 - ignore_msb)). The closed-form guess can land one step before the
    true boundary because of integer division, hence the short correction walk.
    """
    _check_params(nshards, ignore_msb)
    starts: list[int] = []
    for shard in range(nshards):
        start = ((shard << 64) // nshards) >> ignore_msb
        while shard_of(bias(start), nshards, ignore_msb) != shard:
            start += 1
        starts.append(start)
    return tuple(starts)


def first_token_of_shard(shard: int, nshards: int, ignore_msb: int) -> int:
    """The smallest token owned by ``shard`` (the start of its run in the first round)."""
    _check_shard(shard, nshards)
    return bias(shard_starts(nshards, ignore_msb)[shard])


def token_for_next_shard(token: int, shard: int, nshards: int, ignore_msb: int, spans: int = 1) -> int:
    """The first token after ``token`` where a run of ``shard`` starts, skipping ``spans - 1`` rounds.

    Used to walk a token range shard by shard (CDC generation building, per-shard scans). Returns
    MAX_TOKEN when no such start exists before the end of the ring.
    """
    _check_shard(shard, nshards)
    if spans < 1:
        raise ValueError(f"spans must be at least 1, got {spans}")
    starts = shard_starts(nshards, ignore_msb)
    current = shard_of(token, nshards, ignore_msb)
    if ignore_msb == 0:
        if shard <= current or spans > 1:
            return MAX_TOKEN
        return bias(starts[shard])
    low_bits = 64 - ignore_msb
    round_index = unbias(token) >> low_bits
    round_index += spans - (1 if shard > current else 0)
    if round_index >= 1 << ignore_msb:
        return MAX_TOKEN
    return bias((round_index << low_bits) | starts[shard])


def _check_shard(shard: int, nshards: int) -> None:
    if not 0 <= shard < nshards:
        raise ValueError(f"shard {shard} does not exist on a node with {nshards} shards")
