"""A WHERE clause split the way storage can use it: partitions, token range, clustering slices,
and the rest (filters, which need ALLOW FILTERING on a SELECT and are refused on writes).

Values are bound and serialized here; every error names the column, as Cassandra's do.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import BIGINT, CqlType, ListType, TupleType
from tabletdb.cql.values import Unset
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN
from tabletdb.schema.model import ClusteringOrder, ColumnDef, TableDef
from tabletdb.statements.keys import clustering_bound, encode_clustering, partition_key
from tabletdb.statements.slices import TupleBound, intersect, is_mixed, mixed_order_slices
from tabletdb.statements.terms import Bindings, term_bytes, term_value
from tabletdb.storage.mutation import Bound, ClusteringSlice

Row = dict[str, Any]


@dataclass
class Restrictions:
    partition_keys: list[list[bytes]] | None = None
    """Every partition key (serialized components) the WHERE clause names; None: not pinned."""
    token_start: int = MIN_TOKEN
    token_start_inclusive: bool = False
    token_end: int = MAX_TOKEN
    clustering_prefixes: list[list[bytes]] = field(default_factory=lambda: [[]])
    """Equality/IN prefixes of the clustering key (cartesian product, in CQL order)."""
    lower: tuple[list[bytes], bool] | None = None
    """(values, inclusive) of a range start after the prefix, single- or multi-column."""
    upper: tuple[list[bytes], bool] | None = None
    more_bounds: list[tuple[int, TupleBound | None, TupleBound | None]] = field(default_factory=list)
    """Further slice restrictions (position of their first column, lower, upper) the rows must
    also meet: a second range on a column, or a range on a column also restricted by ``=``."""
    filters: list[Callable[[Row], bool]] = field(default_factory=list)
    filtered_columns: list[str] = field(default_factory=list)
    has_token: bool = False

    @property
    def full_clustering(self) -> int:
        return len(self.clustering_prefixes[0]) if self.clustering_prefixes else 0

    def slices(self, table: TableDef) -> list[ClusteringSlice]:
        """The clustering slices selected, as byte ranges in storage (clustering) order."""
        out = []
        for prefix in sorted(self.clustering_prefixes, key=lambda p: encode_clustering(table, p)):
            pieces = _bounded(table, prefix, self.lower, self.upper)
            for position, lower, upper in self.more_bounds:
                pieces = intersect(pieces, _bounded(table, prefix[:position], lower, upper))
            out.extend(pieces)
        return out

    def clustering_keys(self, table: TableDef) -> list[bytes]:
        return sorted({encode_clustering(table, p) for p in self.clustering_prefixes})


def _bounded(
    table: TableDef, prefix: list[bytes], lower: TupleBound | None, upper: TupleBound | None
) -> list[ClusteringSlice]:
    """Keys starting with ``prefix`` whose next columns lie within the bounds, as storage slices.

    A range on a DESC column is stored inverted, so its value bounds swap ends: ``c > v``
    becomes "bytes before enc(v)".
    """
    if is_mixed(table, len(prefix), (lower, upper)):
        return mixed_order_slices(table, prefix, lower, upper)
    if _range_descending(table, len(prefix), lower, upper):
        lower, upper = upper, lower
    lo = clustering_bound(
        table, prefix + (lower[0] if lower else []), lower=True, inclusive=lower[1] if lower else True
    )
    hi = clustering_bound(
        table, prefix + (upper[0] if upper else []), lower=False, inclusive=upper[1] if upper else True
    )
    start = None if not lo else Bound(lo, inclusive=True)
    end = None if hi == b"\x60" else Bound(hi, inclusive=False)
    return [ClusteringSlice(start, end)]


def _range_descending(
    table: TableDef, position: int, lower: TupleBound | None, upper: TupleBound | None
) -> bool:
    if lower is None and upper is None:
        return False
    width = max(len(lower[0]) if lower else 0, len(upper[0]) if upper else 0)
    orders = {
        c.clustering_order is ClusteringOrder.DESC for c in table.clustering_key[position : position + width]
    }
    return orders == {True}


def _bytes(term: ast.Term, t: CqlType, name: str, bindings: Bindings) -> bytes | None:
    value = term_bytes(term, t, name, bindings)
    if isinstance(value, Unset):
        raise InvalidRequest(f"Invalid unset value for column {name}")
    return value


def _in_list(rhs: ast.Term | ast.InValues, col: ColumnDef, bindings: Bindings) -> list[bytes]:
    if isinstance(rhs, ast.InValues):
        items = [_bytes(item, col.type, col.name, bindings) for item in rhs.items]
    else:
        raw = term_value(rhs, ListType(col.type), col.name, bindings)
        if isinstance(raw, Unset):
            raise InvalidRequest(f"Invalid unset value for column {col.name}")
        items = [codec.serialize(col.type, v) for v in (raw or ())]
    out: list[bytes] = []
    for item in items:
        if item is None:
            raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
        if item not in out:
            out.append(item)
    return out


def single_value(
    rhs: ast.Term | ast.InValues, col: ColumnDef, bindings: Bindings, keep: bool = True
) -> bytes:
    """The serialized value of ``col = rhs``, refused if null or unset. A marker (every key of a
    prepared statement is one) is read in this one call: it is on every write's and read's path.
    ``keep`` as ``Bindings.validated``'s."""
    if isinstance(rhs, ast.BindMarker):
        value = bindings.validated(rhs, col.type, keep)
        if isinstance(value, Unset):
            raise InvalidRequest(f"Invalid unset value for column {col.name}")
    elif isinstance(rhs, ast.InValues):
        raise InvalidRequest(f"A list of values is only allowed with IN (column {col.name})")
    else:
        value = _bytes(rhs, col.type, col.name, bindings)
    if value is None:
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    return value


