"""The CQL abstract syntax tree: what `tabletdb.cql.parser` produces.

One import point for the executor: terms, selectors and clauses (`ast_terms`), statements
(`ast_statements`) and roles, permissions, service levels and DESCRIBE (`ast_auth`). See
`ast_terms` for the normalisation conventions (identifier case, `{}`, literal text) and
`ast_statements.Statement` for bind markers.
"""

from __future__ import annotations

from tabletdb.cql.ast_auth import *  # noqa: F403
from tabletdb.cql.ast_statements import *  # noqa: F403
from tabletdb.cql.ast_terms import *  # noqa: F403
