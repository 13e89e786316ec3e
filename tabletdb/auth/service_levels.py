"""Service-level statements with auth's knowledge: who may run them and which roles exist.

tabletdb.qos holds the levels themselves and knows nothing of roles; this module checks the
caller, passes role existence and role closures down, and is the one entry point the query
processor needs. ScyllaDB guards these statements with permissions on a service-level resource
that we do not model, so with CassandraAuthorizer they are for superusers (and anyone may look
at the levels of roles they have themselves).
"""

from __future__ import annotations

from tabletdb.auth.authorization import is_super
from tabletdb.auth.model import AuthConfig, AuthState
from tabletdb.cql import ast_auth as ast
from tabletdb.cql.errors import InvalidRequest, Unauthorized
from tabletdb.qos import ddl
from tabletdb.qos.describe import list_attached, list_levels
from tabletdb.qos.effective import effective_level, list_effective
from tabletdb.qos.listing import Listing
from tabletdb.qos.model import QosState
from tabletdb.qos.mutations import QosMutation

ServiceLevelStatement = (
    ast.CreateServiceLevel
    | ast.AlterServiceLevel
    | ast.DropServiceLevel
    | ast.AttachServiceLevel
    | ast.DetachServiceLevel
)
ServiceLevelListing = ast.ListServiceLevels | ast.ListAttachedServiceLevel | ast.ListEffectiveServiceLevel


def _require_admin(state: AuthState, config: AuthConfig, user: str | None, what: str) -> None:
    if config.enforces_permissions and not is_super(state, user):
        raise Unauthorized(f"Only superusers are allowed to {what}")


def decide_service_level(
    state: AuthState, qos: QosState, stmt: ServiceLevelStatement, user: str | None, config: AuthConfig
) -> tuple[QosMutation, ...]:
    """Validate and decide a service-level DDL statement into qos mutations."""
    _require_admin(state, config, user, "manage service levels")
    if isinstance(stmt, ast.CreateServiceLevel):
        return ddl.create_level(qos, stmt)
    if isinstance(stmt, ast.AlterServiceLevel):
        return ddl.alter_level(qos, stmt)
    if isinstance(stmt, ast.DropServiceLevel):
        return ddl.drop_level(qos, stmt)
    if isinstance(stmt, ast.AttachServiceLevel):
        return ddl.attach_level(qos, stmt, state.role(stmt.role) is not None)
    return ddl.detach_level(qos, stmt, state.role(stmt.role) is not None)


def list_service_levels(
    state: AuthState, qos: QosState, stmt: ServiceLevelListing, user: str | None, config: AuthConfig
) -> Listing:
    if isinstance(stmt, ast.ListServiceLevels):
        _require_admin(state, config, user, "list service levels")
        return list_levels(qos, stmt.name)
    role = stmt.role
    own = role is not None and user is not None and role in state.closure(user)
    if not own:
        _require_admin(state, config, user, "list the service levels of other roles")
    if isinstance(stmt, ast.ListAttachedServiceLevel):
        return list_attached(qos, role)
    if state.role(stmt.role) is None:
        raise InvalidRequest(f"Role {stmt.role} doesn't exist")
    return list_effective(qos, stmt.role, state.closure(stmt.role))


def effective_timeout_ms(state: AuthState, qos: QosState, user: str | None) -> int | None:
    """The session's service-level timeout (smallest over the levels it inherits), if any."""
    if user is None:
        return None
    merged = effective_level(qos, state.closure(user))
    return None if merged is None else merged.timeout_ms
