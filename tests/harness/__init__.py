"""Integration-test harness: real server processes on private loopback addresses, real clients.

Modules: `addresses` (per-worker 127.0.x.y blocks), `probe` (hand-written OPTIONS readiness
check), `process` (start/stop/kill/restart with captured output), `node` (tabletdb server
nodes and clusters), `clients` (scylla-driver sessions, cqlsh, Apache driver snippets).
Fixtures built on them live in tests/conftest.py.
"""
