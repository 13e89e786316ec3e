"""A SELECT bound to one request's values: the read command that ``query``, ``views``, ``paxos``
and ``systables`` execute without ever seeing the values' bytes.

Binding is lazy and each part is bound once, so a request pays for what it executes: the direct
point read binds its partition key and nothing else, the general read its restrictions (filters
included, kept for a serial read's Paxos barrier and the read after it), an index read also the
value it seeks (decoded once: its marker's value is shared with the filter on the same column).
Errors come in the order the executor asks for the parts, which is the order they always had.
"""

from __future__ import annotations

from collections.abc import Sequence

from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import INT, MapType, TupleType
from tabletdb.cql.values import Unset, Value
from tabletdb.schema.index_table import indexed_value_type
from tabletdb.schema.model import ColumnDef, KeyspaceSchema, TableDef
from tabletdb.statements.relations import BoundRelation, bind_relation, select_filter
from tabletdb.statements.restrictions import Restrictions, analyze, single_value
from tabletdb.statements.terms import Bindings, term_bytes, term_value
from tabletdb.statements.user_terms import term_functions


class BoundSelect:
    """A SELECT on ``table`` bound to a request's values (by marker position), with the request's
    paging options."""

    __slots__ = (
        "_bindings",
        "_key",
        "_restrictions",
        "page_size",
        "paging_state",
        "routines",
        "statement",
        "table",
    )

    def __init__(
        self,
        statement: ast.SelectStatement,
        table: TableDef,
        values: Sequence[Value],
        page_size: int | None = None,
        paging_state: bytes | None = None,
        routines: KeyspaceSchema | None = None,
    ) -> None:
        self.statement = statement
        self.table = table
        self.routines = routines
        """The table's keyspace, whose user-defined functions and aggregates the select list may call."""
        self.page_size = page_size
        """Rows per page the client asked for (None or <= 0: one page)."""
        self.paging_state = paging_state
        """Where the previous page stopped (None: the first page)."""
        self._bindings = Bindings(values, term_functions(routines))
        self._key: list[bytes] | None = None
        self._restrictions: Restrictions | None = None

    def key_components(self, equalities: Sequence[tuple[ColumnDef, ast.Term]]) -> list[bytes]:
        """The serialized values of the WHERE clause's ``column = term`` relations ``equalities``
        (all of them: a point read's partition key), refused as ``restrictions`` refuses them
        (null, unset). Bound once: the general read after a direct one that could not answer
        (a key other replicas hold) reads them again."""
        if self._key is None:
            bindings = self._bindings
            key = []  # a loop, not a comprehension: one frame fewer on the point read's path
            for col, term in equalities:
                key.append(single_value(term, col, bindings, False))  # nothing else reads them
            self._key = key
        return self._key

    def restrictions(self) -> Restrictions:
        """The WHERE clause split for storage, with every other restriction a row filter."""
        if self._restrictions is None:
            self._restrictions = analyze(
                self.statement.where, self.table, self._bindings, select_filter, narrow=True
            )
        return self._restrictions

    def index_value(self, rel: ast.Relation, column: ColumnDef, kind: str) -> bytes:
        """What an index of ``kind`` on ``column`` holds for the value ``rel`` seeks (empty when
        no entry can hold it); a null or unset value is refused."""
        value: Value
        if kind == "entries":
            assert isinstance(rel.lhs, ast.ElementRef) and not isinstance(rel.rhs, ast.InValues)
            value = _entry_bytes(column, rel.lhs.key, rel.rhs, self._bindings)
        else:
            assert not isinstance(rel.rhs, ast.InValues)
            value = term_bytes(rel.rhs, indexed_value_type(column.type, kind), column.name, self._bindings)
        if value is None or isinstance(value, Unset):
            what = "null" if value is None else "unset"
            raise InvalidRequest(f"Unsupported {what} value for column {column.name}")
        return value

    def relation(self, rel: ast.Relation, column: ColumnDef) -> BoundRelation:
        """One relation of the WHERE clause on ``column``, bound on its own (the virtual tables
        filter rows relation by relation)."""
        return bind_relation(column.name, column.type, rel, self._bindings)

    def limit(self) -> int | None:
        """LIMIT, None without one."""
        return _positive(self.statement.limit, self._bindings, "LIMIT")

    def per_partition_limit(self) -> int | None:
        """PER PARTITION LIMIT, None without one."""
        return _positive(self.statement.per_partition_limit, self._bindings, "PER PARTITION LIMIT")


def _positive(term: ast.Term | None, bindings: Bindings, what: str) -> int | None:
    if term is None:
        return None
    value = term_value(term, INT, what, bindings)
    if value is None or not isinstance(value, int) or value <= 0:
        raise InvalidRequest(f"{what} must be strictly positive")
    return value


def _entry_bytes(column: ColumnDef, key: ast.Term, value: ast.Term, bindings: Bindings) -> bytes:
    """An ``entries`` index's value for ``m[key] = value``: the (key, value) tuple, serialized."""
    t = column.type
    assert isinstance(t, MapType)
    k = term_value(key, t.key, f"key({column.name})", bindings)
    v = term_value(value, t.value, f"value({column.name})", bindings)
    if k is None or v is None or isinstance(k, Unset) or isinstance(v, Unset):
        raise InvalidRequest(f"Unsupported null or unset value for column {column.name}")
    return codec.serialize(TupleType((t.key, t.value)), (k, v))
