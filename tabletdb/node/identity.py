"""A node's durable identity: its host id and its vnode tokens, chosen once at first start (a
replacing node's tokens are then the ones group0 recorded for it, the replaced node's).

Drivers key everything on the host id (tablet replicas, the control connection), and vnode
keyspaces place data by the tokens, so neither may change across restarts. The file is written
to a temporary name, fsynced and renamed, so a crash leaves either the old file or the new one.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from dataclasses import dataclass
from pathlib import Path

from tabletdb.dht.ring import random_tokens
from tabletdb.storage.corruption import CorruptFile
from tabletdb.storage.fsync import fsync_path

IDENTITY_FILE = "identity.json"


@dataclass(frozen=True)
class NodeIdentity:
    host_id: uuid.UUID
    tokens: tuple[int, ...]


def load_or_create_identity(workdir: Path, num_tokens: int) -> NodeIdentity:
    path = workdir / IDENTITY_FILE
    if path.exists():
        try:
            data = json.loads(path.read_text())
            return NodeIdentity(uuid.UUID(data["host_id"]), tuple(int(t) for t in data["tokens"]))
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptFile(
                path,
                f"not the JSON host id and tokens it should hold ({type(e).__name__}: {e})",
                "restore it from a backup of this node (it names the node to the cluster: a new one "
                "would make it a different node), or start with a fresh workdir and join as a new node",
            ) from e
    rng = random.SystemRandom()
    identity = NodeIdentity(uuid.uuid4(), tuple(sorted(random_tokens(rng, max(1, num_tokens)))))
    _write(workdir, identity)
    return identity


def with_tokens(workdir: Path, identity: NodeIdentity, tokens: tuple[int, ...]) -> NodeIdentity:
    """``identity`` holding ``tokens`` from now on, written before it is returned: the tokens
    group0 recorded for this node (a replacing node takes the replaced node's over), which a
    restart must find here."""
    adopted = NodeIdentity(identity.host_id, tuple(sorted(tokens)))
    if adopted != identity:
        _write(workdir, adopted)
    return adopted


def _write(workdir: Path, identity: NodeIdentity) -> None:
    path = workdir / IDENTITY_FILE
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump({"host_id": str(identity.host_id), "tokens": [str(t) for t in identity.tokens]}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_path(workdir)
