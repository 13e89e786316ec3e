"""CREATE / ALTER / DROP KEYSPACE decisions, including replication and tablets validation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tabletdb.cql.errors import AlreadyExists, ConfigurationError, InvalidRequest
from tabletdb.schema.ddl_common import (
    ALTERABLE_SYSTEM_KEYSPACES,
    NOOP,
    SYSTEM_KEYSPACES,
    Change,
    DdlOutcome,
    SchemaChangeEvent,
    SchemaConfig,
    Target,
    check_rf_rack_valid,
    ensure_user_modifiable,
    validate_keyspace_name,
)
from tabletdb.schema.model import (
    EVERYWHERE,
    NTS,
    SIMPLE,
    Catalog,
    KeyspaceDef,
    KeyspaceTablets,
    RackList,
    Replication,
)
from tabletdb.schema.mutations import DropKeyspace, PutKeyspace
from tabletdb.schema.rack_rules import check_placeable, needs_rack_validity

_PREFIX = "org.apache.cassandra.locator."
_STRATEGIES = {"SimpleStrategy": SIMPLE, "NetworkTopologyStrategy": NTS, "EverywhereStrategy": EVERYWHERE}


def strategy_class(name: str) -> str:
    """The full Java class name of a replication strategy, as system_schema stores it."""
    short = name.removeprefix(_PREFIX).removeprefix("com.scylladb.locator.")
    if short == "LocalStrategy":
        raise ConfigurationError("LocalStrategy is for ScyllaDB internal use only")
    full = _STRATEGIES.get(short)
    if full is None:
        raise ConfigurationError(f"Unable to find replication strategy class '{_PREFIX}{short}'")
    return full


def _rf(value: object) -> str:
    text = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else None
    if text is None or not text.isdigit():
        raise ConfigurationError(f"Replication factor must be numeric and non-negative, found '{value}'")
    return str(int(text))


def _rack_list(dc: str, value: Sequence[object]) -> RackList:
    racks = tuple(str(r) for r in value)
    if len(set(racks)) != len(racks):
        raise ConfigurationError(f"Rack list for datacenter {dc} contains duplicates: {list(racks)}")
    return racks


def validate_replication(keyspace: str, given: Mapping[str, object], config: SchemaConfig) -> Replication:
    """Turn `replication = {...}` into a Replication, rejecting what ScyllaDB rejects."""
    options = dict(given)
    if not options:  # no WITH, or `replication = {}`: ScyllaDB's default
        return Replication(NTS, default_nts_options(config))
    cls_value = options.pop("class", None)
    if cls_value is None:
        raise ConfigurationError("Missing mandatory replication strategy class")
    full = strategy_class(str(cls_value))
    if full == SIMPLE:
        if "replication_factor" not in options:
            raise ConfigurationError("SimpleStrategy requires a replication_factor strategy option.")
        for key in options:
            if key != "replication_factor":
                raise ConfigurationError(
                    f"Unrecognized strategy option {{{key}}} passed to SimpleStrategy for keyspace {keyspace}"
                )
        return Replication(SIMPLE, (("replication_factor", _rf(options["replication_factor"])),))
    if full == EVERYWHERE:
        if options:
            raise ConfigurationError(f"EverywhereStrategy takes no options, got {sorted(options)}")
        return Replication(EVERYWHERE)
    if not options:  # NetworkTopologyStrategy with no factor anywhere: ScyllaDB's default
        return Replication(NTS, default_nts_options(config))
    return Replication(NTS, _nts_options(keyspace, options, config))


def default_nts_options(
    config: SchemaConfig, rack_lists: bool = False
) -> tuple[tuple[str, str | RackList], ...]:
    """NetworkTopologyStrategy's default, as ScyllaDB sets it when a keyspace names no replication
    factor: in every datacenter with token-owning nodes, one replica per rack holding them (a
    tablets keyspace where RF-rack-valid keyspaces are required: those racks as a rack list).
    Before any topology is known: this node's datacenters, one replica each."""
    shape = config.cluster
    if not shape.known:
        return tuple((dc, "1") for dc in sorted(config.datacenters))
    options: list[tuple[str, str | RackList]] = []
    for dc in sorted(shape.racks):
        racks = shape.racks_in(dc)
        if racks:
            options.append((dc, tuple(racks) if rack_lists else str(len(racks))))
    return tuple(options)


def _defaulted(given: Mapping[str, object]) -> bool:
    """No replication given, or NetworkTopologyStrategy with no factor anywhere."""
    rest = {k: v for k, v in given.items() if k != "class"}
    return not rest and ("class" not in given or strategy_class(str(given["class"])) == NTS)


