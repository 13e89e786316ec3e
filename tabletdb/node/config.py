"""Node configuration: the scylla.yaml subset tabletdb understands.

Key names are Scylla's so an operator's muscle memory (and a trimmed scylla.yaml) carries over.
Every value goes through one parser per key, whether it came from a YAML file, a command-line
flag or a direct ``NodeConfig(...)`` call, so a NodeConfig that exists is always valid and
normalised (e.g. ``org.apache.cassandra.auth.PasswordAuthenticator`` becomes
``PasswordAuthenticator``). Unknown keys are errors rather than warnings: a misspelt key that is
silently ignored is a misconfigured node. ScyllaDB's own keys that have no effect here are the
exception (``scylla_keys``): a stock scylla.yaml must start a node, so they are dropped and
listed once at start-up, and those whose value matters are checked.

The effective configuration is written to ``<workdir>/node.yaml`` at start so a restart, an
operator or a test can see exactly what the node ran with.
"""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tabletdb.node.scylla_keys import CHECKED_KEYS, IGNORED_KEYS
from tabletdb.node.scylla_keys import check as check_scylla_key

EFFECTIVE_CONFIG_NAME = "node.yaml"
RACKDC_FILE_NAME = "cassandra-rackdc.properties"

AUTHENTICATORS = ("AllowAllAuthenticator", "PasswordAuthenticator")
AUTHORIZERS = ("AllowAllAuthorizer", "CassandraAuthorizer")
SNITCHES = ("SimpleSnitch", "GossipingPropertyFileSnitch")
TABLETS_MODES = ("enabled", "disabled", "enforced")
COMMITLOG_SYNC_MODES = ("batch", "periodic")
DEFAULT_DC = "datacenter1"
DEFAULT_RACK = "rack1"
_CLASS_PREFIXES = ("org.apache.cassandra.auth.", "org.apache.cassandra.locator.")


class ConfigError(ValueError):
    """A configuration key is unknown or its value is not allowed.

    Carries the key and the offending value so the command line can print one actionable line.
    """

    def __init__(self, key: str, value: object, allowed: str, message: str | None = None) -> None:
        self.key = key
        self.value = value
        self.allowed = allowed
        super().__init__(message or f"config key {key!r}: invalid value {value!r}; allowed: {allowed}")


# ---------------------------------------------------------------------------------------------
# TLS settings: scylla.yaml's nested server_encryption_options / client_encryption_options.

INTERNODE_ENCRYPTION = ("none", "all", "dc", "rack")


@dataclass(frozen=True)
class ServerEncryption:
    internode_encryption: str = "none"
    certificate: Path | None = None
    keyfile: Path | None = None
    truststore: Path | None = None
    require_client_auth: bool = False

    @property
    def enabled(self) -> bool:
        return self.internode_encryption != "none"

    def to_dict(self) -> dict[str, Any]:
        return _options_dict(self)


@dataclass(frozen=True)
class ClientEncryption:
    enabled: bool = False
    certificate: Path | None = None
    keyfile: Path | None = None
    truststore: Path | None = None
    require_client_auth: bool = False

    def to_dict(self) -> dict[str, Any]:
        return _options_dict(self)


def _options_dict(options: ServerEncryption | ClientEncryption) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if value is not None:
            out[f.name] = str(value) if isinstance(value, Path) else value
    return out


