"""server_encryption_options / client_encryption_options: parsed as scylla.yaml nests them,
round-tripped through node.yaml, refused when incomplete or unknown, and built into contexts
that fail with the file's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabletdb.net.handshake import InternodeEncryption
from tabletdb.net.tls import TlsSetupError
from tabletdb.node.config import (
    ConfigError,
    NodeConfig,
    load_config,
    read_effective_config,
    write_effective_config,
)
from tabletdb.node.encryption import client_tls, internode_tls
from tests.harness.certs import TestCA


def test_defaults_are_off(tmp_path: Path) -> None:
    config = NodeConfig(workdir=tmp_path)
    assert internode_tls(config) == (InternodeEncryption.NONE, None)
    assert client_tls(config) is None


def test_yaml_sections_build_contexts_and_round_trip(tmp_path: Path) -> None:
    ca = TestCA(tmp_path / "ca")
    pair = ca.issue("node")
    files = {
        "certificate": str(pair.certificate),
        "keyfile": str(pair.keyfile),
        "truststore": str(ca.certificate),
    }
    yaml_file = tmp_path / "scylla.yaml"
    yaml_file.write_text(
        f"workdir: {tmp_path / 'w'}\n"
        f"server_encryption_options: {{internode_encryption: dc, require_client_auth: true, "
        + ", ".join(f"{k}: {v}" for k, v in files.items())
        + "}\n"
        + "client_encryption_options:\n  enabled: true\n"
        + "".join(f"  {k}: {v}\n" for k, v in files.items())
        + "native_transport_port_ssl: 9142\n",
        encoding="utf-8",
    )
    config = load_config(yaml_file, {})
    mode, tls = internode_tls(config)
    assert mode is InternodeEncryption.DC and tls is not None and tls.plaintext_too and tls.port == 7001
    assert client_tls(config) is not None
    write_effective_config(config)
    assert read_effective_config(config.workdir) == config


def test_command_line_flow_mapping(tmp_path: Path) -> None:
    config = load_config(
        None,
        {
            "workdir": str(tmp_path),
            "server_encryption_options": "{internode_encryption: all, certificate: /c.pem, keyfile: /k.pem}",
        },
    )
    assert config.server_encryption_options.internode_encryption == "all"
    with pytest.raises(TlsSetupError, match=r"server_encryption_options: cannot load certificate /c.pem"):
        internode_tls(config)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("server_encryption_options", {"internode_encryption": "all"}, "certificate"),
        ("server_encryption_options", {"internode_encryption": "transitional"}, "none, all, dc, rack"),
        ("server_encryption_options", {"priority_string": "NORMAL"}, "priority_string"),
        ("client_encryption_options", {"enabled": True, "certificate": "/c"}, "keyfile"),
        ("client_encryption_options", {"enabled": "maybe"}, "true or false"),
        ("client_encryption_options", "[1, 2]", "a mapping"),
        ("native_transport_port_ssl", 9142, "client_encryption_options.enabled"),
    ],
)
def test_bad_settings_are_refused(tmp_path: Path, key: str, value: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        NodeConfig(workdir=tmp_path, **{key: value})  # type: ignore[arg-type]
