"""LIST SERVICE LEVEL(S), LIST ATTACHED, and DESCRIBE text for levels and attachments.

DESCRIBE output is a backup (spec/describe.md): the built-in `driver` level comes first, as a
`CREATE ... IF NOT EXISTS` (it may already exist on the target) followed by an ALTER carrying
its current options, or as `DROP ... IF EXISTS` if it was dropped; other levels follow by name,
then attachments.
"""

from __future__ import annotations

from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.identifiers import quote_identifier as q
from tabletdb.cql.identifiers import quote_string
from tabletdb.cql.types import DURATION, INT, TEXT
from tabletdb.qos.effective import timeout_duration
from tabletdb.qos.listing import Listing
from tabletdb.qos.model import DRIVER, QosState, ServiceLevel

LEVEL_COLUMNS = (("service_level", TEXT), ("timeout", DURATION), ("workload_type", TEXT), ("shares", INT))
ATTACHED_COLUMNS = (("role", TEXT), ("service_level", TEXT))


def list_levels(state: QosState, name: str | None) -> Listing:
    """LIST SERVICE LEVEL name (one row) or LIST ALL SERVICE LEVELS (name None, every level)."""
    if name is not None and state.level(name) is None:
        raise InvalidRequest(f"Service Level {name} doesn't exist")
    chosen = [sl for sl in state.levels if name is None or sl.name == name]
    rows = tuple((sl.name, timeout_duration(sl.timeout_ms), sl.workload_type, sl.shares) for sl in chosen)
    return Listing(LEVEL_COLUMNS, rows)


def list_attached(state: QosState, role: str | None) -> Listing:
    """LIST ATTACHED SERVICE LEVEL OF role (direct attachment only) or all attachments."""
    rows = tuple((r, level) for r, level in state.attachments if role is None or r == role)
    return Listing(ATTACHED_COLUMNS, rows)


def options_clause(level: ServiceLevel) -> str:
    """`WITH TIMEOUT = 10ms AND WORKLOAD_TYPE = 'batch' AND SHARES = 1000`; absent options are
    left out, so the clause is empty for a level with none."""
    parts = []
    if level.timeout_ms is not None:
        parts.append(f"TIMEOUT = {level.timeout_ms}ms")
    if level.workload_type is not None:
        parts.append(f"WORKLOAD_TYPE = {quote_string(level.workload_type)}")
    if level.shares is not None:
        parts.append(f"SHARES = {level.shares}")
    return " WITH " + " AND ".join(parts) if parts else ""


def level_statements(level: ServiceLevel) -> list[str]:
    """One statement per DESCRIBE row, ending with ``;`` and no newline (ScyllaDB's form). The
    built-in ``driver`` level is created if missing, then altered to its options: two rows."""
    options = options_clause(level)
    if level.name == DRIVER:
        create = f"CREATE SERVICE LEVEL IF NOT EXISTS {DRIVER}{options};"
        return [create, f"ALTER SERVICE LEVEL {DRIVER}{options};"] if options else [create]
    return [f"CREATE SERVICE LEVEL {q(level.name)}{options};"]


def describe_levels(state: QosState) -> list[tuple[str, str, str]]:
    """(type, name, statement) rows: driver first, then the other levels by name, then the
    attachments by role."""
    driver = state.level(DRIVER)
    driver_rows = (
        level_statements(driver) if driver is not None else [f"DROP SERVICE LEVEL IF EXISTS {DRIVER};"]
    )
    rows = [("service_level", DRIVER, text) for text in driver_rows]
    rows += [
        ("service_level", q(sl.name), text)
        for sl in state.levels
        if sl.name != DRIVER
        for text in level_statements(sl)
    ]
    rows += [
        ("service_level_attachment", q(level), f"ATTACH SERVICE LEVEL {q(level)} TO {q(role)};")
        for role, level in state.attachments
    ]
    return rows