def _encryption_parser(cls: type[ServerEncryption] | type[ClientEncryption]) -> Parser:
    """A mapping of the section's keys (or, from a command-line -o, the same as a YAML flow
    mapping string). Unknown keys (ScyllaDB's priority_string, certficate_revocation_list, ...)
    are refused: they are not implemented, and a silently ignored TLS setting is a hole."""

    def parse(key: str, value: Any) -> ServerEncryption | ClientEncryption:
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                value = yaml.safe_load(value)
            except yaml.YAMLError:
                raise ConfigError(key, value, "a mapping such as {enabled: true, ...}") from None
        if value is None:
            value = {}
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(value, Mapping):
            raise ConfigError(key, value, f"a mapping of {', '.join(names)}")
        fields: dict[str, Any] = {}
        for name, raw in value.items():
            if name not in names:
                raise ConfigError(f"{key}.{name}", raw, f"one of the keys {', '.join(names)}")
            sub = f"{key}.{name}"
            if name == "internode_encryption":
                fields[name] = _choice_parser(INTERNODE_ENCRYPTION)(sub, raw)
            elif name in ("enabled", "require_client_auth"):
                fields[name] = _parse_bool(sub, raw)
            elif raw is not None and raw != "":
                fields[name] = Path(_parse_str(sub, raw))
        options = cls(**fields)
        on = options.enabled
        for needed in ("certificate", "keyfile"):
            if on and getattr(options, needed) is None:
                raise ConfigError(f"{key}.{needed}", None, "a PEM file path when encryption is on")
        return options

    return parse


