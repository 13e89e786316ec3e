"""An in-memory metadata store for the auth executor tests: decide, build the group0 command the
real stores build (with_auth), apply it."""

from __future__ import annotations

import time
import uuid

from tabletdb.cql import ast
from tabletdb.cql.parser import parse_statement
from tabletdb.group0.state import Group0State, SchemaCommand, apply, with_auth
from tabletdb.query import ddl
from tabletdb.query.metadata_store import Decision
from tabletdb.schema import system_schema
from tabletdb.schema.ddl_common import DdlOutcome, SchemaConfig
from tabletdb.schema.model import Catalog
from tabletdb.systables.tables import system_keyspace


class MemoryStore:
    def __init__(self) -> None:
        self.state = Group0State()
        self.commands: list[SchemaCommand] = []

    @property
    def catalog(self) -> Catalog:
        return self.state.catalog

    def catalog_with_system(self) -> Catalog:
        c = self.state.catalog
        keyspaces = c.keyspaces.set("system", system_keyspace()).set(
            system_schema.KEYSPACE, system_schema.system_schema_keyspace()
        )
        return Catalog(keyspaces, c.version, c.ids)

    async def change_schema(self, decide: Decision) -> DdlOutcome:
        outcome = decide(self.state.catalog)
        if outcome.is_noop:
            return outcome
        command = with_auth(SchemaCommand(self.state.state_id, uuid.uuid1(), outcome.mutations), outcome)
        self.state, applied = apply(self.state, command)
        assert applied
        self.commands.append(command)
        return outcome


def schema_decision(cql: str, keyspace: str | None = None) -> tuple[ast.Statement, Decision]:
    stmt = parse_statement(cql)
    return stmt, ddl.decision_for(stmt, keyspace, SchemaConfig(), uuid.uuid1, lambda: time.time_ns() // 1000)
