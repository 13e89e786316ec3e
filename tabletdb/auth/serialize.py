"""Auth and service-level state and mutations <-> plain msgpack-able data, for group0.

The scheme and its codec are tabletdb.schema.serialize's `PlainCodec`; this module only registers
the auth and service-level classes (and the Permission enum), so only those decode here.
"""

from __future__ import annotations

from tabletdb.auth import model, mutations
from tabletdb.auth.resources import Permission
from tabletdb.qos import model as qos_model
from tabletdb.qos import mutations as qos_mutations
from tabletdb.schema.serialize import PlainCodec

_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        model.Role,
        model.AuthState,
        mutations.PutRole,
        mutations.RemoveRole,
        mutations.AddMembership,
        mutations.RemoveMembership,
        mutations.AddPermissions,
        mutations.RemovePermissions,
        mutations.RevokeAllOn,
        qos_model.ServiceLevel,
        qos_model.QosState,
        qos_mutations.PutLevel,
        qos_mutations.RemoveLevel,
        qos_mutations.Attach,
        qos_mutations.Detach,
    )
}


class AuthDecodeError(ValueError):
    """Stored or replicated auth data is not in the expected form."""


_AUTH_CODEC = PlainCodec(_CLASSES, {Permission.__name__: Permission}, "auth", AuthDecodeError)
to_plain = _AUTH_CODEC.to_plain
from_plain = _AUTH_CODEC.from_plain