@dataclass(frozen=True)
class NodeConfig:
    """Everything one node process needs to know before it starts.

    Empty strings for ``rpc_address``, ``broadcast_address``, ``broadcast_rpc_address`` and
    ``api_address`` mean "derive it" (Scylla's behaviour); after construction they always hold
    a real address. An empty ``endpoint_snitch`` picks GossipingPropertyFileSnitch when a
    non-default dc/rack is given and SimpleSnitch otherwise. Empty ``seeds`` means this node
    seeds itself (it starts a new cluster).
    """

    workdir: Path
    cluster_name: str = "Test Cluster"
    listen_address: str = "127.0.0.1"
    rpc_address: str = ""
    broadcast_address: str = ""
    broadcast_rpc_address: str = ""
    native_transport_port: int = 9042
    native_shard_aware_transport_port: int | None = None
    seeds: tuple[str, ...] = ()
    smp: int = 2
    authenticator: str = "AllowAllAuthenticator"
    authorizer: str = "AllowAllAuthorizer"
    api_address: str = ""
    api_port: int = 10000
    storage_port: int = 7000
    """Internode (group0 Raft and RPC) port on the listen address; every node of a cluster
    uses the same one to reach its seeds, as in Scylla."""
    num_tokens: int = 256
    tablets_mode_for_new_keyspaces: str = "enabled"
    tablets_initial_scale_factor: float = 10.0
    tablets_per_shard_goal: int = 100
    target_tablet_size_in_bytes: int = 5 * 1024**3
    murmur3_partitioner_ignore_msb_bits: int = 12
    endpoint_snitch: str = ""
    dc: str = DEFAULT_DC
    rack: str = DEFAULT_RACK
    rf_rack_valid_keyspaces: bool = False
    enforce_rack_list: bool = False
    maintenance_mode: bool = False
    commitlog_sync: str = "periodic"
    commitlog_sync_period_in_ms: int = 10000
    commitlog_skip_corrupt_records: bool = False
    """Start even if the commit log is damaged between valid records: skip the damaged bytes
    (their writes are lost, reported at ERROR, a copy of the log kept) and replay the rest.
    Without it such a node refuses to start (``storage.commit_replay``)."""
    read_request_timeout_in_ms: int = 5000
    write_request_timeout_in_ms: int = 2000
    range_request_timeout_in_ms: int = 10000
    counter_write_request_timeout_in_ms: int = 5000
    cas_contention_timeout_in_ms: int = 1000
    truncate_request_timeout_in_ms: int = 60000
    request_timeout_in_ms: int = 10000
    native_transport_max_frame_size_in_mb: int = 256
    native_transport_max_concurrent_requests_in_bytes: int = -1
    """Bytes of received requests the CQL server holds in flight before connections wait (stop
    being read); -1: a tenth of the machine's memory, Scylla's share for its CQL transport."""
    native_transport_max_concurrent_connections: int = -1
    """Client connections accepted at once; further ones are closed on accept. -1: no limit."""
    native_transport_idle_timeout_in_ms: int = 0
    """Close a client connection that sends nothing this long with nothing in flight; 0: never."""
    # --- TLS (ScyllaDB's names; see "Encryption" in README.md) ------------------------------------
    server_encryption_options: ServerEncryption = ServerEncryption()
    """Internode TLS: internode_encryption none/all/dc/rack, certificate, keyfile, truststore,
    require_client_auth. TLS connections go to ssl_storage_port."""
    ssl_storage_port: int = 7001
    client_encryption_options: ClientEncryption = ClientEncryption()
    """CQL TLS: enabled, certificate, keyfile, truststore, require_client_auth."""
    native_transport_port_ssl: int | None = None
    """With client encryption enabled: serve TLS on this port and keep native_transport_port
    plaintext. Unset (or equal to native_transport_port): TLS on native_transport_port."""
    # -- uploads through the REST API ------------------------------------------------------------
    restrict_future_timestamp: bool = True
    """Refuse uploaded tablet images holding any timestamp more than 3 days in the future
    (ScyllaDB's name and bound; there it refuses such USING TIMESTAMP values)."""
    test_statement_delay_ms: int = 0
    """TEST ONLY: sleep this long inside every read and write (within its service-level timeout),
    so tests can make a statement deterministically slower than a short TIMEOUT."""
    test_fault_injection_api: bool = False
    """TEST ONLY: serve `/faults` on the REST API (`node.admin.rest_faults`) so chaos tests can
    partition nodes by making this one drop its internode messages to chosen peers."""
    # -- replacing a dead node (ScyllaDB's name) ---------------------------------------------------
    replace_node_first_boot: str = ""
    """Host id of a dead node this new node replaces: on its first boot (fresh workdir) it joins
    with a `replace` request, takes the dead node's tablet replicas, filled from the other
    replicas, and serves once they are in place; the dead node becomes `left`. A node that is
    already a member ignores it (it is only read on the first boot, as in ScyllaDB)."""
    # -- system.config (ScyllaDB's name) -----------------------------------------------------------
    enable_cql_config_updates: bool = True
    """Let ``UPDATE system.config`` change live-updatable keys on a running node
    (``node.live_config``); false refuses every such update."""
    # -- user-defined functions (ScyllaDB's names) -------------------------------------------------
    enable_user_defined_functions: bool = False
    """With ``experimental_features: [udf]`` too: CREATE/DROP FUNCTION and AGGREGATE are taken
    (Lua functions and aggregates, stored, described and called in SELECT: ``tabletdb.udf``).
    Otherwise they are refused with ScyllaDB's message, as ScyllaDB refuses them by default."""
    experimental_features: tuple[str, ...] = ()
    """ScyllaDB's experimental switches; only ``udf`` exists here."""
    # -- user-defined function budget (ScyllaDB's names) ----------------------------------------
    user_defined_function_time_limit_ms: int = 10
    """CPU time one call of a Lua function may take; past it the call fails with ScyllaDB's
    "lua execution timeout" (`udf.lua`)."""
    user_defined_function_allocation_limit_bytes: int = 1024 * 1024
    """Memory one call of a Lua function may allocate; past it the call fails ("not enough
    memory")."""
    # -- deprecated table kinds (ScyllaDB's name) -----------------------------------------------------
    enable_create_table_with_compact_storage: bool = False
    """Let CREATE TABLE ... WITH COMPACT STORAGE through; refused with ScyllaDB's message otherwise."""
    # -- batches (ScyllaDB's name) -----------------------------------------------------------------
    batch_size_fail_threshold_in_kb: int = 1024
    """Refuse a batch spanning several partitions whose mutations exceed this many KiB
    (``query.batch_limits``), as ScyllaDB does; ScyllaDB's default."""
    # -- Prometheus metrics (ScyllaDB's names) -----------------------------------------------------
    prometheus_port: int = 9180
    """Serve ``/metrics`` (ScyllaDB's metric names and ours, ``node.admin.prometheus``) on this
    port, without authentication as ScyllaDB does; 0: no Prometheus listener."""
    prometheus_address: str = ""
    """Address of the Prometheus listener; empty: listen_address (ScyllaDB's default)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _PARSERS[f.name](f.name, getattr(self, f.name)))
        self._derive_defaults()

    def _derive_defaults(self) -> None:
        """Fill the "derive it" fields the way Scylla does, then check cross-key rules."""
        if not self.rpc_address:
            object.__setattr__(self, "rpc_address", self.listen_address)
        if not self.broadcast_address:
            object.__setattr__(self, "broadcast_address", self.listen_address)
        if not self.broadcast_rpc_address:
            object.__setattr__(self, "broadcast_rpc_address", self.rpc_address)
        if not self.api_address:
            object.__setattr__(self, "api_address", self.listen_address)
        if not self.prometheus_address:
            object.__setattr__(self, "prometheus_address", self.listen_address)
        custom_location = (self.dc, self.rack) != (DEFAULT_DC, DEFAULT_RACK)
        if not self.endpoint_snitch:
            snitch = "GossipingPropertyFileSnitch" if custom_location else "SimpleSnitch"
            object.__setattr__(self, "endpoint_snitch", snitch)
        elif self.endpoint_snitch == "SimpleSnitch" and custom_location:
            raise ConfigError(
                "endpoint_snitch",
                self.endpoint_snitch,
                f"GossipingPropertyFileSnitch when dc/rack are set (got dc={self.dc!r}, rack={self.rack!r});"
                " SimpleSnitch always reports datacenter1/rack1",
            )
        ports = {"native_transport_port": self.native_transport_port, "api_port": self.api_port}
        if self.native_shard_aware_transport_port is not None:
            ports["native_shard_aware_transport_port"] = self.native_shard_aware_transport_port
        if self.listen_address == self.rpc_address:
            ports["storage_port"] = self.storage_port
        if self.listen_address == self.rpc_address and self.server_encryption_options.enabled:
            ports["ssl_storage_port"] = self.ssl_storage_port
        ssl_port = self.native_transport_port_ssl
        if ssl_port is not None and not self.client_encryption_options.enabled:
            raise ConfigError(
                "native_transport_port_ssl",
                ssl_port,
                "unset unless client_encryption_options.enabled is true",
            )
        if ssl_port is not None and ssl_port != self.native_transport_port:
            ports["native_transport_port_ssl"] = ssl_port
        _check_distinct_ports(ports, same_host=self.api_address == self.rpc_address)
        self._check_prometheus_port(ports)
        if self.enable_user_defined_functions and "udf" not in self.experimental_features:
            raise ConfigError(
                "enable_user_defined_functions",
                True,
                "false unless experimental_features holds udf",
                "You must use both enable_user_defined_functions and experimental_features:udf "
                "to enable user-defined functions",
            )

    def _check_prometheus_port(self, ports: dict[str, int]) -> None:
        """The Prometheus listener may not take a port another listener binds on its address."""
        if self.prometheus_port == 0:
            return
        addresses = {
            "api_port": self.api_address,
            "storage_port": self.listen_address,
            "ssl_storage_port": self.listen_address,
        }
        for key, port in ports.items():
            if (
                port == self.prometheus_port
                and addresses.get(key, self.rpc_address) == self.prometheus_address
            ):
                raise ConfigError(
                    "prometheus_port", self.prometheus_port, f"a port different from {key} ({port})"
                )

    @property
    def user_defined_functions(self) -> bool:
        """Both ScyllaDB switches are on: CREATE/DROP FUNCTION and AGGREGATE are taken."""
        return self.enable_user_defined_functions and "udf" in self.experimental_features

    def to_dict(self) -> dict[str, Any]:
        """Plain YAML-ready mapping with scylla.yaml key names (the node.yaml contents)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Path):
                value = str(value)
            elif isinstance(value, ServerEncryption | ClientEncryption):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @property
    def effective_config_path(self) -> Path:
        return self.workdir / EFFECTIVE_CONFIG_NAME


