"""The error grammar callbacks raise for what the grammar itself cannot express.

A callback raises SemanticSyntaxError; parser.py turns it into a CqlSyntaxError, by default
prefixed with the `line L:C` of the token it names (or of the end of the input), as ANTLR
positions its messages. A few of ScyllaDB's own checks report no position at all
("expression nested too deeply"); those are raised with `positioned=False`.
"""

from __future__ import annotations

from typing import NoReturn

from lark import Token


class SemanticSyntaxError(Exception):
    """Raised from a callback; parser.py turns it into a CqlSyntaxError at `token`'s position."""

    def __init__(self, message: str, token: Token | None = None, positioned: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.token = token
        self.positioned = positioned


def fail(message: str, token: Token | None = None) -> NoReturn:
    raise SemanticSyntaxError(message, token)
