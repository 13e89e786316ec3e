"""Grammar callbacks for names, types, terms, selectors and relations (see parser.py).

The parser runs these during LALR reductions (lark's inline transformer), so no parse tree
is ever built; each method is named after a rule or `-> alias` of cql.lark and receives
that rule's kept children in order (None for an optional part that was not written).
"""

from __future__ import annotations

from typing import Any

from lark import Token

from tabletdb.cql import ast
from tabletdb.cql import types as t
from tabletdb.cql.grammar.errors import fail
from tabletdb.cql.grammar.nesting import NestingChecks
from tabletdb.cql.identifiers import RESERVED_KEYWORDS


def unquote_string(token: str) -> str:
    """The value of a `'...'` or `$$...$$` literal."""
    if token.startswith("$$"):
        return token[2:-2]
    return token[1:-1].replace("''", "'")


def present(items: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop the None placeholders lark leaves for empty optional lists (`f()`, `IN ()`)."""
    return tuple(item for item in items if item is not None)


class TermCallbacks(NestingChecks):
    """Callbacks that build ast terms; owns the per-statement bind-marker counter and, through
    NestingChecks, the depths of the statement's types and terms."""

    def __init__(self) -> None:
        NestingChecks.__init__(self)
        self._marker_count = 0

    def reset_markers(self) -> None:
        """Start a statement afresh: markers count from 0 and no depths are remembered."""
        self._marker_count = 0
        self._forget_depths()

    # ----------------------------------------------------------------------------- names

    def bare_ident(self, token: Token) -> str:
        name = token.lower()
        if name in RESERVED_KEYWORDS:
            fail(f"no viable alternative at input '{token}'", token)
        return name

    def quoted_ident(self, token: Token) -> str:
        return token[1:-1].replace('""', '"')

    def keyword_ident(self, keyword: str) -> str:
        return keyword

    def unreserved_keyword(self, token: Token) -> str:
        return token.lower()

    def unqualified_name(self, name: str) -> ast.QualifiedName:
        return ast.QualifiedName(None, name)

    def keyspace_qualified_name(self, keyspace: str, name: str) -> ast.QualifiedName:
        return ast.QualifiedName(keyspace, name)

    def ident_list(self, *names: str) -> tuple[str, ...]:
        return names

    def role_name(self, name: str) -> str:
        if isinstance(name, Token) and name.type == "STRING":
            return unquote_string(name)
        return name

    # ----------------------------------------------------------------------------- types

    def simple_type(self, name: str) -> t.CqlType:
        if name in t.NATIVE_TYPE_NAMES or name in t.NATIVE_ALIASES:
            return t.native(name)
        return t.UserTypeRef(None, name)

    def qualified_type(self, keyspace: str, name: str) -> t.CqlType:
        return t.UserTypeRef(keyspace, name)

    def frozen_type(self, inner: t.CqlType) -> t.CqlType:
        if isinstance(inner, t.NativeType):
            fail(f"frozen<> is only allowed on collections, tuples, and user-defined types: {inner}")
        return self._same_type_depth(inner.frozen_form(), inner)

    def list_type(self, element: t.CqlType) -> t.CqlType:
        return self._nested_type(t.ListType(element), (element,))

    def set_type(self, element: t.CqlType) -> t.CqlType:
        return self._nested_type(t.SetType(element), (element,))

    def map_type(self, key: t.CqlType, value: t.CqlType) -> t.CqlType:
        return self._nested_type(t.MapType(key, value), (key, value))

    def tuple_type(self, *elements: t.CqlType) -> t.CqlType:
        return self._nested_type(t.TupleType(elements), elements)

    def vector_type(self, element: t.CqlType, dimension: Token) -> t.CqlType:
        size = int(dimension)
        if size <= 0:
            fail(f"vector dimension must be positive, got {size}", dimension)
        return self._nested_type(t.VectorType(element, size), (element,))

    def custom_type(self, token: Token) -> t.CqlType:
        return t.CustomType(unquote_string(token))

    def type_start(self, cql_type: t.CqlType) -> t.CqlType:
        return cql_type

    # ------------------------------------------------------------------------------ terms

    def string_literal(self, token: Token) -> ast.Literal:
        return ast.Literal("string", unquote_string(token))

    def integer_literal(self, token: Token) -> ast.Literal:
        return ast.Literal("integer", str(token))

    def float_literal(self, token: Token) -> ast.Literal:
        return ast.Literal("float", str(token))

    def nan_literal(self) -> ast.Literal:
        return ast.Literal("float", "NaN")

    def infinity_literal(self) -> ast.Literal:
        return ast.Literal("float", "Infinity")

    def neg_infinity_literal(self, _token: Token) -> ast.Literal:
        return ast.Literal("float", "-Infinity")

    def true_literal(self, _token: Token) -> ast.Literal:
        return ast.Literal("boolean", "true")

    def false_literal(self, _token: Token) -> ast.Literal:
        return ast.Literal("boolean", "false")

    def uuid_literal(self, token: Token) -> ast.Literal:
        return ast.Literal("uuid", str(token))

    def hex_literal(self, token: Token) -> ast.Literal:
        return ast.Literal("hex", str(token))

    def duration_literal(self, token: Token) -> ast.Literal:
        return ast.Literal("duration", str(token))

    def null(self, _token: Token) -> ast.Null:
        return ast.Null()

    def anonymous_marker(self) -> ast.BindMarker:
        marker = ast.BindMarker(self._marker_count, None)
        self._marker_count += 1
        return marker

    def named_marker(self, name: str) -> ast.BindMarker:
        marker = ast.BindMarker(self._marker_count, name)
        self._marker_count += 1
        return marker

    def tuple_literal(self, *items: ast.Term) -> ast.TupleLiteral:
        literal = ast.TupleLiteral(items)
        self._nested_term(literal, items)
        return literal

    def list_literal(self, *items: ast.Term | None) -> ast.ListLiteral:
        literal = ast.ListLiteral(present(items))
        self._nested_term(literal, literal.items)
        return literal

    def set_literal(self, *items: ast.Term) -> ast.SetLiteral:
        literal = ast.SetLiteral(items)
        self._nested_term(literal, items)
        return literal

    def map_literal(self, *entries: tuple[ast.Term, ast.Term] | None) -> ast.MapLiteral:
        literal = ast.MapLiteral(present(entries))
        self._nested_term(literal, (term for pair in literal.pairs for term in pair))
        return literal

    def map_entry(self, key: ast.Term, value: ast.Term) -> tuple[ast.Term, ast.Term]:
        return (key, value)

    def udt_literal(self, *fields: tuple[str, ast.Term]) -> ast.UdtLiteral:
        names = [name for name, _ in fields]
        for name in names:
            if names.count(name) > 1:
                fail(f"duplicate field {name!r} in user type literal")
        literal = ast.UdtLiteral(fields)
        self._nested_term(literal, (term for _, term in fields))
        return literal

    def udt_field(self, name: str, value: ast.Term) -> tuple[str, ast.Term]:
        return (name, value)

    def function_name(self, name: str) -> tuple[str | None, str]:
        return (None, name)

    def qualified_function_name(self, keyspace: str, name: str) -> tuple[str | None, str]:
        return (keyspace, name)

    def token_function_name(self) -> tuple[str | None, str]:
        return (None, "token")

    def function_call(self, name: tuple[str | None, str], *args: ast.Term | None) -> ast.FunctionCall:
        call = ast.FunctionCall(name[0], name[1], present(args))
        self._nested_term(call, call.args)
        return call

    def type_hint(self, cql_type: t.CqlType, term: ast.Term) -> ast.TypeCast:
        cast = ast.TypeCast(cql_type, term)
        self._nested_term(cast, (term,))
        return cast

    # -------------------------------------------------------------------------- selectors

    def select_all(self) -> None:
        return None

    def select_list(self, *selectors: ast.Selector) -> tuple[ast.Selector, ...]:
        return selectors

    def selector(self, expr: ast.Expr, alias: str | None) -> ast.Selector:
        return ast.Selector(expr, alias)

    def column_ref(self, name: str) -> ast.ColumnRef:
        return ast.ColumnRef(name)

    def element_ref(self, column: str, key: ast.Term) -> ast.ElementRef:
        ref = ast.ElementRef(column, key)
        self._nested_term(ref, (key,))
        return ref

    def field_ref(self, column: str, field: str) -> ast.FieldRef:
        return ast.FieldRef(column, field)

    field_or_column = field_ref

    def sel_call(self, name: tuple[str | None, str], *args: ast.Expr | None) -> ast.FunctionCall:
        call = ast.FunctionCall(name[0], name[1], present(args))
        self._nested_term(call, call.args)
        return call

    def count_rows(self, name: tuple[str | None, str]) -> ast.CountRows:
        if name != (None, "count"):
            fail(f"only count accepts '*' as an argument, not {name[1]}")
        return ast.CountRows()

    def cast(self, expr: ast.Expr, cql_type: t.CqlType) -> ast.Cast:
        cast = ast.Cast(expr, cql_type)
        self._nested_term(cast, (expr,))
        return cast

    # -------------------------------------------------------------------------- relations

    def rel_op(self, token: Token) -> str:
        return str(token)

    def rel_compare(self, lhs: Any, op: str, rhs: ast.Term) -> ast.Relation:
        self._check_relation(lhs, rhs)
        return ast.Relation(lhs, op, rhs)

    def rel_in(self, lhs: Any, values: ast.InValues | ast.BindMarker) -> ast.Relation:
        self._check_relation(lhs, values)
        return ast.Relation(lhs, "IN", values)

    def rel_contains(self, column: str, value: ast.Term) -> ast.Relation:
        self._check_relation(None, value)
        return ast.Relation(ast.ColumnRef(column), "CONTAINS", value)

    def rel_contains_key(self, column: str, value: ast.Term) -> ast.Relation:
        self._check_relation(None, value)
        return ast.Relation(ast.ColumnRef(column), "CONTAINS KEY", value)

    def rel_like(self, column: str, value: ast.Term) -> ast.Relation:
        self._check_relation(None, value)
        return ast.Relation(ast.ColumnRef(column), "LIKE", value)

    def rel_is_not_null(self, column: str) -> ast.Relation:
        return ast.Relation(ast.ColumnRef(column), "IS NOT", ast.Null())

    def rel_token(self, columns: tuple[str, ...], op: str, value: ast.Term) -> ast.Relation:
        self._check_relation(None, value)
        return ast.Relation(ast.TokenOf(columns), op, value)

    def rel_multi(self, columns: tuple[str, ...], op: str, value: ast.Term) -> ast.Relation:
        self._check_relation(None, value)
        return ast.Relation(ast.ColumnTuple(columns), op, value)

    def rel_multi_in(self, columns: tuple[str, ...], values: ast.InValues | ast.BindMarker) -> ast.Relation:
        self._check_relation(None, values)
        return ast.Relation(ast.ColumnTuple(columns), "IN", values)

    def in_list(self, *items: ast.Term | None) -> ast.InValues:
        values = ast.InValues(present(items))
        self._nested_term(values, values.items, levels=0)  # a list, not a term of its own
        return values

    def in_values(self, marker: ast.BindMarker) -> ast.BindMarker:
        return marker

    def where_clause(self, *relations: ast.Relation) -> tuple[ast.Relation, ...]:
        return relations

    def ordering(self, column: str, direction: Token | None) -> ast.Ordering:
        return ast.Ordering(column, direction is None or direction.upper() == "ASC")

    def ann_ordering(self, column: str, vector: ast.Term) -> ast.Ordering:
        return ast.Ordering(column, True, vector)
