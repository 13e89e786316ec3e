"""The Lua runtime shell: compiles a function body once, calls it in a sandbox with a time and a
memory budget, and turns values between Lua and `udf.values`' plain data.

One lupa runtime per thread (lupa runtimes are not shared across threads). The sandbox is what
ScyllaDB gives a UDF — the base functions, `string`, `table`, `coroutine` (and `math`) — without
`io`, `os`, `require`, `load`, `dofile`, `debug` or the Python bridge; every call gets fresh
globals, so calls cannot leak state to each other, and the library tables are read-only.

Budget: a count hook checks the CPU clock every 1000 instructions and stops the call with
ScyllaDB's "lua execution timeout" once `time_limit_ms` has passed (after that every instruction
fails, so a `pcall` inside the function cannot swallow it); the runtime's allocator refuses more
than `allocation_limit_bytes` above what the runtime held before the call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation
from typing import Any

import lupa.lua54 as lupa

from tabletdb.cql.errors import InvalidRequest
from tabletdb.udf.values import LuaDecimal, LuaTable, LuaValue


@dataclass(frozen=True)
class Limits:
    """ScyllaDB's user_defined_function_time_limit_ms and _allocation_limit_bytes."""

    time_limit_ms: int = 10
    allocation_limit_bytes: int = 1024 * 1024


_limits = Limits()


def configure(limits: Limits) -> None:
    """Set the node's budget (its configuration, read once at start-up)."""
    global _limits
    _limits = limits


_MAX_DEPTH = 64
_EXACT = Context(prec=1_000_000)

# Runs with the runtime's real globals: builds the sandbox, the decimal type and the caller.
# Everything a function could misuse (debug, os, the Python bridge) stays in these upvalues.
_SETUP = r"""
local decimal_op, now = ...
local debug, setmetatable, getmetatable, rawget, type, pcall, error, select, pairs =
      debug, setmetatable, getmetatable, rawget, type, pcall, error, select, pairs
local tostring, string_format = tostring, string.format

local function readonly(t)
  return setmetatable({}, {__index = t, __newindex = function() error("library tables are read-only", 2) end,
                           __metatable = false})
end

local dec_mt = {__metatable = false}
local texts = setmetatable({}, {__mode = "k"})
local function mkdec(text)
  local d = setmetatable({}, dec_mt)
  texts[d] = text
  return d
end
local function dec_text(x) if type(x) == "table" then return texts[x] end return nil end
local function arith(op)
  return function(a, b)
    local ta, tb = dec_text(a), dec_text(b)
    local r = decimal_op(op, ta or a, tb or b, ta ~= nil, tb ~= nil)
    if type(r) == "string" then return mkdec(r) end
    return r
  end
end
dec_mt.__add = arith("+")
dec_mt.__sub = arith("-")
dec_mt.__tostring = function(d) return texts[d] end
getmetatable("").__metatable = false

local base = {}
for _, name in ipairs({"assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget",
                       "rawlen", "rawset", "select", "setmetatable", "getmetatable", "tonumber",
                       "tostring", "type", "xpcall", "unpack"}) do
  base[name] = _G[name]
end
base.string = readonly(string)
base.table = readonly(table)
base.math = readonly(math)
base.coroutine = readonly(coroutine)
base._VERSION = _VERSION
local globals_mt = {__index = base, __metatable = false}

local clock, getinfo = os.clock, debug.getinfo
local deadline, limit_ms
local call
local function over()
  local running = getinfo(2, "f")
  if running and running.func == call then return end  -- the call is over: let it clear the hook
  error(string_format("lua execution timeout: %dms elapsed", limit_ms), 0)
end
local function hook()
  if clock() > deadline then
    debug.sethook(over, "", 1)
    over()
  end
end

local function compile(source, name)
  local fn, err = load(source, name, "t", {})
  return fn or err
end

function call(fn, ms, ...)
  limit_ms = ms
  deadline = clock() + ms / 1000
  local env = setmetatable({}, globals_mt)
  debug.sethook(hook, "", 1000)
  local result = table.pack(pcall(fn, env, ...))
  debug.sethook()
  return result
end

return compile, call, mkdec, dec_text
"""


def _decimal_op(op: bytes, a: Any, b: Any, a_dec: bool, b_dec: bool) -> Any:
    """`+`/`-` with a ScyllaDB decimal: exact between decimals and integers; with a float, a float."""
    try:
        x = Decimal(a.decode()) if a_dec else a
        y = Decimal(b.decode()) if b_dec else b
    except (InvalidOperation, AttributeError):
        raise lupa.LuaError("attempt to perform arithmetic on a decimal and a non-number") from None
    if isinstance(x, float) or isinstance(y, float):
        fx, fy = float(x), float(y)
        return fx + fy if op == b"+" else fx - fy
    if isinstance(x, bytes | bool) or isinstance(y, bytes | bool) or x is None or y is None:
        raise lupa.LuaError("attempt to perform arithmetic on a decimal and a non-number")
    dx, dy = Decimal(x), Decimal(y)
    result = _EXACT.add(dx, dy) if op == b"+" else _EXACT.subtract(dx, dy)
    return str(result).encode()


