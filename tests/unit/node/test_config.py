"""NodeConfig parsing: defaults, normalisation, precedence, errors and node.yaml round trips."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.node.config import (
    KNOWN_KEYS,
    ConfigError,
    NodeConfig,
    load_config,
    read_effective_config,
    write_effective_config,
)


def write_yaml(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_every_field_has_a_parser_and_vice_versa() -> None:
    assert {f.name for f in dataclasses.fields(NodeConfig)} == KNOWN_KEYS


def test_defaults_match_scylla() -> None:
    c = load_config(None, {"workdir": "w"})
    assert c.cluster_name == "Test Cluster"
    assert (c.listen_address, c.rpc_address, c.broadcast_address, c.api_address) == ("127.0.0.1",) * 4
    assert c.native_transport_port == 9042
    assert c.native_shard_aware_transport_port is None
    assert c.smp == 2 and c.api_port == 10000 and c.num_tokens == 256
    assert c.tablets_mode_for_new_keyspaces == "enabled"
    assert c.tablets_initial_scale_factor == 10.0 and c.tablets_per_shard_goal == 100
    assert c.target_tablet_size_in_bytes == 5 * 2**30
    assert c.murmur3_partitioner_ignore_msb_bits == 12
    assert (c.endpoint_snitch, c.dc, c.rack) == ("SimpleSnitch", "datacenter1", "rack1")
    assert (c.read_request_timeout_in_ms, c.write_request_timeout_in_ms, c.request_timeout_in_ms) == (
        5000,
        2000,
        10000,
    )
    assert c.native_transport_max_frame_size_in_mb == 256
    assert c.authenticator == "AllowAllAuthenticator" and c.authorizer == "AllowAllAuthorizer"
    assert c.seeds == () and not c.maintenance_mode and c.commitlog_sync == "periodic"
    assert not c.commitlog_skip_corrupt_records  # a corrupt commit log stops the start
    # -1 / 0: the derived default (a tenth of RAM), no connection limit, no idle timeout.
    assert c.native_transport_max_concurrent_requests_in_bytes == -1
    assert c.native_transport_max_concurrent_connections == -1
    assert c.native_transport_idle_timeout_in_ms == 0


def test_transport_limits_are_parsed_like_other_keys() -> None:
    c = load_config(
        None,
        {
            "workdir": "w",
            "native_transport_max_concurrent_requests_in_bytes": "1048576",
            "native_transport_max_concurrent_connections": 100,
            "native_transport_idle_timeout_in_ms": "30000",
        },
    )
    assert c.native_transport_max_concurrent_requests_in_bytes == 1024 * 1024
    assert c.native_transport_max_concurrent_connections == 100
    assert c.native_transport_idle_timeout_in_ms == 30000
    with pytest.raises(ConfigError, match="native_transport_idle_timeout_in_ms"):
        load_config(None, {"workdir": "w", "native_transport_idle_timeout_in_ms": -5})


def test_derived_addresses_follow_listen_address() -> None:
    c = load_config(None, {"workdir": "w", "listen_address": "127.0.3.7"})
    assert c.rpc_address == c.broadcast_address == c.broadcast_rpc_address == c.api_address == "127.0.3.7"
    c = load_config(None, {"workdir": "w", "listen_address": "127.0.3.7", "rpc_address": "127.0.3.8"})
    assert c.broadcast_rpc_address == "127.0.3.8" and c.broadcast_address == "127.0.3.7"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("PasswordAuthenticator", "PasswordAuthenticator"),
        ("org.apache.cassandra.auth.PasswordAuthenticator", "PasswordAuthenticator"),
        ("passwordauthenticator", "PasswordAuthenticator"),
        ("org.apache.cassandra.auth.AllowAllAuthenticator", "AllowAllAuthenticator"),
    ],
)
def test_authenticator_class_names_are_normalised(raw: str, expected: str) -> None:
    assert load_config(None, {"workdir": "w", "authenticator": raw}).authenticator == expected


def test_authorizer_accepts_full_class_name() -> None:
    c = load_config(None, {"workdir": "w", "authorizer": "org.apache.cassandra.auth.CassandraAuthorizer"})
    assert c.authorizer == "CassandraAuthorizer"


def test_file_then_overrides_and_none_overrides_are_ignored(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "scylla.yaml",
        {"workdir": str(tmp_path / "a"), "smp": 4, "cluster_name": "prod", "native_transport_port": 9100},
    )
    c = load_config(path, {"smp": 1, "native_transport_port": None, "workdir": None})
    assert c.smp == 1
    assert c.native_transport_port == 9100
    assert c.cluster_name == "prod"
    assert c.workdir == tmp_path / "a"


def test_string_values_from_flags_are_coerced() -> None:
    c = load_config(None, {"workdir": "w", "smp": "3", "maintenance_mode": "true", "api_port": "10001"})
    assert (c.smp, c.maintenance_mode, c.api_port) == (3, True, 10001)


def test_seed_forms(tmp_path: Path) -> None:
    assert load_config(None, {"workdir": "w", "seeds": "127.0.0.1, 127.0.0.2"}).seeds == (
        "127.0.0.1",
        "127.0.0.2",
    )
    assert load_config(None, {"workdir": "w", "seeds": ["127.0.0.2", "127.0.0.2"]}).seeds == ("127.0.0.2",)
    provider = [
        {
            "class_name": "org.apache.cassandra.locator.SimpleSeedProvider",
            "parameters": [{"seeds": "127.0.0.5,127.0.0.6"}],
        }
    ]
    path = write_yaml(tmp_path / "s.yaml", {"workdir": "w", "seed_provider": provider})
    assert load_config(path, {}).seeds == ("127.0.0.5", "127.0.0.6")


def test_dc_rack_pick_gossiping_snitch() -> None:
    c = load_config(None, {"workdir": "w", "dc": "dc2", "rack": "r7"})
    assert (c.endpoint_snitch, c.dc, c.rack) == ("GossipingPropertyFileSnitch", "dc2", "r7")
    c = load_config(None, {"workdir": "w", "endpoint_snitch": "org.apache.cassandra.locator.SimpleSnitch"})
    assert c.endpoint_snitch == "SimpleSnitch"


def test_simple_snitch_with_custom_dc_is_an_error() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, {"workdir": "w", "endpoint_snitch": "SimpleSnitch", "dc": "dc2"})
    assert info.value.key == "endpoint_snitch"


def test_rackdc_properties_beside_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "cassandra-rackdc.properties").write_text(
        "# GossipingPropertyFileSnitch\ndc=east\nrack = r2\ndc_suffix=_x\nprefer_local=true\n"
    )
    path = write_yaml(tmp_path / "scylla.yaml", {"workdir": "w"})
    c = load_config(path, {})
    assert (c.dc, c.rack, c.endpoint_snitch) == ("east_x", "r2", "GossipingPropertyFileSnitch")
    assert load_config(path, {"rack": "r9"}).rack == "r9"  # flags win over the file
    simple = load_config(path, {"endpoint_snitch": "SimpleSnitch"})
    assert (simple.dc, simple.rack) == ("datacenter1", "rack1")  # SimpleSnitch ignores the file


def test_skipping_commit_log_corruption_is_a_key_like_any_other() -> None:
    """``-o commitlog_skip_corrupt_records=true`` arrives as a string, a YAML file gives a bool."""
    assert load_config(
        None, {"workdir": "w", "commitlog_skip_corrupt_records": "true"}
    ).commitlog_skip_corrupt_records
    assert load_config(
        None, {"workdir": "w", "commitlog-skip-corrupt-records": True}
    ).commitlog_skip_corrupt_records


def test_restrict_future_timestamp_is_on_by_default_and_can_be_turned_off() -> None:
    assert load_config(None, {"workdir": "w"}).restrict_future_timestamp
    assert not load_config(
        None, {"workdir": "w", "restrict_future_timestamp": "false"}
    ).restrict_future_timestamp


def test_dashed_keys_are_accepted() -> None:
    assert load_config(None, {"workdir": "w", "native-transport-port": 9500}).native_transport_port == 9500


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("smp", 0, "1..256"),
        ("smp", "two", "1..256"),
        ("smp", True, "1..256"),
        ("native_transport_port", 70000, "1..65535"),
        ("authenticator", "KerberosAuthenticator", "PasswordAuthenticator"),
        ("authorizer", "Nope", "CassandraAuthorizer"),
        ("tablets_mode_for_new_keyspaces", "sometimes", "enforced"),
        ("commitlog_sync", "never", "periodic"),
        ("commitlog_skip_corrupt_records", "maybe", "true or false"),
        ("listen_address", "not-an-ip", "IPv4"),
        ("seeds", 5, "list of IP addresses"),
        ("maintenance_mode", "perhaps", "true or false"),
        ("murmur3_partitioner_ignore_msb_bits", 64, "0..63"),
        ("tablets_initial_scale_factor", -1, "> 0"),
        ("cluster_name", "", "non-empty"),
    ],
)
def test_bad_values_name_key_value_and_allowed(key: str, value: Any, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, {"workdir": "w", key: value})
    assert info.value.key == key
    assert fragment in str(info.value)
    assert repr(value) in str(info.value)


def test_bad_seed_names_the_bad_entry() -> None:
    with pytest.raises(ConfigError, match="invalid value 'banana'"):
        load_config(None, {"workdir": "w", "seeds": "127.0.0.1,banana"})


def test_unknown_key_suggests_the_close_one(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "s.yaml", {"workdir": "w", "listen_adress": "127.0.0.1"})
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert "unknown config key 'listen_adress'" in str(info.value)
    assert "did you mean 'listen_address'" in str(info.value)
    assert str(path) in str(info.value)


def test_missing_workdir_is_an_error() -> None:
    with pytest.raises(ConfigError, match="--workdir"):
        load_config(None, {})


def test_port_clash_is_an_error() -> None:
    with pytest.raises(ConfigError, match="native_transport_port"):
        load_config(None, {"workdir": "w", "api_port": 9042})
    # On different addresses the same port number is fine.
    c = load_config(None, {"workdir": "w", "api_port": 9042, "api_address": "127.0.0.2"})
    assert c.api_port == 9042


@pytest.mark.parametrize(
    "content", ["- just\n- a list\n", "key: [unclosed\n"], ids=["not-a-mapping", "bad-yaml"]
)
def test_bad_files(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_config(path, {"workdir": "w"})
    assert info.value.key == "config file"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="readable"):
        load_config(tmp_path / "nope.yaml", {"workdir": "w"})


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert load_config(path, {"workdir": "w"}) == load_config(None, {"workdir": "w"})


def test_direct_construction_validates_too() -> None:
    with pytest.raises(ConfigError):
        NodeConfig(workdir=Path("w"), smp=0)


def test_effective_config_round_trip(tmp_path: Path) -> None:
    c = load_config(
        None,
        {
            "workdir": str(tmp_path / "n1"),
            "seeds": "127.0.0.1,127.0.0.2",
            "authenticator": "org.apache.cassandra.auth.PasswordAuthenticator",
            "native_shard_aware_transport_port": 19042,
            "dc": "east",
        },
    )
    path = write_effective_config(c)
    assert path == tmp_path / "n1" / "node.yaml"
    assert read_effective_config(tmp_path / "n1") == c
    assert not list((tmp_path / "n1").glob("*.tmp"))


addresses = st.tuples(st.integers(0, 255), st.integers(1, 254)).map(lambda t: f"127.0.{t[0]}.{t[1]}")


@settings(max_examples=50, deadline=None)
@given(
    listen=addresses,
    seeds=st.lists(addresses, max_size=4),
    smp=st.integers(1, 256),
    port=st.integers(1, 65535),
    mode=st.sampled_from(["enabled", "disabled", "enforced"]),
    scale=st.floats(0.01, 1000),
    maintenance=st.booleans(),
)
def test_to_dict_round_trips_through_yaml(
    listen: str, seeds: list[str], smp: int, port: int, mode: str, scale: float, maintenance: bool
) -> None:
    c = load_config(
        None,
        {
            "workdir": "/tmp/x",
            "listen_address": listen,
            "seeds": seeds,
            "smp": smp,
            "native_transport_port": port,
            "api_port": 1 if port != 1 else 2,
            "tablets_mode_for_new_keyspaces": mode,
            "tablets_initial_scale_factor": scale,
            "maintenance_mode": maintenance,
        },
    )
    again = NodeConfig(**yaml.safe_load(yaml.safe_dump(c.to_dict())))
    assert again == c


def test_storage_port_defaults_to_7000_and_may_not_clash_with_cql_on_one_address() -> None:
    assert load_config(None, {"workdir": "w"}).storage_port == 7000
    assert load_config(None, {"workdir": "w", "storage_port": "7100"}).storage_port == 7100
    with pytest.raises(ConfigError, match="storage_port"):
        load_config(None, {"workdir": "w", "storage_port": 9042})
    c = load_config(None, {"workdir": "w", "storage_port": 9042, "rpc_address": "127.0.0.2"})
    assert c.storage_port == 9042


def test_a_damaged_binary_config_file_is_one_config_error(tmp_path: Path) -> None:
    path = tmp_path / "scylla.yaml"
    path.write_bytes(b"cluster_name: x\n\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match=r"a UTF-8 text file \(invalid start byte at byte 16\)") as info:
        load_config(path, {})
    assert str(path) in str(info.value)


def test_a_relative_workdir_is_made_absolute_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    c = load_config(None, {"workdir": "work/cluster/node1"})
    assert c.workdir.is_absolute() and c.workdir == tmp_path.resolve() / "work/cluster/node1"


def test_prometheus_listens_on_9180_of_the_listen_address_unless_port_0(tmp_path: Path) -> None:
    from tabletdb.node.port_check import listeners

    config = NodeConfig(workdir=tmp_path, listen_address="127.0.0.5")
    assert (config.prometheus_address, config.prometheus_port) == ("127.0.0.5", 9180)
    assert ("127.0.0.5", 9180) in {(x.address, x.port) for x in listeners(config)}
    off = NodeConfig(workdir=tmp_path, prometheus_port=0)
    assert all("Prometheus" not in x.what for x in listeners(off))
    with pytest.raises(ConfigError, match=r"prometheus_port.*different from api_port"):
        NodeConfig(workdir=tmp_path, prometheus_port=10000)
    NodeConfig(workdir=tmp_path, prometheus_port=10000, prometheus_address="127.0.0.9")  # other address


def test_scylladb_keys_without_effect_are_dropped_and_listed(tmp_path: Path) -> None:
    from tabletdb.node.config import ignored_keys

    path = tmp_path / "scylla.yaml"
    path.write_text(
        "data_file_directories: [/var/lib/scylla/data]\ncommitlog_segment_size_in_mb: 32\n"
        "partitioner: org.apache.cassandra.dht.Murmur3Partitioner\nlisten_address: localhost\n"
    )
    config = load_config(path, {"workdir": str(tmp_path / "w"), "rpc_port": 9160})
    assert config.listen_address == "127.0.0.1"  # a host name is resolved, as ScyllaDB does
    assert "data_file_directories" not in config.to_dict()
    assert ignored_keys(path, {"rpc_port": 9160}) == [
        "commitlog_segment_size_in_mb",
        "data_file_directories",
        "rpc_port",
    ]


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("partitioner", "RandomPartitioner", "Murmur3 partitioner only"),
        ("maintenance_socket", "workdir", "no maintenance socket"),
        ("auto_snapshot", True, "no snapshot before TRUNCATE"),
        ("strict_is_not_null_in_views", "warn", "IS NOT NULL"),
    ],
)
def test_scylladb_keys_that_would_change_behaviour_are_refused(
    tmp_path: Path, key: str, value: Any, fragment: str
) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_config(None, {"workdir": str(tmp_path), key: value})


def test_enable_tablets_sets_the_mode_for_new_keyspaces(tmp_path: Path) -> None:
    off = load_config(None, {"workdir": str(tmp_path), "enable_tablets": "false"})
    assert off.tablets_mode_for_new_keyspaces == "disabled"
    on = load_config(None, {"workdir": str(tmp_path), "enable_tablets": True})
    assert on.tablets_mode_for_new_keyspaces == "enabled"
    with pytest.raises(ConfigError, match="enable_tablets"):
        load_config(
            None,
            {"workdir": str(tmp_path), "enable_tablets": False, "tablets_mode_for_new_keyspaces": "enabled"},
        )
