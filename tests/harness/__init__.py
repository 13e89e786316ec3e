"""Integration-test harness: real server processes on private loopback addresses, real clients.

Modules: `addresses` (a claimed 127.B.0.0/16 block per test process), `probe` (hand-written
OPTIONS readiness check), `process` (start/stop/kill/restart with captured output), `node`
(tabletdb server nodes and clusters), `clients` (scylla-driver sessions, cqlsh, Apache driver
snippets).
Fixtures built on them live in tests/conftest.py.
"""