def _deny_attributes(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError("Python attributes are not reachable from a user-defined function")


class _Runtime:
    """One thread's Lua state with its compiled functions (keyed by source, most recent kept)."""

    _CACHE = 512

    def __init__(self) -> None:
        self.lua = lupa.LuaRuntime(
            encoding=None,
            register_eval=False,
            register_builtins=False,
            attribute_filter=_deny_attributes,
            max_memory=0,
        )
        compile_, call, mkdec, dec_text = self.lua.execute(_SETUP, _decimal_op, None)
        self._compile, self._call, self._mkdec, self._dec_text = compile_, call, mkdec, dec_text
        self._functions: OrderedDict[tuple[str, tuple[str, ...]], Any] = OrderedDict()

    def function(self, body: str, argument_names: Sequence[str]) -> Any:
        key = (body, tuple(argument_names))
        fn = self._functions.get(key)
        if fn is not None:
            self._functions.move_to_end(key)
            return fn
        fn = compile_function(self, body, argument_names)
        self._functions[key] = fn
        if len(self._functions) > self._CACHE:
            self._functions.popitem(last=False)
        return fn

    def compile_source(self, source: str) -> Any:
        fn = self._compile(source.encode(), b"=udf")
        if lupa.lua_type(fn) != "function":
            message = fn.decode("utf-8", "replace") if isinstance(fn, bytes) else str(fn)
            raise InvalidRequest(f"could not compile: {message}")
        return fn

    def call(self, fn: Any, args: Sequence[LuaValue]) -> LuaValue:
        limits = _limits
        self.lua.set_max_memory(self.lua.get_memory_used() + limits.allocation_limit_bytes, total=True)
        try:
            converted = [self._to_lua(a) for a in args]
        except lupa.LuaError as exc:  # e.g. a NaN as a set element: Lua tables take no NaN key
            raise InvalidRequest(f"lua execution failed: argument cannot be a Lua value: {exc}") from None
        try:
            packed = self._call(fn, limits.time_limit_ms, *converted)
        except lupa.LuaMemoryError:
            raise InvalidRequest("lua execution failed: not enough memory") from None
        finally:
            self.lua.set_max_memory(0)
        count = packed[b"n"]
        if not packed[1]:
            error = packed[2]
            text = error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
            if text.startswith("lua execution timeout"):
                raise InvalidRequest(text)
            raise InvalidRequest(f"lua execution failed: {text}")
        if count != 2:
            raise InvalidRequest(f"{count - 1} values returned, expected 1")
        return self._from_lua(packed[2], 0)

    def _to_lua(self, v: LuaValue) -> Any:
        if isinstance(v, LuaDecimal):
            return self._mkdec(str(v.value).encode())
        if isinstance(v, LuaTable):
            table = self.lua.table()
            for k, e in v.pairs:
                if e is not None:
                    table[self._to_lua(k)] = self._to_lua(e)
            return table
        return v

    def _from_lua(self, v: Any, depth: int) -> LuaValue:
        if depth > _MAX_DEPTH:
            raise InvalidRequest("value returned by the function is nested too deeply")
        if v is None or isinstance(v, bool | int | float | bytes):
            return v
        if lupa.lua_type(v) == "table":
            text = self._dec_text(v)
            if text is not None:
                return LuaDecimal(Decimal(text.decode()))
            return LuaTable(
                tuple((self._from_lua(k, depth + 1), self._from_lua(e, depth + 1)) for k, e in v.items())
            )
        raise InvalidRequest(
            f"unexpected value: a Lua {lupa.lua_type(v) or type(v).__name__} cannot be returned"
        )


def compile_function(runtime: _Runtime, body: str, argument_names: Sequence[str]) -> Any:
    """The body as a Lua function of (globals, arguments...), its arguments named as declared."""
    names = ", ".join(["_ENV", *argument_names])
    return runtime.compile_source(f"local {names} = ...;\n{body}")


_local = threading.local()


def _runtime() -> _Runtime:
    runtime: _Runtime | None = getattr(_local, "runtime", None)
    if runtime is None:
        runtime = _Runtime()
        _local.runtime = runtime
    return runtime


def check_compiles(body: str, argument_names: Sequence[str]) -> None:
    """Refuse a body Lua cannot compile (CREATE FUNCTION checks this, as ScyllaDB does)."""
    _runtime().function(body, argument_names)


def call(body: str, argument_names: Sequence[str], args: Sequence[LuaValue]) -> LuaValue:
    """Run the function `body` on `args` within the budget; its one result, or InvalidRequest."""
    runtime = _runtime()
    return runtime.call(runtime.function(body, argument_names), args)


__all__ = ["Limits", "call", "check_compiles", "configure"]