def _eq_values(rel: ast.Relation, col: ColumnDef, bindings: Bindings, keep: bool) -> list[bytes]:
    """The values ``col = v`` or ``col IN (...)`` allows."""
    if rel.op == "=":
        return [single_value(rel.rhs, col, bindings, keep)]
    return _in_list(rel.rhs, col, bindings)


def _restrict(allowed: dict[str, list[bytes]], name: str, values: list[bytes], narrow: bool) -> None:
    """Record the values a key column may take; a second ``=``/``IN`` on it narrows them to the
    values both allow when ``narrow`` (a SELECT: ScyllaDB's ``a = 1 AND a = 2`` selects nothing)
    and is refused otherwise (a write names the rows it writes, once)."""
    if name in allowed:
        if not narrow:
            raise InvalidRequest(
                f"{name} cannot be restricted by more than one relation if it includes an Equal"
            )
        values = [v for v in allowed[name] if v in values]
    allowed[name] = values


def analyze(
    where: Sequence[ast.Relation],
    table: TableDef,
    bindings: Bindings,
    make_filter: FilterFactory,
    keep: bool = True,
    narrow: bool = False,
) -> Restrictions:
    """The WHERE clause split for storage, every other relation a filter from ``make_filter``.
    ``keep`` (``Bindings.validated``'s): False where no filter can read a key's marker again.
    ``narrow``: a repeated equality on a key column selects the values both allow (SELECT)."""
    r = Restrictions()
    pk_values: dict[str, list[bytes]] = {}
    pk_relations: list[ast.Relation] = []
    ck_eq: dict[str, list[bytes]] = {}
    ck_range: dict[str, list[tuple[str, bytes]]] = {}
    multi: list[ast.Relation] = []
    for rel in where:
        lhs = rel.lhs
        if isinstance(lhs, ast.TokenOf):
            _token_restriction(r, rel, table, bindings)
            continue
        if isinstance(lhs, ast.ColumnTuple):
            multi.append(rel)
            continue
        if not isinstance(lhs, ast.ColumnRef):
            r.filters.append(make_filter(rel, table, bindings))
            r.filtered_columns.append(lhs.column)
            continue
        col = table.column(lhs.name)
        if col is None:
            raise InvalidRequest(f"Undefined column name {lhs.name}")
        if col in table.partition_key and rel.op in ("=", "IN"):
            pk_relations.append(rel)
            _restrict(pk_values, col.name, _eq_values(rel, col, bindings, keep), narrow)
        elif col in table.clustering_key and rel.op in ("=", "IN"):
            _restrict(ck_eq, col.name, _eq_values(rel, col, bindings, keep), narrow)
        elif col in table.clustering_key and rel.op in ("<", "<=", ">", ">="):
            ck_range.setdefault(col.name, []).append((rel.op, single_value(rel.rhs, col, bindings, keep)))
        else:
            r.filters.append(make_filter(rel, table, bindings))
            r.filtered_columns.append(col.name)
    if pk_values:
        missing = [c.name for c in table.partition_key if c.name not in pk_values]
        if missing:
            for rel in pk_relations:
                r.filters.append(make_filter(rel, table, bindings))
                assert isinstance(rel.lhs, ast.ColumnRef)
                r.filtered_columns.append(rel.lhs.name)
        else:
            combos = itertools.product(*(pk_values[c.name] for c in table.partition_key))
            r.partition_keys = [list(c) for c in combos]
    _clustering(r, table, ck_eq, ck_range, multi, bindings, make_filter)
    if not r.clustering_prefixes:  # two equalities on a clustering column no value meets
        if r.partition_keys is not None:
            r.partition_keys = []
        else:
            r.filters.append(lambda _row: False)
            r.filtered_columns.append(table.clustering_key[0].name)
    return r


