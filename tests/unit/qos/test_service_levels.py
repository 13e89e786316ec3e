"""Service levels: DDL rules, the 8-level limit, attachments, effective merge, LIST and DESCRIBE rows."""

from __future__ import annotations

import pytest

from tabletdb.cql.duration import Duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.parser import parse
from tabletdb.qos import (
    DRIVER_LEVEL,
    QosState,
    ServiceLevel,
    apply_qos_mutations,
    attach_level,
    create_level,
    describe_levels,
    detach_level,
    drop_level,
    effective_level,
    forget_role,
    list_attached,
    list_effective,
    list_levels,
)
from tabletdb.qos.ddl import alter_level


def stmt(text: str):  # type: ignore[no-untyped-def]
    [parsed] = parse(text)
    return parsed


def with_levels(*texts: str) -> QosState:
    state = QosState()
    for text in texts:
        parsed = stmt(text)
        name = type(parsed).__name__
        if name == "CreateServiceLevel":
            state = apply_qos_mutations(state, create_level(state, parsed))
        elif name == "AlterServiceLevel":
            state = apply_qos_mutations(state, alter_level(state, parsed))
        elif name == "AttachServiceLevel":
            state = apply_qos_mutations(state, attach_level(state, parsed, role_exists=True))
        else:
            raise AssertionError(text)
    return state


