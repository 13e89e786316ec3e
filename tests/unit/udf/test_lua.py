"""The Lua shell and the call semantics on a real Lua runtime: values survive `return a`, the
sandbox holds (no io/os/require/load, read-only libraries, fresh globals per call), the budget
stops runaway functions, and aggregates fold with ScyllaDB's null rules."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql import types as T
from tabletdb.cql.codec import serialize
from tabletdb.cql.errors import InvalidRequest
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import AggregateDef, FunctionDef, KeyspaceDef, KeyspaceSchema, Replication
from tabletdb.udf import lua
from tabletdb.udf.calls import Aggregation, scalar_function
from tabletdb.udf.values import LuaDecimal, from_lua, to_lua
from tests.unit.cql.strategies import cql_types, values_of
from tests.unit.udf.test_values import _tuples_without_nulls

# Lua tables key floats with an integral value as integers, so -0.0 and 0.0 meet as set elements;
# floats are covered at the top level by the pure mapping's tests.
_LEAVES = st.sampled_from([T.native(n) for n in T.NATIVE_TYPE_NAMES if n not in ("float", "double")])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_value_survives_return_a(data: st.DataObject) -> None:
    t = data.draw(cql_types(_LEAVES))
    v = data.draw(values_of(t))
    if not _tuples_without_nulls(t, v):
        return
    back = from_lua(t, lua.call("return a", ["a"], [to_lua(t, v)]))
    assert back is None if v is None else serialize(t, back) == serialize(t, v)


def test_decimals_add_and_subtract_exactly() -> None:
    pi = Decimal("3.14159265358979323846264338327950288419716939937510")
    got = lua.call("return a + 1 - b", ["a", "b"], [LuaDecimal(pi), LuaDecimal(Decimal("0.5"))])
    assert got == LuaDecimal(Decimal("3.64159265358979323846264338327950288419716939937510"))
    assert lua.call("return a + 0.25", ["a"], [LuaDecimal(Decimal(1))]) == 1.25  # with a float: a float
    assert lua.call("return tostring(a)", ["a"], [LuaDecimal(Decimal(2**70))]) == str(2**70).encode()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return io.open('/etc/passwd')", "global 'io'"),
        ("return os.time()", "global 'os'"),
        ("return require('os')", "global 'require'"),
        ("return load('return 1')()", "global 'load'"),
        ("return dofile('/etc/passwd')", "global 'dofile'"),
        ("return debug.getinfo(1)", "global 'debug'"),
        ("return python.builtins", "global 'python'"),
        ("string.rep = nil return 1", "read-only"),
        ("return getmetatable('').__index", "index a boolean"),
    ],
)
def test_the_sandbox_has_no_way_out(body: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=f"lua execution failed: .*{message}"):
        lua.call(body, [], [])


def test_each_call_starts_with_fresh_globals() -> None:
    body = "counter = (counter or 0) + 1 return counter"
    assert lua.call(body, [], []) == 1
    assert lua.call(body, [], []) == 1


@pytest.mark.parametrize(
    "body",
    [
        "while true do end",
        "while true do pcall(function() while true do end end) end",
        "local function f() return f() + 1 end while true do pcall(f) end",
    ],
)
def test_runaway_functions_stop_at_the_time_limit(body: str) -> None:
    with pytest.raises(InvalidRequest, match="lua execution timeout"):
        lua.call(body, [], [])
    assert lua.call("return 1", [], []) == 1  # the runtime is usable afterwards


def test_memory_is_bounded_per_call() -> None:
    with pytest.raises(InvalidRequest, match="not enough memory"):
        lua.call("local s = 'x' while true do s = s .. s end", [], [])
    assert lua.call("local t = {} for i = 1, 1000 do t[i] = i end return #t", [], []) == 1000


def test_the_budget_follows_the_configuration() -> None:
    lua.configure(lua.Limits(time_limit_ms=1, allocation_limit_bytes=64 * 1024))
    try:
        with pytest.raises(InvalidRequest, match="1ms elapsed"):
            lua.call("while true do end", [], [])
        with pytest.raises(InvalidRequest, match="not enough memory"):
            lua.call("return #string.rep('x', 100000)", [], [])
        assert lua.call("return #string.rep('x', 10000)", [], []) == 10000
    finally:
        lua.configure(lua.Limits())


def test_a_body_that_does_not_compile_is_refused() -> None:
    with pytest.raises(InvalidRequest, match=r"could not compile: .*near"):
        lua.check_compiles("return +", ["a"])


def _fn(
    name: str, args: list[tuple[str, T.CqlType]], ret: T.CqlType, body: str, on_null: bool
) -> FunctionDef:
    return FunctionDef(
        "ks", name, tuple(a for a, _ in args), tuple(t for _, t in args), ret, "lua", body, on_null
    )


def _keyspace(*functions: FunctionDef) -> KeyspaceSchema:
    return KeyspaceSchema(
        KeyspaceDef("ks", Replication("org.apache.cassandra.locator.SimpleStrategy")),
        functions=FrozenMap({f.signature: f for f in functions}),
    )


def test_null_input_rules() -> None:
    strict = scalar_function(_fn("s", [("a", T.INT)], T.INT, "return 7", False))
    lenient = scalar_function(
        _fn("l", [("a", T.INT)], T.INT, "if a == nil then return -1 end return a", True)
    )
    assert strict(None) is None
    assert lenient(None) == -1 and lenient(3) == 3


def test_a_wrong_language_is_refused_by_name() -> None:
    wasm = FunctionDef("ks", "w", (), (), T.INT, "wasm", "(module)", True)
    with pytest.raises(InvalidRequest, match="'wasm' is not supported"):
        scalar_function(wasm)


def test_an_aggregate_folds_state_then_finishes() -> None:
    acc = _fn("acc", [("s", T.BIGINT), ("v", T.INT)], T.BIGINT, "return s + v", False)
    fin = _fn("fin", [("s", T.BIGINT)], T.TEXT, "return 'sum=' .. s", False)
    ks = _keyspace(acc, fin)
    aggregate = AggregateDef("ks", "total", (T.INT,), "acc", T.BIGINT, T.TEXT, "fin", "0")
    assert Aggregation(ks, aggregate, 0).fold([(1,), (2,), (3,)]) == "sum=6"
    # RETURNS NULL ON NULL INPUT state function: a null row makes the state null, as in ScyllaDB
    assert Aggregation(ks, aggregate, 0).fold([(1,), (None,), (3,)]) is None
