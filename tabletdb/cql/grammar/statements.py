"""Grammar callbacks for queries: SELECT, INSERT, UPDATE, DELETE, BATCH, USE, TRUNCATE (see
parse_terms for the conventions)."""

from __future__ import annotations

from typing import Any

from lark import Token

from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.grammar.errors import fail
from tabletdb.cql.grammar.terms import TermCallbacks, present


class StatementCallbacks(TermCallbacks):
    # --------------------------------------------------------------------------- queries

    def json_flag(self) -> bool:
        return True

    def distinct_flag(self) -> bool:
        return True

    def group_by(self, *columns: str) -> tuple[str, ...]:
        return columns

    def order_by(self, *orderings: ast.Ordering) -> tuple[ast.Ordering, ...]:
        return orderings

    def per_partition_limit(self, value: ast.Term) -> ast.Term:
        return value

    def limit(self, value: ast.Term) -> ast.Term:
        return value

    def allow_filtering(self) -> bool:
        return True

    def bypass_cache(self) -> bool:
        return True

    def using_timeout(self, value: ast.Term) -> ast.Term:
        return value

    def select_timeout(self, value: ast.Term) -> tuple[str, ast.Term]:
        return ("timeout", value)

    def select_service_level(self, name: str) -> tuple[str, str]:
        return ("service_level", name)

    def select_using(self, *options: tuple[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in options:
            if key in found:
                fail(f"duplicate USING {'TIMEOUT' if key == 'timeout' else 'SERVICE LEVEL'}")
            found[key] = value
        return found

    def select_stmt(
        self,
        json: bool | None,
        distinct: bool | None,
        selectors: tuple[ast.Selector, ...] | None,
        table: ast.QualifiedName,
        where: tuple[ast.Relation, ...] | None,
        group_by: tuple[str, ...] | None,
        order_by: tuple[ast.Ordering, ...] | None,
        per_partition_limit: ast.Term | None,
        limit: ast.Term | None,
        allow_filtering: bool | None,
        bypass_cache: bool | None,
        using: dict[str, Any] | None,
    ) -> ast.SelectStatement:
        options = using or {}
        return ast.SelectStatement(
            table=table,
            selectors=selectors,
            where=where or (),
            distinct=bool(distinct),
            json=bool(json),
            group_by=group_by or (),
            order_by=order_by or (),
            per_partition_limit=per_partition_limit,
            limit=limit,
            allow_filtering=bool(allow_filtering),
            bypass_cache=bool(bypass_cache),
            timeout=options.get("timeout"),
            service_level=options.get("service_level"),
        )

    def using_item(self, keyword: Token, value: ast.Term) -> tuple[Token, ast.Term]:
        return (keyword, value)

    def using_clause(self, *items: tuple[Token, ast.Term]) -> ast.Attributes:
        found: dict[str, ast.Term] = {}
        for keyword, value in items:
            name = keyword.lower()
            if name in found:
                fail(f"duplicate USING {name.upper()}", keyword)
            found[name] = value
        return ast.Attributes(found.get("ttl"), found.get("timestamp"), found.get("timeout"))

    def if_not_exists(self) -> bool:
        return True

    def if_exists(self) -> bool:
        return True

    def insert_values(self, table: ast.QualifiedName, columns: tuple[str, ...], *rest: Any) -> ast.Statement:
        values, if_not_exists, attributes = rest[:-2], rest[-2], rest[-1]
        if len(columns) != len(values):
            raise InvalidRequest("Unmatched column names/values")
        return ast.InsertStatement(
            table, columns, values, None, False, bool(if_not_exists), attributes or ast.Attributes()
        )

    def json_default(self, keyword: Token) -> bool:
        return keyword.upper() == "UNSET"

    def insert_json(
        self,
        table: ast.QualifiedName,
        json: ast.Term,
        default_unset: bool | None,
        if_not_exists: bool | None,
        attributes: ast.Attributes | None,
    ) -> ast.InsertStatement:
        return ast.InsertStatement(
            table, (), (), json, bool(default_unset), bool(if_not_exists), attributes or ast.Attributes()
        )

    def set_column(self, column: str, value: ast.Term) -> ast.SetColumn:
        return ast.SetColumn(column, value)

    def _check_same(self, column: str, other: str, op: str) -> None:
        if column != other:
            fail(
                f"Only expressions of the form X = X {op} <value> are supported (got {column} = {other} ...)"
            )

    def add_column(self, column: str, other: str, value: ast.Term) -> ast.AddToColumn:
        self._check_same(column, other, "+")
        return ast.AddToColumn(column, value)

    def subtract_column(self, column: str, other: str, value: ast.Term) -> ast.SubtractFromColumn:
        self._check_same(column, other, "-")
        return ast.SubtractFromColumn(column, value)

    def prepend_column(self, column: str, value: ast.Term, other: str) -> ast.PrependToColumn:
        if column != other:
            fail(f"Only expressions of the form X = <value> + X are supported (got {column} = ... + {other})")
        return ast.PrependToColumn(column, value)

    def add_to(self, column: str, value: ast.Term) -> ast.AddToColumn:
        return ast.AddToColumn(column, value)

    def subtract_from(self, column: str, value: ast.Term) -> ast.SubtractFromColumn:
        return ast.SubtractFromColumn(column, value)

    def set_element(self, column: str, key: ast.Term, value: ast.Term) -> ast.SetElement:
        return ast.SetElement(column, key, value)

    def set_field(self, column: str, field: str, value: ast.Term) -> ast.SetField:
        return ast.SetField(column, field, value)

    def if_exists_cond(self) -> str:
        return "EXISTS"

    def if_conditions(self, *relations: ast.Relation) -> tuple[ast.Relation, ...]:
        return relations

    def update_stmt(
        self, table: ast.QualifiedName, attributes: ast.Attributes | None, *rest: Any
    ) -> ast.Statement:
        assignments, where, conditions = rest[:-2], rest[-2], rest[-1]
        return ast.UpdateStatement(
            table,
            assignments,
            where,
            attributes or ast.Attributes(),
            conditions if isinstance(conditions, tuple) else (),
            conditions == "EXISTS",
        )

    def delete_column(self, column: str) -> ast.DeleteColumn:
        return ast.DeleteColumn(column)

    def delete_stmt(self, *args: Any) -> ast.DeleteStatement:
        targets, (table, attributes, where, conditions) = present(args[:-4]), args[-4:]
        attributes = attributes or ast.Attributes()
        if attributes.ttl is not None:
            fail("Cannot use TTL on DELETE")
        return ast.DeleteStatement(
            table,
            targets,
            where,
            attributes,
            conditions if isinstance(conditions, tuple) else (),
            conditions == "EXISTS",
        )

    def batch_kind(self, token: Token) -> str:
        return token.upper()

    def batch_stmt(
        self, kind: str | None, attributes: ast.Attributes | None, *members: Any
    ) -> ast.BatchStatement:
        attributes = attributes or ast.Attributes()
        if attributes.ttl is not None:
            fail("Cannot use TTL on a BATCH (set it on the statements)")
        return ast.BatchStatement(kind or "LOGGED", members, attributes)

    def use_stmt(self, keyspace: str) -> ast.UseStatement:
        return ast.UseStatement(keyspace)

    def truncate_stmt(self, table: ast.QualifiedName, timeout: ast.Term | None) -> ast.TruncateStatement:
        return ast.TruncateStatement(table, timeout)