def _nts_options(
    keyspace: str, options: dict[str, object], config: SchemaConfig
) -> tuple[tuple[str, str | RackList], ...]:
    result: dict[str, str | RackList] = {}
    default = options.pop("replication_factor", None)
    if default is not None:
        if not config.datacenters:
            raise ConfigurationError(
                "replication_factor is ambiguous for NetworkTopologyStrategy: no datacenter is known yet"
            )
        rf = _rf(default)
        result.update({dc: rf for dc in config.datacenters})
    for dc, value in options.items():
        if config.datacenters and dc not in config.datacenters:
            raise ConfigurationError(
                f"Unrecognized strategy option {{{dc}}} passed to NetworkTopologyStrategy "
                f"for keyspace {keyspace}"
            )
        if isinstance(value, list | tuple):
            result[dc] = _rack_list(dc, value)
        else:
            result[dc] = _rf(value)
    return tuple(sorted(result.items()))


_TABLETS_OFF = "tablet options cannot be used when tablets are disabled for the keyspace"


def _parse_tablets(given: Mapping[str, object] | None) -> tuple[bool | None, int | None]:
    """The `tablets = {...}` map as (enabled if given, initial if given). An initial of 0 asks
    for the automatic count, as in ScyllaDB: it is kept as 'no initial', never stored as 0."""
    wanted: bool | None = None
    initial: int | None = None
    for key, value in (given or {}).items():
        if key == "enabled":
            if isinstance(value, str) and value.lower() in ("true", "false"):
                value = value.lower() == "true"
            if not isinstance(value, bool):
                raise ConfigurationError(f"Invalid value for tablets option 'enabled': {value!r}")
            wanted = value
        elif key == "initial":
            if isinstance(value, bool) or not str(value).isdigit():
                raise ConfigurationError(f"Invalid value for tablets option 'initial': {value!r}")
            initial = int(str(value))
        else:
            raise ConfigurationError(f"Unrecognized tablets option '{key}'")
    return wanted, initial


def _tablets(
    replication: Replication, given: Mapping[str, object] | None, config: SchemaConfig
) -> KeyspaceTablets | None:
    wanted, initial = _parse_tablets(given)
    mode = config.tablets_mode_for_new_keyspaces
    if mode == "enforced" and (wanted is False or replication.strategy_class != NTS):
        raise ConfigurationError(
            "Tablets are enforced for new keyspaces (tablets_mode_for_new_keyspaces=enforced); "
            "use NetworkTopologyStrategy and do not disable tablets"
        )
    if replication.strategy_class != NTS:
        if wanted:
            raise ConfigurationError(
                f"Tablets are only supported with NetworkTopologyStrategy, not {replication.strategy_class}"
            )
        return None
    enabled = wanted if wanted is not None else mode in ("enabled", "enforced")
    if initial is not None and not enabled:
        raise ConfigurationError(_TABLETS_OFF)
    if initial == 0:
        initial = None
    if enabled:
        _check_rack_lists(replication, config)
    return KeyspaceTablets(enabled, initial)


def _check_rack_lists(replication: Replication, config: SchemaConfig) -> None:
    if not config.enforce_rack_list:
        return
    for dc, value in replication.options:
        if not isinstance(value, tuple) and int(value) > 0:
            raise ConfigurationError(
                f"Replication factor for datacenter {dc} must be a rack list because enforce_rack_list "
                f"is set: name the racks, e.g. '{dc}': ['rack1', ...]"
            )


@dataclass(frozen=True)
class RfChangeOutcome(DdlOutcome):
    """An ALTER KEYSPACE that changes a tablets keyspace's replication. It is not committed as a
    schema change: the metadata store queues a ``keyspace_rf_change`` topology request
    (``topology.rf_change``), which adds or drops tablet replicas and writes ``after`` into the
    catalog when every tablet has them; the statement answers then. ``mutations`` hold the
    definition as a plain schema change would (a store without a topology coordinator, one node
    in tests, commits them as such)."""

    before: KeyspaceDef | None = None
    after: KeyspaceDef | None = None


def _check_tablet_rf_change(old: Replication, new: Replication) -> None:
    """Tablet replicas are rebuilt one step at a time: one DC, by one replica, per ALTER (ScyllaDB's
    rule and words: the sum over datacenters of how much each RF moves is at most 1; a rack list
    counts its racks). A datacenter left out would lose its replicas silently: it must say 0."""
    given = dict(new.options)
    for dc, _ in old.options:
        if dc not in given:
            raise ConfigurationError(
                f"Attempted to implicitly drop replicas in datacenter {dc}. If this is the desired "
                f"behavior, set replication factor to 0 in {dc} explicitly."
            )
    if sum(abs(old.factor(dc) - new.factor(dc)) for dc in given) >= 2:
        raise InvalidRequest("Only one DC's RF can be changed at a time and not by more than 1")


def _strategy_warnings(ks: KeyspaceDef) -> tuple[str, ...]:
    """Client warnings (protocol warning flag) ScyllaDB gives for discouraged replication."""
    if ks.replication.strategy_class != SIMPLE:
        return ()
    return (
        f"SimpleStrategy replication class is not recommended, but was used for keyspace {ks.name}. "
        "The recommended alternative is NetworkTopologyStrategy.",
    )


