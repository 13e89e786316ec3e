"""Self-signed certificate chains for TLS tests, made at test time with the `openssl` binary.

One CA signs every certificate asked for; `ssl_context`s for clients trust that CA. Keys are EC
P-256 (fast to make) and certificates name 127.0.0.1/localhost, though no side checks names.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


class CertError(RuntimeError):
    pass


@dataclass(frozen=True)
class CertPair:
    certificate: Path
    keyfile: Path


def _openssl(*args: str, cwd: Path) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise CertError("the openssl binary is needed to make test certificates")
    done = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise CertError(f"openssl {' '.join(args)} failed: {done.stderr.strip()}")


class TestCA:
    """A CA in `directory`; `issue(name)` makes a certificate and key signed by it."""

    __test__ = False

    def __init__(self, directory: Path, name: str = "tabletdb-test-ca") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.certificate = directory / f"{name}.pem"
        self.keyfile = directory / f"{name}.key"
        _openssl(
            "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(self.keyfile), cwd=directory
        )
        _openssl(
            "req", "-x509", "-new", "-key", str(self.keyfile), "-sha256", "-days", "2",
            "-subj", f"/CN={name}", "-out", str(self.certificate), cwd=directory,
        )  # fmt: skip

    def issue(self, name: str) -> CertPair:
        d = self.directory
        key, csr, cert, ext = d / f"{name}.key", d / f"{name}.csr", d / f"{name}.pem", d / f"{name}.ext"
        ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n", encoding="utf-8")
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key), cwd=d)
        _openssl("req", "-new", "-key", str(key), "-subj", f"/CN={name}", "-out", str(csr), cwd=d)
        _openssl(
            "x509", "-req", "-in", str(csr), "-CA", str(self.certificate), "-CAkey", str(self.keyfile),
            "-CAcreateserial", "-days", "2", "-sha256", "-extfile", str(ext), "-out", str(cert), cwd=d,
        )  # fmt: skip
        return CertPair(cert, key)

    def client_context(self, client: CertPair | None = None) -> ssl.SSLContext:
        """A client context trusting this CA (no host name check), presenting `client` if given."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.load_verify_locations(cafile=str(self.certificate))
        if client is not None:
            ctx.load_cert_chain(str(client.certificate), str(client.keyfile))
        return ctx