def _check_distinct_ports(ports: dict[str, int], same_host: bool) -> None:
    """Two listeners on one address and port would fail at bind time with a vaguer message."""
    if not same_host:
        ports = {k: v for k, v in ports.items() if k != "api_port"}
    seen: dict[int, str] = {}
    for key, port in ports.items():
        if port in seen:
            raise ConfigError(key, port, f"a port different from {seen[port]} ({port})")
        seen[port] = key


# ---------------------------------------------------------------------------------------------
# Per-key parsers. Each takes (key, raw value) and returns the typed value or raises ConfigError.
# They accept strings too, because command-line overrides and environment-driven YAML arrive so.

Parser = Callable[[str, Any], Any]


def _parse_str(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, value, "a non-empty string")
    return value.strip()


def _parse_workdir(key: str, value: Any) -> Path:
    """Absolute from the start: files under it become URIs and REST paths (a relative path has
    no file URI), and a later chdir must not move the node's data."""
    path = value if isinstance(value, Path) else Path(_parse_str(key, value))
    return path.expanduser().resolve()


def _parse_address(key: str, value: Any) -> str:
    """An IP address, or "" for the derived fields (filled in after parsing). A host name (a
    stock scylla.yaml says ``localhost``) is resolved once, here, as ScyllaDB resolves it."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise ConfigError(key, value, "an IPv4 or IPv6 address such as 127.0.0.1")
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        pass
    try:
        resolved = socket.getaddrinfo(value.strip(), None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        raise ConfigError(
            key, value, "an IPv4 or IPv6 address such as 127.0.0.1, or a host name that resolves"
        ) from None
    ipv4 = [info[4][0] for info in resolved if info[0] == socket.AF_INET]
    return str(ipaddress.ip_address(ipv4[0] if ipv4 else resolved[0][4][0]))


def _parse_required_address(key: str, value: Any) -> str:
    if not _parse_address(key, value):
        raise ConfigError(key, value, "an IPv4 or IPv6 address such as 127.0.0.1")
    return _parse_address(key, value)


def _int_parser(lo: int, hi: int | None = None) -> Parser:
    def parse(key: str, value: Any) -> int:
        allowed = f"an integer >= {lo}" if hi is None else f"an integer in {lo}..{hi}"
        if isinstance(value, bool):
            raise ConfigError(key, value, allowed)
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise ConfigError(key, value, allowed) from None
        if not isinstance(value, int) or value < lo or (hi is not None and value > hi):
            raise ConfigError(key, value, allowed)
        return value

    return parse


_parse_port = _int_parser(1, 65535)


def _parse_optional_port(key: str, value: Any) -> int | None:
    if value is None or value == "":
        return None
    result: int = _parse_port(key, value)
    return result


def _parse_positive_float(key: str, value: Any) -> float:
    allowed = "a number > 0"
    if isinstance(value, bool):
        raise ConfigError(key, value, allowed)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(key, value, allowed) from None
    if not number > 0 or number == float("inf"):
        raise ConfigError(key, value, allowed)
    return number


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def _parse_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(key, value, "true or false")


def _choice_parser(choices: tuple[str, ...], class_names: bool = False, optional: bool = False) -> Parser:
    """Case-insensitive choice; with class_names, Java class prefixes are accepted and dropped."""

    def parse(key: str, value: Any) -> str:
        shown = ", ".join(choices)
        if optional and (value is None or value == ""):
            return ""
        if not isinstance(value, str):
            raise ConfigError(key, value, f"one of {shown}")
        name = value.strip()
        if class_names:
            for prefix in _CLASS_PREFIXES:
                if name.startswith(prefix):
                    name = name[len(prefix) :]
        for choice in choices:
            if choice.lower() == name.lower():
                return choice
        prefix_note = " (optionally with the org.apache.cassandra.* class prefix)" if class_names else ""
        raise ConfigError(key, value, f"one of {shown}{prefix_note}")

    return parse


def _parse_host_id(key: str, value: Any) -> str:
    """A host id (a UUID), normalised; empty: unset."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    text = _parse_str(key, value)
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise ConfigError(key, value, "the host id (a UUID) of the dead node to replace") from None


