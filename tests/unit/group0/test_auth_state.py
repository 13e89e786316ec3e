"""Roles, grants and service levels in group0: commands and snapshots carry them intact."""

from __future__ import annotations

import uuid

import msgpack

from tabletdb.auth.model import AuthState, Role
from tabletdb.auth.mutations import AddMembership, AddPermissions, PutRole, apply_auth_mutations
from tabletdb.auth.resources import Permission
from tabletdb.auth.serialize import from_plain, to_plain
from tabletdb.group0.auth_state import AuthOutcome
from tabletdb.group0.state import (
    Group0State,
    SchemaCommand,
    apply,
    decode_command,
    decode_state,
    encode_command,
    encode_state,
    with_auth,
)
from tabletdb.qos.model import ServiceLevel
from tabletdb.qos.mutations import Attach, PutLevel

AUTH_MUTATIONS = (
    PutRole(Role("a", can_login=True, salted_hash="$6$salt$hash")),
    PutRole(Role("b")),
    AddMembership("b", "a"),
    AddPermissions("b", "data/ks", (Permission.SELECT, Permission.MODIFY)),
)
QOS_MUTATIONS = (PutLevel(ServiceLevel("sl", timeout_ms=10)), Attach("a", "sl"))


def _command(state: Group0State) -> SchemaCommand:
    outcome = AuthOutcome(auth_mutations=AUTH_MUTATIONS, qos_mutations=QOS_MUTATIONS)
    return with_auth(SchemaCommand(state.state_id, uuid.uuid1(), ()), outcome)


def test_permission_round_trips_as_enum_member() -> None:
    state = apply_auth_mutations(AuthState(), [AddPermissions("r", "data/ks", (Permission.SELECT,))])
    back = from_plain(msgpack.unpackb(msgpack.packb(to_plain(state)), raw=False))
    assert back == state
    assert all(isinstance(p, Permission) for p in back.granted("r", "data/ks"))


def test_auth_only_command_applies_and_advances_the_state_id() -> None:
    state = Group0State()
    command = _command(state)
    after, ok = apply(state, command)
    assert ok and after.state_id == command.new_state_id
    assert after.auth.role("a") is not None and after.auth.closure("a") == ["a", "b"]
    assert after.qos.attached("a") == "sl"
    assert after.catalog.keyspaces == state.catalog.keyspaces


def test_command_and_snapshot_encodings_carry_auth() -> None:
    state = Group0State()
    command = _command(state)
    decoded = decode_command(encode_command(command))
    assert decoded == command
    after, _ = apply(state, decoded)
    assert decode_state(encode_state(after)) == after


def test_command_without_auth_has_no_auth_field_and_old_snapshots_decode() -> None:
    plain = SchemaCommand(uuid.uuid1(), uuid.uuid1(), ())
    assert with_auth(plain, AuthOutcome()) is plain
    assert "a" not in msgpack.unpackb(encode_command(plain), raw=False)
    body = msgpack.unpackb(encode_state(Group0State()), raw=False)
    del body["auth"]
    assert decode_state(msgpack.packb(body, use_bin_type=True)) == Group0State()


def test_auth_outcome_is_noop_only_without_any_mutation() -> None:
    assert AuthOutcome().is_noop
    assert not AuthOutcome(auth_mutations=AUTH_MUTATIONS[:1]).is_noop
    assert not AuthOutcome(qos_mutations=QOS_MUTATIONS[:1]).is_noop
