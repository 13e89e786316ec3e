"""The internode handshake's rules (pure): who is admitted, what a non-member may send, when TLS
is required."""

from __future__ import annotations

import uuid

import pytest

from tabletdb.group0.topology import raft_id_of
from tabletdb.net.handshake import (
    ClusterAuthority,
    HandshakeRefused,
    Hello,
    InternodeEncryption,
    Location,
    Me,
    encryption_required,
)
from tests.harness.fake_membership import View

HERE = Location("dc1", "r1")
JOIN = "g0.join"


def _authority(view: View, mode: InternodeEncryption = InternodeEncryption.NONE) -> ClusterAuthority:
    me = uuid.uuid4()
    view.me = me
    view.members.setdefault(me, HERE)
    return ClusterAuthority(Me(raft_id_of(me), me, "c", HERE), view, frozenset({JOIN}), mode, raft_id_of)


def _hello(host: uuid.UUID, **changes: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "node_id": raft_id_of(host),
        "host_id": host,
        "cluster_name": "c",
        "group0_id": None,
        "location": HERE,
        "expected_host_id": None,
    }
    fields.update(changes)
    return Hello(**fields).to_plain()  # type: ignore[arg-type]


def test_a_member_is_admitted_and_may_send_anything() -> None:
    peer = uuid.uuid4()
    auth = _authority(View({peer: HERE}))
    admitted = auth.admit(_hello(peer), encrypted=False, outbound_to=None, source="127.0.0.1")
    assert admitted.host_id == peer and admitted.node_id == raft_id_of(peer)
    assert auth.refusal(admitted, "data.truncate") is None


def test_a_stranger_may_only_ask_to_join_and_a_member_that_left_is_cut_off() -> None:
    peer = uuid.uuid4()
    view = View({peer: HERE})
    auth = _authority(view)
    admitted = auth.admit(_hello(peer), encrypted=False, outbound_to=None, source="127.0.0.1")
    del view.members[peer]  # it left
    reason = auth.refusal(admitted, "data.truncate")
    assert reason is not None and str(peer) in reason and "not a member" in reason
    assert auth.refusal(admitted, JOIN) is None
    stranger = auth.admit(_hello(uuid.uuid4()), encrypted=False, outbound_to=None, source="127.0.0.1")
    assert auth.refusal(stranger, "raft.msg") is not None


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"cluster_name": "other"}, "cluster 'other'"),
        ({"group0_id": uuid.uuid4()}, "different cluster"),
        ({"expected_host_id": uuid.uuid4()}, "stale"),
        ({"node_id": 12345}, "does not belong"),
    ],
)
def test_identity_mismatches_are_refused(changes: dict[str, object], match: str) -> None:
    peer = uuid.uuid4()
    auth = _authority(View({peer: HERE}, group0=uuid.uuid4()))
    with pytest.raises(HandshakeRefused, match=match):
        auth.admit(_hello(peer, **changes), encrypted=False, outbound_to=None, source="127.0.0.1")


def test_malformed_hellos_are_refusals_not_crashes() -> None:
    auth = _authority(View())
    for junk in (None, 7, {"node_id": 1}, {**_hello(uuid.uuid4()), "host_id": b"short"}):
        with pytest.raises(HandshakeRefused, match="malformed"):
            auth.admit(junk, encrypted=False, outbound_to=None, source="127.0.0.1")


def test_a_joining_node_trusts_the_group0_its_seed_presented() -> None:
    group0 = uuid.uuid4()
    view = View()
    auth = _authority(view)
    del view.members[view.me]  # type: ignore[arg-type]  # not a member of its own view yet
    leader = uuid.uuid4()
    # An inbound peer before the seed answered: not trusted.
    early = auth.admit(
        _hello(leader, group0_id=group0), encrypted=False, outbound_to=None, source="127.0.0.1"
    )
    assert auth.refusal(early, "raft.msg") is not None
    auth.admit(
        _hello(uuid.uuid4(), group0_id=group0), encrypted=False, outbound_to=-1, source=None
    )  # the seed
    late = auth.admit(_hello(leader, group0_id=group0), encrypted=False, outbound_to=None, source="127.0.0.1")
    assert auth.refusal(late, "raft.msg") is None
    with pytest.raises(HandshakeRefused, match="different cluster"):
        auth.admit(
            _hello(uuid.uuid4(), group0_id=uuid.uuid4()),
            encrypted=False,
            outbound_to=None,
            source="127.0.0.1",
        )
    no_group = auth.admit(_hello(uuid.uuid4()), encrypted=False, outbound_to=None, source="127.0.0.1")
    assert auth.refusal(no_group, "raft.msg") is not None
    view.members[view.me] = HERE  # type: ignore[index]  # joined: membership rules from now on
    assert auth.refusal(late, "raft.msg") is not None


@pytest.mark.parametrize(
    ("mode", "other", "required"),
    [
        (InternodeEncryption.NONE, Location("dc2", "r9"), False),
        (InternodeEncryption.ALL, HERE, True),
        (InternodeEncryption.DC, Location("dc1", "r2"), False),
        (InternodeEncryption.DC, Location("dc2", "r1"), True),
        (InternodeEncryption.RACK, Location("dc1", "r2"), True),
        (InternodeEncryption.RACK, HERE, False),
        (InternodeEncryption.RACK, None, True),
    ],
)
def test_encryption_policy(mode: InternodeEncryption, other: Location | None, required: bool) -> None:
    assert encryption_required(mode, HERE, other) is required


def test_plaintext_from_another_dc_is_refused_under_dc_encryption() -> None:
    near, far = uuid.uuid4(), uuid.uuid4()
    auth = _authority(View({near: Location("dc1", "r2"), far: Location("dc2", "r1")}), InternodeEncryption.DC)
    auth.admit(_hello(near), encrypted=False, outbound_to=None, source="127.0.0.1")
    # The member's location comes from group0, not from what its HELLO claims.
    with pytest.raises(HandshakeRefused, match="without TLS"):
        auth.admit(_hello(far, location=HERE), encrypted=False, outbound_to=None, source="127.0.0.1")
    auth.admit(_hello(far), encrypted=True, outbound_to=None, source="127.0.0.1")
    assert auth.must_encrypt(raft_id_of(far)) and not auth.must_encrypt(raft_id_of(near))


def test_a_members_host_id_claimed_from_another_address_may_only_ask_to_join() -> None:
    """A member restarted with a new IP asks the leader to record it; nothing else passes until
    the record says so (and then the same connection is let in)."""
    peer = uuid.uuid4()
    view = View({peer: HERE})
    auth = _authority(view)
    moved = auth.admit(_hello(peer), encrypted=False, outbound_to=None, source="10.0.0.9")
    reason = auth.refusal(moved, "data.apply")
    assert (
        reason is not None
        and "connected from 10.0.0.9, but group0 records this member at 127.0.0.1" in reason
    )
    assert auth.refusal(moved, JOIN) is None
    view.addresses[peer] = "10.0.0.9"  # the leader recorded the new address
    assert auth.refusal(moved, "data.apply") is None
    # A connection this node dialled was checked by the address it chose (and expected_host_id).
    auth.admit(_hello(peer), encrypted=False, outbound_to=raft_id_of(peer), source=None)