def _storage(given: Mapping[str, object] | None) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    if not given:
        return None, ()
    options = {str(k): str(v) for k, v in given.items()}
    kind = options.pop("type", None)
    if kind is None:
        raise ConfigurationError("Missing storage type")
    if kind.upper() == "LOCAL":
        if options:
            raise ConfigurationError(f"Local storage does not accept options, got {sorted(options)}")
        return None, ()
    if kind.upper() != "S3":
        raise ConfigurationError(f"Unsupported storage type {kind}")
    return "S3", tuple(sorted(options.items()))


def create_keyspace(
    catalog: Catalog,
    name: str,
    replication: Mapping[str, object],
    durable_writes: bool = True,
    tablets: Mapping[str, object] | None = None,
    if_not_exists: bool = False,
    config: SchemaConfig | None = None,
    storage: Mapping[str, object] | None = None,
) -> DdlOutcome:
    config = config or SchemaConfig()
    if name.lower() in SYSTEM_KEYSPACES:
        raise InvalidRequest(f"{name} keyspace is not user-modifiable")
    validate_keyspace_name(name)
    if catalog.keyspace(name) is not None:
        if if_not_exists:
            return NOOP
        raise AlreadyExists(f'Cannot add already existing keyspace "{name}"', name)
    rep = validate_replication(name, replication, config)
    storage_type, storage_options = _storage(storage)
    tablets_option = _tablets(rep, tablets, config)
    if (
        _defaulted(replication)
        and config.rf_rack_valid_keyspaces
        and tablets_option
        and tablets_option.enabled
    ):
        rep = Replication(NTS, default_nts_options(config, rack_lists=True))
    definition = KeyspaceDef(name, rep, durable_writes, tablets_option, storage_type, storage_options)
    check_placeable(definition, config.cluster)
    check_rf_rack_valid(definition, config, f"Cannot create keyspace {name}", views=False)
    event = SchemaChangeEvent(Change.CREATED, Target.KEYSPACE, name)
    return DdlOutcome((PutKeyspace(definition),), (event,), _strategy_warnings(definition))


def alter_keyspace(
    catalog: Catalog,
    name: str,
    replication: Mapping[str, object] | None = None,
    durable_writes: bool | None = None,
    tablets: Mapping[str, object] | None = None,
    config: SchemaConfig | None = None,
    if_exists: bool = False,
) -> DdlOutcome:
    config = config or SchemaConfig()
    if name not in ALTERABLE_SYSTEM_KEYSPACES:
        ensure_user_modifiable(name)
    ks = catalog.keyspace(name)
    if ks is None:
        if if_exists:
            return NOOP
        raise InvalidRequest(f"Keyspace {name} does not exist")
    old = ks.definition
    rep = old.replication if replication is None else validate_replication(name, replication, config)
    new_tablets = _altered_tablets(name, old, rep, tablets)
    if old.uses_tablets and replication is not None:
        _check_tablet_rf_change(old.replication, rep)
        _check_rack_lists(rep, config)
    definition = KeyspaceDef(
        name,
        rep,
        old.durable_writes if durable_writes is None else durable_writes,
        new_tablets,
        old.storage_type,
        old.storage_options,
    )
    if replication is not None:  # never claim an RF the cluster cannot place
        check_placeable(definition, config.cluster)
    check_rf_rack_valid(definition, config, f"Cannot alter keyspace {name}", views=needs_rack_validity(ks))
    event = SchemaChangeEvent(Change.UPDATED, Target.KEYSPACE, name)
    warnings = _strategy_warnings(definition) if replication is not None else ()
    if old.uses_tablets and rep != old.replication:
        return RfChangeOutcome((PutKeyspace(definition),), (event,), warnings, before=old, after=definition)
    return DdlOutcome((PutKeyspace(definition),), (event,), warnings)


def _altered_tablets(
    name: str, old: KeyspaceDef, rep: Replication, given: Mapping[str, object] | None
) -> KeyspaceTablets | None:
    """Tablets stay as chosen at CREATE; only `initial` may change on a tablets keyspace."""
    was = old.uses_tablets
    wanted, initial = _parse_tablets(given)
    if (wanted is not None and wanted != was) or (was and rep.strategy_class != NTS):
        raise ConfigurationError(
            f"Cannot alter replication strategy vnode/tablets flavor of keyspace {name}: "
            "tablets can only be chosen when the keyspace is created"
        )
    if initial is not None and not was:
        raise ConfigurationError(_TABLETS_OFF)
    if rep.strategy_class != NTS:
        return None
    if not was:
        return KeyspaceTablets(False)
    if initial is None:
        initial = old.tablets.initial if old.tablets else None
    return KeyspaceTablets(True, initial or None)


def drop_keyspace(catalog: Catalog, name: str, if_exists: bool = False) -> DdlOutcome:
    ensure_user_modifiable(name)
    if catalog.keyspace(name) is None:
        if if_exists:
            return NOOP
        raise ConfigurationError(f"Cannot drop non existing keyspace '{name}'.")
    return DdlOutcome((DropKeyspace(name),), (SchemaChangeEvent(Change.DROPPED, Target.KEYSPACE, name),))
