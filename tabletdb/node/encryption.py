"""The node's TLS from its configuration: internode (`server_encryption_options`) and CQL
(`client_encryption_options`), built once at start so a bad certificate stops the node before
any port opens (`net.tls.TlsSetupError`, one line naming the file)."""

from __future__ import annotations

import ssl

from tabletdb.net.handshake import InternodeEncryption
from tabletdb.net.rpc import InternodeTls
from tabletdb.net.tls import TlsFiles, client_context, server_context
from tabletdb.node.config import ClientEncryption, NodeConfig, ServerEncryption


def internode_tls(config: NodeConfig) -> tuple[InternodeEncryption, InternodeTls | None]:
    """The encryption policy and, unless it is `none`, the TLS port's contexts. With `all` the
    plaintext storage_port is not served at all (as in ScyllaDB)."""
    options = config.server_encryption_options
    mode = InternodeEncryption(options.internode_encryption)
    if mode is InternodeEncryption.NONE:
        return mode, None
    files = _files("server_encryption_options", options)
    tls = InternodeTls(
        server=server_context(files),
        client=client_context(files),
        port=config.ssl_storage_port,
        plaintext_too=mode is not InternodeEncryption.ALL,
    )
    return mode, tls


def client_tls(config: NodeConfig) -> ssl.SSLContext | None:
    """The CQL listener's context, or None when client encryption is off."""
    options = config.client_encryption_options
    if not options.enabled:
        return None
    return server_context(_files("client_encryption_options", options))


def _files(section: str, options: ServerEncryption | ClientEncryption) -> TlsFiles:
    if options.certificate is None or options.keyfile is None:  # the config parser refuses this
        raise ValueError(f"{section}: certificate and keyfile are required")
    return TlsFiles(
        section, options.certificate, options.keyfile, options.truststore, options.require_client_auth
    )
