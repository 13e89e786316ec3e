"""nodetool's output, shaped like ScyllaDB's, as pure functions of the REST answers.

`tabletdb.cli.nodetool` fetches; these turn what it fetched into lines, so every shape is
tested without a node. Scripts parse nodetool by column and by the two-letter state, so the
layout follows nodetool's: one block per datacenter, ``U``/``D`` then ``N``/``L``/``J``/``M``,
sizes with a unit, ``?`` where a value is unknown (a node down, its load not reported).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_UNITS = ("KB", "MB", "GB", "TB")


def file_size(size: float | None) -> str:
    """``1.02 MB``: bytes with a binary unit, two decimals; ``?`` when unknown."""
    if size is None:
        return "?"
    if size < 1024:
        return f"{int(size)} bytes"
    value = float(size) / 1024
    for unit in _UNITS[:-1]:
        if value < 1024:
            return f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} {_UNITS[-1]}"


def percent(share: float | None) -> str:
    return "?" if share is None else f"{share * 100:.1f}%"


def pairs(answer: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """ScyllaDB's map answers (``[{"key": k, "value": v}, ...]``) as a dict."""
    return {str(item["key"]): item["value"] for item in answer}


def address_order(address: str) -> tuple[int, bytes | str]:
    try:
        return (0, ipaddress.ip_address(address).packed)
    except ValueError:
        return (1, address)


@dataclass(frozen=True)
class Cluster:
    """The REST answers nodetool status and ring are drawn from, keyed by node address."""

    host_ids: Mapping[str, str]
    datacenters: Mapping[str, str]
    racks: Mapping[str, str]
    tokens: Mapping[str, Sequence[int]]
    loads: Mapping[str, float]
    live: frozenset[str]
    joining: frozenset[str] = frozenset()
    leaving: frozenset[str] = frozenset()
    moving: frozenset[str] = frozenset()
    owns: Mapping[str, float] | None = None
    """Share of the ring per node; None: not meaningful (shown as ``?``)."""
    effective: bool = False
    """Whether ``owns`` counts every replica (a keyspace was given) or primary ranges only."""
    tablets: Mapping[str, int] | None = field(default=None)
    """Tablet replicas per node of the table given (status then shows tablets, not tokens)."""

    def state(self, address: str) -> str:
        up = "U" if address in self.live else "D"
        if address in self.leaving:
            return up + "L"
        if address in self.joining:
            return up + "J"
        if address in self.moving:
            return up + "M"
        return up + "N"

    def by_datacenter(self) -> list[tuple[str, list[str]]]:
        groups: dict[str, list[str]] = {}
        for address in self.host_ids:
            groups.setdefault(self.datacenters.get(address, "?"), []).append(address)
        return [(dc, sorted(groups[dc], key=address_order)) for dc in sorted(groups)]


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns left-aligned, each as wide as its widest cell plus two spaces (the last unpadded)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)).rstrip()
        for row in rows
    ]


def status_lines(cluster: Cluster) -> list[str]:
    count_header = "Tokens" if cluster.tablets is None else "Tablets"
    owns_header = "Owns (effective)" if cluster.effective else "Owns"
    lines: list[str] = []
    for dc, addresses in cluster.by_datacenter():
        title = f"Datacenter: {dc}"
        lines += [title, "=" * len(title), "Status=Up/Down", "|/ State=Normal/Leaving/Joining/Moving"]
        rows = [["--", "Address", "Load", count_header, owns_header, "Host ID", "Rack"]]
        for address in addresses:
            if cluster.tablets is None:
                count = str(len(cluster.tokens.get(address, ())))
            else:
                count = str(cluster.tablets.get(address, 0))
            owns = None if cluster.owns is None else cluster.owns.get(address, 0.0)
            rows.append(
                [
                    cluster.state(address),
                    address,
                    file_size(cluster.loads.get(address)),
                    count,
                    percent(owns),
                    cluster.host_ids[address],
                    cluster.racks.get(address, "?"),
                ]
            )
        lines += _table(rows)
        lines.append("")
    return lines


def ring_lines(cluster: Cluster) -> list[str]:
    """Every token of every node, per datacenter, in token order (nodetool ring)."""
    lines: list[str] = []
    owns_header = "Owns (effective)" if cluster.effective else "Owns"
    for dc, addresses in cluster.by_datacenter():
        title = f"Datacenter: {dc}"
        lines += ["", title, "=" * len(title)]
        entries = sorted((t, a) for a in addresses for t in cluster.tokens.get(a, ()))
        rows = [["Address", "Rack", "Status", "State", "Load", owns_header, "Token"]]
        if entries:
            rows.append(["", "", "", "", "", "", str(entries[-1][0])])
        for token, address in entries:
            state = cluster.state(address)
            owns = None if cluster.owns is None else cluster.owns.get(address, 0.0)
            rows.append(
                [
                    address,
                    cluster.racks.get(address, "?"),
                    "Up" if state[0] == "U" else "Down",
                    {"N": "Normal", "L": "Leaving", "J": "Joining", "M": "Moving"}[state[1]],
                    file_size(cluster.loads.get(address)),
                    percent(owns),
                    str(token),
                ]
            )
        lines += _table(rows)
    if not cluster.effective:
        lines += [
            "",
            '  Warning: "nodetool ring" is used to output all the tokens of a node.',
            '  To view status related info of a node use "nodetool status" instead.',
            "",
            "  Note: Owns counts primary token ranges only; give a keyspace for effective ownership.",
        ]
    return lines


def info_lines(answers: Mapping[str, Any], show_tokens: bool) -> list[str]:
    """nodetool info from this node's answers (keys named after the REST paths they came from)."""
    tokens = [str(t) for t in answers["tokens"]]
    rows = [
        ("ID", answers["host_id"]),
        ("Gossip active", _bool(answers["gossiping"])),
        ("Thrift active", "false"),
        ("Native Transport active", _bool(answers["native_transport"])),
        ("Load", file_size(answers["load"])),
        ("Generation No", str(answers["generation_number"])),
        ("Uptime (seconds)", str(int(answers["uptime_ms"]) // 1000)),
        ("Data Center", answers["datacenter"]),
        ("Rack", answers["rack"]),
    ]
    lines = [f"{name:<23}: {value}" for name, value in rows]
    if show_tokens:
        lines += [f"{'Token':<23}: {token}" for token in tokens]
    else:
        lines.append(f"{'Token':<23}: (invoke with -T/--tokens to see all {len(tokens)} tokens)")
    return lines


def _bool(value: Any) -> str:
    return "true" if value else "false"


def describering_lines(schema_version: str, ranges: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [f"Schema Version:{schema_version}", "TokenRange: "]
    for r in ranges:
        details = ", ".join(
            f"EndpointDetails(host:{d['host']}, datacenter:{d['datacenter']}, rack:{d['rack']})"
            for d in r["endpoint_details"]
        )
        lines.append(
            f"\tTokenRange(start_token:{r['start_token']}, end_token:{r['end_token']}, "
            f"endpoints:[{', '.join(r['endpoints'])}], rpc_endpoints:[{', '.join(r['rpc_endpoints'])}], "
            f"endpoint_details:[{details}])"
        )
    return lines


def tablets_per_node(ranges: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many of a table's tablets (describering ranges) each node holds a replica of."""
    counts: dict[str, int] = {}
    for r in ranges:
        for address in set(r["endpoints"]):
            counts[address] = counts.get(address, 0) + 1
    return counts
