"""nodetool's output from REST answers: the shapes scripts parse (spec/topology.md)."""

from __future__ import annotations

import pytest

from tabletdb.cli import nodetool_format as fmt

H1 = "6b1b7a4e-0000-4000-8000-000000000001"
H2 = "6b1b7a4e-0000-4000-8000-000000000002"
H3 = "6b1b7a4e-0000-4000-8000-000000000003"


def _cluster(**overrides: object) -> fmt.Cluster:
    fields: dict[str, object] = {
        "host_ids": {"127.0.0.10": H3, "127.0.0.2": H2, "127.0.0.1": H1},
        "datacenters": {"127.0.0.1": "dc1", "127.0.0.2": "dc1", "127.0.0.10": "dc2"},
        "racks": {"127.0.0.1": "r1", "127.0.0.2": "r2", "127.0.0.10": "r1"},
        "tokens": {"127.0.0.1": [-5, 7], "127.0.0.2": [3], "127.0.0.10": [100]},
        "loads": {"127.0.0.1": 1024 * 1024 * 1.02, "127.0.0.2": 300.0},
        "live": frozenset({"127.0.0.1", "127.0.0.10"}),
        "owns": {"127.0.0.1": 0.5, "127.0.0.2": 0.25, "127.0.0.10": 0.25},
    }
    fields.update(overrides)
    return fmt.Cluster(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (None, "?"),
        (0, "0 bytes"),
        (1023, "1023 bytes"),
        (1024, "1.00 KB"),
        (1069547.52, "1.02 MB"),
        (3 << 40, "3.00 TB"),
    ],
)
def test_sizes_carry_a_unit(size: float | None, text: str) -> None:
    assert fmt.file_size(size) == text


def test_status_has_one_block_per_datacenter_in_nodetools_shape() -> None:
    lines = fmt.status_lines(_cluster())
    assert lines[:4] == [
        "Datacenter: dc1",
        "===============",
        "Status=Up/Down",
        "|/ State=Normal/Leaving/Joining/Moving",
    ]
    header = lines[4].split()
    assert header == ["--", "Address", "Load", "Tokens", "Owns", "Host", "ID", "Rack"]
    # addresses in numeric order; a node whose load is unknown shows ?; a down node is D
    assert lines[5].split() == ["UN", "127.0.0.1", "1.02", "MB", "2", "50.0%", H1, "r1"]
    assert lines[6].split() == ["DN", "127.0.0.2", "300", "bytes", "1", "25.0%", H2, "r2"]
    assert lines[7] == ""
    assert lines[8] == "Datacenter: dc2"
    assert lines[13].split() == ["UN", "127.0.0.10", "?", "1", "25.0%", H3, "r1"]
    # columns line up: every row's host id starts where the header's does
    assert {line.index("6b1b") for line in lines[5:7]} == {lines[4].index("Host ID")}


def test_status_states_and_effective_ownership_with_tablets() -> None:
    cluster = _cluster(
        joining=frozenset({"127.0.0.2"}),
        leaving=frozenset({"127.0.0.10"}),
        effective=True,
        owns=None,
        tablets={"127.0.0.1": 4},
    )
    lines = fmt.status_lines(cluster)
    assert lines[4].split()[3:6] == ["Tablets", "Owns", "(effective)"]
    assert lines[5].split()[0] == "UN" and lines[5].split()[4:6] == ["4", "?"]
    assert lines[6].split()[0] == "DJ" and lines[6].split()[4] == "0"
    assert lines[13].split()[0] == "UL"


def test_ring_lists_every_token_in_order_after_the_last_one() -> None:
    lines = fmt.ring_lines(_cluster())
    assert lines[1:3] == ["Datacenter: dc1", "==============="]
    assert lines[3].split() == ["Address", "Rack", "Status", "State", "Load", "Owns", "Token"]
    assert lines[4].strip() == "7"
    tokens = [line.split()[-1] for line in lines[5:8]]
    assert tokens == ["-5", "3", "7"]
    assert lines[6].split()[:4] == ["127.0.0.2", "r2", "Down", "Normal"]
    assert any("Owns counts primary token ranges only" in line for line in lines)


def test_info_shows_the_node_and_hides_tokens_unless_asked() -> None:
    answers = {
        "host_id": H1,
        "gossiping": True,
        "native_transport": True,
        "load": 2048.0,
        "generation_number": 1700000000,
        "uptime_ms": 65_432,
        "datacenter": "dc1",
        "rack": "r1",
        "tokens": ["-5", "7"],
    }
    lines = fmt.info_lines(answers, show_tokens=False)
    assert lines[0] == f"ID                     : {H1}"
    assert "Native Transport active: true" in lines
    assert "Load                   : 2.00 KB" in lines
    assert "Uptime (seconds)       : 65" in lines
    assert lines[-1] == "Token                  : (invoke with -T/--tokens to see all 2 tokens)"
    assert fmt.info_lines(answers, show_tokens=True)[-2:] == [
        "Token                  : -5",
        "Token                  : 7",
    ]


def test_describering_and_tablet_counts_from_ranges() -> None:
    ranges = [
        {
            "start_token": "-9",
            "end_token": "0",
            "endpoints": ["127.0.0.1", "127.0.0.2"],
            "rpc_endpoints": ["127.0.0.1", "127.0.0.2"],
            "endpoint_details": [
                {"host": "127.0.0.1", "datacenter": "dc1", "rack": "r1"},
                {"host": "127.0.0.2", "datacenter": "dc1", "rack": "r2"},
            ],
        },
        {
            "start_token": "0",
            "end_token": "9",
            "endpoints": ["127.0.0.2"],
            "rpc_endpoints": ["127.0.0.2"],
            "endpoint_details": [{"host": "127.0.0.2", "datacenter": "dc1", "rack": "r2"}],
        },
    ]
    lines = fmt.describering_lines("abc", ranges)
    assert lines[:2] == ["Schema Version:abc", "TokenRange: "]
    assert lines[2] == (
        "\tTokenRange(start_token:-9, end_token:0, endpoints:[127.0.0.1, 127.0.0.2], "
        "rpc_endpoints:[127.0.0.1, 127.0.0.2], endpoint_details:[EndpointDetails(host:127.0.0.1, "
        "datacenter:dc1, rack:r1), EndpointDetails(host:127.0.0.2, datacenter:dc1, rack:r2)])"
    )
    assert fmt.tablets_per_node(ranges) == {"127.0.0.1": 1, "127.0.0.2": 2}


def test_map_answers_become_dicts() -> None:
    assert fmt.pairs([{"key": "a", "value": 1}, {"key": "b", "value": 2}]) == {"a": 1, "b": 2}
