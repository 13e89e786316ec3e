"""TLS contexts from scylla.yaml's certificate settings, for the internode and the CQL ports.

The settings name PEM files (`certificate`, `keyfile`, `truststore`) as ScyllaDB's
`server_encryption_options` and `client_encryption_options` do. Without a truststore the system's
trusted CAs are used, as in ScyllaDB; a self-signed chain therefore needs its CA as truststore.
Host names are not checked (node certificates rarely name every address a node listens on;
ScyllaDB checks them only on request). A file that cannot be read or does not fit is reported
with its path and the setting it came from, before the node opens any port.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path


class TlsSetupError(Exception):
    """The certificate settings cannot make a TLS context; the message names the file."""


@dataclass(frozen=True)
class TlsFiles:
    section: str
    """The scylla.yaml section the files came from, for error messages."""
    certificate: Path
    keyfile: Path
    truststore: Path | None
    require_client_auth: bool


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """The accepting side: presents the certificate; with `require_client_auth` the peer must
    present one the truststore vouches for, and with only a truststore a presented one must."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_chain(ctx, files)
    if files.require_client_auth or files.truststore is not None:
        _load_trust(ctx, files, ssl.Purpose.CLIENT_AUTH)
        ctx.verify_mode = ssl.CERT_REQUIRED if files.require_client_auth else ssl.CERT_OPTIONAL
    return ctx


def client_context(files: TlsFiles) -> ssl.SSLContext:
    """The connecting side of internode TLS: verifies the peer against the truststore and
    presents this node's certificate, so a peer that requires client auth accepts it."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED
    _load_trust(ctx, files, ssl.Purpose.SERVER_AUTH)
    _load_chain(ctx, files)
    return ctx


def _load_chain(ctx: ssl.SSLContext, files: TlsFiles) -> None:
    try:
        ctx.load_cert_chain(str(files.certificate), str(files.keyfile))
    except (OSError, ssl.SSLError) as exc:
        raise TlsSetupError(
            f"{files.section}: cannot load certificate {files.certificate} with keyfile "
            f"{files.keyfile}: {exc}"
        ) from None


def _load_trust(ctx: ssl.SSLContext, files: TlsFiles, purpose: ssl.Purpose) -> None:
    if files.truststore is None:
        ctx.load_default_certs(purpose)
        return
    try:
        ctx.load_verify_locations(cafile=str(files.truststore))
    except (OSError, ssl.SSLError) as exc:
        raise TlsSetupError(f"{files.section}: cannot load truststore {files.truststore}: {exc}") from None