FilterFactory = Callable[[ast.Relation, TableDef, Bindings], Callable[[Row], bool]]


def _clustering(
    r: Restrictions,
    table: TableDef,
    ck_eq: dict[str, list[bytes]],
    ck_range: dict[str, list[tuple[str, bytes]]],
    multi: list[ast.Relation],
    bindings: Bindings,
    make_filter: FilterFactory,
) -> None:
    prefixes: list[list[bytes]] = [[]]
    columns = list(table.clustering_key)
    i = 0
    while i < len(columns) and columns[i].name in ck_eq:
        options = ck_eq.pop(columns[i].name)
        prefixes = [[*p, v] for v in options for p in prefixes]
        i += 1
    r.clustering_prefixes = prefixes
    if multi:
        _multi_column(r, table, i, multi, bindings)
        return
    for position in range(min(i + 1, len(columns))):
        for op, value in ck_range.pop(columns[position].name, []):
            bound = ([value], op in (">=", "<="))
            lower = op in (">", ">=")
            if position == i and (r.lower if lower else r.upper) is None:
                if lower:
                    r.lower = bound
                else:
                    r.upper = bound
            else:
                r.more_bounds.append((position, bound if lower else None, None if lower else bound))
    for name in list(ck_eq) + list(ck_range):
        raise InvalidRequest(
            f'PRIMARY KEY column "{name}" cannot be restricted as preceding column '
            f'"{columns[i].name if i < len(columns) else name}" is not restricted'
        )


