"""User-defined functions in term positions pick their overload by the arguments' types, read
markers as the parameter's type and check the result against the receiver (pure: no node)."""

from __future__ import annotations

from typing import Any

import pytest

from tabletdb.cql import ast, codec
from tabletdb.cql import types as T
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.values import Value
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import FunctionDef, KeyspaceDef, KeyspaceSchema, Replication
from tabletdb.statements.terms import Bindings, term_value
from tabletdb.statements.user_terms import term_functions


def _fn(name: str, params: tuple[T.CqlType, ...], ret: T.CqlType, body: str) -> FunctionDef:
    names = tuple(f"a{i}" for i in range(len(params)))
    return FunctionDef("ks", name, names, params, ret, "lua", body, False)


KEYSPACE = KeyspaceSchema(
    KeyspaceDef("ks", Replication("org.apache.cassandra.locator.SimpleStrategy")),
    functions=FrozenMap(
        {
            f.signature: f
            for f in (
                _fn("inc", (T.INT,), T.INT, "return a0 + 1"),
                _fn("pick", (T.INT,), T.TEXT, 'return "int"'),
                _fn("pick", (T.TEXT,), T.TEXT, 'return "text"'),
                _fn("wide", (T.INT,), T.INT, "return a0"),
                _fn("wide", (T.BIGINT,), T.BIGINT, "return a0"),
                _fn("size", (T.ListType(T.INT),), T.INT, "return #a0"),
            )
        }
    ),
)


def _value(term_text: str, receiver: T.CqlType, values: tuple[Value, ...] = ()) -> Any:
    statement = parse_statement(f"INSERT INTO ks.t (v) VALUES ({term_text})")
    assert isinstance(statement, ast.InsertStatement)
    bindings = Bindings(values, term_functions(KEYSPACE))
    return term_value(statement.values[0], receiver, "v", bindings)


def test_the_overload_is_the_one_the_arguments_fit() -> None:
    assert _value("pick(1)", T.TEXT) == "int"  # a constant reads only as one parameter type
    assert _value("pick('x')", T.TEXT) == "text"
    assert _value("pick(inc(1))", T.TEXT) == "int"  # a call's result type decides
    assert _value("pick((text) ?)", T.TEXT, (b"x",)) == "text"  # a hint decides
    assert _value("wide((bigint) 5)", T.BIGINT) == 5
    assert _value("size([1, 2, 3])", T.INT) == 3  # a non-frozen parameter takes the literal


def test_what_does_not_resolve_is_refused_as_scylladb_refuses_it() -> None:
    with pytest.raises(InvalidRequest, match=r"Ambiguous call to function ks\.wide .*use type casts"):
        _value("wide(1)", T.INT)
    with pytest.raises(InvalidRequest, match=r"Ambiguous call to function ks\.pick"):
        _value("pick(?)", T.TEXT, (b"x",))
    with pytest.raises(InvalidRequest, match="none of its type signatures match"):
        _value("inc('x')", T.INT)
    with pytest.raises(InvalidRequest, match=r"cannot assign result of function ks\.pick \(type text\) to v"):
        _value("pick(1)", T.INT)
    with pytest.raises(InvalidRequest, match="1 required but 2 provided"):
        _value("inc(1, 2)", T.INT)


def test_markers_and_natives_meet_user_functions() -> None:
    assert _value("inc(?)", T.INT, (codec.serialize(T.INT, 41),)) == 42
    assert _value("blobAsInt(intAsBlob(inc(1)))", T.INT) == 2
    assert _value("inc(blobAsInt(0x00000009))", T.INT) == 10
    assert _value("inc(null)", T.INT) is None  # RETURNS NULL ON NULL INPUT
    # a blob receiver takes any result, serialized
    assert _value("inc(1)", T.BLOB) == codec.serialize(T.INT, 2)


def test_without_the_keyspace_functions_a_call_is_unknown() -> None:
    statement = parse_statement("INSERT INTO ks.t (v) VALUES (inc(1))")
    assert isinstance(statement, ast.InsertStatement)
    with pytest.raises(InvalidRequest, match="Unknown function inc"):
        term_value(statement.values[0], T.INT, "v", Bindings(()))
