"""Depth of the types and expressions a statement builds, checked as the parser builds them.

The LALR parser itself keeps its stack in a list, so any nesting parses; what recurses is
everything after it. The callbacks that build a composite type, term, selector or relation ask
here for their children's depths and fail once the limits of `tabletdb.cql.nesting` are passed:
a term too deep is ScyllaDB's "expression nested too deeply" SyntaxException, a type too deep an
InvalidRequest. Depths are remembered per object built during the statement (children are always
built before their parent), so each check costs a dictionary lookup per child, not a walk.
"""

from __future__ import annotations

from collections.abc import Iterable

from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.grammar.errors import SemanticSyntaxError
from tabletdb.cql.nesting import EXPRESSION_TOO_DEEP, MAX_EXPRESSION_NESTING, MAX_TYPE_NESTING, type_too_deep
from tabletdb.cql.types import CqlType


class _Depths:
    """Depth by object identity; the objects are kept alive with their depth, so an id is never
    reused for another object while it is remembered."""

    def __init__(self, leaf: int) -> None:
        self._leaf = leaf
        self._of: dict[int, tuple[object, int]] = {}

    def __call__(self, node: object) -> int:
        found = self._of.get(id(node))
        return self._leaf if found is None else found[1]

    def deepest(self, nodes: Iterable[object]) -> int:
        return max((self(n) for n in nodes), default=0)

    def remember(self, node: object, depth: int) -> None:
        self._of[id(node)] = (node, depth)

    def clear(self) -> None:
        self._of.clear()


class NestingChecks:
    """Mixed into the grammar callbacks: one depth table for terms (a constant, marker or column
    reference is 1) and one for types (a native or unresolved user type is 0)."""

    def __init__(self) -> None:
        self._term_depth = _Depths(leaf=1)
        self._type_depth = _Depths(leaf=0)

    def _forget_depths(self) -> None:
        """Called once per statement: its objects are complete and need no depth any more."""
        self._term_depth.clear()
        self._type_depth.clear()

    def _nested_term(self, node: object, children: Iterable[object], levels: int = 1) -> None:
        """Record `node` as `levels` deeper than its deepest child; too deep is a syntax error."""
        depth = self._term_depth.deepest(children) + levels
        if depth > MAX_EXPRESSION_NESTING:
            raise SemanticSyntaxError(EXPRESSION_TOO_DEEP, positioned=False)
        self._term_depth.remember(node, depth)

    def _check_relation(self, lhs: object, rhs: object) -> None:
        """A relation is one level above its terms (ScyllaDB guards `relation` like `term`)."""
        key_depth = self._term_depth(lhs.key) if isinstance(lhs, ast.ElementRef) else 0
        if 1 + max(self._term_depth(rhs), key_depth) > MAX_EXPRESSION_NESTING:
            raise SemanticSyntaxError(EXPRESSION_TOO_DEEP, positioned=False)

    def _nested_type(self, node: CqlType, children: Iterable[CqlType]) -> CqlType:
        depth = self._type_depth.deepest(children) + 1
        if depth > MAX_TYPE_NESTING:
            raise InvalidRequest(type_too_deep())
        self._type_depth.remember(node, depth)
        return node

    def _same_type_depth(self, node: CqlType, like: CqlType) -> CqlType:
        """`node` is `like` rewritten (frozen): as deep as it."""
        self._type_depth.remember(node, self._type_depth(like))
        return node