def _parse_seeds(key: str, value: Any) -> tuple[str, ...]:
    """A list of addresses, a comma-separated string, or Scylla's seed_provider structure."""
    if value is None or value == "":
        return ()
    items: Iterable[Any]
    if isinstance(value, str):
        items = [part for part in value.split(",") if part.strip()]
    elif isinstance(value, list | tuple):
        items = value
    else:
        raise ConfigError(key, value, "a list of IP addresses or a comma-separated string of them")
    seeds: list[str] = []
    for item in items:
        seed = _parse_required_address(key, item)
        if seed not in seeds:
            seeds.append(seed)
    return tuple(seeds)


def _seeds_from_provider(value: Any) -> Any:
    """Extract the seeds string from scylla.yaml's seed_provider list (SimpleSeedProvider)."""
    allowed = "[{class_name: org.apache.cassandra.locator.SimpleSeedProvider, parameters: [{seeds: 'a,b'}]}]"
    try:
        (provider,) = value
        (params,) = provider["parameters"]
        return params["seeds"]
    except (TypeError, KeyError, ValueError):
        raise ConfigError("seed_provider", value, allowed) from None


EXPERIMENTAL_FEATURES = ("udf",)


def _parse_experimental(key: str, value: Any) -> tuple[str, ...]:
    """A list (or a comma-separated string) of ScyllaDB's experimental feature names this node has."""
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise ConfigError(key, value, f"a list of {', '.join(EXPERIMENTAL_FEATURES)}")
    names: list[str] = []
    for item in items:
        name = str(item).strip().lower()
        if name not in EXPERIMENTAL_FEATURES:
            raise ConfigError(
                key, item, f"a list of {', '.join(EXPERIMENTAL_FEATURES)} (none other exists here)"
            )
        if name not in names:
            names.append(name)
    return tuple(names)


