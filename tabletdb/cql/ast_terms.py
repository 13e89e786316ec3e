"""Term, selector and clause objects of the CQL AST (statements: `ast_statements`).

Everything here is a frozen dataclass built only from str/int/bool/None, tuples and other
ast/type objects, so parsed statements are hashable, shareable between requests (the parser
caches them by text) and safe to put in a prepared-statement cache.

Conventions the executor can rely on:
- identifiers are already normalised: unquoted ones lower-cased, quoted ones verbatim;
- a `QualifiedName.keyspace` of None means "the keyspace in USE";
- optional clauses that were not written are None (or an empty tuple for lists);
- `{}` is ambiguous between an empty set and an empty map; it is always a `MapLiteral` with no
  pairs, and the value converter treats that as an empty set when the target type is a set.

Import from `tabletdb.cql.ast`, which re-exports this module and the statement classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from tabletdb.cql.types import CqlType

# ---------------------------------------------------------------------------------------- names


@dataclass(frozen=True)
class QualifiedName:
    """`ks.name` or bare `name` (keyspace None: resolved against the session's USE keyspace)."""

    keyspace: str | None
    name: str

    def __str__(self) -> str:
        from tabletdb.cql.identifiers import quote_identifier

        bare = quote_identifier(self.name)
        return bare if self.keyspace is None else f"{quote_identifier(self.keyspace)}.{bare}"


# ---------------------------------------------------------------------------------------- terms

LITERAL_KINDS = frozenset({"string", "integer", "float", "boolean", "uuid", "hex", "duration"})


@dataclass(frozen=True)
class Literal:
    """A constant as written. `text` is the source spelling, except for strings, where it is the
    unescaped value (quotes removed, `''` undone, `$$` bodies verbatim). Integers and floats keep
    their sign; NaN / Infinity / -Infinity are kind 'float'; hex keeps its `0x` prefix."""

    kind: str
    text: str

    def __post_init__(self) -> None:
        if self.kind not in LITERAL_KINDS:
            raise ValueError(f"unknown literal kind {self.kind!r}")


@dataclass(frozen=True)
class Null:
    """The `null` literal."""


@dataclass(frozen=True)
class BindMarker:
    """`?` (name None) or `:name`. `index` counts markers from 0 across the whole statement
    (a BATCH included), in the order they appear in the text."""

    index: int
    name: str | None = None


@dataclass(frozen=True)
class ListLiteral:
    items: tuple[Term, ...]


@dataclass(frozen=True)
class SetLiteral:
    items: tuple[Term, ...]


@dataclass(frozen=True)
class MapLiteral:
    """`{k: v, ...}`; also `{}` (see module docstring)."""

    pairs: tuple[tuple[Term, Term], ...]


@dataclass(frozen=True)
class TupleLiteral:
    items: tuple[Term, ...]


@dataclass(frozen=True)
class UdtLiteral:
    """`{field: term, ...}` with identifier keys."""

    fields: tuple[tuple[str, Term], ...]


@dataclass(frozen=True)
class FunctionCall:
    """`f(args)`, `ks.f(args)`, also `token(...)`, `now()`, `writetime(c)`, `ttl(c)`.

    In selectors the args are selector expressions (`Expr`); in terms they are terms.
    """

    keyspace: str | None
    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class TypeCast:
    """A type hint on a term: `(int) ?`, `(text) 'x'`."""

    type: CqlType
    term: Term


Term: TypeAlias = (
    Literal
    | Null
    | BindMarker
    | ListLiteral
    | SetLiteral
    | MapLiteral
    | TupleLiteral
    | UdtLiteral
    | FunctionCall
    | TypeCast
)

# ------------------------------------------------------------------ column references / selectors


@dataclass(frozen=True)
class ColumnRef:
    name: str


@dataclass(frozen=True)
class ElementRef:
    """`m['k']` / `l[2]`: one element of a collection column."""

    column: str
    key: Term


@dataclass(frozen=True)
class FieldRef:
    """`u.f`: one field of a UDT column."""

    column: str
    field: str


@dataclass(frozen=True)
class ColumnTuple:
    """`(a, b)` on the left of a multi-column relation."""

    columns: tuple[str, ...]


@dataclass(frozen=True)
class TokenOf:
    """`token(a, b)` on the left of a relation."""

    columns: tuple[str, ...]


@dataclass(frozen=True)
class Cast:
    """`cast(expr AS type)` in a selector."""

    expr: Expr
    type: CqlType


@dataclass(frozen=True)
class CountRows:
    """`count(*)` (and `COUNT(1)` is an ordinary FunctionCall)."""


Expr: TypeAlias = Term | ColumnRef | ElementRef | FieldRef | Cast | CountRows


@dataclass(frozen=True)
class Selector:
    expr: Expr
    alias: str | None = None


# ------------------------------------------------------------------------- relations, clauses

RELATION_OPERATORS = frozenset(
    {"=", "!=", "<", "<=", ">", ">=", "IN", "CONTAINS", "CONTAINS KEY", "LIKE", "IS NOT"}
)


@dataclass(frozen=True)
class InValues:
    """The parenthesised list after IN: `IN (1, 2)`, `IN ((1, 2), (3, 4))`, `IN ()`."""

    items: tuple[Term, ...]


@dataclass(frozen=True)
class Relation:
    """One WHERE restriction or IF condition.

    `op` is one of RELATION_OPERATORS. For IN the rhs is InValues or a BindMarker (`IN ?`);
    for `IS NOT` it is Null. For a ColumnTuple lhs the rhs is a TupleLiteral or BindMarker
    (or InValues of them).
    """

    lhs: ColumnRef | ElementRef | FieldRef | ColumnTuple | TokenOf
    op: str
    rhs: Term | InValues

    def __post_init__(self) -> None:
        if self.op not in RELATION_OPERATORS:
            raise ValueError(f"unknown relation operator {self.op!r}")


@dataclass(frozen=True)
class Ordering:
    """`col ASC|DESC` (ORDER BY, CLUSTERING ORDER BY), or `col ANN OF vector` (ann set)."""

    column: str
    ascending: bool = True
    ann_of: Term | None = None


@dataclass(frozen=True)
class Attributes:
    """USING TTL / TIMESTAMP / TIMEOUT; each None when not given."""

    ttl: Term | None = None
    timestamp: Term | None = None
    timeout: Term | None = None


@dataclass(frozen=True)
class Properties:
    """`WITH a = x AND b = {...}` options in written order; names lower-cased identifiers."""

    items: tuple[tuple[str, Term], ...] = ()

    def get(self, name: str) -> Term | None:
        for key, value in self.items:
            if key == name:
                return value
        return None

    def names(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.items)

    def __contains__(self, name: object) -> bool:
        return any(key == name for key, _ in self.items)

    def __len__(self) -> int:
        return len(self.items)


NO_ATTRIBUTES = Attributes()
NO_PROPERTIES = Properties()


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type: CqlType
    static: bool = False


__all__ = [
    "LITERAL_KINDS",
    "NO_ATTRIBUTES",
    "NO_PROPERTIES",
    "RELATION_OPERATORS",
    "Attributes",
    "BindMarker",
    "Cast",
    "ColumnDef",
    "ColumnRef",
    "ColumnTuple",
    "CountRows",
    "ElementRef",
    "Expr",
    "FieldRef",
    "FunctionCall",
    "InValues",
    "ListLiteral",
    "Literal",
    "MapLiteral",
    "Null",
    "Ordering",
    "Properties",
    "QualifiedName",
    "Relation",
    "Selector",
    "SetLiteral",
    "Term",
    "TokenOf",
    "TupleLiteral",
    "TypeCast",
    "UdtLiteral",
]