def test_create_parses_options() -> None:
    state = with_levels(
        "CREATE SERVICE LEVEL sl WITH timeout = 1s AND workload_type = 'interactive' AND shares = 300"
    )
    assert state.level("sl") == ServiceLevel("sl", 1000, "interactive", 300)
    assert with_levels("CREATE SERVICE LEVEL plain").level("plain") == ServiceLevel("plain", None, None, 1000)
    assert state.level("driver") == DRIVER_LEVEL


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("timeout = 1d", "days/months"),
        ("timeout = 1500us", "finer than milliseconds"),
        ("workload_type = 'olap'", "Invalid workload type: olap"),
        ("shares = 0", r"range \[1, 1000\]"),
        ("shares = 1001", r"range \[1, 1000\]"),
        ("color = 'red'", "Unknown service level option 'color'"),
    ],
)
def test_invalid_options(options: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        create_level(QosState(), stmt(f"CREATE SERVICE LEVEL sl WITH {options}"))


def test_alter_and_unset() -> None:
    state = with_levels(
        "CREATE SERVICE LEVEL sl WITH timeout = 10ms",
        "ALTER SERVICE LEVEL sl WITH timeout = null AND shares = 5",
    )
    assert state.level("sl") == ServiceLevel("sl", None, None, 5)
    with pytest.raises(InvalidRequest, match="Service Level nope doesn't exist"):
        alter_level(state, stmt("ALTER SERVICE LEVEL nope WITH shares = 1"))


def test_create_drop_existence_rules() -> None:
    state = with_levels("CREATE SERVICE LEVEL sl")
    with pytest.raises(InvalidRequest, match="Service Level sl already exists"):
        create_level(state, stmt("CREATE SERVICE LEVEL sl"))
    assert create_level(state, stmt("CREATE SERVICE LEVEL IF NOT EXISTS sl")) == ()
    with pytest.raises(InvalidRequest, match="doesn't exist"):
        drop_level(state, stmt("DROP SERVICE LEVEL nope"))
    assert drop_level(state, stmt("DROP SERVICE LEVEL IF EXISTS nope")) == ()
    with pytest.raises(InvalidRequest, match="reserved"):
        create_level(state, stmt("CREATE SERVICE LEVEL default"))


def test_at_most_eight_user_levels() -> None:
    state = with_levels(*(f"CREATE SERVICE LEVEL sl{i}" for i in range(8)))
    with pytest.raises(InvalidRequest, match="at most 8 service levels"):
        create_level(state, stmt("CREATE SERVICE LEVEL sl8"))
    # Dropping one makes room again; the built-in driver level does not count.
    state = apply_qos_mutations(state, drop_level(state, stmt("DROP SERVICE LEVEL sl0")))
    assert create_level(state, stmt("CREATE SERVICE LEVEL sl8"))


def test_attach_detach_and_drop_cascade() -> None:
    state = with_levels("CREATE SERVICE LEVEL a", "CREATE SERVICE LEVEL b", "ATTACH SERVICE LEVEL a TO r")
    assert state.attached("r") == "a"
    state = apply_qos_mutations(state, attach_level(state, stmt("ATTACH SERVICE LEVEL b TO r"), True))
    assert state.attachments == (("r", "b"),)
    with pytest.raises(InvalidRequest, match="Role ghost doesn't exist"):
        attach_level(state, stmt("ATTACH SERVICE LEVEL a TO ghost"), False)
    with pytest.raises(InvalidRequest, match="Service Level zz doesn't exist"):
        attach_level(state, stmt("ATTACH SERVICE LEVEL zz TO r"), True)
    assert (
        apply_qos_mutations(state, detach_level(state, stmt("DETACH SERVICE LEVEL FROM r"), True)).attachments
        == ()
    )
    assert apply_qos_mutations(state, forget_role(state, "r")).attachments == ()
    assert apply_qos_mutations(state, drop_level(state, stmt("DROP SERVICE LEVEL b"))).attachments == ()


def test_effective_merge() -> None:
    state = with_levels(
        "CREATE SERVICE LEVEL slow WITH timeout = 5s AND workload_type = 'batch' AND shares = 100",
        "CREATE SERVICE LEVEL fast WITH timeout = 50ms AND shares = 800",
        "CREATE SERVICE LEVEL web WITH workload_type = 'interactive' AND shares = 200",
        "ATTACH SERVICE LEVEL slow TO a",
        "ATTACH SERVICE LEVEL fast TO b",
        "ATTACH SERVICE LEVEL web TO c",
    )
    merged = effective_level(state, ["a", "b", "c"])
    assert merged is not None
    assert (merged.timeout_ms, merged.timeout_from) == (50, "fast")
    assert (merged.workload_type, merged.workload_type_from) == ("interactive", "web")
    assert (merged.shares, merged.shares_from) == (800, "fast")
    assert effective_level(state, ["nobody"]) is None
    listing = list_effective(state, "a", ["a", "b"])
    assert listing.column_names == ("service_level_option", "effective_service_level", "value")
    assert listing.rows == (
        ("workload_type", "slow", "batch"),
        ("timeout", "fast", "50ms"),
        ("shares", "fast", "800"),
    )
    with pytest.raises(InvalidRequest, match="Role x doesn't have assigned any service level"):
        list_effective(state, "x", ["x"])


def test_list_levels_and_attached() -> None:
    state = with_levels("CREATE SERVICE LEVEL sl WITH timeout = 2s", "ATTACH SERVICE LEVEL sl TO r")
    all_levels = list_levels(state, None)
    assert all_levels.column_names == ("service_level", "timeout", "workload_type", "shares")
    assert all_levels.rows == (
        ("driver", None, "batch", 200),
        ("sl", Duration(0, 0, 2_000_000_000), None, 1000),
    )
    assert list_levels(state, "sl").rows == (("sl", Duration(0, 0, 2_000_000_000), None, 1000),)
    with pytest.raises(InvalidRequest, match="doesn't exist"):
        list_levels(state, "nope")
    assert list_attached(state, None).as_dicts() == [{"role": "r", "service_level": "sl"}]
    assert list_attached(state, "other").rows == ()


def test_describe_rows() -> None:
    state = with_levels(
        "CREATE SERVICE LEVEL \"Gold\" WITH timeout = 1s AND workload_type = 'interactive' AND shares = 900",
        "CREATE SERVICE LEVEL bronze",
        "ATTACH SERVICE LEVEL bronze TO app",
    )
    assert describe_levels(state) == [
        (
            "service_level",
            "driver",
            "CREATE SERVICE LEVEL IF NOT EXISTS driver WITH WORKLOAD_TYPE = 'batch' AND SHARES = 200;",
        ),
        (
            "service_level",
            "driver",
            "ALTER SERVICE LEVEL driver WITH WORKLOAD_TYPE = 'batch' AND SHARES = 200;",
        ),
        (
            "service_level",
            '"Gold"',
            "CREATE SERVICE LEVEL \"Gold\" WITH TIMEOUT = 1000ms AND WORKLOAD_TYPE = 'interactive'"
            " AND SHARES = 900;",
        ),
        ("service_level", "bronze", "CREATE SERVICE LEVEL bronze WITH SHARES = 1000;"),
        ("service_level_attachment", "bronze", "ATTACH SERVICE LEVEL bronze TO app;"),
    ]
    without_driver = apply_qos_mutations(state, drop_level(state, stmt("DROP SERVICE LEVEL driver")))
    assert describe_levels(without_driver)[0] == (
        "service_level",
        "driver",
        "DROP SERVICE LEVEL IF EXISTS driver;",
    )
