"""Shared pieces of the DDL decision functions: outcome, events, config, name rules.

A decision function reads the current catalog, validates a statement like ScyllaDB would and
returns the mutations to replicate plus the SCHEMA_CHANGE events to announce once applied. It
never mutates anything, so the executor can retry it on a newer catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from tabletdb.cql.errors import ConfigurationError, InvalidRequest, Unauthorized
from tabletdb.schema.model import Catalog, KeyspaceDef, KeyspaceSchema, TableDef
from tabletdb.schema.mutations import Mutation
from tabletdb.schema.rack_rules import (
    ClusterShape,
    check_rf_rack_valid_by_config,
    check_rf_rack_valid_for_views,
)

NAME_LENGTH = 192
"""ScyllaDB's limit on keyspace and table names (room is left for the CDC log table's suffix)."""
_NAME = re.compile(r"\w+\Z", re.ASCII)

SYSTEM_KEYSPACES = frozenset(
    {
        "system",
        "system_schema",
        "system_auth",
        "system_distributed",
        "system_distributed_everywhere",
        "system_traces",
        "system_replicated_keys",
    }
)
# System keyspaces whose replication an administrator may still ALTER (as in ScyllaDB).
ALTERABLE_SYSTEM_KEYSPACES = frozenset({"system_auth", "system_distributed", "system_traces"})


class Change(StrEnum):
    CREATED = "CREATED"
    UPDATED = "UPDATED"
    DROPPED = "DROPPED"


class Target(StrEnum):
    KEYSPACE = "KEYSPACE"
    TABLE = "TABLE"
    TYPE = "TYPE"
    FUNCTION = "FUNCTION"
    AGGREGATE = "AGGREGATE"


@dataclass(frozen=True)
class SchemaChangeEvent:
    """One protocol SCHEMA_CHANGE; `name` is empty for KEYSPACE, `arg_types` only for functions."""

    change: Change
    target: Target
    keyspace: str
    name: str = ""
    arg_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class DdlOutcome:
    """What a statement does: nothing (IF [NOT] EXISTS hit) or mutations plus events."""

    mutations: tuple[Mutation, ...] = ()
    events: tuple[SchemaChangeEvent, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def is_noop(self) -> bool:
        return not self.mutations


NOOP = DdlOutcome()


@dataclass(frozen=True)
class SchemaConfig:
    """Node configuration that DDL validation depends on."""

    tablets_mode_for_new_keyspaces: str = "enabled"  # enabled | disabled | enforced
    datacenters: tuple[str, ...] = ()  # known DCs: `replication_factor` in NTS expands to these
    enforce_rack_list: bool = False
    enable_create_table_with_compact_storage: bool = False
    cluster: ClusterShape = field(default_factory=ClusterShape)
    """Token-owning nodes per DC and rack as the deciding node's group0 state has them (empty: no
    topology yet, nothing is checked): tablets keyspaces must fit it (``rack_rules``)."""
    rf_rack_valid_keyspaces: bool = False  # require RF-rack-validity of every tablets keyspace
    user_defined_functions: bool = False
    """CREATE/DROP FUNCTION and AGGREGATE are taken (enable_user_defined_functions and
    experimental_features: [udf]); refused otherwise, as ScyllaDB refuses them by default."""


def validate_keyspace_name(name: str) -> None:
    if not _NAME.match(name):
        raise InvalidRequest(f'"{name}" is not a valid keyspace name')
    if len(name) > NAME_LENGTH:
        raise InvalidRequest(
            f'Keyspace names shouldn\'t be more than {NAME_LENGTH} characters long (got "{name}")'
        )


def validate_table_name(name: str) -> None:
    if not _NAME.match(name):
        raise InvalidRequest(
            f'"{name}" is not a valid table name '
            "(must be alphanumeric character or underscore only: [a-zA-Z_0-9]+)"
        )
    if len(name) > NAME_LENGTH:
        raise InvalidRequest(
            f'Table names shouldn\'t be more than {NAME_LENGTH} characters long (got "{name}")'
        )


def ensure_user_modifiable(keyspace: str) -> None:
    """System keyspaces are managed by the server; schema statements inside them are refused."""
    if keyspace.lower() in SYSTEM_KEYSPACES:
        raise Unauthorized(f"{keyspace} keyspace is not user-modifiable.")


def require_keyspace(catalog: Catalog, keyspace: str) -> KeyspaceSchema:
    ks = catalog.keyspace(keyspace)
    if ks is None:
        raise InvalidRequest(f"Keyspace {keyspace} does not exist")
    return ks


def require_table(catalog: Catalog, keyspace: str, table: str) -> TableDef:
    require_keyspace(catalog, keyspace)
    found = catalog.table(keyspace, table)
    if found is None:
        if catalog.view(keyspace, table) is not None:
            raise InvalidRequest(f"Cannot use a materialized view {keyspace}.{table} as a table")
        raise InvalidRequest(f"unconfigured table {table}")
    return found


def name_taken_by_table_or_view(ks: KeyspaceSchema, name: str) -> bool:
    return name in ks.tables or name in ks.views


def check_rf_rack_valid(ks: KeyspaceDef, config: SchemaConfig, why: str, *, views: bool) -> None:
    """RF-rack-validity of a tablets keyspace where it is required: always with ``views`` (the
    keyspace holds or is getting views or indexes), and of every keyspace by config."""
    if config.rf_rack_valid_keyspaces:
        check_rf_rack_valid_by_config(ks, config.cluster)
    if views:
        check_rf_rack_valid_for_views(ks, config.cluster, why)


def check_tablet_options(ks: KeyspaceDef, tablets: object | None) -> None:
    """Table or view `tablets = {...}` hints only steer tablets; on a vnode keyspace they would be
    stored and do nothing, so they are refused with ScyllaDB's text."""
    if tablets is not None and not ks.uses_tablets:
        raise ConfigurationError("tablet options cannot be used when tablets are disabled for the keyspace")
