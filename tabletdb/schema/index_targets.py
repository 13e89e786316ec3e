"""The stored forms of a secondary index's `target` option, and reading them back.

ScyllaDB's forms: `c` / `"C"` for a plain column, `keys(m)`, `values(m)`, `entries(m)`, `full(f)`,
and for a local index the JSON `{"pk":["p"],"ck":["c"]}`. Pure string work on its own, so the
DDL decisions (`schema.indexes`), the index entries table (`schema.index_table`), DESCRIBE and
the index read/write paths all read targets the same way without depending on each other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from tabletdb.cql.identifiers import quote_identifier

TARGET_KINDS = ("simple", "values", "keys", "entries", "full")
_FUNC = re.compile(r"(keys|values|entries|full)\((.*)\)\Z")


def _unquote(text: str) -> str:
    text = text.strip()
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1].replace('""', '"')
    return text


def target_string(column: str, kind: str) -> str:
    name = quote_identifier(column)
    return name if kind == "simple" else f"{kind}({name})"


def local_target_string(partition_key: Sequence[str], column: str) -> str:
    return json.dumps({"pk": list(partition_key), "ck": [column]}, separators=(",", ":"))


def parse_target(target: str) -> tuple[str, str, tuple[str, ...]]:
    """(column, kind, local partition key) of a stored target string."""
    if target.startswith("{"):
        data = json.loads(target)
        ck = data.get("ck", [])
        return (ck[0] if ck else ""), "simple", tuple(data.get("pk", []))
    match = _FUNC.match(target)
    if match:
        return _unquote(match.group(2)), match.group(1), ()
    return _unquote(target), "simple", ()


def target_columns(target: str) -> set[str]:
    column, _, local_pk = parse_target(target)
    return {column, *local_pk} - {""}


def describe_target(target: str) -> str:
    """What goes between CREATE INDEX's parentheses: `keys(m)`, `v`, or `(p1, p2), v` (local index)."""
    column, kind, local_pk = parse_target(target)
    if local_pk:
        return "(" + ", ".join(quote_identifier(p) for p in local_pk) + f"), {quote_identifier(column)}"
    return target_string(column, kind)
