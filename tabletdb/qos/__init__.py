"""Service levels (workload prioritization): per-role timeouts, workload types and shares.

A pure package in the schema package's mould: `QosState` is an immutable value in the group0
state, `tabletdb.qos.ddl` decides statements into `QosMutation`s, `apply_qos_mutations` applies
them, and `effective`/`describe` render LIST and DESCRIBE results.
"""

from tabletdb.qos.ddl import alter_level, attach_level, create_level, detach_level, drop_level, forget_role
from tabletdb.qos.describe import describe_levels, list_attached, list_levels
from tabletdb.qos.effective import EffectiveLevel, effective_level, list_effective
from tabletdb.qos.listing import Listing
from tabletdb.qos.model import DRIVER, DRIVER_LEVEL, MAX_USER_LEVELS, QosState, ServiceLevel
from tabletdb.qos.mutations import Attach, Detach, PutLevel, QosMutation, RemoveLevel, apply_qos_mutations

__all__ = [
    "DRIVER",
    "DRIVER_LEVEL",
    "MAX_USER_LEVELS",
    "Attach",
    "Detach",
    "EffectiveLevel",
    "Listing",
    "PutLevel",
    "QosMutation",
    "QosState",
    "RemoveLevel",
    "ServiceLevel",
    "alter_level",
    "apply_qos_mutations",
    "attach_level",
    "create_level",
    "describe_levels",
    "detach_level",
    "drop_level",
    "effective_level",
    "forget_role",
    "list_attached",
    "list_effective",
    "list_levels",
]
