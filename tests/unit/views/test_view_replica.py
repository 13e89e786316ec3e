"""Pairing of base replicas with view replicas (``views.updates.paired_replica``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from tabletdb.coordinator.placement import Replica
from tabletdb.views.updates import paired_replica

A, B, C, D = (Replica(uuid.UUID(int=i), 0, "dc1") for i in range(1, 5))


def local_is(me: Replica) -> Callable[[Replica], bool]:
    return lambda r: r == me


def test_the_ith_base_replica_pairs_with_the_ith_view_replica() -> None:
    assert paired_replica(local_is(B), (A, B, C), (C, A, B)) == A
    assert paired_replica(local_is(A), (A, B, C), (C, A, B)) == C
    assert paired_replica(local_is(C), (A, B, C), (C, A, B)) == B


def test_rf1_pairs_across_nodes() -> None:
    assert paired_replica(local_is(A), (A,), (D,)) == D


def test_no_pair_when_counts_differ_or_not_a_base_replica() -> None:
    assert paired_replica(local_is(A), (A, B), (A, B, C)) is None
    assert paired_replica(local_is(D), (A, B, C), (A, B, C)) is None


def test_pairs_form_within_the_datacenter() -> None:
    e, f = (Replica(uuid.UUID(int=i), 0, "dc2") for i in (5, 6))
    assert paired_replica(local_is(e), (A, e, B, f), (f, C, e, D)) == f
    assert paired_replica(local_is(B), (A, e, B, f), (f, C, e, D)) == D
    assert paired_replica(local_is(A), (A, e, B), (f, C, e)) is None