_PARSERS: dict[str, Parser] = {
    "workdir": _parse_workdir,
    "cluster_name": _parse_str,
    "listen_address": _parse_required_address,
    "rpc_address": _parse_address,
    "broadcast_address": _parse_address,
    "broadcast_rpc_address": _parse_address,
    "native_transport_port": _parse_port,
    "native_shard_aware_transport_port": _parse_optional_port,
    "seeds": _parse_seeds,
    "smp": _int_parser(1, 256),
    "authenticator": _choice_parser(AUTHENTICATORS, class_names=True),
    "authorizer": _choice_parser(AUTHORIZERS, class_names=True),
    "api_address": _parse_address,
    "api_port": _parse_port,
    "storage_port": _parse_port,
    "num_tokens": _int_parser(1, 1536),
    "tablets_mode_for_new_keyspaces": _choice_parser(TABLETS_MODES),
    "tablets_initial_scale_factor": _parse_positive_float,
    "tablets_per_shard_goal": _int_parser(1),
    "target_tablet_size_in_bytes": _int_parser(1),
    "murmur3_partitioner_ignore_msb_bits": _int_parser(0, 63),
    "endpoint_snitch": _choice_parser(SNITCHES, class_names=True, optional=True),
    "dc": _parse_str,
    "rack": _parse_str,
    "rf_rack_valid_keyspaces": _parse_bool,
    "enforce_rack_list": _parse_bool,
    "maintenance_mode": _parse_bool,
    "commitlog_sync": _choice_parser(COMMITLOG_SYNC_MODES),
    "commitlog_sync_period_in_ms": _int_parser(1),
    "commitlog_skip_corrupt_records": _parse_bool,
    "read_request_timeout_in_ms": _int_parser(1),
    "write_request_timeout_in_ms": _int_parser(1),
    "range_request_timeout_in_ms": _int_parser(1),
    "counter_write_request_timeout_in_ms": _int_parser(1),
    "cas_contention_timeout_in_ms": _int_parser(1),
    "truncate_request_timeout_in_ms": _int_parser(1),
    "request_timeout_in_ms": _int_parser(1),
    "native_transport_max_frame_size_in_mb": _int_parser(1, 2047),
    "native_transport_max_concurrent_requests_in_bytes": _int_parser(-1),
    "native_transport_max_concurrent_connections": _int_parser(-1),
    "native_transport_idle_timeout_in_ms": _int_parser(0),
    "server_encryption_options": _encryption_parser(ServerEncryption),
    "ssl_storage_port": _parse_port,
    "client_encryption_options": _encryption_parser(ClientEncryption),
    "native_transport_port_ssl": _parse_optional_port,
    "restrict_future_timestamp": _parse_bool,
    "test_statement_delay_ms": _int_parser(0),
    "test_fault_injection_api": _parse_bool,
    "batch_size_fail_threshold_in_kb": _int_parser(1),
    "enable_create_table_with_compact_storage": _parse_bool,
    "prometheus_port": _int_parser(0, 65535),
    "prometheus_address": _parse_address,
    "replace_node_first_boot": _parse_host_id,
    "enable_cql_config_updates": _parse_bool,
    "enable_user_defined_functions": _parse_bool,
    "experimental_features": _parse_experimental,
    "user_defined_function_time_limit_ms": _int_parser(1),
    "user_defined_function_allocation_limit_bytes": _int_parser(1),
}

