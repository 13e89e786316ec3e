"""What a ``keyspace_rf_change`` request carries: the keyspace and its definition before and after
the ALTER KEYSPACE that asked for it.

The catalog keeps the old definition until the coordinator has moved every tablet of the keyspace
to the new replica count (as ScyllaDB keeps the old RF in ``system_schema`` until its global
request finishes); the request's last step then writes the new definition in the same group0
command that records the request as done. ``before`` is what the ALTER was decided on: the
coordinator refuses to start a request whose keyspace changed since (its RF rule, one DC by at
most one, was checked against ``before``), and at the end it merges field by field, so an ALTER
of ``durable_writes`` alone that ran meanwhile is not undone.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from tabletdb.schema.model import KeyspaceDef
from tabletdb.schema.mutations import PutKeyspace
from tabletdb.schema.serialize import mutations_from_plain, mutations_to_plain


@dataclass(frozen=True)
class KeyspaceRfChange:
    before: KeyspaceDef
    after: KeyspaceDef

    @property
    def keyspace(self) -> str:
        return self.after.name

    def merged_into(self, current: KeyspaceDef) -> KeyspaceDef:
        """``current`` with what the ALTER changed (a three-way merge over the fields an ALTER
        KEYSPACE may change)."""
        b, a = self.before, self.after
        return replace(
            current,
            replication=a.replication,
            durable_writes=a.durable_writes
            if a.durable_writes != b.durable_writes
            else current.durable_writes,
            tablets=a.tablets if a.tablets != b.tablets else current.tablets,
        )

    def describe(self) -> str:
        """``ks: dc1 1 -> 2`` for logs, errors and ``system.topology_requests``."""
        old, new = self.before.replication, self.after.replication
        dcs = sorted({dc for dc, _ in old.options} | {dc for dc, _ in new.options})
        changed = [
            f"{dc} {old.factor(dc)} -> {new.factor(dc)}" for dc in dcs if old.factor(dc) != new.factor(dc)
        ]
        return f"{self.keyspace}: {', '.join(changed) or 'racks changed'}"


def rf_change_to_plain(change: KeyspaceRfChange) -> Any:
    return mutations_to_plain((PutKeyspace(change.before), PutKeyspace(change.after)))


def rf_change_from_plain(data: Any) -> KeyspaceRfChange:
    decoded = mutations_from_plain(data)
    if len(decoded) != 2 or not all(isinstance(m, PutKeyspace) for m in decoded):
        raise ValueError(f"a keyspace RF change holds two keyspace definitions, not {decoded!r}")
    before, after = decoded
    assert isinstance(before, PutKeyspace) and isinstance(after, PutKeyspace)  # for mypy
    return KeyspaceRfChange(before.keyspace, after.keyspace)


@dataclass(frozen=True)
class SchemaUpdate:
    """The keyspace definition a finishing RF change writes, valid only on the catalog version it
    was decided on (``catalog_version``): a schema change applied in between (a table created
    with the old replication, say) makes the command a no-op, and the coordinator decides again."""

    catalog_version: uuid.UUID
    keyspace: KeyspaceDef


def schema_update_to_plain(update: SchemaUpdate) -> Any:
    return [update.catalog_version.bytes, mutations_to_plain((PutKeyspace(update.keyspace),))]


def schema_update_from_plain(data: Any) -> SchemaUpdate:
    version, plain = data
    (put,) = mutations_from_plain(plain)
    if not isinstance(put, PutKeyspace):
        raise ValueError(f"a schema update holds a keyspace definition, not {put!r}")
    return SchemaUpdate(uuid.UUID(bytes=bytes(version)), put.keyspace)
