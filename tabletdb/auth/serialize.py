"""Auth and service-level state and mutations <-> plain msgpack-able data, for group0.

Same scheme as tabletdb.schema.serialize: `{"@": ClassName, field: value...}`, tuples as lists,
FrozenMaps as sorted `{"@m": pairs}` (so equal states encode to identical bytes), permissions
as `{"@p": name}`. Only the classes registered here decode.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tabletdb.auth import model, mutations
from tabletdb.auth.resources import Permission
from tabletdb.qos import model as qos_model
from tabletdb.qos import mutations as qos_mutations
from tabletdb.schema.frozenmap import FrozenMap

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


def to_plain(value: Any) -> Any:
    if isinstance(value, Permission):  # before str: Permission is a StrEnum
        return {"@p": value.value}
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, tuple | list):
        return [to_plain(v) for v in value]
    if isinstance(value, FrozenMap):
        return {"@m": [[to_plain(k), to_plain(value[k])] for k in sorted(value)]}
    if dataclasses.is_dataclass(value) and type(value).__name__ in _CLASSES:
        encoded: dict[str, Any] = {"@": type(value).__name__}
        for f in dataclasses.fields(value):
            encoded[f.name] = to_plain(getattr(value, f.name))
        return encoded
    raise TypeError(f"cannot encode {type(value).__name__} in auth data: {value!r}")


def from_plain(data: Any) -> Any:
    if data is None or isinstance(data, bool | int | str):
        return data
    if isinstance(data, list):
        return tuple(from_plain(v) for v in data)
    if not isinstance(data, dict):
        raise AuthDecodeError(f"unexpected {type(data).__name__} in auth data")
    if "@p" in data:
        return Permission(data["@p"])
    if "@m" in data:
        return FrozenMap((from_plain(k), from_plain(v)) for k, v in data["@m"])
    cls = _CLASSES.get(data.get("@", ""))
    if cls is None:
        raise AuthDecodeError(f"unknown class {data.get('@')!r} in auth data")
    try:
        return cls(**{k: from_plain(v) for k, v in data.items() if k != "@"})
    except TypeError as e:
        raise AuthDecodeError(f"bad fields for {cls.__name__}: {e}") from e
