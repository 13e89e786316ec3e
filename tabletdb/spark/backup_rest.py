"""Client for the nodes' backup/restore REST endpoints (node.rest_snapshots), and how to find them.

Every node serves its REST API on its own address; the port is the same everywhere in a real
deployment (Scylla's 10000), so `--api-port` names it, and `--api-endpoint ADDRESS:PORT`
overrides it per node for set-ups where ports differ (tests run many nodes on one machine).
Transfers stream through fixed-size buffers: a tablet file is never held in memory whole.
Credentials (the CQL ones) go with every request as HTTP basic auth: a node whose authenticator
takes passwords answers nothing without them (node.admin.rest_auth).
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from tabletdb.storage.fsync import fsync_path

DEFAULT_API_PORT = 10000
TIMEOUT = 600.0
CONNECT_PATIENCE = 15.0
CHUNK = 1 << 20
_CHUNK = CHUNK

Advance = Callable[[int], None]
Credentials = tuple[str, str]
"""(username, password) of a role that may log in."""


def basic_auth_headers(credentials: Credentials | None) -> dict[str, str]:
    """The Authorization header for `credentials`; none without them."""
    if credentials is None:
        return {}
    token = base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode("ascii")
    return {"Authorization": f"Basic {token}"}


class RestError(RuntimeError):
    """A node's REST API refused or failed a request; the message names the node and the call."""


