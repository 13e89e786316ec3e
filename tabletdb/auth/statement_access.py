"""Which permission on which resource a data or schema statement needs (as Cassandra asks).

The query processor calls `required_permissions` before executing a statement and checks each
pair with `authorize`; with AllowAllAuthorizer it can skip the call entirely. Role, permission
and service-level statements check their own access in their decision functions.
"""

from __future__ import annotations

from tabletdb.auth import resources
from tabletdb.auth.resources import Permission
from tabletdb.cql import ast_statements as s
from tabletdb.cql.ast_terms import QualifiedName
from tabletdb.cql.errors import InvalidRequest
from tabletdb.schema.model import Catalog

Requirement = tuple[Permission, str]


def _keyspace(name: str | None, current: str | None) -> str:
    chosen = name or current
    if chosen is None:
        raise InvalidRequest(
            "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename"
        )
    return chosen


def _table(name: QualifiedName, current: str | None) -> str:
    return resources.table(_keyspace(name.keyspace, current), name.name)


def _modification(
    stmt: s.InsertStatement | s.UpdateStatement | s.DeleteStatement, current: str | None
) -> list[Requirement]:
    """MODIFY, plus SELECT for conditional (LWT) updates, which read before they write."""
    table = _table(stmt.table, current)
    needs = [(Permission.MODIFY, table)]
    conditional = (
        stmt.if_not_exists if isinstance(stmt, s.InsertStatement) else bool(stmt.conditions) or stmt.if_exists
    )
    if conditional:
        needs.append((Permission.SELECT, table))
    return needs


def _index_table(catalog: Catalog, name: QualifiedName, current: str | None) -> str:
    ks = _keyspace(name.keyspace, current)
    found = catalog.find_index(ks, name.name)
    return resources.table(ks, found[0].name) if found is not None else resources.keyspace(ks)


def _view_base(catalog: Catalog, name: QualifiedName, current: str | None) -> str:
    ks = _keyspace(name.keyspace, current)
    view = catalog.view(ks, name.name)
    return resources.table(ks, view.base_table_name) if view is not None else resources.keyspace(ks)


def _create_routine(stmt: s.CreateFunction | s.CreateAggregate, ks: str) -> list[Requirement]:
    """As ScyllaDB: CREATE on the keyspace's functions; OR REPLACE also ALTER on the function;
    an aggregate also EXECUTE on its state, final and reduce functions."""
    needs = [(Permission.CREATE, resources.functions_in(ks))]
    if isinstance(stmt, s.CreateFunction):
        args = tuple(t.cql() for _, t in stmt.arguments)
    else:
        args = tuple(t.cql() for t in stmt.argument_types)
    if stmt.or_replace:
        needs.append((Permission.ALTER, resources.function(ks, stmt.name.name, args)))
    if isinstance(stmt, s.CreateAggregate):
        stype = stmt.state_type.cql()
        used = [(stmt.state_function, (stype, *args))]
        if stmt.final_function is not None:
            used.append((stmt.final_function, (stype,)))
        if stmt.reduce_function is not None:
            used.append((stmt.reduce_function, (stype, stype)))
        needs += [(Permission.EXECUTE, resources.function(ks, name, types)) for name, types in used]
    return needs


def required_permissions(
    stmt: s.Statement, catalog: Catalog, current_keyspace: str | None
) -> list[Requirement]:
    """The (permission, resource) pairs `stmt` needs; empty for statements that need none.

    Objects that do not exist fall back to their keyspace, so the existence error the statement
    raises next is not hidden behind an authorization error on a name we cannot resolve."""
    cur = current_keyspace
    if isinstance(stmt, s.SelectStatement):
        return [(Permission.SELECT, _table(stmt.table, cur))]
    if isinstance(stmt, s.InsertStatement | s.UpdateStatement | s.DeleteStatement):
        return _modification(stmt, cur)
    if isinstance(stmt, s.BatchStatement):
        needs: list[Requirement] = []
        for inner in stmt.statements:
            needs += [n for n in _modification(inner, cur) if n not in needs]
        return needs
    if isinstance(stmt, s.TruncateStatement):
        return [(Permission.MODIFY, _table(stmt.table, cur))]
    if isinstance(stmt, s.CreateKeyspace):
        return [(Permission.CREATE, resources.DATA_ROOT)]
    if isinstance(stmt, s.AlterKeyspace):
        return [(Permission.ALTER, resources.keyspace(stmt.name))]
    if isinstance(stmt, s.DropKeyspace):
        return [(Permission.DROP, resources.keyspace(stmt.name))]
    if isinstance(stmt, s.CreateTable):
        return [(Permission.CREATE, resources.keyspace(_keyspace(stmt.name.keyspace, cur)))]
    if isinstance(stmt, s.AlterTable):
        return [(Permission.ALTER, _table(stmt.name, cur))]
    if isinstance(stmt, s.DropTable):
        return [(Permission.DROP, _table(stmt.name, cur))]
    if isinstance(stmt, s.CreateType | s.AlterType | s.DropType):
        kind = {s.CreateType: Permission.CREATE, s.AlterType: Permission.ALTER, s.DropType: Permission.DROP}
        return [(kind[type(stmt)], resources.keyspace(_keyspace(stmt.name.keyspace, cur)))]
    if isinstance(stmt, s.CreateIndex):
        return [(Permission.ALTER, _table(stmt.table, cur))]
    if isinstance(stmt, s.DropIndex):
        return [(Permission.ALTER, _index_table(catalog, stmt.name, cur))]
    if isinstance(stmt, s.CreateMaterializedView):
        base = QualifiedName(stmt.base.keyspace or stmt.name.keyspace, stmt.base.name)
        return [(Permission.ALTER, _table(base, cur))]
    if isinstance(stmt, s.AlterMaterializedView | s.DropMaterializedView):
        return [(Permission.ALTER, _view_base(catalog, stmt.name, cur))]
    if isinstance(stmt, s.CreateFunction | s.CreateAggregate):
        return _create_routine(stmt, _keyspace(stmt.name.keyspace, cur))
    if isinstance(stmt, s.DropFunction | s.DropAggregate):
        ks = _keyspace(stmt.name.keyspace, cur)
        if stmt.argument_types is None:
            return [(Permission.DROP, resources.functions_in(ks))]
        args = tuple(t.cql() for t in stmt.argument_types)
        return [(Permission.DROP, resources.function(ks, stmt.name.name, args))]
    return []
