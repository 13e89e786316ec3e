"""How deep CQL types and expressions may nest, and how deep a given one does.

Every layer walks types and terms recursively (codecs, formatting, comparison, the schema
codec group0 replicates), and Python stops a recursion about a thousand frames deep. So depth is
bounded where statements come in: a term, selector or relation nested more than
`MAX_EXPRESSION_NESTING` deep is a syntax error with ScyllaDB's limit and message (its parser's
`nesting_guard`), and a type nested more than `MAX_TYPE_NESTING` deep is refused. Everything
behind these checks may then recurse freely.

The walks here are iterative, so they are safe on input no check has seen yet.
"""

from __future__ import annotations

from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType, ListType, MapType, SetType, TupleType, UserType, VectorType

MAX_EXPRESSION_NESTING = 12
"""ScyllaDB's `max_expression_nesting`: terms, selectors and relations within one another, the
innermost constant included (so eleven list or tuple literals around a value)."""
EXPRESSION_TOO_DEEP = "expression nested too deeply"
"""ScyllaDB's message, a SyntaxException without a position."""

MAX_TYPE_NESTING = 128
"""Collections, tuples, vectors and user types within one another (`int` is 0, `list<int>` 1).
ScyllaDB has no limit of its own; drivers' test suites create tuples nested 32 (Python) and 128
(Ruby) deep. 128 keeps the deepest recursion over a type, with the schema codec's two frames per
level of a tuple or user type, well inside Python's limit wherever it runs."""


def type_children(t: CqlType) -> tuple[CqlType, ...]:
    """The types directly inside `t` (none for native, custom and unresolved user types)."""
    if isinstance(t, ListType | SetType | VectorType):
        return (t.element,)
    if isinstance(t, MapType):
        return (t.key, t.value)
    if isinstance(t, TupleType):
        return t.elements
    if isinstance(t, UserType):
        return t.field_types
    return ()


def type_nesting(t: CqlType, stop_after: int = MAX_TYPE_NESTING) -> int:
    """How many levels of collections, tuples, vectors and user types `t` has; once that exceeds
    `stop_after` the walk stops and returns `stop_after + 1` (the cost stays bounded)."""
    deepest = 0
    stack: list[tuple[CqlType, int]] = [(t, 0)]
    while stack:
        current, depth = stack.pop()
        children = type_children(current)
        if not children:
            continue
        depth += 1
        if depth > stop_after:
            return depth
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def check_type_nesting(t: CqlType, what: str = "A type") -> None:
    """Refuse `t` if it nests deeper than MAX_TYPE_NESTING (InvalidRequest naming `what`)."""
    if type_nesting(t) > MAX_TYPE_NESTING:
        raise InvalidRequest(type_too_deep(what))


def type_too_deep(what: str = "A type") -> str:
    return (
        f"{what} is nested too deeply: at most {MAX_TYPE_NESTING} levels of collections, tuples, "
        "vectors and user types are allowed"
    )