def _multi_column(
    r: Restrictions, table: TableDef, start: int, multi: list[ast.Relation], bindings: Bindings
) -> None:
    for rel in multi:
        assert isinstance(rel.lhs, ast.ColumnTuple)
        names = list(rel.lhs.columns)
        expected = [c.name for c in table.clustering_key[start : start + len(names)]]
        if names != expected:
            raise InvalidRequest(
                f"Clustering columns must appear in the PRIMARY KEY order in multi-column relations: {names}"
            )
        types = [c.type for c in table.clustering_key[start : start + len(names)]]
        tuple_type = TupleType(tuple(types))

        def components(
            term: ast.Term,
            names: list[str] = names,
            types: list[CqlType] = types,
            tuple_type: TupleType = tuple_type,
        ) -> list[bytes]:
            value = term_value(term, tuple_type, "(" + ",".join(names) + ")", bindings)
            if value is None or isinstance(value, Unset):
                raise InvalidRequest(f"Invalid null value in condition for columns {names}")
            return [codec.serialize(t, v) for t, v in zip(types, value)]

        if rel.op == "IN":
            assert isinstance(rel.rhs, ast.InValues)
            r.clustering_prefixes = [
                p + components(item) for p in r.clustering_prefixes for item in rel.rhs.items
            ]
        elif rel.op == "=":
            assert not isinstance(rel.rhs, ast.InValues)
            r.clustering_prefixes = [p + components(rel.rhs) for p in r.clustering_prefixes]
        else:
            assert not isinstance(rel.rhs, ast.InValues)
            bound = (components(rel.rhs), rel.op in (">=", "<="))
            lower = rel.op in (">", ">=")
            if (r.lower if lower else r.upper) is None:
                if lower:
                    r.lower = bound
                else:
                    r.upper = bound
            else:
                r.more_bounds.append((start, bound if lower else None, None if lower else bound))


def _token_restriction(r: Restrictions, rel: ast.Relation, table: TableDef, bindings: Bindings) -> None:
    assert isinstance(rel.lhs, ast.TokenOf)
    if list(rel.lhs.columns) != [c.name for c in table.partition_key]:
        raise InvalidRequest(
            "The token() function must be applied to all partition key components or none of them"
        )
    if isinstance(rel.rhs, ast.InValues):
        raise InvalidRequest("IN is not supported on token()")
    value = _token_term(rel.rhs, table, bindings)
    if value is None or isinstance(value, Unset):
        raise InvalidRequest("Invalid null value for partition key token")
    token = int(value)
    r.has_token = True
    if rel.op in (">", ">="):
        r.token_start = token if rel.op == ">" else token - 1
        if token == MIN_TOKEN and rel.op == ">=":
            r.token_start = MIN_TOKEN
    elif rel.op in ("<", "<="):
        r.token_end = token if rel.op == "<=" else token - 1
    elif rel.op == "=":
        r.token_start, r.token_end = token - 1, token
    else:
        raise InvalidRequest(f"Unsupported restriction {rel.op} on token()")


def _token_term(term: ast.Term, table: TableDef, bindings: Bindings) -> Any:
    """A token bound: a bigint, or ``token(v1, ...)`` of partition key values (Cassandra accepts both)."""
    is_token = isinstance(term, ast.FunctionCall) and term.name.lower() == "token"
    if isinstance(term, ast.FunctionCall) and is_token and term.keyspace in (None, "system"):
        columns = table.partition_key
        if len(term.args) != len(columns):
            raise InvalidRequest(
                f"Invalid number of arguments in call to function token: {len(columns)} required "
                f"but {len(term.args)} provided"
            )
        args = [a for a in term.args if not isinstance(a, ast.ColumnRef | ast.ElementRef | ast.FieldRef)]
        if len(args) != len(term.args) or any(isinstance(a, ast.Cast | ast.CountRows) for a in args):
            raise InvalidRequest("The arguments of token() in a restriction must be values")
        raw = [_bytes(arg, c.type, c.name, bindings) for arg, c in zip(args, columns)]  # type: ignore[arg-type]
        if any(v is None for v in raw):
            raise InvalidRequest("Invalid null value for partition key token")
        return partition_key(table, [v for v in raw if v is not None])[1]
    return term_value(term, BIGINT, "partition key token", bindings)


def filtering_columns(r: Restrictions, table: TableDef) -> list[str]:
    """Columns whose restriction makes a SELECT filter (needing ALLOW FILTERING unless indexed):
    the filters, plus clustering restrictions when the partitions are not pinned."""
    out = list(r.filtered_columns)
    if r.partition_keys is None:
        widths = [r.full_clustering]
        widths += [r.full_clustering + len(b[0]) for b in (r.lower, r.upper) if b is not None]
        out += [c.name for c in table.clustering_key[: max(widths)]]
    return out
