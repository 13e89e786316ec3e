"""What executing a statement answers, as plain values: rows with their column metadata, nothing,
a keyspace switch, a prepared statement's description, a schema change.

The data plane builds these and the query layer returns them; only `tabletdb.protocol` turns them
into bytes (`protocol.responses.RESULT_ENCODERS`). Keeping them below the protocol is what lets the
statements, replica, coordinator, paxos, views and system-table packages answer a request without
knowing the wire format. Row cells are already serialized CQL values (`cql.codec`): that is the
value layer's encoding, not the protocol's, and it lets stored bytes go out as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tabletdb.cql.types import CqlType


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One result (or bind) column: where it comes from, its name and its CQL type."""

    keyspace: str
    table: str
    name: str
    type: CqlType


class WireMemo:
    """What the protocol derived from one column list, kept for the next response with the same
    columns: deriving it costs more than the rest of a small result's encoding, and a statement
    answers every execution and every page with the same columns.

    Only `tabletdb.protocol` fills or reads the fields; to every other layer this is opaque.
    """

    __slots__ = ("column_block", "metadata_id")

    def __init__(self) -> None:
        self.metadata_id: bytes | None = None
        """The result-metadata id (SCYLLA_USE_METADATA_ID) of the columns."""
        self.column_block: tuple[bool, bytes] | None = None
        """Whether the columns share one table, and their encoded specs."""


@dataclass(slots=True)
class RowsMetadata:
    """Result columns plus the paging state of this page.

    Build one per statement and make each page's copy with `with_paging_state`: the copies share
    `wire`, so what the protocol derives from the columns is derived once per statement, which
    matters on the EXECUTE hot path.
    """

    columns: list[ColumnSpec]
    paging_state: bytes | None = None
    wire: WireMemo | None = field(default=None, repr=False, compare=False)

    def with_paging_state(self, paging_state: bytes | None) -> RowsMetadata:
        """The same columns (sharing the protocol's memo) for another page."""
        memo = self.wire
        if memo is None:  # made here, on the statement's own metadata, so every later copy shares it
            memo = self.wire = WireMemo()
        return RowsMetadata(self.columns, paging_state, memo)


@dataclass(slots=True)
class ResultBase:
    """What any result may carry besides its body: warnings for the client and a custom payload
    (e.g. `tablets-routing-v1` hints), both of which the protocol sends in the frame."""

    custom_payload: dict[str, bytes | None] | None = field(default=None, kw_only=True)
    warnings: list[str] | None = field(default=None, kw_only=True)


@dataclass(slots=True)
class VoidResult(ResultBase):
    """A statement that answers nothing (writes, DDL that changed nothing, ...)."""


@dataclass(slots=True)
class RowsResult(ResultBase):
    """One page of rows: each row a list of serialized cells (None = null)."""

    metadata: RowsMetadata = field(default_factory=lambda: RowsMetadata([]))
    rows: list[list[bytes | None]] = field(default_factory=list)


@dataclass(slots=True)
class SetKeyspaceResult(ResultBase):
    """`USE keyspace`: the connection's keyspace becomes `keyspace`."""

    keyspace: str = ""


@dataclass(slots=True)
class PreparedResult(ResultBase):
    """The answer to PREPARE. `pk_indexes` are bind positions of the partition key components, in
    partition-key order; the protocol sends them only when all bind columns come from one table."""

    id: bytes = b""
    bind_columns: list[ColumnSpec] = field(default_factory=list)
    pk_indexes: list[int] = field(default_factory=list)
    result_metadata: RowsMetadata = field(default_factory=lambda: RowsMetadata([]))
    is_lwt: bool = False


@dataclass(slots=True)
class SchemaChangeResult(ResultBase):
    """change: CREATED/UPDATED/DROPPED; target: KEYSPACE/TABLE/TYPE/FUNCTION/AGGREGATE."""

    change: str = "CREATED"
    target: str = "KEYSPACE"
    keyspace: str = ""
    name: str | None = None
    arg_types: list[str] | None = None


Result = VoidResult | RowsResult | SetKeyspaceResult | PreparedResult | SchemaChangeResult
"""Every kind of result a statement can answer with."""
