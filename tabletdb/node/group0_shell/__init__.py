"""The group0 shell: runs the pure Raft core and the group0 state machine on a node (durable log,
internode transport, command batching, version reports), and the local metadata store of
maintenance mode."""
