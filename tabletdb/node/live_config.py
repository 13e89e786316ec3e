"""The node's settings as ``system.config`` shows them, and the ones CQL may change live.

Every key the node's configuration has is a row: its type in ScyllaDB's words, where its value
came from (``default``, ``config`` for the YAML file, ``cli`` for the command line, ``cql`` once
an UPDATE set it), its status (every key listed is implemented: ``Used``) and its value as it
would appear in a JSON config file. An UPDATE changes a key only where the change acts at once:
the request timeouts, read by every request through the coordinator and Paxos, and
``enable_cql_config_updates`` itself. Other keys are refused with ScyllaDB's "option is not
live-updateable" (a value accepted and then ignored until a restart would mislead). Updates
last until the process exits, as in ScyllaDB: node.yaml keeps what the node started with.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from tabletdb.coordinator.context import Replicas
from tabletdb.node.config import KNOWN_KEYS, ConfigError, NodeConfig
from tabletdb.node.replica_service import timeouts_of
from tabletdb.paxos.service import PaxosService, PaxosTimeouts
from tabletdb.systables.local_tables import ConfigEntry, ConfigUpdateRefused

log = logging.getLogger(__name__)

LIVE_KEYS = frozenset(
    {
        "read_request_timeout_in_ms",
        "write_request_timeout_in_ms",
        "range_request_timeout_in_ms",
        "counter_write_request_timeout_in_ms",
        "cas_contention_timeout_in_ms",
        "truncate_request_timeout_in_ms",
        "enable_cql_config_updates",
    }
)
"""Keys an UPDATE of system.config changes on a running node (all LiveUpdate in ScyllaDB)."""

_TYPES = {
    "int": "integer",
    "int | None": "integer",
    "bool": "bool",
    "float": "double",
    "str": "string",
    "Path": "string",
    "tuple[str, ...]": "string list",
    "ServerEncryption": "string map",
    "ClientEncryption": "string map",
}
_TYPE_OVERRIDES = {
    "tablets_mode_for_new_keyspaces": "tablets mode",
    "experimental_features": "experimental features",
}
"""Keys whose ScyllaDB type is an enumeration with a name of its own."""


class LiveConfig:
    """The configuration a running node acts on; ``on_change`` hands a new one to what reads it."""

    def __init__(
        self,
        config: NodeConfig,
        sources: Mapping[str, str],
        on_change: Callable[[NodeConfig], None],
    ) -> None:
        self._config = config
        self._sources = dict(sources)
        self._on_change = on_change
        self._types = {f.name: _type_name(f.name, str(f.type)) for f in dataclasses.fields(NodeConfig)}
        self._defaults = {f.name: f.default for f in dataclasses.fields(NodeConfig)}

    @property
    def config(self) -> NodeConfig:
        return self._config

    def entries(self) -> list[ConfigEntry]:
        values = self._config.to_dict()
        return [
            ConfigEntry(name, self._types[name], self._source(name), "Used", json.dumps(values[name]))
            for name in sorted(KNOWN_KEYS)
        ]

    def _source(self, name: str) -> str:
        if name in self._sources:
            return self._sources[name]
        return "default" if getattr(self._config, name) == self._defaults[name] else "internal"

    def update(self, name: str, value: str) -> None:
        """ScyllaDB's checks, in its order: updates enabled, the key exists, it is live, the
        value parses."""
        if not self._config.enable_cql_config_updates:
            raise ConfigUpdateRefused("this virtual table doesn't allow updates")
        if name not in KNOWN_KEYS:
            raise ConfigUpdateRefused("no such option")
        if name not in LIVE_KEYS:
            raise ConfigUpdateRefused("option is not live-updateable")
        try:
            changes: dict[str, Any] = {name: value}  # parsed by NodeConfig's own per-key parser
            updated = dataclasses.replace(self._config, **changes)
        except ConfigError:
            raise ConfigUpdateRefused("cannot parse option value") from None
        self._config = updated
        self._sources[name] = "cql"
        self._on_change(updated)
        log.info("config updated through CQL key=%s value=%s", name, getattr(updated, name))


def _type_name(name: str, annotation: str) -> str:
    return _TYPE_OVERRIDES.get(name) or _TYPES.get(annotation, "string")


def apply_timeouts(config: NodeConfig, replicas: Replicas, paxos: PaxosService | None) -> None:
    """Hand the request timeouts of ``config`` to what reads them on every request."""
    replicas.set_timeouts(timeouts_of(config))
    if paxos is not None:
        contention = config.cas_contention_timeout_in_ms / 1000
        paxos.set_timeouts(PaxosTimeouts(contention, config.write_request_timeout_in_ms / 1000))
