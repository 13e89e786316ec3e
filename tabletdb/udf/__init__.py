"""User-defined functions and aggregates in Lua, as ScyllaDB runs them: the value mapping
(`values`, pure), the sandboxed runtime (`lua`) and the call semantics (`calls`)."""
