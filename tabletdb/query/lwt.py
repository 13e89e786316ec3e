"""Lightweight transactions on one node: read, check the IF clause, write — under the partition's lock.

On a single node, holding the partition's lock from the read until the write is durable gives the
same linearizable outcome Paxos gives a cluster. The result follows Cassandra: ``[applied]``, and
when not applied the current values (the whole row for IF NOT EXISTS, the columns the conditions
name otherwise; nothing when IF EXISTS finds no row).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import BOOLEAN, CqlType, ListType, MapType
from tabletdb.protocol.metadata import ColumnSpec, RowsMetadata
from tabletdb.protocol.responses import RowsResult
from tabletdb.query.read_rows import partition_rows
from tabletdb.query.terms import Bindings, term_value
from tabletdb.query.virtual_select import _predicate
from tabletdb.query.write_execute import WriteExecutor
from tabletdb.query.write_keys import partition_key
from tabletdb.query.write_statements import where_of
from tabletdb.schema.model import ColumnDef, TableDef
from tabletdb.storage.mutation import Bound, ClusteringSlice, Mutation

Row = dict[str, Any]
Modification = ast.InsertStatement | ast.UpdateStatement | ast.DeleteStatement


def is_conditional(stmt: ast.Statement) -> bool:
    if isinstance(stmt, ast.InsertStatement):
        return stmt.if_not_exists
    if isinstance(stmt, ast.UpdateStatement | ast.DeleteStatement):
        return stmt.if_exists or bool(stmt.conditions)
    return False


def _target(stmt: Modification, table: TableDef, bindings: Bindings) -> tuple[bytes, int, bytes | None]:
    """The one partition (and row) a conditional statement may touch."""
    if isinstance(stmt, ast.InsertStatement):
        values = dict(zip(stmt.columns, stmt.values))
        if stmt.json is not None:
            raise InvalidRequest("INSERT JSON ... IF NOT EXISTS is not supported by this node yet")
        pk = [_key(table, c, values, bindings) for c in table.partition_key]
        ck = [_key(table, c, values, bindings) for c in table.clustering_key]
        from tabletdb.query.write_keys import encode_clustering

        key, token = partition_key(table, pk)
        return key, token, encode_clustering(table, ck) if table.clustering_key else b""
    r = where_of(stmt.where, table, bindings)
    assert r.partition_keys is not None
    if len(r.partition_keys) != 1:
        raise InvalidRequest("IN on the partition key is not supported with conditional updates")
    key, token = partition_key(table, r.partition_keys[0])
    if not table.clustering_key:
        return key, token, b""
    keys = r.clustering_keys(table) if r.full_clustering == len(table.clustering_key) else []
    if len(keys) != 1 or r.lower is not None or r.upper is not None:
        if isinstance(stmt, ast.DeleteStatement) and not stmt.targets and r.full_clustering == 0:
            return key, token, None
        raise InvalidRequest("IN on the clustering key columns is not supported with conditional updates")
    return key, token, keys[0]


def _key(table: TableDef, col: ColumnDef, values: dict[str, ast.Term], bindings: Bindings) -> bytes:
    term = values.get(col.name)
    if term is None:
        raise InvalidRequest(f"Some partition key parts are missing: {col.name}")
    value = term_value(term, col.type, col.name, bindings)
    if value is None:
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    return codec.serialize(col.type, value)


def _current_row(
    writer: WriteExecutor, table: TableDef, key: bytes, token: int, ck: bytes | None
) -> Row | None:
    store = writer.stores.store(table, token)
    slice_ = (
        ClusteringSlice() if ck is None or not table.clustering_key else ClusteringSlice(Bound(ck), Bound(ck))
    )
    data = store.read_partition(key, writer.now_seconds(), slice_, limit=1)
    if data is None:
        return None
    for row in partition_rows(table, data, None, static_only_row=True):
        return row.values
    return None


def _element_predicate(
    rel: ast.Relation, table: TableDef, bindings: Bindings
) -> tuple[str, Callable[[Row], bool]]:
    assert isinstance(rel.lhs, ast.ElementRef)
    col = table.column(rel.lhs.column)
    if col is None:
        raise InvalidRequest(f"Undefined column name {rel.lhs.column}")
    t = col.type
    key_type: CqlType
    if isinstance(t, MapType):
        key_type, value_type = t.key, t.value
    elif isinstance(t, ListType):
        key_type, value_type = codec_int(), t.element
    else:
        raise InvalidRequest(f"Invalid element access on non-collection column {col.name}")
    wanted_key = term_value(rel.lhs.key, key_type, col.name, bindings)
    check = _predicate(
        "element", value_type, ast.Relation(ast.ColumnRef("element"), rel.op, rel.rhs), bindings
    )

    def predicate(row: Row) -> bool:
        current = row.get(col.name) or ()
        if isinstance(t, MapType):
            element = dict(current).get(wanted_key)
        else:
            element = current[wanted_key] if 0 <= int(wanted_key) < len(current) else None
        return check({"element": element})

    return col.name, predicate


def codec_int() -> CqlType:
    from tabletdb.cql.types import INT

    return INT


async def execute_conditional(
    writer: WriteExecutor,
    stmt: Modification,
    table: TableDef,
    bindings: Bindings,
    timestamp: int | None,
    write: Callable[[TableDef, Sequence[Mutation]], Awaitable[None]],
) -> RowsResult:
    """``write`` applies the mutations durably (and keeps views up to date).

    Only USING TIMESTAMP is refused: drivers send a protocol-level default timestamp with every
    request, and Cassandra and ScyllaDB ignore it for conditional statements (their write time
    comes from the Paxos ballot), so ``timestamp`` is deliberately unused here.
    """
    del timestamp
    if stmt.attributes.timestamp is not None:
        raise InvalidRequest("Cannot provide custom timestamp for conditional updates")
    key, token, ck = _target(stmt, table, bindings)
    async with writer.lock(table, key):
        current = _current_row(writer, table, key, token, ck)
        applied, shown = _evaluate(stmt, table, bindings, current)
        if applied:
            mutations = writer.mutations_for(stmt, table, bindings, None)
            await write(table, mutations)
    return _result(table, applied, shown, current)


def _evaluate(
    stmt: Modification, table: TableDef, bindings: Bindings, current: Row | None
) -> tuple[bool, list[ColumnDef]]:
    if isinstance(stmt, ast.InsertStatement):
        return current is None, list(table.columns)
    if stmt.if_exists:
        return current is not None, list(table.columns)
    shown: list[ColumnDef] = []
    checks: list[Callable[[Row], bool]] = []
    for rel in stmt.conditions:
        if isinstance(rel.lhs, ast.ElementRef):
            name, check = _element_predicate(rel, table, bindings)
        elif isinstance(rel.lhs, ast.ColumnRef):
            col = table.column(rel.lhs.name)
            if col is None:
                raise InvalidRequest(f"Undefined column name {rel.lhs.name}")
            if col.is_primary_key:
                raise InvalidRequest(f"PRIMARY KEY column '{col.name}' cannot have IF conditions")
            name, check = col.name, _predicate(col.name, col.type, rel, bindings)
        else:
            raise InvalidRequest("Unsupported IF condition")
        checks.append(check)
        col_def = table.column(name)
        if col_def is not None and col_def not in shown:
            shown.append(col_def)
    row = current or {}
    return all(c(row) for c in checks), shown


def _result(table: TableDef, applied: bool, shown: list[ColumnDef], current: Row | None) -> RowsResult:
    columns = [ColumnSpec(table.keyspace, table.name, "[applied]", BOOLEAN)]
    values: list[bytes | None] = [codec.serialize(BOOLEAN, applied)]
    if not applied and current is not None:
        for col in shown:
            columns.append(ColumnSpec(table.keyspace, table.name, col.name, col.type))
            value = current.get(col.name)
            values.append(None if value is None else codec.serialize(col.type, value))
    return RowsResult(RowsMetadata(columns), [values])