@dataclass(frozen=True)
class NodeApi:
    """The REST API of one node."""

    address: str
    port: int
    credentials: Credentials | None = field(default=None, repr=False)

    @property
    def base(self) -> str:
        return f"http://{self.address}:{self.port}"

    def _failed(self, method: str, path: str, reason: object) -> RestError:
        """One line naming the node and the call (not its query string: tags, checksums)."""
        return RestError(f"node {self.address}:{self.port}: {method} {path}: {_one_line(str(reason))}")

    def _call(self, method: str, path: str, query: Mapping[str, object] | None = None) -> Any:
        url = f"{self.base}{path}"
        if query:
            url += "?" + urllib.parse.urlencode({k: str(v) for k, v in query.items()})
        request = urllib.request.Request(url, method=method, headers=basic_auth_headers(self.credentials))
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise self._failed(method, path, f"HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise self._failed(method, path, exc) from None

    def host_ids(self) -> dict[str, uuid.UUID]:
        """Address -> host id of every member, as this node's group0 knows them."""
        return {row["key"]: uuid.UUID(row["value"]) for row in self._call("GET", "/storage_service/host_id")}

    def user_keyspaces(self) -> list[str]:
        return sorted(self._call("GET", "/storage_service/keyspaces", {"type": "user"}))

    def balancing_enabled(self) -> bool:
        return bool(self._call("GET", "/storage_service/tablets/balancing")["enabled"])

    def set_balancing(self, enabled: bool) -> None:
        self._call("POST", "/storage_service/tablets/balancing", {"enabled": str(enabled).lower()})

    def take_snapshot(self, tag: str, keyspaces: Sequence[str]) -> dict[str, Any]:
        query: dict[str, object] = {"tag": tag}
        if keyspaces:
            query["kn"] = ",".join(keyspaces)
        result: dict[str, Any] = self._call("POST", "/storage_service/snapshots", query)
        return result

    def delete_snapshot(self, tag: str) -> None:
        self._call("DELETE", "/storage_service/snapshots", {"tag": tag})

    def download(self, tag: str, path: str, target: Path, advance: Advance) -> str:
        """Stream a snapshot file into the local file ``target``, synced with its directory;
        returns its sha256."""
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(target, "wb") as out:
                digest = self.download_to(tag, path, out, advance)
                out.flush()
                os.fsync(out.fileno())  # a backup that reported success survives a crash
            fsync_path(target.parent)  # its name too
        except OSError as exc:
            target.unlink(missing_ok=True)
            raise self._failed("GET", f"snapshot file {path}", exc) from None
        except RestError:
            target.unlink(missing_ok=True)  # no partial file left to look like a copied one
            raise
        return digest

    def download_to(self, tag: str, path: str, out: BinaryIO, advance: Advance) -> str:
        """Stream a snapshot file into ``out`` (a file or a store's object); returns its sha256."""
        url = f"{self.base}/storage_service/snapshots/file?" + urllib.parse.urlencode(
            {"tag": tag, "path": path}
        )
        digest = hashlib.sha256()
        try:
            request = urllib.request.Request(url, headers=basic_auth_headers(self.credentials))
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                while chunk := response.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                    advance(len(chunk))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise self._failed("GET", f"snapshot file {path}", f"HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise self._failed("GET", f"snapshot file {path}", exc) from None
        return digest.hexdigest()

    def load_tablet(
        self, table_id: str, first_token: int, last_token: int, source: Path, sha256: str
    ) -> dict[str, Any]:
        """Send a tablet image for the node to install whole or apply as rows. The node checks
        ``sha256`` on arrival and answers with the one it computed (``sha256``), so the sender
        need not read the file itself: the body goes out with sendfile, kernel to socket."""
        query = {"table_id": table_id, "first_token": first_token, "last_token": last_token, "sha256": sha256}
        path = "/storage_service/tablets/load?" + urllib.parse.urlencode(
            {k: str(v) for k, v in query.items()}
        )
        headers = {
            "Content-Length": str(source.stat().st_size),
            "Content-Type": "application/octet-stream",
            **basic_auth_headers(self.credentials),
        }
        connection = http.client.HTTPConnection(self.address, self.port, timeout=TIMEOUT)
        try:
            try:
                self._send_file(connection, path, headers, source)
            except OSError as exc:  # a node refusing early closes the connection: get its reason
                if connection.sock is None:  # never connected
                    raise
                try:
                    response = connection.getresponse()
                except (OSError, http.client.HTTPException):
                    raise exc from None
            else:
                response = connection.getresponse()
            text = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise self._failed("POST", f"tablet load of {source.name}", exc) from None
        finally:
            connection.close()
        if response.status != 200:
            detail = f"HTTP {response.status}: {text.decode(errors='replace')}"
            raise self._failed("POST", f"tablet load of {source.name}", detail)
        result: dict[str, Any] = json.loads(text)
        return result

    @staticmethod
    def _send_file(
        connection: http.client.HTTPConnection, path: str, headers: Mapping[str, str], source: Path
    ) -> None:
        """The request line and headers, then the file from the kernel (sendfile)."""
        with open(source, "rb") as body:
            connection.putrequest("POST", path, skip_accept_encoding=True)
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders()
            if connection.sock is None:
                raise OSError("the connection closed before the body was sent")
            connection.sock.sendfile(body)


def _one_line(text: str) -> str:
    """A server's error body may span lines (aiohttp's default pages do): keep them on one."""
    return " ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def parse_endpoints(endpoints: Sequence[str]) -> dict[str, int]:
    """`--api-endpoint ADDRESS:PORT` values as address -> port."""
    out: dict[str, int] = {}
    for text in endpoints:
        address, sep, port = text.rpartition(":")
        if not sep or not address or not port.isdigit():
            raise ValueError(f"--api-endpoint must be ADDRESS:PORT, got {text!r}")
        out[address] = int(port)
    return out


class Cluster:
    """The nodes of the cluster as their REST APIs, keyed by host id."""

    def __init__(
        self,
        hosts: Sequence[str],
        api_port: int,
        endpoints: Mapping[str, int],
        credentials: Credentials | None = None,
    ) -> None:
        self._port = api_port
        self.credentials = credentials
        self._endpoints = dict(endpoints)
        by_address = self._members(hosts)
        self.nodes: dict[uuid.UUID, NodeApi] = {hid: self.api(addr) for addr, hid in by_address.items()}

    def _members(self, hosts: Sequence[str]) -> dict[str, uuid.UUID]:
        """Ask the hosts in turn; a node starts its REST API just after CQL, so a freshly
        started cluster gets a few seconds before we give up."""
        deadline = time.monotonic() + CONNECT_PATIENCE
        while True:
            errors: list[str] = []
            for host in hosts:
                try:
                    return self.api(host).host_ids()
                except RestError as exc:
                    errors.append(str(exc))
            if time.monotonic() > deadline:
                raise RestError("no node's REST API answered: " + "; ".join(errors))
            time.sleep(0.2)

    def api(self, address: str) -> NodeApi:
        return NodeApi(address, self._endpoints.get(address, self._port), self.credentials)

    def node(self, host_id: uuid.UUID) -> NodeApi:
        found = self.nodes.get(host_id)
        if found is None:
            raise RestError(f"host {host_id} holds a replica but is not a member the REST API lists")
        return found

    @property
    def any_node(self) -> NodeApi:
        return next(iter(self.nodes.values()))