KNOWN_KEYS: frozenset[str] = frozenset(_PARSERS)


# ---------------------------------------------------------------------------------------------
# Loading and saving.


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("config file", str(path), f"a readable YAML file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:  # a damaged or binary file: one line, not a traceback
        raise ConfigError(
            "config file", str(path), f"a UTF-8 text file ({exc.reason} at byte {exc.start})"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError("config file", str(path), f"valid YAML ({exc})".replace("\n", " ")) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("config file", str(path), "a YAML mapping of scylla.yaml keys to values")
    return data


def _normalise_keys(raw: Mapping[Any, Any], source: str) -> dict[str, Any]:
    """Map dashes to underscores, fold seed_provider into seeds and enable_tablets into
    tablets_mode_for_new_keyspaces, drop ScyllaDB keys that have no effect here (``scylla_keys``;
    ``ignored_keys`` lists them), check the ones that must say what tabletdb does, and reject
    unknown keys."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = str(key).replace("-", "_")
        if name in IGNORED_KEYS:
            continue
        if name in CHECKED_KEYS:
            problem = check_scylla_key(name, value)
            if problem is not None:
                raise ConfigError(name, value, problem)
            continue
        if name == "seed_provider":
            name, value = "seeds", _seeds_from_provider(value)
        if name == "enable_tablets":
            name, value = "tablets_mode_for_new_keyspaces", _tablets_mode_of(value)
            if raw.get("tablets_mode_for_new_keyspaces", value) != value:
                raise ConfigError(
                    "enable_tablets",
                    raw["enable_tablets"],
                    "unset when tablets_mode_for_new_keyspaces is set",
                )
        if name not in KNOWN_KEYS:
            raise _unknown_key(name, value, source)
        out[name] = value
    return out


def _tablets_mode_of(enable_tablets: Any) -> str:
    """ScyllaDB's older switch: true means new keyspaces use tablets (``enabled``), false not."""
    return "enabled" if _parse_bool("enable_tablets", enable_tablets) else "disabled"


def ignored_keys(path: str | os.PathLike[str] | None, overrides: Mapping[str, Any]) -> list[str]:
    """The ScyllaDB keys given (file or command line) that have no effect here, sorted: the
    node lists them once at start-up."""
    given = [str(k).replace("-", "_") for k, v in overrides.items() if v is not None]
    if path is not None:
        given += [str(k).replace("-", "_") for k in _read_yaml(Path(path))]
    return sorted({k for k in given if k in IGNORED_KEYS})


def _unknown_key(name: str, value: Any, source: str) -> ConfigError:
    close = difflib.get_close_matches(
        name, KNOWN_KEYS | IGNORED_KEYS | set(CHECKED_KEYS) | {"enable_tablets"}, n=1
    )
    hint = f", did you mean {close[0]!r}?" if close else ""
    allowed = ", ".join(sorted(KNOWN_KEYS))
    return ConfigError(
        name, value, allowed, f"unknown config key {name!r} ({source}){hint}; known keys: {allowed}"
    )


def load_config(path: str | os.PathLike[str] | None, overrides: Mapping[str, Any]) -> NodeConfig:
    """Build the node's config: YAML file keys first, then overrides (None values are ignored).

    Overrides are what the command line passes; a flag left unset arrives as None and must not
    clobber the file.
    """
    merged: dict[str, Any] = {}
    if path is not None:
        merged.update(_normalise_keys(_read_yaml(Path(path)), f"in {path}"))
    merged.update(_normalise_keys({k: v for k, v in overrides.items() if v is not None}, "command line"))
    if "workdir" not in merged:
        raise ConfigError("workdir", None, "a directory path, set in the YAML file or with --workdir")
    if path is not None:
        _apply_rackdc_file(Path(path).parent / RACKDC_FILE_NAME, merged)
    return NodeConfig(**merged)


def config_sources(path: str | os.PathLike[str] | None, overrides: Mapping[str, Any]) -> dict[str, str]:
    """Where each key ``load_config`` was given came from, in ``system.config``'s words:
    ``config`` (the YAML file, or the rackdc file beside it), ``cli`` (the command line, which wins)."""
    sources: dict[str, str] = {}
    if path is not None:
        from_file = _normalise_keys(_read_yaml(Path(path)), f"in {path}")
        sources.update(dict.fromkeys(from_file, "config"))
        rackdc: dict[str, Any] = dict(from_file)
        _apply_rackdc_file(Path(path).parent / RACKDC_FILE_NAME, rackdc)
        sources.update({k: "config" for k in rackdc if k not in from_file})
    given = _normalise_keys({k: v for k, v in overrides.items() if v is not None}, "command line")
    sources.update(dict.fromkeys(given, "cli"))
    return sources


def _apply_rackdc_file(rackdc: Path, merged: dict[str, Any]) -> None:
    """GossipingPropertyFileSnitch's source: dc/rack from cassandra-rackdc.properties beside the
    config file, for whichever of them neither the YAML nor a flag set. SimpleSnitch ignores it."""
    snitch = str(merged.get("endpoint_snitch") or "")
    if not rackdc.is_file() or snitch.rsplit(".", 1)[-1].lower() == "simplesnitch":
        return
    props = parse_properties(rackdc.read_text(encoding="utf-8"))
    if "dc" in props and "dc" not in merged:
        merged["dc"] = props["dc"] + props.get("dc_suffix", "")
    if "rack" in props and "rack" not in merged:
        merged["rack"] = props["rack"]


def parse_properties(text: str) -> dict[str, str]:
    """Java-style `key=value` lines (also `key: value`); `#` and `!` start comments."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut > 0:
            out[line[:cut].strip()] = line[cut + 1 :].strip()
    return out


def write_effective_config(config: NodeConfig) -> Path:
    """Write ``<workdir>/node.yaml`` atomically (temp file + rename): a crash never leaves half."""
    target = config.effective_config_path
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        yaml.safe_dump(config.to_dict(), fh, sort_keys=True, default_flow_style=False)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(target)
    return target


def read_effective_config(workdir: str | os.PathLike[str]) -> NodeConfig:
    """Load the config a node in ``workdir`` last ran with."""
    return load_config(Path(workdir) / EFFECTIVE_CONFIG_NAME, {})
