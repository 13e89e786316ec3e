"""CQL native protocol v4 (with ScyllaDB's extensions): a sans-I/O codec plus an asyncio server.

- `wire`, `frames`, `types_wire`: primitive notations, frame header/limits/compression, `[option]`s.
- `requests`, `responses`, `metadata`, `routing`, `sasl`: typed messages and their bodies; a
  statement's result is a `tabletdb.cql.results` value, whose RESULT body `responses` encodes.
- `connection.Connection`: bytes in -> request events, responses -> bytes out; state machine.
- `handler`: what the query layer implements (`Handler`) and sees (`ClientState`).
- `extensions`: Scylla extension names and the SUPPORTED map.
- `server.CqlServer`: the asyncio shell (one task per request, write coalescing, events).
"""
