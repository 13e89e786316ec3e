"""Service-level statements through auth: who may run them, role existence, inherited levels."""

from __future__ import annotations

import pytest

from tabletdb.auth.service_levels import decide_service_level, effective_timeout_ms, list_service_levels
from tabletdb.cql.errors import InvalidRequest, Unauthorized
from tabletdb.qos import QosState, apply_qos_mutations
from tests.unit.auth.helpers import ENFORCING, OPEN, roles_state, stmt


def test_service_level_flow_with_inheritance() -> None:
    state = roles_state(
        "CREATE ROLE u WITH LOGIN = true AND PASSWORD = 'pw'", "CREATE ROLE team", "GRANT team TO u"
    )
    qos = QosState()
    for text in (
        "CREATE SERVICE LEVEL a WITH timeout = 300ms",
        "CREATE SERVICE LEVEL b WITH timeout = 100ms",
        "ATTACH SERVICE LEVEL a TO u",
        "ATTACH SERVICE LEVEL b TO team",
    ):
        qos = apply_qos_mutations(qos, decide_service_level(state, qos, stmt(text), "cassandra", ENFORCING))
    assert effective_timeout_ms(state, qos, "u") == 100
    assert effective_timeout_ms(state, qos, None) is None
    own = list_service_levels(state, qos, stmt("LIST EFFECTIVE SERVICE LEVEL OF u"), "u", ENFORCING)
    assert own.rows[1] == ("timeout", "b", "100ms")
    assert list_service_levels(
        state, qos, stmt("LIST ATTACHED SERVICE LEVEL OF team"), "u", ENFORCING
    ).rows == (("team", "b"),)
    with pytest.raises(Unauthorized, match="Only superusers are allowed to manage service levels"):
        decide_service_level(state, qos, stmt("CREATE SERVICE LEVEL c"), "u", ENFORCING)
    with pytest.raises(Unauthorized, match="other roles"):
        list_service_levels(state, qos, stmt("LIST EFFECTIVE SERVICE LEVEL OF cassandra"), "u", ENFORCING)
    with pytest.raises(Unauthorized, match="list service levels"):
        list_service_levels(state, qos, stmt("LIST ALL SERVICE LEVELS"), "u", ENFORCING)
    assert decide_service_level(state, qos, stmt("CREATE SERVICE LEVEL c"), "u", OPEN)
    with pytest.raises(InvalidRequest, match="Role ghost doesn't exist"):
        decide_service_level(state, qos, stmt("ATTACH SERVICE LEVEL a TO ghost"), None, ENFORCING)
    with pytest.raises(InvalidRequest, match="Role ghost doesn't exist"):
        list_service_levels(state, qos, stmt("LIST EFFECTIVE SERVICE LEVEL OF ghost"), None, ENFORCING)
