"""Service levels and their attachments to roles, as one immutable value in the group0 state.

There are at most ten levels (eight user ones, `driver` and the implicit `default`), so plain
sorted tuples are both the simplest and the fastest representation.
"""

from __future__ import annotations

from dataclasses import dataclass

DRIVER = "driver"
DEFAULT = "default"
MAX_USER_LEVELS = 8
DEFAULT_SHARES = 1000
WORKLOAD_TYPES = ("unspecified", "interactive", "batch")


@dataclass(frozen=True)
class ServiceLevel:
    """`timeout_ms` None: no timeout of its own (the node's defaults apply)."""

    name: str
    timeout_ms: int | None = None
    workload_type: str | None = None
    shares: int | None = None


# The built-in level ScyllaDB creates for drivers' metadata traffic and connection setup.
DRIVER_LEVEL = ServiceLevel(DRIVER, None, "batch", 200)


@dataclass(frozen=True)
class QosState:
    """`levels` sorted by name; `attachments` (role, level) sorted by role, one per role."""

    levels: tuple[ServiceLevel, ...] = (DRIVER_LEVEL,)
    attachments: tuple[tuple[str, str], ...] = ()

    def level(self, name: str) -> ServiceLevel | None:
        return next((sl for sl in self.levels if sl.name == name), None)

    def attached(self, role: str) -> str | None:
        return next((level for r, level in self.attachments if r == role), None)

    @property
    def user_level_count(self) -> int:
        return sum(1 for sl in self.levels if sl.name != DRIVER)
