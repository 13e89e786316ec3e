"""An INSERT, UPDATE or DELETE bound to one request's values: what ``coordinator``, ``paxos`` and
``query`` build mutations from, route, lock and check conditions with, never decoding a value.

Each part is bound once per request, when first asked for: the WHERE clause's restrictions (read
for the partitions a read-before-write locks, for a conditional statement's row, and again for
the mutations), the IF conditions (checked on every Paxos round's read), and each marker's value
per type (``Bindings``), which a retried Paxos round or a conditional batch, both building a
statement's mutations more than once, would otherwise decode again. Errors come in the order
they always had: the part asked for first fails first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import BIGINT
from tabletdb.cql.values import Unset, Value
from tabletdb.schema.model import ColumnDef, KeyspaceSchema, TableDef
from tabletdb.statements.conditions import BoundConditions, bind_conditions
from tabletdb.statements.keys import encode_clustering, partition_key
from tabletdb.statements.modifications import (
    CurrentCells,
    build_delete,
    build_insert,
    build_update,
    time_of,
    where_of,
)
from tabletdb.statements.restrictions import Restrictions
from tabletdb.statements.terms import Bindings, term_value
from tabletdb.statements.user_terms import term_functions
from tabletdb.storage.mutation import Mutation


class BoundModification:
    """A modification of ``table`` bound to a request's values (by marker position)."""

    __slots__ = ("_bindings", "_conditions", "_where", "statement", "table")

    def __init__(
        self,
        statement: ast.ModificationStatement,
        table: TableDef,
        values: Sequence[Value],
        routines: KeyspaceSchema | None = None,
    ) -> None:
        """``routines``: the table's keyspace, whose user-defined functions its terms may call."""
        self.statement = statement
        self.table = table
        self._bindings = Bindings(values, term_functions(routines))
        self._where: Restrictions | None = None
        self._conditions: BoundConditions | None = None

    def where(self) -> Restrictions:
        """The rows an UPDATE or DELETE names (every partition key column pinned)."""
        if self._where is None:
            stmt = self.statement
            assert not isinstance(stmt, ast.InsertStatement)  # its key is in its values
            self._where = where_of(stmt.where, self.table, self._bindings)
        return self._where

    def partitions(self) -> list[tuple[bytes, int]]:
        """The partitions an UPDATE or DELETE writes: (partition key, token) for each."""
        partition_keys = self.where().partition_keys
        assert partition_keys is not None  # ``where_of`` refuses a partial partition key
        return [partition_key(self.table, pk) for pk in partition_keys]

    def mutations(self, default_ts: int, now: int, current: CurrentCells) -> list[Mutation]:
        """Validated and built; raises before anything is written. USING TIMESTAMP overrides
        ``default_ts``; ``now`` (seconds) starts TTLs; ``current`` is where read-before-write
        operations (list index, list removal, counters) read."""
        stmt, table, bindings = self.statement, self.table, self._bindings
        when = time_of(stmt.attributes, table, bindings, default_ts, now)
        if isinstance(stmt, ast.InsertStatement):
            return build_insert(stmt, table, bindings, when)
        if isinstance(stmt, ast.UpdateStatement):
            return build_update(stmt, table, bindings, self.where(), when, current)
        return build_delete(stmt, table, bindings, self.where(), when, current)

    def write_timestamp(self, default_ts: int, now: int) -> int:
        """The timestamp ``mutations`` would stamp (USING TIMESTAMP or ``default_ts``), known
        before a read-modify-write reads (its leeway check, ``cdc.write_time``)."""
        return time_of(self.statement.attributes, self.table, self._bindings, default_ts, now).timestamp

    def conditions(self) -> BoundConditions:
        """The IF clause (IF NOT EXISTS for an INSERT) of a conditional statement."""
        if self._conditions is None:
            self._conditions = bind_conditions(self.statement, self.table, self._bindings)
        return self._conditions

    def conditional_target(self) -> tuple[bytes, int, bytes | None]:
        """The one partition and row a conditional statement may touch: (partition key, token,
        clustering key; None for a DELETE of whole partition)."""
        stmt, table = self.statement, self.table
        if isinstance(stmt, ast.InsertStatement):
            return _inserted_row(stmt, table, self._bindings)
        r = self.where()
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


def bind_batch(
    stmt: ast.BatchStatement,
    tables: Sequence[TableDef],
    values: Sequence[Value],
    default_ts: int | None,
    routines_of: Callable[[TableDef], KeyspaceSchema | None] = lambda table: None,
) -> tuple[list[BoundModification], int | None]:
    """A BATCH sent as one query text, its statements on ``tables`` (in order) bound to its values
    (markers are numbered across the batch), and its timestamp: ``BEGIN BATCH USING TIMESTAMP t``
    overrides the protocol's ``default_ts``."""
    bound = [BoundModification(s, t, values, routines_of(t)) for s, t in zip(stmt.statements, tables)]
    return bound, _batch_timestamp(stmt.attributes, Bindings(values), default_ts)


def _batch_timestamp(attributes: ast.Attributes, bindings: Bindings, default: int | None) -> int | None:
    if attributes.timestamp is None:
        return default
    value = term_value(attributes.timestamp, BIGINT, "[timestamp]", bindings)
    if value is None:
        raise InvalidRequest("Invalid null value of timestamp")
    return default if isinstance(value, Unset) else int(value)


def _inserted_row(stmt: ast.InsertStatement, table: TableDef, bindings: Bindings) -> tuple[bytes, int, bytes]:
    """The row an INSERT ... IF NOT EXISTS writes."""
    values = dict(zip(stmt.columns, stmt.values))
    if stmt.json is not None:
        raise InvalidRequest("INSERT JSON ... IF NOT EXISTS is not supported by this node yet")
    pk = [_key(table, c, values, bindings) for c in table.partition_key]
    ck = [_key(table, c, values, bindings) for c in table.clustering_key]
    key, token = partition_key(table, pk)
    return key, token, encode_clustering(table, ck) if table.clustering_key else b""


def _key(table: TableDef, col: ColumnDef, values: dict[str, ast.Term], bindings: Bindings) -> bytes:
    term = values.get(col.name)
    if term is None:
        raise InvalidRequest(f"Some partition key parts are missing: {col.name}")
    value = term_value(term, col.type, col.name, bindings)
    if value is None:
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    return codec.serialize(col.type, value)
