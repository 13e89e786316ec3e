"""CQL text of a parsed term or selector, for error messages.

A client must read its own statement back in an error, never our parse tree
(``FunctionCall(keyspace=None, ...)``); this renders any AST expression as CQL again, with
identifiers quoted where they need it and string literals re-escaped.
"""

from __future__ import annotations

from tabletdb.cql import ast
from tabletdb.cql.identifiers import quote_identifier


def cql_text(node: object) -> str:
    """``node`` (a term, selector expression, relation side or ``Selector``) as CQL."""
    if isinstance(node, ast.Selector):
        text = cql_text(node.expr)
        return f"{text} AS {quote_identifier(node.alias)}" if node.alias else text
    if isinstance(node, ast.Literal):
        return _literal(node)
    if isinstance(node, ast.Null):
        return "null"
    if isinstance(node, ast.BindMarker):
        return "?" if node.name is None else f":{quote_identifier(node.name)}"
    if isinstance(node, ast.ListLiteral):
        return "[" + _items(node.items) + "]"
    if isinstance(node, ast.SetLiteral):
        return "{" + _items(node.items) + "}"
    if isinstance(node, ast.MapLiteral):
        return "{" + ", ".join(f"{cql_text(k)}: {cql_text(v)}" for k, v in node.pairs) + "}"
    if isinstance(node, ast.TupleLiteral):
        return "(" + _items(node.items) + ")"
    if isinstance(node, ast.UdtLiteral):
        return "{" + ", ".join(f"{quote_identifier(f)}: {cql_text(v)}" for f, v in node.fields) + "}"
    if isinstance(node, ast.FunctionCall):
        name = node.name if node.keyspace is None else f"{quote_identifier(node.keyspace)}.{node.name}"
        return f"{name}({_items(node.args)})"
    if isinstance(node, ast.TypeCast):
        return f"({node.type.cql()}) {cql_text(node.term)}"
    return _reference(node)


def _reference(node: object) -> str:
    if isinstance(node, ast.ColumnRef):
        return quote_identifier(node.name)
    if isinstance(node, ast.ElementRef):
        return f"{quote_identifier(node.column)}[{cql_text(node.key)}]"
    if isinstance(node, ast.FieldRef):
        return f"{quote_identifier(node.column)}.{quote_identifier(node.field)}"
    if isinstance(node, ast.ColumnTuple):
        return "(" + ", ".join(quote_identifier(c) for c in node.columns) + ")"
    if isinstance(node, ast.TokenOf):
        return "token(" + ", ".join(quote_identifier(c) for c in node.columns) + ")"
    if isinstance(node, ast.Cast):
        return f"cast({cql_text(node.expr)} AS {node.type.cql()})"
    if isinstance(node, ast.CountRows):
        return "count(*)"
    if isinstance(node, ast.InValues):
        return "(" + _items(node.items) + ")"
    return type(node).__name__  # a node kind this module does not know yet: its kind, not its fields


def _items(items: tuple[object, ...]) -> str:
    return ", ".join(cql_text(i) for i in items)


def _literal(lit: ast.Literal) -> str:
    if lit.kind == "string":
        return "'" + lit.text.replace("'", "''") + "'"
    return lit.text
