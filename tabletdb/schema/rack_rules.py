"""Whether a tablets keyspace's replication fits the cluster: enough nodes, known racks, RF-rack-valid.

A tablet replica set is placed once, when the table is created (and moved whole later), so a
replication the cluster cannot place must be refused up front: otherwise a tablet would hold
fewer replicas than the keyspace claims and CL=ALL would be met by fewer copies than RF.

RF-rack-valid (spec/tablets.md): in every datacenter the RF is 0, 1, the number of racks that
hold token-owning nodes, or a rack list, so every rack holds exactly one replica of each tablet
and a rack lost is one replica lost. ScyllaDB requires it of every tablets keyspace when
``rf_rack_valid_keyspaces`` is set, and always of a tablets keyspace with materialized views or
secondary indexes (their replicas pair base and view replicas rack by rack).

All functions are pure: the topology arrives as a ``ClusterShape`` (what the deciding node's
group0 state holds when the statement is decided). An empty shape means "no topology known yet"
(a founder before its own join record, in-process tests) and checks nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tabletdb.cql.errors import ConfigurationError, InvalidRequest
from tabletdb.schema.model import KeyspaceDef, KeyspaceSchema


@dataclass(frozen=True)
class ClusterShape:
    """Token-owning nodes per datacenter and rack: ``{dc: {rack: node count}}``."""

    racks: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @staticmethod
    def of(locations: Iterable[tuple[str, str]]) -> ClusterShape:
        """From the (datacenter, rack) of every token-owning node."""
        racks: dict[str, dict[str, int]] = {}
        for dc, rack in locations:
            by_rack = racks.setdefault(dc, {})
            by_rack[rack] = by_rack.get(rack, 0) + 1
        return ClusterShape(racks)

    @property
    def known(self) -> bool:
        return bool(self.racks)

    def nodes_in(self, dc: str) -> int:
        return sum(self.racks.get(dc, {}).values())

    def racks_in(self, dc: str) -> list[str]:
        return sorted(r for r, n in self.racks.get(dc, {}).items() if n > 0)


def not_enough_nodes(dc: str, rf: int) -> str:
    """ScyllaDB's text (a ConfigurationException), which clients and test suites match."""
    return f"Datacenter {dc} doesn't have enough token-owning nodes for replication_factor={rf}"


def check_placeable(ks: KeyspaceDef, shape: ClusterShape) -> None:
    """A tablets keyspace's every DC must have at least RF nodes, and a rack list only racks
    that hold nodes of that DC: otherwise its tablets could not get their replicas."""
    if not ks.uses_tablets or not shape.known:
        return
    for dc, value in ks.replication.options:
        if isinstance(value, tuple):
            racks = shape.racks_in(dc)
            for rack in value:
                if rack not in racks:
                    raise ConfigurationError(
                        f"Rack list of keyspace {ks.name} names rack '{rack}', which has no nodes in "
                        f"datacenter {dc} (its racks: {', '.join(racks) or 'none'})"
                    )
            continue
        rf = int(value)
        if rf > shape.nodes_in(dc):
            raise ConfigurationError(not_enough_nodes(dc, rf))


def rack_invalid_dc(ks: KeyspaceDef, shape: ClusterShape) -> tuple[str, int, int] | None:
    """(dc, rf, racks) of the first datacenter where a tablets keyspace is not RF-rack-valid."""
    if not ks.uses_tablets or not shape.known:
        return None
    options = dict(ks.replication.options)
    for dc in sorted(set(shape.racks) | set(options)):
        value = options.get(dc, "0")
        if isinstance(value, tuple):
            continue
        rf, racks = int(value), len(shape.racks_in(dc))
        if rf not in (0, 1, racks):
            return dc, rf, racks
    return None


def needs_rack_validity(ks: KeyspaceSchema) -> bool:
    """A tablets keyspace with views or indexes must stay RF-rack-valid whatever the config says."""
    return ks.definition.uses_tablets and (bool(ks.views) or any(t.indexes for t in ks.tables.values()))


def views_warning(ks: KeyspaceDef) -> tuple[str, ...]:
    """The client warning ScyllaDB gives when a view or index lands on a tablets keyspace with a
    numeric RF: from now on ALTER and topology changes must keep it RF-rack-valid."""
    if not ks.uses_tablets or all(isinstance(v, tuple) for _, v in ks.replication.options):
        return ()
    return (
        f"Keyspace {ks.name} has materialized views or secondary indexes and a numeric replication "
        "factor: this requires the keyspace to remain RF-rack-valid, so ALTER KEYSPACE and topology "
        "changes that would break it are refused. A rack list lifts this.",
    )


def check_rf_rack_valid_by_config(ks: KeyspaceDef, shape: ClusterShape) -> None:
    """``rf_rack_valid_keyspaces: true``: refuse an RF-rack-invalid keyspace with ScyllaDB's text."""
    found = rack_invalid_dc(ks, shape)
    if found is not None:
        dc, rf, racks = found
        raise InvalidRequest(
            "The option `rf_rack_valid_keyspaces` is enabled. It requires that all keyspaces are "
            f"RF-rack-valid. That condition is violated: keyspace '{ks.name}' doesn't satisfy it for "
            f"DC '{dc}': RF={rf} vs. rack count={racks}."
        )


def check_rf_rack_valid_for_views(ks: KeyspaceDef, shape: ClusterShape, why: str) -> None:
    """Views and indexes on a tablets keyspace need it RF-rack-valid (ScyllaDB's rule, any config)."""
    found = rack_invalid_dc(ks, shape)
    if found is not None:
        dc, rf, racks = found
        raise InvalidRequest(
            f"{why}: a tablets keyspace with materialized views or secondary indexes is required to be "
            f"RF-rack-valid, and keyspace {ks.name} has replication factor {rf} in datacenter {dc}, "
            f"which has {racks} rack(s); use RF 0, 1 or {racks} there, or a rack list"
        )
